package catalog

import (
	"path/filepath"
	"testing"

	"github.com/cooprhq/coopr/internal/cooprcompat"
)

// ownCatalogs are the repository's catalogs by name: the example one, the
// test catalog's two halves and the partial templates of testdata.
var ownCatalogs = map[string]string{
	"examples":       filepath.Join("..", "examples", "catalog"),
	"test-types":     filepath.Join("..", "testdata", "catalog", "types"),
	"test-templates": filepath.Join("..", "testdata", "catalog", "templates"),
	"partials":       filepath.Join("testdata", "partials"),
}

func TestLoadCooprCatalog(t *testing.T) {
	for _, name := range []string{"coopr-templates", "coopr-plugin-types"} {
		c, issues, err := LoadPath(cooprcompat.Catalog(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range issues {
			t.Log(i)
		}
		if issues.HasErrors() {
			t.Fatalf("%s: %d errors", name, len(issues.Errors()))
		}
		t.Logf("%s: %d entities", name, c.Len())
	}
}

// TestLoadOwnCatalogs: the repository's catalogs load without errors, and
// all but the deliberately odd partials without warnings.
func TestLoadOwnCatalogs(t *testing.T) {
	for name, dir := range ownCatalogs {
		c, issues, err := LoadPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		if issues.HasErrors() || len(issues) > 0 && name != "partials" {
			t.Errorf("%s: %v", dir, issues)
		}
		if c.Len() == 0 {
			t.Errorf("%s is empty", dir)
		}
	}
}
