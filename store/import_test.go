package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

func TestImportExportRoundTrip(t *testing.T) {
	t.Parallel()
	importExportRoundTrip(t, testCatalog(t))
}

// TestImportCooprCatalog: Coopr's whole published catalog imports, exports
// and imports again unchanged.
func TestImportCooprCatalog(t *testing.T) {
	t.Parallel()
	importExportRoundTrip(t, cooprCatalog(t))
}

// importExportRoundTrip imports c into a tenant, exports it and imports
// the export and c again: nothing changes and nothing is lost.
func importExportRoundTrip(t *testing.T, c *catalog.Catalog) {
	t.Helper()
	s := storetest.New(t)
	ensure(t, s, "acme")
	total := c.Len()

	if got, want := mustImport(t, s, "acme", c), (store.ImportResult{Created: total}); got != want {
		t.Fatalf("first import = %+v, want %+v", got, want)
	}
	out := mustExport(t, s, "acme")
	sameContent(t, c, out)
	for _, k := range catalog.Kinds {
		for _, e := range out.Entities(k) {
			if e.File != string(k)+"/"+e.Name+".json" || e.Value == nil || decode(t, e.Raw)["version"] != 1.0 {
				t.Fatalf("exported %s %q: file %q, value %T, raw %s", k, e.Name, e.File, e.Value, e.Raw)
			}
		}
	}

	// The export (now carrying versions) imports as a no-op, and so does the
	// original again.
	for _, again := range []*catalog.Catalog{out, c} {
		if got, want := mustImport(t, s, "acme", again), (store.ImportResult{Unchanged: total}); got != want {
			t.Fatalf("re-import = %+v, want %+v", got, want)
		}
	}
	out2 := mustExport(t, s, "acme")
	for _, k := range catalog.Kinds {
		for _, e := range out.Entities(k) {
			e2, ok := out2.Get(k, e.Name)
			if !ok || string(e2.Raw) != string(e.Raw) {
				t.Fatalf("%s %q changed across a no-op import: %s → %v", k, e.Name, e.Raw, e2)
			}
		}
	}
	if out2.Len() != total {
		t.Fatalf("second export holds %d entities, want %d", out2.Len(), total)
	}
	// The bundle of an export is loadable by the catalog package.
	b, err := out2.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	back := catalog.New()
	if issues := back.AddDocument("", "bundle.json", b); issues.HasErrors() {
		t.Fatal(issues.Err())
	}
	sameContent(t, c, back)
}

