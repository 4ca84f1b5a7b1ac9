package planner

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/cooprcompat"
	"github.com/cooprhq/coopr/solver"
)

func load(t testing.TB, dir string) *catalog.Catalog {
	t.Helper()
	c, issues, err := catalog.LoadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if issues.HasErrors() {
		t.Fatal(issues.Err())
	}
	return c
}

// testCatalog is the repository's test catalog (lamp, hadoop-distributed).
func testCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	return load(t, filepath.Join("..", "testdata", "catalog", "templates"))
}

// solvedNodes solves a template of c at size n.
func solvedNodes(t testing.TB, c *catalog.Catalog, template string, n int) ([]Node, error) {
	t.Helper()
	tmpl, err := catalog.Resolve(template, c.ClusterTemplates(), c.PartialTemplates())
	if err != nil {
		t.Fatal(err)
	}
	sol, err := solver.Solve(solver.Request{Template: tmpl, Catalog: solver.FromCatalog(c), Size: n}, solver.Cluster{ID: "00000042", Name: template})
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, len(sol.Nodes))
	for i, sn := range sol.Nodes {
		nodes[i] = Node{ID: sn.ID, NodeNum: sn.NodeNum, Services: sn.Services}
	}
	return nodes, nil
}

// TestCooprCatalog plans every operation for every template of Coopr's
// public catalog that solves at 5 nodes, and checks the invariants.
func TestCooprCatalog(t *testing.T) {
	if n := planEvery(t, load(t, cooprcompat.Catalog(t, "coopr-templates"))); n < 50 {
		t.Errorf("only %d plans", n)
	}
}

// TestOwnCatalogs does the same for the repository's catalogs.
func TestOwnCatalogs(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *catalog.Catalog
		want int // every operation of every template, but scaling single
	}{
		// Four templates; the two single-node ones cannot scale.
		{"examples", load(t, filepath.Join("..", "examples", "catalog")), 4*len(ClusterActions) - 4},
		{"testdata", testCatalog(t), 2 * len(ClusterActions)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := planEvery(t, tc.c); n != tc.want {
				t.Errorf("%d plans, want %d", n, tc.want)
			}
		})
	}
}

// planEvery plans every operation for every template of c that solves at
// 5 nodes (or else 1), checks the invariants and returns how many plans it
// made.
func planEvery(t *testing.T, c *catalog.Catalog) int {
	t.Helper()
	services := c.Services()
	planned := 0
	for _, name := range c.Names(catalog.KindClusterTemplate) {
		nodes, err := solvedNodes(t, c, name, 5)
		if err != nil {
			if nodes, err = solvedNodes(t, c, name, 1); err != nil {
				t.Logf("%s does not solve at 5 or 1 nodes: %v", name, err)
				continue
			}
		}
		for _, action := range ClusterActions {
			if len(nodes) < 2 && (action == ScaleOut || action == ScaleIn) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", name, action), func(t *testing.T) {
				r := &Request{Action: action, Services: services, Nodes: nodes, Network: true, Restart: true}
				switch action {
				case ScaleOut:
					r.NewNodes = []string{nodes[len(nodes)-1].ID}
				case ScaleIn:
					r.RemovedNodes = []string{nodes[len(nodes)-1].ID}
				}
				p := mustBuild(t, r)
				checkPlan(t, p)
				// Every node comes or goes; other operations may have
				// nothing to do (services without start, say).
				if lifecycle := action == ClusterCreate || action == ClusterDelete; lifecycle && len(p.Tasks) < len(nodes) {
					t.Fatalf("%d tasks for %d nodes", len(p.Tasks), len(nodes))
				}
				again := mustBuild(t, r)
				if again.Hash() != p.Hash() {
					t.Fatal("not deterministic")
				}
				planned++
			})
		}
	}
	return planned
}
