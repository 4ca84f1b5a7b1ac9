package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

const (
	debV1 = `{"name": "debian", "description": "one", "providermap": {"google": {"image": "debian-12"}}}`
	debV2 = `{"name": "debian", "description": "two", "providermap": {"google": {"image": "debian-12"}}}`
	debV3 = `{"name": "debian", "description": "three", "version": 42, "providermap": {"google": {"image": "debian-13"}}}`
)

// TestEntityLifecycle walks one entity through every write, checking the
// versions docs/catalog.md#versions prescribes after each step.
func TestEntityLifecycle(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	ensure(t, s, "acme")
	const k = catalog.KindImageType

	type step struct {
		name     string
		run      func() (version int, err error)
		wantErr  error // matched with errors.Is
		wantVer  int   // version written or read, when no error
		versions string
		newest   string // description of the newest version; "" = no entity
	}
	write := func(update bool, doc string) func() (int, error) {
		return func() (int, error) {
			f := s.CreateEntity
			if update {
				f = s.UpdateEntity
			}
			e, _, err := f(ctx, "acme", k, []byte(doc))
			if err != nil {
				return 0, err
			}
			return e.Value.(*catalog.MachineType).Version, nil
		}
	}
	del := func(version int) func() (int, error) {
		return func() (int, error) { return 0, s.DeleteEntity(ctx, "acme", k, "debian", version) }
	}
	get := func(version int) func() (int, error) {
		return func() (int, error) {
			_, v, err := s.Entity(ctx, "acme", k, "debian", version)
			return v, err
		}
	}
	steps := []step{
		{name: "update missing", run: write(true, debV1), wantErr: store.ErrNotFound, versions: "none"},
		{name: "create", run: write(false, debV1), wantVer: 1, versions: "[1]", newest: "one"},
		{name: "create existing", run: write(false, debV2), wantErr: store.ErrConflict, versions: "[1]", newest: "one"},
		{name: "update", run: write(true, debV2), wantVer: 2, versions: "[1 2]", newest: "two"},
		{name: "update ignores input version", run: write(true, debV3), wantVer: 3, versions: "[1 2 3]", newest: "three"},
		{name: "get old version", run: get(1), wantVer: 1, versions: "[1 2 3]", newest: "three"},
		{name: "get newest", run: get(0), wantVer: 3, versions: "[1 2 3]", newest: "three"},
		{name: "get missing version", run: get(9), wantErr: store.ErrNotFound, versions: "[1 2 3]", newest: "three"},
		{name: "delete middle version", run: del(2), versions: "[1 3]", newest: "three"},
		{name: "delete it again", run: del(2), wantErr: store.ErrNotFound, versions: "[1 3]", newest: "three"},
		{name: "delete newest version", run: del(3), versions: "[1]", newest: "one"},
		{name: "update after deletes is max+1", run: write(true, debV2), wantVer: 2, versions: "[1 2]", newest: "two"},
		{name: "delete all", run: del(0), versions: "none"},
		{name: "get deleted", run: get(0), wantErr: store.ErrNotFound, versions: "none"},
		{name: "delete all again", run: del(0), wantErr: store.ErrNotFound, versions: "none"},
		{name: "recreate starts at 1", run: write(false, debV3), wantVer: 1, versions: "[1]", newest: "three"},
	}
	for _, st := range steps {
		v, err := st.run()
		switch {
		case st.wantErr != nil && !errors.Is(err, st.wantErr):
			t.Fatalf("%s: error %v, want %v", st.name, err, st.wantErr)
		case st.wantErr == nil && err != nil:
			t.Fatalf("%s: %v", st.name, err)
		case st.wantErr == nil && st.wantVer != 0 && v != st.wantVer:
			t.Fatalf("%s: version %d, want %d", st.name, v, st.wantVer)
		}
		if got := versions(t, s, "acme", k, "debian"); got != st.versions {
			t.Fatalf("%s: versions %s, want %s", st.name, got, st.versions)
		}
		e, v, err := s.Entity(ctx, "acme", k, "debian", 0)
		if st.newest == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s: Entity = %v, %v; want ErrNotFound", st.name, e, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Entity: %v", st.name, err)
		}
		mt := e.Value.(*catalog.MachineType)
		doc := decode(t, e.Raw)
		if mt.Description != st.newest || mt.Version != v || doc["version"] != float64(v) ||
			e.Kind != k || e.Name != "debian" || e.File != "imagetypes/debian.json" {
			t.Fatalf("%s: newest = %+v (v%d) %s, want description %q", st.name, e, v, e.Raw, st.newest)
		}
	}

	// The returned entity of a write is what a read returns.
	written, issues, err := s.UpdateEntity(ctx, "acme", k, []byte(debV1))
	if err != nil || issues.HasErrors() {
		t.Fatal(err, issues)
	}
	read, v, err := s.Entity(ctx, "acme", k, "debian", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v != 2 || string(written.Raw) != string(read.Raw) || written.File != read.File {
		t.Errorf("write returned %s (%s), read v%d %s (%s)", written.Raw, written.File, v, read.Raw, read.File)
	}
}

