package solver

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/cooprcompat"
)

func load(t testing.TB, dir string) *catalog.Catalog {
	t.Helper()
	c, issues, err := catalog.LoadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if issues.HasErrors() {
		t.Fatalf("%s: %v", dir, issues.Err())
	}
	return c
}

// testCatalog is the repository's test catalog (lamp, hadoop-distributed).
func testCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	return load(t, filepath.Join("..", "testdata", "catalog", "templates"))
}

// TestCooprCatalogTemplates solves every template of Coopr's public catalog
// at sizes 1, 3 and 10 and checks each result against the rules, or that the
// failure is the one the template's own constraints call for.
func TestCooprCatalogTemplates(t *testing.T) {
	solveEvery(t, load(t, cooprcompat.Catalog(t, "coopr-templates")))
}

// TestOwnCatalogTemplates does the same for the repository's catalogs.
func TestOwnCatalogTemplates(t *testing.T) {
	t.Run("examples", func(t *testing.T) { solveEvery(t, load(t, filepath.Join("..", "examples", "catalog"))) })
	t.Run("testdata", func(t *testing.T) { solveEvery(t, testCatalog(t)) })
}

// solveEvery solves every template of c at sizes 1, 3 and 10 and checks
// each result against the rules, or that the failure is the one the
// template's own constraints call for.
func solveEvery(t *testing.T, c *catalog.Catalog) {
	cat := FromCatalog(c)
	for _, name := range c.Names(catalog.KindClusterTemplate) {
		tmpl, err := catalog.Resolve(name, c.ClusterTemplates(), c.PartialTemplates())
		must(t, err)
		for _, n := range []int{1, 3, 10} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				cl := Cluster{ID: "00000042", Name: name}
				sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: n}, cl)
				if err != nil {
					var se *Error
					if !errors.As(err, &se) {
						t.Fatalf("untyped error %v", err)
					}
					switch {
					case se.Kind == KindSizeConstraint && (n < max(1, tmpl.Constraints.Size.Min) || tmpl.Constraints.Size.Max != nil && n > *tmpl.Constraints.Size.Max):
					case se.Kind == KindNoImageType && !slices.Contains(tmpl.Compatibility.ImageTypes, tmpl.Defaults.ImageType):
						// Coopr's docker-base pins an image type its own
						// compatibility list leaves out.
					case se.Kind == KindUnknownService && slices.ContainsFunc(tmpl.Defaults.ServiceNames(), func(s string) bool { return cat.Services[s] == nil }):
					case se.Kind == KindNoLayout:
						// Must be a real impossibility: no vector meets the quantities.
						ls, lerr := PreferredNodeLayouts(tmpl, tmpl.Defaults.ServiceNames(), []string{tmpl.Defaults.HardwareType}, []string{tmpl.Defaults.ImageType}, 0)
						must(t, lerr)
						if got := bruteGreatest(tmpl, tmpl.Defaults.ServiceNames(), ls, n); got != nil {
							t.Fatalf("no_layout, but %v is valid", got)
						}
					default:
						t.Fatalf("unexpected failure: %s: %v", se.Kind, err)
					}
					t.Logf("%s: %v", se.Kind, err)
					return
				}
				checkSolution(t, tmpl, cat, sol, n, cl)
				again, err := Solve(Request{Template: tmpl, Catalog: cat, Size: n}, cl)
				must(t, err)
				if fmt.Sprint(again) != fmt.Sprint(sol) {
					t.Fatalf("not deterministic")
				}
			})
		}
	}
}

func checkSolution(t *testing.T, tmpl *catalog.Template, cat Catalog, sol *Solution, n int, cl Cluster) {
	t.Helper()
	if v := ValidateLayout(tmpl, sol.Layout); len(v) > 0 {
		t.Fatalf("layout breaks the rules: %v", v)
	}
	if len(sol.Nodes) != n {
		t.Fatalf("%d nodes, want %d", len(sol.Nodes), n)
	}
	unconstrained := UnconstrainedServices(tmpl, tmpl.Defaults.ServiceNames())
	for i, nd := range sol.Nodes {
		if nd.NodeNum != FirstNodeNum+i || nd.Hostname != Hostname(cl.Name, cl.ID, nd.NodeNum, tmpl.Defaults.DNSSuffix) || nd.ID != NodeID(cl.ID, nd.NodeNum) {
			t.Fatalf("node %d: %+v", i, nd)
		}
		for _, u := range unconstrained {
			if !slices.Contains(nd.Services, u) {
				t.Fatalf("node %d lacks unconstrained service %s", nd.NodeNum, u)
			}
		}
		if nd.Flavor == "" || nd.Image == "" {
			t.Fatalf("node %d has no flavor or image: %+v", nd.NodeNum, nd)
		}
	}
	for i := 1; i < len(sol.Layout); i++ {
		if !sol.Layout[i-1].NodeLayout.Less(sol.Layout[i].NodeLayout) {
			t.Fatalf("layout not in preference order: %v", sol.Layout)
		}
	}
	if !slices.Equal(sol.Services, catalog.SortedUnion(tmpl.Defaults.ServiceNames())) {
		t.Fatalf("cluster services = %v, want %v", sol.Services, tmpl.Defaults.ServiceNames())
	}
}
