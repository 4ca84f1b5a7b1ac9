package catalog

import (
	"path/filepath"
	"testing"
)

func sharedDir(t testing.TB, p string) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "shared", p))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLoadCooprCatalog(t *testing.T) {
	for _, dir := range []string{"catalogs/coopr-templates", "catalogs/coopr-plugin-types"} {
		c, issues, err := LoadPath(sharedDir(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range issues {
			t.Log(i)
		}
		if issues.HasErrors() {
			t.Fatalf("%s: %d errors", dir, len(issues.Errors()))
		}
		t.Logf("%s: %d entities", dir, c.Len())
	}
}
