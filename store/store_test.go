package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sync"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/cooprcompat"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestMigrate(t *testing.T) {
	t.Parallel()
	s := storetest.New(t) // has migrated once already
	ctx := t.Context()
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	// Servers starting together migrate concurrently.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() { errs <- s.Migrate(ctx) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}

	sa, err := s.Tenant(ctx, store.SuperadminTenant)
	if err != nil {
		t.Fatalf("superadmin after Migrate: %v", err)
	}
	if !uuidRE.MatchString(sa.ID) || sa.Name != store.SuperadminTenant || sa.Workers != 0 ||
		sa.MaxClusters != nil || sa.MaxNodes != nil || sa.CreatedAt.IsZero() {
		t.Errorf("superadmin = %+v, want a uuid, 0 workers, no quotas", sa)
	}
	var n int
	if err := s.DB().GetContext(ctx, &n, `SELECT count(*) FROM tenants`); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d tenants after migrating three times, want 1", n)
	}
}

func TestTenants(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()

	if _, err := s.Tenant(ctx, "acme"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Tenant(missing) error = %v, want ErrNotFound", err)
	}
	if _, err := s.EnsureTenant(ctx, ""); err == nil {
		t.Error("EnsureTenant(\"\") succeeded")
	}

	// Concurrent first calls must agree on one tenant.
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			tn, err := s.EnsureTenant(ctx, "acme")
			ids[i], errs[i] = tn.ID, err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("EnsureTenant: %v", errs[i])
		}
		if ids[i] != ids[0] || !uuidRE.MatchString(ids[i]) {
			t.Fatalf("EnsureTenant ids %q, want one uuid", ids)
		}
	}
	got, err := s.Tenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ids[0] || got.Name != "acme" || got.Description != "" || got.Workers != 0 ||
		got.MaxClusters != nil || got.MaxNodes != nil {
		t.Errorf("Tenant(acme) = %+v", got)
	}
	sa, err := s.EnsureTenant(ctx, store.SuperadminTenant)
	if err != nil || sa.ID == got.ID {
		t.Errorf("EnsureTenant(superadmin) = %+v, %v", sa, err)
	}
}

// load reads and merges the catalogs in dirs.
func load(t testing.TB, dirs ...string) *catalog.Catalog {
	t.Helper()
	c := catalog.New()
	for _, dir := range dirs {
		part, issues, err := catalog.LoadPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		if issues.HasErrors() {
			t.Fatalf("%s: %v", dir, issues.Err())
		}
		c.Merge(part)
	}
	if c.Len() == 0 {
		t.Fatalf("%v hold no catalog", dirs)
	}
	return c
}

// testCatalog is the repository's test catalog, driver types and
// templates merged.
func testCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	return load(t, filepath.Join("..", "testdata", "catalog", "types"), filepath.Join("..", "testdata", "catalog", "templates"))
}

// cooprCatalog is Coopr's published templates and plugin types, merged.
func cooprCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	return load(t, cooprcompat.Catalog(t, "coopr-templates"), cooprcompat.Catalog(t, "coopr-plugin-types"))
}

// without returns a copy of c lacking the named entity.
func without(c *catalog.Catalog, k catalog.Kind, name string) *catalog.Catalog {
	out := catalog.New()
	for _, kk := range catalog.Kinds {
		for _, e := range c.Entities(kk) {
			if kk != k || e.Name != name {
				out.Put(e)
			}
		}
	}
	return out
}

// with returns a copy of c with the document added or replacing its namesake.
func with(t testing.TB, c *catalog.Catalog, k catalog.Kind, doc string) *catalog.Catalog {
	t.Helper()
	out := catalog.New()
	out.Merge(c)
	if issues := out.AddDocument(k, "", []byte(doc)); issues.HasErrors() {
		// AddDocument refuses a second definition; replace by hand.
		v, is := catalog.ParseEntity(k, "", []byte(doc))
		if is.HasErrors() {
			t.Fatalf("test document: %v", is.Err())
		}
		out.Put(&catalog.Entity{Kind: k, Name: nameOf(t, doc), Raw: json.RawMessage(doc), Value: v})
	}
	return out
}

// withDescription returns a copy of c in which one entity's description is
// changed.
func withDescription(t testing.TB, c *catalog.Catalog, k catalog.Kind, name, desc string) *catalog.Catalog {
	t.Helper()
	e, ok := c.Get(k, name)
	if !ok {
		t.Fatalf("no %s %q in the catalog", k, name)
	}
	doc := decode(t, e.Raw)
	doc["description"] = desc
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	out := without(c, k, name)
	v, is := catalog.ParseEntity(k, "", b)
	if is.HasErrors() {
		t.Fatal(is.Err())
	}
	out.Put(&catalog.Entity{Kind: k, Name: name, Raw: b, Value: v})
	return out
}

func nameOf(t testing.TB, doc string) string {
	t.Helper()
	name, _ := decode(t, []byte(doc))["name"].(string)
	return name
}

func decode(t testing.TB, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return m
}

// content is a catalog as comparable data: kind → name → document without
// its "version", which the store owns.
func content(t testing.TB, c *catalog.Catalog) map[catalog.Kind]map[string]map[string]any {
	t.Helper()
	out := map[catalog.Kind]map[string]map[string]any{}
	for _, k := range catalog.Kinds {
		for _, e := range c.Entities(k) {
			if out[k] == nil {
				out[k] = map[string]map[string]any{}
			}
			doc := decode(t, e.Raw)
			delete(doc, "version")
			out[k][e.Name] = doc
		}
	}
	return out
}

// sameContent fails the test unless the catalogs hold the same documents,
// ignoring "version".
func sameContent(t testing.TB, want, got *catalog.Catalog) {
	t.Helper()
	w, g := content(t, want), content(t, got)
	if reflect.DeepEqual(w, g) {
		return
	}
	for _, k := range catalog.Kinds {
		for name, doc := range w[k] {
			if gd, ok := g[k][name]; !ok {
				t.Errorf("%s %q missing", k, name)
			} else if !reflect.DeepEqual(doc, gd) {
				t.Errorf("%s %q = %v, want %v", k, name, gd, doc)
			}
		}
		for name := range g[k] {
			if _, ok := w[k][name]; !ok {
				t.Errorf("%s %q unexpected", k, name)
			}
		}
	}
}

func kindCount(c *catalog.Catalog, shared bool) int {
	n := 0
	for _, k := range catalog.Kinds {
		if k.Shared() == shared {
			n += len(c.Names(k))
		}
	}
	return n
}

func ensure(t testing.TB, s *store.Store, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := s.EnsureTenant(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
}

func mustImport(t testing.TB, s *store.Store, tenant string, c *catalog.Catalog) store.ImportResult {
	t.Helper()
	res, err := s.ImportCatalog(t.Context(), tenant, c)
	if err != nil {
		t.Fatalf("import into %s: %v", tenant, err)
	}
	return res
}

func mustExport(t testing.TB, s *store.Store, tenant string) *catalog.Catalog {
	t.Helper()
	c, err := s.ExportCatalog(t.Context(), tenant)
	if err != nil {
		t.Fatalf("export %s: %v", tenant, err)
	}
	return c
}

func versions(t testing.TB, s *store.Store, tenant string, k catalog.Kind, name string) string {
	t.Helper()
	vs, err := s.EntityVersions(t.Context(), tenant, k, name)
	if errors.Is(err, store.ErrNotFound) {
		return "none"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(vs)
}
