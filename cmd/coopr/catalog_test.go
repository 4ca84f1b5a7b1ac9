package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
)

func TestCatalogValidate(t *testing.T) {
	for _, args := range [][]string{{templatesDir}, {"--strict", templatesDir}} {
		out, _, code := runCLI(t, append([]string{"catalog", "validate"}, args...)...)
		if code != 0 || out != "23 entities, 0 errors, 0 warnings\n" {
			t.Fatalf("validate %s: exit %d: %s", args, code, out)
		}
	}
	// A warning fails only --strict.
	warned := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(warned, "services"), 0o755))
	must(t, os.WriteFile(filepath.Join(warned, "services", "web.json"), []byte(`{"name": "web",
  "dependencies": {"runtime": {"uses": ["cache"]}}}`), 0o644))
	out, _, code := runCLI(t, "catalog", "validate", warned)
	if want := `services/web.json: dependencies.runtime.uses[0]: warning: "cache" is not a service and no service provides it`; code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d: %s, want exit 0 and %s", code, out, want)
	}
	if _, _, code := runCLI(t, "catalog", "validate", "--strict", warned); code != 1 {
		t.Fatalf("--strict with warnings: exit %d, want 1", code)
	}
	bad := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(bad, "clustertemplates"), 0o755))
	must(t, os.WriteFile(filepath.Join(bad, "clustertemplates", "lamp.json"), []byte(`{
  "name": "lamp",
  "defaults": {"services": ["base"], "provider": "p"},
  "constraints": {"services": {"mysql-server": {"quantities": {"min": 3, "max": 1}}}, "size": {"min": 0}}
}`), 0o644))
	must(t, os.WriteFile(filepath.Join(bad, "clustertemplates", "broken.json"), []byte("{\n  \"name\": \"broken\"\n  \"x\": 1\n}"), 0o644))
	out, _, code = runCLI(t, "catalog", "validate", bad)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, out)
	}
	for _, want := range []string{
		"clustertemplates/lamp.json: constraints.services.mysql-server.quantities.min: must be <= max (3 > 1)",
		"clustertemplates/lamp.json: constraints.size.min: must be >= 1 (got 0)",
		"clustertemplates/broken.json: line 3, column 3:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCatalogImportExportThroughDatabase(t *testing.T) {
	dsn, _ := storetest.NewDSN(t)
	t.Setenv("COOPR_DATABASE_URL", dsn)
	for _, dir := range []string{pluginTypesDir, templatesDir} {
		if out, errOut, code := runCLI(t, "catalog", "import", dir); code != 0 {
			t.Fatalf("import %s: exit %d: %s %s", dir, code, out, errOut)
		}
	}
	exported := t.TempDir()
	out, errOut, code := runCLI(t, "catalog", "export", exported)
	if code != 0 || !strings.Contains(out, "exported 26 entities") {
		t.Fatalf("export: exit %d: %s %s", code, out, errOut)
	}
	// import → export → import is lossless: nothing changes on re-import.
	out, errOut, code = runCLI(t, "catalog", "import", exported)
	if code != 0 || !strings.Contains(out, "0 created, 0 updated, 26 unchanged, 0 deleted") {
		t.Fatalf("re-import: exit %d: %s %s", code, out, errOut)
	}
	// A catalog with an error stores nothing.
	bad := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(bad, "services"), 0o755))
	must(t, os.WriteFile(filepath.Join(bad, "services", "x.json"), []byte(`{"name":"x","dependencies":{"install":{"requires":["nothing"]}}}`), 0o644))
	out, errOut, code = runCLI(t, "catalog", "import", bad)
	if code != 1 || !strings.Contains(errOut, "nothing was imported") {
		t.Fatalf("bad import: exit %d: %s %s", code, out, errOut)
	}
	again := t.TempDir()
	if out, _, code := runCLI(t, "catalog", "export", again); code != 0 || !strings.Contains(out, "exported 26 entities") {
		t.Fatalf("after failed import: %s", out)
	}
	// Another tenant starts empty but sees the shared types.
	if out, errOut, code := runCLI(t, "catalog", "import", "--tenant", "acme", filepath.Join(templatesDir, "services", "base.json")); code != 0 {
		t.Fatalf("tenant import: %s %s", out, errOut)
	}
	acme := t.TempDir()
	out, _, _ = runCLI(t, "catalog", "export", "--tenant", "acme", acme)
	if !strings.Contains(out, "exported 4 entities") { // 3 driver types and base
		t.Fatalf("acme export: %s", out)
	}
}