func TestImportChanges(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ensure(t, s, "acme")
	ctx := t.Context()
	c := testCatalog(t)
	total := c.Len()
	mustImport(t, s, "acme", c)

	// Entities created outside the import are replaced too.
	if _, _, err := s.CreateEntity(ctx, "acme", catalog.KindImageType, []byte(debV1)); err != nil {
		t.Fatal(err)
	}
	svc := c.Names(catalog.KindService)[0]
	gone := c.Names(catalog.KindService)[1]
	pt := c.Names(catalog.KindProviderType)[0]
	changed := without(withDescription(t, c, catalog.KindService, svc, "changed"), catalog.KindService, gone)
	changed = without(changed, catalog.KindProviderType, pt)

	got := mustImport(t, s, "acme", changed)
	want := store.ImportResult{Updated: 1, Unchanged: total - 3, Deleted: 2}
	if got != want {
		t.Fatalf("import = %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		kind     catalog.Kind
		name     string
		versions string
	}{
		{catalog.KindService, svc, "[1 2]"},
		{catalog.KindService, gone, "none"},
		{catalog.KindImageType, "debian", "none"},
		// A shared type missing from one tenant's import stays.
		{catalog.KindProviderType, pt, "[1]"},
	} {
		if got := versions(t, s, "acme", tc.kind, tc.name); got != tc.versions {
			t.Errorf("%s %q versions %s, want %s", tc.kind, tc.name, got, tc.versions)
		}
	}
	out := mustExport(t, s, "acme")
	if e, _ := out.Get(catalog.KindService, svc); e.Value.(*catalog.Service).Description != "changed" ||
		e.Value.(*catalog.Service).Version != 2 {
		t.Errorf("exported %s: %s", svc, e.Raw)
	}
	sameContent(t, with(t, changed, catalog.KindProviderType, string(mustGet(t, c, catalog.KindProviderType, pt).Raw)), out)

	// Changing a shared type through a tenant import versions it under
	// superadmin.
	got = mustImport(t, s, "acme", withDescription(t, c, catalog.KindProviderType, pt, "new"))
	want = store.ImportResult{Created: 1, Updated: 2, Unchanged: total - 3}
	if got != want {
		t.Fatalf("import = %+v, want %+v", got, want)
	}
	if got := versions(t, s, store.SuperadminTenant, catalog.KindProviderType, pt); got != "[1 2]" {
		t.Errorf("shared type versions %s", got)
	}

	// Importing nothing empties the tenant but keeps the shared types.
	got = mustImport(t, s, "acme", catalog.New())
	if want := (store.ImportResult{Deleted: kindCount(c, false)}); got != want {
		t.Fatalf("empty import = %+v, want %+v", got, want)
	}
	out = mustExport(t, s, "acme")
	if out.Len() != kindCount(c, true) || kindCount(out, false) != 0 {
		t.Errorf("after an empty import the export holds %d entities", out.Len())
	}
}

func mustGet(t testing.TB, c *catalog.Catalog, k catalog.Kind, name string) *catalog.Entity {
	t.Helper()
	e, ok := c.Get(k, name)
	if !ok {
		t.Fatalf("no %s %q", k, name)
	}
	return e
}

// TestImportFailureStoresNothing makes imports fail before, and in the middle
// of, their transaction and checks that everything stored is as before.
func TestImportFailureStoresNothing(t *testing.T) {
	t.Parallel()
	real := testCatalog(t)
	// A valid document Postgres refuses: jsonb cannot hold NUL. Named to
	// sort late, and a service, so the delete and part of the work precede
	// the failure.
	nul := with(t, real, catalog.KindService, `{"name": "zzz", "description": "\u0000",
		"dependencies": {"install": {}, "runtime": {}}, "provisioner": {"actions": {}}}`)
	broken := catalog.New()
	broken.Merge(real)
	broken.Put(&catalog.Entity{Kind: catalog.KindService, Name: "broken", Raw: json.RawMessage(`{"name": "broken",`)})
	invalid := catalog.New()
	invalid.Merge(real)
	invalid.Put(&catalog.Entity{Kind: catalog.KindImageType, Name: "bad", Raw: json.RawMessage(`{"name": "bad", "providermap": 3}`)})

	cases := []struct {
		name    string
		c       *catalog.Catalog
		invalid bool // fails validation, before the transaction
		block   bool // hold a row the import must insert, and time out
	}{
		{name: "invalid JSON", c: broken, invalid: true},
		{name: "invalid entity", c: invalid, invalid: true},
		{name: "database refuses a document", c: nul},
		{name: "context ends mid-way", c: with(t, real, catalog.KindImageType, `{"name": "zzz", "providermap": {}}`), block: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := storetest.New(t)
			ctx := t.Context()
			ensure(t, s, "acme")
			// The baseline has an entity the failing import would delete
			// and one it would change; superadmin has no shared types yet.
			base := catalog.New()
			for _, k := range catalog.Kinds {
				if !k.Shared() {
					for _, e := range real.Entities(k) {
						base.Put(e)
					}
				}
			}
			base = withDescription(t, base, catalog.KindService, base.Names(catalog.KindService)[0], "baseline")
			base = with(t, base, catalog.KindImageType, debV1)
			mustImport(t, s, "acme", base)
			before := snapshot(t, s)

			ictx := ctx
			if tc.block {
				// Another transaction inserts the row the import will want,
				// without committing: the import deletes "debian", then waits
				// on the key until its context ends.
				other, err := s.DB().BeginTxx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer other.Rollback()
				if _, err := other.ExecContext(ctx, `
					INSERT INTO catalog_entities (tenant_id, kind, name, version, body)
					SELECT id, 'imagetypes', 'zzz', 1, '{}' FROM tenants WHERE name = 'acme'`); err != nil {
					t.Fatal(err)
				}
				var cancel context.CancelFunc
				ictx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			res, err := s.ImportCatalog(ictx, "acme", tc.c)
			var verr *catalog.ValidationError
			switch {
			case err == nil:
				t.Fatalf("import succeeded: %+v", res)
			case tc.invalid != errors.As(err, &verr):
				t.Fatalf("import error %v (%T), want validation error: %v", err, err, tc.invalid)
			}
			t.Logf("import failed as intended: %v", err)
			if after := snapshot(t, s); !reflect.DeepEqual(before, after) {
				t.Errorf("a failed import changed the store:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// snapshot lists every stored row as comparable text.
func snapshot(t testing.TB, s *store.Store) []string {
	t.Helper()
	var rows []string
	if err := s.DB().SelectContext(t.Context(), &rows, `
		SELECT t.name || ' ' || e.kind || ' ' || e.name || ' ' || e.version || ' ' || e.body::text
		FROM catalog_entities e JOIN tenants t ON t.id = e.tenant_id
		ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestTenantsIsolated(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	ensure(t, s, "a", "b")
	real := testCatalog(t)
	mustImport(t, s, "a", real)

	// b has its own entity of a name a also uses, and sees only the shared
	// part of a's import.
	svc := real.Names(catalog.KindService)[0]
	own := withDescription(t, real, catalog.KindService, svc, "b's own")
	e := mustGet(t, own, catalog.KindService, svc)
	if _, _, err := s.CreateEntity(ctx, "b", catalog.KindService, e.Raw); err != nil {
		t.Fatal(err)
	}
	outB := mustExport(t, s, "b")
	if got, want := kindCount(outB, false), 1; got != want {
		t.Fatalf("b exports %d own entities, want %d", got, want)
	}
	if got, want := kindCount(outB, true), kindCount(real, true); got != want {
		t.Fatalf("b exports %d shared entities, want %d", got, want)
	}
	got, _, err := s.Entity(ctx, "a", catalog.KindService, svc, 0)
	if err != nil || got.Value.(*catalog.Service).Description == "b's own" {
		t.Fatalf("a's %s: %v, %v", svc, got, err)
	}

	// Replacing b's catalog leaves a's alone, and the reverse.
	mustImport(t, s, "b", catalog.New())
	sameContent(t, real, mustExport(t, s, "a"))
	mustImport(t, s, "a", catalog.New())
	if _, _, err := s.CreateEntity(ctx, "b", catalog.KindService, e.Raw); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEntity(ctx, "a", catalog.KindService, svc, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleting b's entity: %v", err)
	}
	if got := versions(t, s, "b", catalog.KindService, svc); got != "[1]" {
		t.Errorf("b's %s versions %s", svc, got)
	}
}

// TestConcurrentImports runs imports of two catalogs into one tenant, and
// into a second tenant, all at once. Each must see the tenant as some serial
// order of the imports would, and the end state must be one whole catalog.
func TestConcurrentImports(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ensure(t, s, "a", "b")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a deadlock fails, not hangs
	defer cancel()

	ca := testCatalog(t)
	svcs := ca.Names(catalog.KindService)
	cb := without(withDescription(t, ca, catalog.KindService, svcs[0], "B"), catalog.KindService, svcs[1])
	n := ca.Len()
	shared := kindCount(ca, true)
	// Every result a serial order of the imports can give. Tenant a gets
	// both catalogs, b only B; the shared types are identical in both, so
	// whichever tenant imports second finds them unchanged.
	serial := map[store.ImportResult]string{
		{Created: n}:                                 "nothing → A",
		{Created: n - shared, Unchanged: shared}:     "nothing → A, shared types already there",
		{Created: n - 1}:                             "nothing → B",
		{Created: n - 1 - shared, Unchanged: shared}: "nothing → B, shared types already there",
		{Unchanged: n}:                               "A → A",
		{Unchanged: n - 1}:                           "B → B",
		{Updated: 1, Unchanged: n - 2, Deleted: 1}:   "A → B",
		{Created: 1, Updated: 1, Unchanged: n - 2}:   "B → A",
	}

	type result struct {
		tenant string
		res    store.ImportResult
		err    error
	}
	results := make(chan result, 16)
	var wg sync.WaitGroup
	for i := range 16 {
		tenant := "a"
		if i%4 == 3 {
			tenant = "b"
		}
		c := ca
		if i%2 == 1 {
			c = cb
		}
		wg.Go(func() {
			res, err := s.ImportCatalog(ctx, tenant, c)
			results <- result{tenant, res, err}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil {
			t.Errorf("import into %s: %v", r.tenant, r.err)
			continue
		}
		if _, ok := serial[r.res]; !ok {
			t.Errorf("import into %s = %+v: no serial order gives that", r.tenant, r.res)
		}
	}
	for _, tenant := range []string{"a", "b"} {
		out := mustExport(t, s, tenant)
		// Shared types come from either import; compare tenant kinds only.
		if !reflect.DeepEqual(ownContent(t, out), ownContent(t, ca)) &&
			!reflect.DeepEqual(ownContent(t, out), ownContent(t, cb)) {
			t.Errorf("%s ends as a mix of the catalogs", tenant)
		}
		// Versions stay gap-free: no two writers took the same max+1.
		for _, k := range catalog.Kinds {
			for _, name := range out.Names(k) {
				vs, err := s.EntityVersions(ctx, tenant, k, name)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range vs {
					if v != i+1 {
						t.Fatalf("%s %s %q versions %v", tenant, k, name, vs)
					}
				}
			}
		}
	}
}

func ownContent(t testing.TB, c *catalog.Catalog) string {
	t.Helper()
	m := content(t, c)
	for k := range m {
		if k.Shared() {
			delete(m, k)
		}
	}
	return fmt.Sprint(m)
}
