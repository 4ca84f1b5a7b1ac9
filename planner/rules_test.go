package planner

import (
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
)

// svc builds a service definition: deps are "install:name", "runtime:name"
// (requires) or "provides:name".
func svc(name string, actions []string, deps ...string) *catalog.Service {
	s := &catalog.Service{Base: catalog.Base{Name: name}}
	s.Provisioner.Actions = map[string]catalog.Action{}
	for _, a := range actions {
		s.Provisioner.Actions[a] = catalog.Action{Type: "shell"}
	}
	for _, d := range deps {
		kind, n, _ := strings.Cut(d, ":")
		switch kind {
		case "install":
			s.Dependencies.Install.Requires = append(s.Dependencies.Install.Requires, n)
		case "installuses":
			s.Dependencies.Install.Uses = append(s.Dependencies.Install.Uses, n)
		case "runtime":
			s.Dependencies.Runtime.Requires = append(s.Dependencies.Runtime.Requires, n)
		case "provides":
			s.Dependencies.Provides = append(s.Dependencies.Provides, n)
		default:
			panic(d)
		}
	}
	return s
}

func defs(ss ...*catalog.Service) map[string]*catalog.Service {
	m := map[string]*catalog.Service{}
	for _, s := range ss {
		m[s.Name] = s
	}
	return m
}

// workedExample is the second example of docs/planner.md#worked-example.
func workedExample() (map[string]*catalog.Service, []Node) {
	return defs(
			svc("disk", []string{"install", "start"}),
			svc("db", []string{"install", "configure", "start", "stop"}, "provides:sql", "runtime:disk"),
			svc("proxy", []string{"configure"}, "runtime:db"),
			svc("app", []string{"install", "configure", "initialize", "start", "stop"}, "installuses:db", "runtime:sql", "runtime:proxy", "runtime:disk"),
		), []Node{
			{ID: "A", NodeNum: 1000, Services: []string{"disk", "db"}},
			{ID: "B", NodeNum: 1001, Services: []string{"disk", "proxy", "app"}},
		}
}

// stageLines renders each stage as its tasks in order.
func stageLines(p *Plan) []string {
	out := make([]string, len(p.Stages))
	for i, s := range p.Stages {
		var parts []string
		for _, ti := range s {
			parts = append(parts, p.Tasks[ti].Ref().String())
		}
		out[i] = strings.Join(parts, ", ")
	}
	return out
}

func edgeLines(p *Plan) []string {
	var out []string
	for _, e := range p.Edges {
		out = append(out, p.Tasks[e[0]].Ref().String()+" -> "+p.Tasks[e[1]].Ref().String())
	}
	sort.Strings(out)
	return out
}

