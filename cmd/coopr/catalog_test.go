package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
)

var pluginTypesDir = filepath.Join("..", "..", "..", "shared", "catalogs", "coopr-plugin-types")

func TestCatalogValidate(t *testing.T) {
	out, _, code := runCLI(t, "catalog", "validate", templatesDir)
	if code != 0 || !strings.Contains(out, "92 entities, 0 errors") {
		t.Fatalf("exit %d: %s", code, out)
	}
	if _, _, code := runCLI(t, "catalog", "validate", "--strict", templatesDir); code != 1 {
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
	if code != 0 || !strings.Contains(out, "exported 99 entities") {
		t.Fatalf("export: exit %d: %s %s", code, out, errOut)
	}
	// import → export → import is lossless: nothing changes on re-import.
	out, errOut, code = runCLI(t, "catalog", "import", exported)
	if code != 0 || !strings.Contains(out, "0 created, 0 updated, 99 unchanged, 0 deleted") {
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
	if out, _, code := runCLI(t, "catalog", "export", again); code != 0 || !strings.Contains(out, "exported 99 entities") {
		t.Fatalf("after failed import: %s", out)
	}
	// Another tenant starts empty but sees the shared types.
	if out, errOut, code := runCLI(t, "catalog", "import", "--tenant", "acme", filepath.Join(templatesDir, "services", "base.json")); code != 0 {
		t.Fatalf("tenant import: %s %s", out, errOut)
	}
	acme := t.TempDir()
	out, _, _ = runCLI(t, "catalog", "export", "--tenant", "acme", acme)
	if !strings.Contains(out, "exported 8 entities") {
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
