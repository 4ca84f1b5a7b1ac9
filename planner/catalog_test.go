package planner

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/solver"
)

func loadShared(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, issues, err := catalog.LoadPath(filepath.Join("..", "..", "shared", "catalogs", "coopr-templates"))
	if err != nil {
		t.Fatal(err)
	}
	if issues.HasErrors() {
		t.Fatal(issues.Err())
	}
	return c
}

// solvedNodes solves a template of Coopr's public catalog at size n.
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
	c := loadShared(t)
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
	if planned < 50 {
		t.Errorf("only %d plans", planned)
	}
}
