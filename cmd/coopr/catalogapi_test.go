package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The catalog commands list, show, put and delete a tenant's entities and
// export and import its catalog through the API when no database is given.
func TestCatalogAPICommands(t *testing.T) {
	t.Setenv("COOPR_DATABASE_URL", "")
	w := newCLIWorld(t)

	out, errOut, code := w.cli(t, "catalog", "list", "services")
	if code != 0 {
		t.Fatalf("catalog list services: exit %d: %s", code, errOut)
	}
	golden(t, "catalog-list-services.txt", out)
	if _, errOut, code := w.cli(t, "catalog", "list", "widgets"); code != 1 || !strings.Contains(errOut, "clustertemplates") {
		t.Errorf("catalog list widgets: exit %d: %q, want the kinds named", code, errOut)
	}

	out, errOut, code = w.cli(t, "catalog", "show", "services", "web")
	var web map[string]any
	if err := json.Unmarshal([]byte(out), &web); code != 0 || err != nil || web["name"] != "web" {
		t.Fatalf("catalog show services web: exit %d, %v: %s%s", code, err, out, errOut)
	}
	web["description"] = "changed by the CLI test"
	file := filepath.Join(t.TempDir(), "web.json")
	b, _ := json.Marshal(web)
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := w.cli(t, "catalog", "put", "SERVICES", file); code != 0 || out != "stored services web version 2\n" {
		t.Fatalf("catalog put: exit %d: %q%s", code, out, errOut)
	}
	out, _, _ = w.cli(t, "catalog", "show", "services", "web", "-o", "json")
	var shown shownEntity
	if err := json.Unmarshal([]byte(out), &shown); err != nil || shown.Version != 2 || len(shown.Versions) != 2 ||
		!strings.Contains(string(shown.Document), "changed by the CLI test") {
		t.Errorf("catalog show -o json after put: %v: %s", err, out)
	}
	out, _, _ = w.cli(t, "catalog", "show", "services", "web", "--version", "1")
	if strings.Contains(out, "changed by the CLI test") {
		t.Errorf("catalog show --version 1 shows version 2:\n%s", out)
	}
	if out, errOut, code := w.cli(t, "catalog", "delete", "services", "web", "--version", "2"); code != 0 || out != "deleted version 2 of services web\n" {
		t.Errorf("catalog delete --version 2: exit %d: %q%s", code, out, errOut)
	}
	if _, errOut, code := w.cli(t, "catalog", "show", "services", "nosuch"); code != 1 || !strings.Contains(errOut, "services nosuch: not found") {
		t.Errorf("catalog show services nosuch: exit %d: %q", code, errOut)
	}

	dir := filepath.Join(t.TempDir(), "exported")
	out, errOut, code = w.cli(t, "catalog", "export", dir)
	if code != 0 || !strings.HasPrefix(out, "exported ") {
		t.Fatalf("catalog export: exit %d: %s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "services", "web.json")); err != nil {
		t.Errorf("the export lacks services/web.json: %v", err)
	}
	// The tenant's own kinds come back unchanged (the shared provider and
	// automator types are the superadmin's to import).
	if err := os.RemoveAll(filepath.Join(dir, "providertypes")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "automatortypes")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = w.cli(t, "catalog", "import", dir)
	if code != 0 || !strings.Contains(out, "0 created, 0 updated") || !strings.Contains(out, "0 deleted") {
		t.Errorf("catalog import of the export: exit %d: %s%s", code, out, errOut)
	}
}