func TestDatabaseURLRequired(t *testing.T) {
	t.Setenv("COOPR_DATABASE_URL", "")
	_, errOut, code := runCLI(t, "migrate")
	if code != 1 || !strings.Contains(errOut, "COOPR_DATABASE_URL") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// A provider's sensitive field is stored sealed when the command has the
// server's credential key, refused by name without it, and never exported
// in the clear.
func TestCatalogImportSealsSensitiveFields(t *testing.T) {
	dsn, _ := storetest.NewDSN(t)
	t.Setenv("COOPR_DATABASE_URL", dsn)
	t.Setenv("COOPR_CREDENTIAL_KEY", "")
	const secret = "SensitiveMarkerNeverStoredInTheClear"
	dir := t.TempDir()
	write := func(rel, body string) {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644))
	}
	write("providertypes/keyed.json", `{"name": "keyed", "parameters": {"admin": {"fields": {
		"ssh_key": {"label": "SSH private key", "type": "password", "sensitive": true}}}}}`)
	write("providers/vault.json", `{"name": "vault", "providertype": "keyed", "provisioner": {"ssh_key": "`+secret+`"}}`)

	_, errOut, code := runCLI(t, "catalog", "import", dir)
	if code == 0 || !strings.Contains(errOut, "COOPR_CREDENTIAL_KEY") {
		t.Fatalf("import without a key: exit %d: %s", code, errOut)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	must(t, os.WriteFile(keyFile, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600))
	if out, errOut, code := runCLI(t, "catalog", "import", "--credential-key-file", keyFile, dir); code != 0 {
		t.Fatalf("import with a key: exit %d: %s %s", code, out, errOut)
	}
	exported := t.TempDir()
	if out, errOut, code := runCLI(t, "catalog", "export", exported); code != 0 {
		t.Fatalf("export: exit %d: %s %s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(exported, "providers", "vault.json"))
	must(t, err)
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "__redacted__") {
		t.Errorf("exported provider:\n%s\nwant the sensitive field redacted", b)
	}
	db, err := sqlx.Open("postgres", dsn)
	must(t, err)
	defer db.Close()
	var clear int
	must(t, db.Get(&clear, `SELECT count(*) FROM catalog_entities WHERE body::text LIKE '%' || $1 || '%'`, secret))
	if clear != 0 {
		t.Errorf("%d catalog rows hold the sensitive value in the clear", clear)
	}
}

// bundle --only splits a catalog into what the superadmin imports (the
// driver types) and what a tenant admin imports (the rest).
func TestCatalogBundleOnly(t *testing.T) {
	kinds := func(args ...string) map[string]int {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"catalog", "bundle"}, args...)...)
		if code != 0 {
			t.Fatalf("bundle %s: exit %d: %s", args, code, errOut)
		}
		var doc map[string][]json.RawMessage
		must(t, json.Unmarshal([]byte(out), &doc))
		n := map[string]int{}
		for k, es := range doc {
			if len(es) > 0 {
				n[k] = len(es)
			}
		}
		return n
	}
	cat := filepath.Join("..", "..", "examples", "catalog")
	if got, want := kinds(cat), map[string]int{"providertypes": 3, "automatortypes": 2, "providers": 3, "hardwaretypes": 1,
		"imagetypes": 1, "services": 4, "clustertemplates": 4}; !maps.Equal(got, want) {
		t.Errorf("whole bundle: %v, want %v", got, want)
	}
	if got, want := kinds("--only", "shared", cat), map[string]int{"providertypes": 3, "automatortypes": 2}; !maps.Equal(got, want) {
		t.Errorf("--only shared: %v, want %v", got, want)
	}
	if got, want := kinds("--only", "tenant", cat), map[string]int{"providers": 3, "hardwaretypes": 1, "imagetypes": 1,
		"services": 4, "clustertemplates": 4}; !maps.Equal(got, want) {
		t.Errorf("--only tenant: %v, want %v", got, want)
	}
	if _, errOut, code := runCLI(t, "catalog", "bundle", "--only", "mine", cat); code != 1 || !strings.Contains(errOut, `--only "mine"`) {
		t.Errorf("--only mine: exit %d: %s", code, errOut)
	}
}