func TestEntityErrors(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	ensure(t, s, "acme")
	if _, _, err := s.CreateEntity(ctx, "acme", catalog.KindImageType, []byte(debV1)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		tenant     string
		kind       catalog.Kind
		doc        string
		invalid    bool  // a *catalog.ValidationError
		wantErr    error // else matched with errors.Is; nil = any error
		storedName string
	}{
		{name: "not JSON", tenant: "acme", kind: catalog.KindImageType, doc: `{"name": "x",`, invalid: true},
		{name: "wrong shape", tenant: "acme", kind: catalog.KindImageType,
			doc: `{"name": "bad", "providermap": "nope"}`, invalid: true, storedName: "bad"},
		{name: "no name", tenant: "acme", kind: catalog.KindImageType, doc: `{"providermap": {}}`, invalid: true},
		{name: "not an object", tenant: "acme", kind: catalog.KindHardwareType, doc: `[1, 2]`, invalid: true},
		{name: "unknown tenant", tenant: "nobody", kind: catalog.KindImageType,
			doc: `{"name": "orphan", "providermap": {}}`, wantErr: store.ErrNotFound, storedName: "orphan"},
		{name: "unknown kind", tenant: "acme", kind: "widgets", doc: `{"name": "w"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, update := range []bool{false, true} {
				f := s.CreateEntity
				if update {
					f = s.UpdateEntity
				}
				e, issues, err := f(ctx, tc.tenant, tc.kind, []byte(tc.doc))
				var verr *catalog.ValidationError
				switch {
				case err == nil:
					t.Fatalf("update=%v: stored %+v", update, e)
				case tc.invalid && (!errors.As(err, &verr) || !issues.HasErrors()):
					t.Fatalf("update=%v: error %v (%T), issues %v; want a validation error", update, err, err, issues)
				case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
					t.Fatalf("update=%v: error %v, want %v", update, err, tc.wantErr)
				}
			}
			if tc.storedName != "" {
				if got := versions(t, s, "acme", tc.kind, tc.storedName); got != "none" {
					t.Errorf("a rejected write stored versions %s", got)
				}
			}
		})
	}
	// Nothing but the one good entity made it in.
	var n int
	if err := s.DB().GetContext(ctx, &n, `SELECT count(*) FROM catalog_entities`); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d rows stored, want 1", n)
	}

	for _, tc := range []struct {
		name string
		run  func() error
		want error
	}{
		{"read unknown tenant", func() error {
			_, _, err := s.Entity(ctx, "nobody", catalog.KindImageType, "debian", 0)
			return err
		}, store.ErrNotFound},
		{"versions unknown tenant", func() error {
			_, err := s.EntityVersions(ctx, "nobody", catalog.KindImageType, "debian")
			return err
		}, store.ErrNotFound},
		{"delete unknown tenant", func() error {
			return s.DeleteEntity(ctx, "nobody", catalog.KindImageType, "debian", 0)
		}, store.ErrNotFound},
		{"shared kind from unknown tenant", func() error {
			_, _, err := s.Entity(ctx, "nobody", catalog.KindAutomatorType, "shell", 0)
			return err
		}, store.ErrNotFound},
		{"other tenant's entity", func() error {
			_, _, err := s.Entity(ctx, store.SuperadminTenant, catalog.KindImageType, "debian", 0)
			return err
		}, store.ErrNotFound},
		{"export unknown tenant", func() error {
			_, err := s.ExportCatalog(ctx, "nobody")
			return err
		}, store.ErrNotFound},
		{"import unknown tenant", func() error {
			_, err := s.ImportCatalog(ctx, "nobody", catalog.New())
			return err
		}, store.ErrNotFound},
	} {
		if err := tc.run(); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSharedKinds checks that driver descriptors live under superadmin
// whichever tenant writes or reads them.
func TestSharedKinds(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	ensure(t, s, "acme", "other")
	shell, err := os.ReadFile(filepath.Join("..", "examples", "catalog", "automatortypes", "shell.json"))
	if err != nil {
		t.Fatal(err)
	}
	const k = catalog.KindAutomatorType
	if _, _, err := s.CreateEntity(ctx, "acme", k, shell); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateEntity(ctx, "other", k, shell); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second tenant creating the same shared type: %v, want ErrConflict", err)
	}
	for _, tenant := range []string{"acme", "other", store.SuperadminTenant} {
		e, v, err := s.Entity(ctx, tenant, k, "shell", 0)
		if err != nil || v != 1 || e.Value.(*catalog.PluginType).Name != "shell" {
			t.Fatalf("read from %s: %v, v%d, %v", tenant, e, v, err)
		}
		if n := len(mustExport(t, s, tenant).Names(k)); n != 1 {
			t.Errorf("export of %s holds %d automator types, want 1", tenant, n)
		}
	}
	var owner string
	if err := s.DB().GetContext(ctx, &owner, `
		SELECT t.name FROM catalog_entities e JOIN tenants t ON t.id = e.tenant_id WHERE e.kind = $1`, k); err != nil {
		t.Fatal(err)
	}
	if owner != store.SuperadminTenant {
		t.Errorf("shared type stored under %q", owner)
	}
	if _, _, err := s.UpdateEntity(ctx, "other", k, shell); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, s, "acme", k, "shell"); got != "[1 2]" {
		t.Errorf("versions seen by acme after other's update: %s", got)
	}
	if err := s.DeleteEntity(ctx, "acme", k, "shell", 0); err != nil {
		t.Fatal(err)
	}
	if got := versions(t, s, store.SuperadminTenant, k, "shell"); got != "none" {
		t.Errorf("versions after delete: %s", got)
	}
}
