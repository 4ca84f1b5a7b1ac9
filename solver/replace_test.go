package solver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A scale-in may name the nodes to remove: they go instead of the highest
// numbers of their layouts, as long as what stays is a valid layout.
func TestScaleInChosenNodes(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	cl := Cluster{ID: "00000412", Name: "shop"}
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 5}, cl)
	must(t, err)
	var nodes []ExistingNode
	byServices := map[string][]ExistingNode{}
	for _, n := range sol.Nodes {
		e := ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType}
		nodes = append(nodes, e)
		k := strings.Join(n.Services, ",")
		byServices[k] = append(byServices[k], e)
	}
	webs, dbs := byServices["base,cache,web"], byServices["base,db"]
	if len(webs) < 2 || len(dbs) != 1 {
		t.Fatalf("layout of 5: %v", byServices)
	}
	cases := []struct {
		name    string
		size    int
		remove  []string
		removed []int // node numbers; nil when refused
		kind    Kind
	}{
		{"the lowest web node instead of the highest", 4, []string{webs[0].ID}, []int{webs[0].NodeNum}, ""},
		{"a chosen node and the solver's pick", 3, []string{webs[0].ID}, []int{webs[len(webs)-1].NodeNum, webs[0].NodeNum}, ""},
		{"the only db node cannot go", 4, []string{dbs[0].ID}, nil, KindNoLayout},
		{"more nodes than the shrink", 4, []string{webs[0].ID, webs[1].ID}, nil, KindInvalidInput},
		{"not a node of the cluster", 4, []string{"nope"}, nil, KindInvalidInput},
		{"nodes to remove while growing", 6, []string{webs[0].ID}, nil, KindInvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := Scale(ScaleRequest{Template: tmpl, Catalog: cat, Provider: "p", Cluster: cl, Nodes: nodes, Size: c.size, Remove: c.remove})
			if c.removed == nil {
				var se *Error
				if !errors.As(err, &se) || se.Kind != c.kind {
					t.Fatalf("got %v, want a %s error", err, c.kind)
				}
				// The user names nodes by number: so does the refusal.
				if want := fmt.Sprintf("removing node %d (%s) leaves", dbs[0].NodeNum, dbs[0].Hostname); c.kind == KindNoLayout && !strings.HasPrefix(se.Message, want) {
					t.Errorf("message %q, want it to start %q", se.Message, want)
				}
				return
			}
			must(t, err)
			got := nodeNums(u.Removed, func(n ExistingNode) int { return n.NodeNum })
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.removed))
			if !slices.Equal(got, want) {
				t.Errorf("removed %v, want %v", got, want)
			}
			if len(u.Nodes) != c.size {
				t.Errorf("%d nodes stay, want %d", len(u.Nodes), c.size)
			}
		})
	}
}
