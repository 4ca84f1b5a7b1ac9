package server_test

import (
	"strings"
	"testing"
)

// A tenant admin's export carries the shared descriptors its catalog uses;
// importing it back is a no-op, while changing a shared one stays the
// superadmin's.
func TestTenantAdminReimportsOwnExport(t *testing.T) {
	w := newWorld(t)
	var ex struct {
		Catalog struct{ Export map[string]any }
	}
	w.s.Must(w.admin, `{ catalog { export } }`, nil, &ex)
	doc := ex.Catalog.Export
	if doc["providertypes"] == nil {
		t.Fatalf("export has no providertypes, the case under test: %v", keys(doc))
	}
	var res struct {
		ImportCatalog struct{ Created, Updated, Unchanged, Deleted int }
	}
	w.s.Must(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created updated unchanged deleted } }`,
		map[string]any{"d": doc}, &res)
	if r := res.ImportCatalog; r.Created+r.Updated+r.Deleted != 0 || r.Unchanged == 0 {
		t.Errorf("re-import of the tenant's own export = %+v, want everything unchanged", r)
	}

	pts := doc["providertypes"].([]any)
	pt := pts[0].(map[string]any)
	pt["description"] = "changed by a tenant admin"
	r := w.s.Do(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc})
	if r.Code() != "FORBIDDEN" {
		t.Fatalf("import changing a shared provider type: code %q, want FORBIDDEN (%v)", r.Code(), r.Errors)
	}
	if msg := r.Errors[0].Message; !strings.Contains(msg, "providertypes/"+pt["name"].(string)) {
		t.Errorf("refusal %q does not name the changed entity", msg)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
