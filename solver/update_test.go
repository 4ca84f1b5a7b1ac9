package solver

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func nodeNums[N any](ns []N, num func(N) int) []int {
	var out []int
	for _, n := range ns {
		out = append(out, num(n))
	}
	return out
}

func TestScaleWorkedExample(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	cl := Cluster{ID: "00000412", Name: "Web_Shop"}
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 5}, cl)
	must(t, err)
	var nodes []ExistingNode
	for _, n := range sol.Nodes {
		nodes = append(nodes, ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	req := ScaleRequest{Template: tmpl, Catalog: cat, Provider: "p", Cluster: cl, Nodes: nodes}

	req.Size = 7
	u, err := Scale(req)
	must(t, err)
	if got, want := layoutString(u.Layout), "1×{base,cache,lb,web}@small/ubuntu22 5×{base,cache,web}@small/ubuntu22 1×{base,db}@xlarge/ubuntu22"; got != want {
		t.Errorf("scale to 7: %s, want %s", got, want)
	}
	if got := nodeNums(u.Added, func(n Node) int { return n.NodeNum }); !slices.Equal(got, []int{1005, 1006}) {
		t.Errorf("added nodenums = %v", got)
	}
	for _, n := range u.Added {
		if strings.Join(n.Services, ",") != "base,cache,web" || n.Flavor != "small-flavor" || n.Hostname != Hostname("Web_Shop", "00000412", n.NodeNum, "") {
			t.Errorf("added node = %+v", n)
		}
	}

	req.Size = 3
	u, err = Scale(req)
	must(t, err)
	if got, want := layoutString(u.Layout), "1×{base,cache,lb,web}@small/ubuntu22 1×{base,cache,web}@small/ubuntu22 1×{base,db}@xlarge/ubuntu22"; got != want {
		t.Errorf("scale to 3: %s, want %s", got, want)
	}
	if got := nodeNums(u.Removed, func(n ExistingNode) int { return n.NodeNum }); !slices.Equal(got, []int{1003, 1002}) {
		t.Errorf("removed = %v, want [1003 1002]", got)
	}

	req.Size = 5
	u, err = Scale(req)
	must(t, err)
	if len(u.Added)+len(u.Removed) != 0 || len(u.Nodes) != 5 {
		t.Errorf("no-op scale changed nodes: %+v", u)
	}

	req.Size = 2
	_, err = Scale(req)
	var se *Error
	if !errors.As(err, &se) || se.Kind != KindNoLayout {
		t.Errorf("scale to 2: err = %v, want no_layout", err)
	}
}

func TestScaleKeepsExistingNodes(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	cl := Cluster{ID: "7", Name: "c"}
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 4}, cl)
	must(t, err)
	var nodes []ExistingNode
	for _, n := range sol.Nodes {
		nodes = append(nodes, ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	for _, size := range []int{3, 4, 9, 30} {
		u, err := Scale(ScaleRequest{Template: tmpl, Catalog: cat, Provider: "p", Cluster: cl, Nodes: nodes, Size: size})
		must(t, err)
		if len(u.Nodes) != size {
			t.Fatalf("size %d: %d nodes", size, len(u.Nodes))
		}
		kept := map[string]ExistingNode{}
		for _, n := range u.Nodes {
			kept[n.ID] = n
		}
		for _, n := range nodes {
			k, ok := kept[n.ID]
			if !ok {
				continue
			}
			if !slices.Equal(k.Services, n.Services) || k.HardwareType != n.HardwareType {
				t.Errorf("size %d: node %d changed: %+v -> %+v", size, n.NodeNum, n, k)
			}
		}
		if v := ValidateLayout(tmpl, u.Layout); len(v) > 0 {
			t.Errorf("size %d: invalid result: %v", size, v)
		}
	}
}

func TestAddServices(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	// A cluster created without cache and web cannot exist (web min 2), so use
	// a template copy with relaxed quantities for the add tests.
	cl := Cluster{ID: "9", Name: "c"}
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Services: []string{"base", "lb", "db"}, Size: 3}, cl)
	must(t, err)
	if got, want := layoutString(sol.Layout), "1×{base,lb}@small/ubuntu22 2×{base,db}@xlarge/ubuntu22"; got != want {
		t.Fatalf("base layout = %s, want %s", got, want)
	}
	var nodes []ExistingNode
	for _, n := range sol.Nodes {
		nodes = append(nodes, ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	// web must coexist with cache and cannot coexist with db, and needs two
	// nodes: only one node (the lb) can take it, so this must fail.
	_, err = AddServices(AddRequest{Template: tmpl, Catalog: cat, Nodes: nodes, Add: []string{"web", "cache"}})
	var se *Error
	if !errors.As(err, &se) || se.Kind != KindNoLayout {
		t.Fatalf("add web,cache: err = %v, want no_layout", err)
	}
	if !strings.Contains(se.Message, "web") {
		t.Errorf("explanation does not name web: %s", se.Message)
	}

	for _, tt := range []struct {
		add  []string
		kind Kind
	}{
		{[]string{"lb"}, KindInvalidInput},
		{[]string{"nope"}, KindUnknownService},
	} {
		_, err := AddServices(AddRequest{Template: tmpl, Catalog: cat, Nodes: nodes, Add: tt.add})
		if !errors.As(err, &se) || se.Kind != tt.kind {
			t.Errorf("add %v: err = %v, want %s", tt.add, err, tt.kind)
		}
	}
}

func TestAddUnconstrainedServiceGoesEverywhere(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	cat.Services["metrics"] = cat.Services["base"]
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 5}, Cluster{ID: "1", Name: "c"})
	must(t, err)
	var nodes []ExistingNode
	for _, n := range sol.Nodes {
		nodes = append(nodes, ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	u, err := AddServices(AddRequest{Template: tmpl, Catalog: cat, Nodes: nodes, Add: []string{"metrics"}})
	must(t, err)
	if len(u.Changed) != 5 {
		t.Fatalf("changed %d nodes, want 5", len(u.Changed))
	}
	for _, n := range u.Nodes {
		if !slices.Contains(n.Services, "metrics") {
			t.Errorf("node %d lacks metrics", n.NodeNum)
		}
	}
}

func TestBudgetExhausted(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	_, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 5, MaxSteps: 3}, Cluster{ID: "1"})
	var se *Error
	if !errors.As(err, &se) || se.Kind != KindBudgetExhausted || !strings.Contains(se.Message, "within 3 search steps") {
		t.Fatalf("err = %v, want budget_exhausted", err)
	}
	// A result found within the budget does not depend on it.
	a, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 20, MaxSteps: 200}, Cluster{ID: "1"})
	must(t, err)
	b, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 20}, Cluster{ID: "1"})
	must(t, err)
	if layoutString(a.Layout) != layoutString(b.Layout) {
		t.Errorf("budget changed the answer: %s vs %s", layoutString(a.Layout), layoutString(b.Layout))
	}
}

func TestDistributionsOrder(t *testing.T) {
	var got [][]int
	distributions([]int{3, 1, 2}, 4, func(d []int) bool {
		got = append(got, slices.Clone(d))
		return true
	})
	want := [][]int{{3, 1, 0}, {3, 0, 1}, {2, 1, 1}, {2, 0, 2}, {1, 1, 2}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("distributions = %v, want %v", got, want)
	}
}

func TestHostname(t *testing.T) {
	tests := []struct {
		name, id, suffix string
		num              int
		want             string
	}{
		{"Web_Shop", "00000412", "", 1000, "web-shop412-1000.local"},
		{"42nd street", "00000001", ".example.com", 1001, "nd-street1-1001.example.com"},
		{"x.y", "00000010", "corp", 1000, "x-y10-1000.corp"},
		{strings.Repeat("a", 80), "00000001", "", 1000, strings.Repeat("a", 63-len("1-1000")) + "1-1000.local"},
		{"123", "00000005", "", 1000, "5-1000.local"},
	}
	for _, tt := range tests {
		if got := Hostname(tt.name, tt.id, tt.num, tt.suffix); got != tt.want {
			t.Errorf("Hostname(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