func mustBuild(t *testing.T, r *Request) *Plan {
	t.Helper()
	p, err := Build(r)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWorkedExample(t *testing.T) {
	services, nodes := workedExample()
	p := mustBuild(t, &Request{Action: ClusterCreate, Services: services, Nodes: nodes})
	want := []string{
		"A CREATE, B CREATE",
		"A CONFIRM, B CONFIRM",
		"A BOOTSTRAP, B BOOTSTRAP",
		"A INSTALL db, B CONFIGURE proxy",
		"A INSTALL disk, B INSTALL disk",
		"A CONFIGURE db, B INSTALL app",
		"A START disk, B START disk",
		"A START db, B CONFIGURE app",
		"B INITIALIZE app",
		"B START app",
	}
	if got := stageLines(p); !slices.Equal(got, want) {
		t.Errorf("stages\n got: %q\nwant: %q", got, want)
	}
	// The cross edges the example names.
	edges := edgeLines(p)
	for _, e := range []string{
		"A START db -> B START app",
		"A START db -> B INITIALIZE app",
		"A INSTALL db -> B INSTALL app",
		"A START disk -> A START db",
		"B START disk -> A START db",
	} {
		if !slices.Contains(edges, e) {
			t.Errorf("missing edge %s in %q", e, edges)
		}
	}
	for _, e := range edges {
		if strings.HasPrefix(e, "A START disk -> B") || strings.HasPrefix(e, "B START disk -> B START app") {
			t.Errorf("edge %s should be minimised away (app reaches disk through db)", e)
		}
	}
	for i, task := range p.Tasks {
		if i > 0 && p.Tasks[i-1].Stage > task.Stage {
			t.Fatalf("tasks not in stage order at %d", i)
		}
	}
}

func TestActionDependenciesWorkedExample(t *testing.T) {
	services, _ := workedExample()
	var list []*catalog.Service
	for _, s := range services {
		list = append(list, s)
	}
	deps, err := ActionDependencies(list)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range deps {
		var w []string
		for _, x := range d.WaitsFor {
			w = append(w, x.Action.String()+" "+x.Service)
		}
		got = append(got, d.Action.String()+" "+d.Service+" <- "+strings.Join(w, ", "))
	}
	want := []string{
		"INSTALL app <- INSTALL db",
		"INITIALIZE app <- START db",
		"START app <- START db",
		"START db <- START disk",
		"STOP db <- STOP app", // through proxy, which has no stop
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestOperations(t *testing.T) {
	services, nodes := workedExample()
	empty := Node{ID: "C", NodeNum: 1002}
	withEmpty := append(slices.Clone(nodes), empty)
	cases := []struct {
		name   string
		req    Request
		stages []string
		edges  []string // a subset that must be present
		absent []string // edges that must not be
	}{
		{
			name: "create with network",
			req:  Request{Action: ClusterCreate, Nodes: withEmpty, Network: true, PlannedServices: []string{}},
			stages: []string{
				"NETWORK_ALLOCATE",
				"A CREATE, B CREATE, C CREATE",
				"A CONFIRM, B CONFIRM, C CONFIRM",
				"A NETWORK_CONFIGURE, B NETWORK_CONFIGURE, C NETWORK_CONFIGURE",
				"A BOOTSTRAP, B BOOTSTRAP, C BOOTSTRAP",
			},
			edges: []string{"NETWORK_ALLOCATE -> C CREATE", "C CONFIRM -> C NETWORK_CONFIGURE", "C NETWORK_CONFIGURE -> C BOOTSTRAP"},
		},
		{
			name:   "delete with network includes the node without services",
			req:    Request{Action: ClusterDelete, Nodes: withEmpty, Network: true},
			stages: []string{"A NETWORK_UNCONFIGURE, B NETWORK_UNCONFIGURE, C NETWORK_UNCONFIGURE", "A DELETE, B DELETE, C DELETE", "NETWORK_RELEASE"},
			edges:  []string{"C DELETE -> NETWORK_RELEASE", "A NETWORK_UNCONFIGURE -> A DELETE"},
		},
		{
			name:   "delete without network",
			req:    Request{Action: ClusterDelete, Nodes: withEmpty},
			stages: []string{"A DELETE, B DELETE, C DELETE"},
		},
		{
			name:   "configure skips the node without services",
			req:    Request{Action: ClusterConfigure, Nodes: withEmpty},
			stages: []string{"A BOOTSTRAP, B BOOTSTRAP", "A CONFIGURE db, B CONFIGURE app", "B CONFIGURE proxy"},
		},
		{
			name: "configure with restart",
			req:  Request{Action: ClusterConfigureWithRestart, Nodes: nodes},
			stages: []string{
				// disk has neither stop nor configure: its chain is BOOTSTRAP, START.
				"A BOOTSTRAP, B BOOTSTRAP", "A START disk, B CONFIGURE proxy", "B START disk", "B STOP app",
				"A STOP db, B CONFIGURE app", "A CONFIGURE db", "A START db", "B START app",
			},
			edges: []string{"B STOP app -> A STOP db", "A START db -> B START app", "A STOP db -> A CONFIGURE db"},
		},
		{
			name:   "stop db also stops what depends on it",
			req:    Request{Action: StopServices, Nodes: nodes, PlannedServices: []string{"db"}},
			stages: []string{"B STOP app", "A STOP db"},
			edges:  []string{"B STOP app -> A STOP db"},
		},
		{
			name:   "start app also starts what it depends on",
			req:    Request{Action: StartServices, Nodes: nodes, PlannedServices: []string{"app"}},
			stages: []string{"A START disk, B START disk", "A START db", "B START app"},
		},
		{
			name: "add app pulls in START db and INSTALL is not re-run for db",
			req:  Request{Action: AddServices, Nodes: nodes, PlannedServices: []string{"app"}, PlannedNodes: []string{"B"}},
			stages: []string{
				"A START db, B BOOTSTRAP", "B INSTALL app", "B CONFIGURE app", "B INITIALIZE app", "B START app",
			},
			absent: []string{"A INSTALL db -> B INSTALL app"},
		},
		{
			name: "scale out: new node created, the others reconfigured after its bootstrap",
			req: Request{Action: ScaleOut, Nodes: append(slices.Clone(nodes), Node{ID: "N", NodeNum: 1002, Services: []string{"disk", "app"}}),
				NewNodes: []string{"N"}},
			stages: []string{
				"N CREATE", "N CONFIRM", "N BOOTSTRAP",
				"A CONFIGURE db, B CONFIGURE app, N INSTALL app", "B CONFIGURE proxy, N INSTALL disk",
				"N CONFIGURE app", "N START disk", "N INITIALIZE app", "N START app",
			},
			edges: []string{"N BOOTSTRAP -> A CONFIGURE db", "N BOOTSTRAP -> B CONFIGURE proxy"},
			// Untouched services are already running: no pulled-in tasks.
			absent: []string{"A START db -> N START app", "A INSTALL db -> N INSTALL app"},
		},
		{
			name: "scale out with restart waits for the restarted db",
			req: Request{Action: ScaleOut, Nodes: append(slices.Clone(nodes), Node{ID: "N", NodeNum: 1002, Services: []string{"disk", "app"}}),
				NewNodes: []string{"N"}, Restart: true},
			edges: []string{"A START db -> N START app", "N BOOTSTRAP -> A STOP db", "B STOP app -> A STOP db"},
		},
		{
			name:   "scale in: the removed node stops and goes, the rest reconfigure after its stops",
			req:    Request{Action: ScaleIn, Nodes: nodes, RemovedNodes: []string{"B"}, Network: true},
			stages: []string{"B STOP app", "A CONFIGURE db, B NETWORK_UNCONFIGURE", "B DELETE"},
			edges:  []string{"B STOP app -> A CONFIGURE db", "B STOP app -> B NETWORK_UNCONFIGURE"},
			absent: []string{"B DELETE -> NETWORK_RELEASE"},
		},
		{
			name: "scale in of the db node never stops app on the node that stays",
			req:  Request{Action: ScaleIn, Nodes: nodes, RemovedNodes: []string{"A"}},
			stages: []string{
				"A STOP db", "A DELETE, B CONFIGURE app", "B CONFIGURE proxy",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Services = services
			p := mustBuild(t, &tc.req)
			if tc.stages != nil {
				if got := stageLines(p); !slices.Equal(got, tc.stages) {
					t.Errorf("stages\n got: %q\nwant: %q", got, tc.stages)
				}
			}
			edges := edgeLines(p)
			for _, e := range tc.edges {
				if !slices.Contains(edges, e) {
					t.Errorf("missing edge %s in %q", e, edges)
				}
			}
			for _, e := range tc.absent {
				if slices.Contains(edges, e) {
					t.Errorf("unexpected edge %s", e)
				}
			}
			checkPlan(t, p)
		})
	}
}

// checkPlan checks what holds for every plan: edges go forward in stages,
// no stage holds two tasks of a node, tasks are in order and unique.
func checkPlan(t *testing.T, p *Plan) {
	t.Helper()
	seen := map[TaskRef]bool{}
	for i, task := range p.Tasks {
		if seen[task.Ref()] {
			t.Errorf("task %v twice", task.Ref())
		}
		seen[task.Ref()] = true
		if task.Action.NodeLevel() != (task.Service == "") || task.Action.ClusterScoped() != (task.Node == "") {
			t.Errorf("task %v: wrong scope", task.Ref())
		}
		if i > 0 && p.Tasks[i-1].Stage > task.Stage {
			t.Errorf("task %d out of stage order", i)
		}
	}
	for _, e := range p.Edges {
		if p.Tasks[e[0]].Stage >= p.Tasks[e[1]].Stage {
			t.Errorf("edge %v -> %v does not go forward", p.Tasks[e[0]].Ref(), p.Tasks[e[1]].Ref())
		}
	}
	for i, s := range p.Stages {
		nodes := map[string]bool{}
		for _, ti := range s {
			n := p.Tasks[ti].Node
			if n != "" && nodes[n] {
				t.Errorf("stage %d: two tasks of %s", i, n)
			}
			nodes[n] = true
		}
	}
}

func TestCycle(t *testing.T) {
	services := defs(
		svc("a", []string{"start"}, "runtime:b"),
		svc("b", nil, "runtime:c"),
		svc("c", []string{"start"}, "runtime:a"),
		svc("d", []string{"install"}, "install:e"),
		svc("e", []string{"install"}, "provides:ee", "install:d"),
	)
	cases := []struct {
		svcs []string
		want string
	}{
		// Even through a service without the action, a cycle is an error.
		{[]string{"a", "b", "c"}, "cycle of runtime dependencies: a -> b -> c -> a"},
		{[]string{"d", "e"}, "cycle of install dependencies: d -> e -> d"},
	}
	for _, tc := range cases {
		_, err := Build(&Request{Action: StartServices, Services: services, Nodes: []Node{{ID: "n1", Services: tc.svcs}}})
		var ce *CycleError
		if !errors.As(err, &ce) || !errors.Is(err, ErrCycle) || ce.Code() != CodeCycle || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.svcs, err, tc.want)
		}
	}
	// A cycle through a service off the cluster is no cycle of the cluster.
	if _, err := Build(&Request{Action: StartServices, Services: services, Nodes: []Node{{ID: "n1", Services: []string{"a", "c"}}}}); err != nil {
		t.Errorf("err = %v", err)
	}
}

func TestTaskCycle(t *testing.T) {
	// Tasks cannot wait in a cycle when services do not, so the layering's
	// own check is tested on a raw graph.
	g := newDigraph(4, []edge{{0, 1}, {1, 2}, {2, 1}, {2, 3}})
	_, _, cycle := g.layers()
	if !slices.Equal(cycle, []int32{1, 2}) && !slices.Equal(cycle, []int32{2, 1}) {
		t.Errorf("cycle %v", cycle)
	}
	b := &builder{verts: []vkey{{0, Start, 0}, {0, Start, 1}}, nodes: []Node{{ID: "n"}}, g: &depGraph{names: []string{"a", "b"}}}
	b.edges = []edge{{0, 1}, {1, 0}}
	_, err := b.plan()
	var ce *CycleError
	if !errors.As(err, &ce) || len(ce.Tasks) != 2 || !strings.Contains(err.Error(), "n START a -> n START b -> n START a") &&
		!strings.Contains(err.Error(), "n START b -> n START a -> n START b") {
		t.Errorf("err = %v", err)
	}
}

func TestRequestErrors(t *testing.T) {
	services, nodes := workedExample()
	cases := []struct {
		name  string
		req   Request
		field string
		msg   string
	}{
		{"no action", Request{Nodes: nodes}, "action", "unknown cluster action"},
		{"lower-case action", Request{Action: "cluster_create", Nodes: nodes}, "action", "upper case"},
		{"unknown service", Request{Action: ClusterCreate, Nodes: []Node{{ID: "x", Services: []string{"nope"}}}}, "nodes[0].services", `"nope" has no definition`},
		{"duplicate node", Request{Action: ClusterCreate, Nodes: []Node{{ID: "x"}, {ID: "x"}}}, "nodes[1].id", "twice"},
		{"node without id", Request{Action: ClusterCreate, Nodes: []Node{{}}}, "nodes[0].id", "required"},
		{"unknown planned node", Request{Action: ClusterCreate, Nodes: nodes, PlannedNodes: []string{"Z"}}, "plannedNodes", `"Z"`},
		{"planned service not on the cluster", Request{Action: StartServices, Nodes: nodes, PlannedServices: []string{"zz"}}, "plannedServices", `"zz" is on no node`},
		{"scale out without new nodes", Request{Action: ScaleOut, Nodes: nodes}, "newNodes", "at least one"},
		{"scale in without removed nodes", Request{Action: ScaleIn, Nodes: nodes}, "removedNodes", "at least one"},
		{"new nodes outside scale out", Request{Action: ClusterCreate, Nodes: nodes, NewNodes: []string{"A"}}, "newNodes", "only SCALE_OUT"},
		{"removed nodes outside scale in", Request{Action: ClusterDelete, Nodes: nodes, RemovedNodes: []string{"A"}}, "removedNodes", "only SCALE_IN"},
		{"service filter on scale", Request{Action: ScaleIn, Nodes: nodes, RemovedNodes: []string{"A"}, PlannedServices: []string{"db"}}, "plannedServices", "every service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Services = services
			_, err := Build(&tc.req)
			var re *RequestError
			if !errors.As(err, &re) || re.Field != tc.field || !strings.Contains(re.Message, tc.msg) || re.Code() != CodeInvalid {
				t.Errorf("err = %v, want field %s and %q", err, tc.field, tc.msg)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	services, nodes := workedExample()
	p1 := mustBuild(t, &Request{Action: ClusterCreate, Services: services, Nodes: nodes})
	reversed := []Node{nodes[1], nodes[0]}
	p2 := mustBuild(t, &Request{Action: ClusterCreate, Services: services, Nodes: reversed})
	if p1.Hash() != p2.Hash() || !slices.Equal(stageLines(p1), stageLines(p2)) || !slices.Equal(edgeLines(p1), edgeLines(p2)) {
		t.Errorf("node input order changed the plan:\n%q\n%q", stageLines(p1), stageLines(p2))
	}
	p3 := mustBuild(t, &Request{Action: ClusterCreate, Services: services, Nodes: nodes, Network: true})
	if p1.Hash() == p3.Hash() {
		t.Error("different plans hash alike")
	}
	// Without nodenums the input order decides.
	plain := []Node{{ID: "z", Services: []string{"disk"}}, {ID: "a", Services: []string{"disk"}}}
	p4 := mustBuild(t, &Request{Action: StartServices, Services: services, Nodes: plain})
	if got := stageLines(p4); !slices.Equal(got, []string{"z START disk, a START disk"}) {
		t.Errorf("stages %q", got)
	}
}

func TestEmptyPlan(t *testing.T) {
	services, nodes := workedExample()
	p := mustBuild(t, &Request{Action: StartServices, Services: services, Nodes: nodes, PlannedNodes: []string{}})
	if len(p.Tasks) != 0 || len(p.Stages) != 0 || len(p.Edges) != 0 {
		t.Errorf("plan %+v", p)
	}
}

func TestParse(t *testing.T) {
	for _, a := range ClusterActions {
		got, err := ParseClusterAction(strings.ToLower(string(a)))
		if err != nil || got != a {
			t.Errorf("%s: %v %v", a, got, err)
		}
	}
	if _, err := ParseClusterAction("explode"); err == nil || !strings.Contains(err.Error(), "CLUSTER_CREATE") {
		t.Errorf("err = %v", err)
	}
	for a := Action(1); a < numActions; a++ {
		got, ok := ParseAction(strings.ToLower(a.String()))
		if !ok || got != a {
			t.Errorf("%s: %v", a, got)
		}
		var u Action
		b, err := a.MarshalText()
		if err != nil || u.UnmarshalText(b) != nil || u != a {
			t.Errorf("%s: round trip %v %v", a, u, err)
		}
	}
	if _, err := Action(0).MarshalText(); err == nil {
		t.Error("zero action marshals")
	}
}

// Only the cleanup inside nodes the operation removes is best-effort: the
// DELETE that frees a machine, the network release, and every step of a
// node that stays are not.
func TestBestEffort(t *testing.T) {
	services, nodes := workedExample()
	cases := []struct {
		name string
		req  Request
		want []string // the best-effort tasks
	}{
		{"delete", Request{Action: ClusterDelete, Nodes: nodes, Network: true},
			[]string{"A NETWORK_UNCONFIGURE", "B NETWORK_UNCONFIGURE"}},
		{"delete without a network", Request{Action: ClusterDelete, Nodes: nodes}, nil},
		{"scale in", Request{Action: ScaleIn, Nodes: nodes, RemovedNodes: []string{"B"}, Network: true},
			[]string{"B STOP app", "B NETWORK_UNCONFIGURE"}},
		{"stop services", Request{Action: StopServices, Nodes: nodes}, nil},
		{"create", Request{Action: ClusterCreate, Nodes: nodes, Network: true}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Services = services
			p := mustBuild(t, &tc.req)
			var got []string
			for _, task := range p.Tasks {
				if task.BestEffort {
					got = append(got, task.Ref().String())
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("best-effort tasks %q, want %q", got, tc.want)
			}
		})
	}
}
