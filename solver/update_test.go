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

	// A cluster that once had node 1009 continues past it.
	req.NextNodeNum = 1010
	u, err = Scale(req)
	must(t, err)
	if got := nodeNums(u.Added, func(n Node) int { return n.NodeNum }); !slices.Equal(got, []int{1010, 1011}) {
		t.Errorf("added nodenums after 1009 = %v, want [1010 1011]", got)
	}
	req.NextNodeNum = 0

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
	long240 := strings.Repeat("x", 63) + "." + strings.Repeat("y", 63) + "." + strings.Repeat("z", 63) + "." + strings.Repeat("w", 48)
	tests := []struct {
		name, id, suffix string
		num              int
		want             string
	}{
		{"Web_Shop", "00000412", "", 1000, "web-shop-412-1000.local"},
		{"42nd street", "00000001", ".example.com", 1001, "nd-street-1-1001.example.com"},
		{"x.y", "00000010", "corp", 1000, "x-y-10-1000.corp"},
		// The name and the id stay apart: demo2 of cluster 40 is not demo of 240.
		{"demo2", "00000040", "", 1000, "demo2-40-1000.local"},
		{"ünïcødé ☃", "00000009", "", 1000, "unicode-9-1000.local"},
		{"--a__b--", "00000003", "", 1000, "a-b-3-1000.local"},
		{"Straße", "00000003", "", 1000, "strasse-3-1000.local"},
		// Cut to 63 characters in the first label, never ending in '-'.
		{strings.Repeat("a", 80), "00000001", "", 1000, strings.Repeat("a", 63-len("-1-1000")) + "-1-1000.local"},
		{strings.Repeat("a", 55) + "-b", "00000001", "", 1000, strings.Repeat("a", 55) + "-1-1000.local"},
		// ... and to 253 in all.
		{"abcdefgh", "00000001", long240, 1000, "abcde-1-1000." + long240},
		// No prefix left: CheckHostnames refuses such a name.
		{"123", "00000005", "", 1000, "5-1000.local"},
	}
	for _, tt := range tests {
		got := Hostname(tt.name, tt.id, tt.num, tt.suffix)
		if got != tt.want {
			t.Errorf("Hostname(%q) = %q, want %q", tt.name, got, tt.want)
		}
		if err := checkHostname(got); err != nil {
			t.Errorf("Hostname(%q) = %q: %v", tt.name, got, err)
		}
	}
}

func TestCheckHostnames(t *testing.T) {
	// 189 characters leave room for a first label of 63; 247 not even for
	// "40-1009". The API caps dnsSuffix at 191.
	long := strings.Repeat("x", 63) + "." + strings.Repeat("y", 63) + "." + strings.Repeat("z", 61)
	tooLong := long + "." + strings.Repeat("v", 57)
	tests := []struct {
		name, suffix string
		field        string // "" when valid
	}{
		{"web", "", ""},
		{"ünïcødé ☃", "", ""},
		{"☃", "", "name"},
		{"2024", "", "name"},
		{"--", "", "name"},
		{"web", long, ""},
		// A suffix so long that even the shortest first label does not fit.
		{"web", tooLong, "dnsSuffix"},
	}
	for _, tt := range tests {
		err := CheckHostnames(Cluster{ID: "00000040", Name: tt.name, DNSSuffix: tt.suffix}, 1009)
		var he *HostnameError
		switch {
		case tt.field == "" && err != nil:
			t.Errorf("%q, %q: %v", tt.name, tt.suffix, err)
		case tt.field != "" && (!errors.As(err, &he) || he.Field != tt.field):
			t.Errorf("%q, %q: %v, want an error on %s", tt.name, tt.suffix, err, tt.field)
		}
	}
}

// New nodes of a cluster follow its nodes' scheme: a cluster made before
// the separator keeps Coopr's names.
func TestScaleKeepsTheClustersHostnames(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		cl := Cluster{ID: "00000040", Name: "demo2"}
		h := newHostnamer(cl, legacy)
		var nodes []ExistingNode
		for i := range 2 {
			nodes = append(nodes, ExistingNode{ID: NodeID(cl.ID, 1000+i), NodeNum: 1000 + i, Hostname: h.name(1000 + i)})
		}
		got := hostnamerFor(cl, nodes).name(1002)
		want := map[bool]string{false: "demo2-40-1002.local", true: "demo240-1002.local"}[legacy]
		if got != want {
			t.Errorf("legacy %v: the third node is %q, want %q", legacy, got, want)
		}
	}
}
