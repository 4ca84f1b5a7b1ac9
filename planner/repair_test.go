package planner

import (
	"errors"
	"slices"
	"testing"
)

// webExample is web-cluster's services: lb runtime-uses web, both
// install-require base; lb and web have a status action, base has none.
func webExample() (map[string]*Node, []Node, func() Request) {
	nodes := []Node{
		{ID: "L", NodeNum: 1000, Services: []string{"base", "lb"}},
		{ID: "W1", NodeNum: 1001, Services: []string{"base", "web"}},
		{ID: "W2", NodeNum: 1002, Services: []string{"base", "web"}},
	}
	services := defs(
		svc("base", []string{"install", "configure"}),
		svc("web", []string{"install", "configure", "start", "stop", "status"}, "install:base"),
		svc("lb", []string{"install", "configure", "start", "stop", "status"}, "install:base", "runtime:web"),
	)
	return nil, nodes, func() Request { return Request{Services: services, Nodes: slices.Clone(nodes)} }
}

func TestCheckAndRepairPlans(t *testing.T) {
	_, nodes, base := webExample()
	// W3 replaces W2.
	withNew := append(slices.Clone(nodes), Node{ID: "W3", NodeNum: 1003, Services: []string{"base", "web"}})
	cases := []struct {
		name       string
		req        func(r *Request)
		stages     []string
		edges      []string // a subset that must be present
		absent     []string // edges that must not be
		bestEffort []string // exactly these tasks are best-effort
	}{
		{
			name: "check asks every node, and every service with a status action",
			req:  func(r *Request) { r.Action = ClusterCheck },
			stages: []string{
				"L CHECK, W1 CHECK, W2 CHECK",
				"L STATUS lb, W1 STATUS web, W2 STATUS web",
			},
			edges:      []string{"L CHECK -> L STATUS lb", "W2 CHECK -> W2 STATUS web"},
			bestEffort: []string{"L CHECK", "L STATUS lb", "W1 CHECK", "W1 STATUS web", "W2 CHECK", "W2 STATUS web"},
		},
		{
			name: "repair starts a stopped service alone",
			req: func(r *Request) {
				r.Action, r.Stopped = Repair, map[string][]string{"L": {"lb"}}
			},
			stages: []string{"L START lb"},
		},
		{
			name: "repair installs a missing service on its node, after nothing outside its chain",
			req: func(r *Request) {
				r.Action, r.Missing = Repair, map[string][]string{"W1": {"web"}}
			},
			stages: []string{"W1 BOOTSTRAP", "W1 INSTALL web", "W1 CONFIGURE web", "W1 START web"},
			absent: []string{"W1 INSTALL base -> W1 INSTALL web"},
		},
		{
			name: "repair replaces a dead node: create the new one, delete the dead one, reconfigure the others after the new BOOTSTRAP",
			req: func(r *Request) {
				r.Action, r.Nodes = Repair, slices.Clone(withNew)
				r.NewNodes, r.RemovedNodes = []string{"W3"}, []string{"W2"}
				r.Stopped = map[string][]string{"L": {"lb"}}
			},
			stages: []string{
				"W2 DELETE, W3 CREATE",
				"W3 CONFIRM",
				"W3 BOOTSTRAP",
				"L CONFIGURE base, W1 CONFIGURE base, W3 INSTALL base",
				"L CONFIGURE lb, W1 CONFIGURE web",
				"W3 CONFIGURE base",
				"W3 INSTALL web",
				"W3 CONFIGURE web",
				"W3 START web",
				"L START lb",
			},
			edges: []string{"W3 BOOTSTRAP -> L CONFIGURE lb", "W3 BOOTSTRAP -> W1 CONFIGURE web", "W3 START web -> L START lb",
				"W3 INSTALL base -> W3 INSTALL web"},
			// Nothing waits for the dead node, and nothing is pulled in on it.
			absent: []string{"W2 START web -> L START lb", "W1 START web -> L START lb"},
		},
		{
			name: "reboot a node: REBOOT, BOOTSTRAP, then start its services, pulling in nothing",
			req: func(r *Request) {
				r.Action, r.PlannedNodes = RebootNodes, []string{"W1"}
			},
			stages: []string{"W1 REBOOT", "W1 BOOTSTRAP", "W1 START web"},
			absent: []string{"W1 START web -> L START lb"},
		},
		{
			name: "repair with a network unconfigures the dead node best-effort",
			req: func(r *Request) {
				r.Action, r.Nodes, r.Network = Repair, slices.Clone(withNew), true
				r.NewNodes, r.RemovedNodes = []string{"W3"}, []string{"W2"}
			},
			edges:      []string{"W2 NETWORK_UNCONFIGURE -> W2 DELETE", "W3 CONFIRM -> W3 NETWORK_CONFIGURE"},
			bestEffort: []string{"W2 NETWORK_UNCONFIGURE"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base()
			c.req(&r)
			p := mustBuild(t, &r)
			checkPlan(t, p)
			if c.stages != nil {
				if got := stageLines(p); !slices.Equal(got, c.stages) {
					t.Errorf("stages:\n got %q\nwant %q", got, c.stages)
				}
			}
			edges := edgeLines(p)
			for _, e := range c.edges {
				if !slices.Contains(edges, e) {
					t.Errorf("no edge %s in %q", e, edges)
				}
			}
			for _, e := range c.absent {
				if slices.Contains(edges, e) {
					t.Errorf("edge %s should not be there", e)
				}
			}
			if c.bestEffort != nil {
				var got []string
				for _, task := range p.Tasks {
					if task.BestEffort {
						got = append(got, task.Ref().String())
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, c.bestEffort) {
					t.Errorf("best-effort tasks %q, want %q", got, c.bestEffort)
				}
			}
		})
	}
}

func TestRepairRequestErrors(t *testing.T) {
	_, nodes, base := webExample()
	withNew := append(slices.Clone(nodes), Node{ID: "W3", NodeNum: 1003, Services: []string{"base", "web"}})
	cases := []struct {
		name, field string
		req         func(r *Request)
	}{
		{"a service the node lacks", "missing", func(r *Request) { r.Missing = map[string][]string{"L": {"web"}} }},
		{"a node not in the cluster", "stopped", func(r *Request) { r.Stopped = map[string][]string{"X": {"web"}} }},
		{"both missing and stopped", "stopped", func(r *Request) {
			r.Missing, r.Stopped = map[string][]string{"W1": {"web"}}, map[string][]string{"W1": {"web"}}
		}},
		{"a replaced node repaired in place", "stopped", func(r *Request) {
			r.Nodes, r.NewNodes, r.RemovedNodes = slices.Clone(withNew), []string{"W3"}, []string{"W2"}
			r.Stopped = map[string][]string{"W2": {"web"}}
		}},
		{"a new node without a removed one", "newNodes", func(r *Request) {
			r.Nodes, r.NewNodes = slices.Clone(withNew), []string{"W3"}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base()
			r.Action = Repair
			c.req(&r)
			_, err := Build(&r)
			var re *RequestError
			if !errors.As(err, &re) || re.Field != c.field {
				t.Fatalf("got %v, want a RequestError on %s", err, c.field)
			}
		})
	}
}

func TestDiagnose(t *testing.T) {
	ifaces := func(addrs ...string) []any {
		l := make([]any, len(addrs))
		for i, a := range addrs {
			l[i] = a
		}
		return []any{map[string]any{"name": "lo", "addresses": []any{"127.0.0.1/8", "::1/128"}},
			map[string]any{"name": "host0", "addresses": append(l, "fe80::1/64")}}
	}
	svcCheck := func(job, state string) map[string]any {
		return map[string]any{"check": map[string]any{"job": job, "state": state}}
	}
	node := func(id string, num int, check map[string]any, svcs map[string]any) Observed {
		facts := map[string]any{"node": map[string]any{"interfaces": ifaces("10.0.0.1/24"), "check": check}}
		for k, v := range svcs {
			facts["service:"+k] = v
		}
		return Observed{ID: id, NodeNum: num, Hostname: id + ".example", Services: []string{"base", "web"}, Facts: facts}
	}
	ok := func(job, host string, addrs ...string) map[string]any {
		return map[string]any{"job": job, "reachable": true, "hostname": host, "interfaces": ifaces(addrs...)}
	}
	probeOf := func(s string) ServiceProbe { return ServiceProbe{Status: s == "web"} }
	cases := []struct {
		name    string
		node    Observed
		want    []Finding
		dead    bool
		healthy bool
	}{
		{"all well", node("a", 1, ok("j2", "a.example", "10.0.0.1/24"), map[string]any{"web": svcCheck("j2", "running")}), nil, false, true},
		{"short hostname is the same name", node("a", 1, ok("j2", "a", "10.0.0.1/24"), map[string]any{"web": svcCheck("j2", "running")}), nil, false, true},
		{"stopped", node("a", 1, ok("j2", "a.example", "10.0.0.1/24"), map[string]any{"web": svcCheck("j2", "stopped")}),
			[]Finding{{Kind: FindingServiceStopped, Service: "web"}}, false, false},
		{"missing", node("a", 1, ok("j2", "a.example", "10.0.0.1/24"), map[string]any{"web": svcCheck("j2", "missing")}),
			[]Finding{{Kind: FindingServiceMissing, Service: "web"}}, false, false},
		{"a status from an earlier check does not count", node("a", 1, ok("j2", "a.example", "10.0.0.1/24"), map[string]any{"web": svcCheck("j1", "running")}),
			[]Finding{{Kind: FindingNotChecked, Service: "web"}}, false, false},
		{"unreachable", node("a", 1, map[string]any{"job": "j2", "reachable": false, "error": "connection refused"}, nil),
			[]Finding{{Kind: FindingUnreachable}}, true, false},
		{"host key changed", node("a", 1, map[string]any{"job": "j2", "reachable": false, "hostKeyChanged": true, "error": "host key mismatch"}, nil),
			[]Finding{{Kind: FindingHostKeyChanged}}, true, false},
		{"never reached by this check", node("a", 1, ok("j1", "a.example", "10.0.0.1/24"), nil),
			[]Finding{{Kind: FindingNotChecked}}, false, false},
		{"hostname and addresses changed", node("a", 1, ok("j2", "other", "10.0.0.9/24"), map[string]any{"web": svcCheck("j2", "running")}),
			[]Finding{{Kind: FindingHostnameChanged}, {Kind: FindingAddressesChanged}}, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Diagnose("j2", []Observed{c.node}, probeOf)
			if r.Healthy != c.healthy || len(r.Nodes) != 1 {
				t.Fatalf("healthy %v with %d nodes, want %v with 1", r.Healthy, len(r.Nodes), c.healthy)
			}
			got := r.Nodes[0].Findings
			if len(got) != len(c.want) {
				t.Fatalf("findings %+v, want %+v", got, c.want)
			}
			for i := range got {
				if got[i].Kind != c.want[i].Kind || got[i].Service != c.want[i].Service || got[i].Detail == "" {
					t.Errorf("finding %d: %+v, want %+v with a detail", i, got[i], c.want[i])
				}
			}
			if r.Nodes[0].Dead() != c.dead {
				t.Errorf("dead %v, want %v", r.Nodes[0].Dead(), c.dead)
			}
			if !slices.Equal(r.Nodes[0].Unchecked, []string{"base"}) {
				t.Errorf("unchecked %v, want [base]: it has neither a status action nor units", r.Nodes[0].Unchecked)
			}
		})
	}
}

func TestRepairOf(t *testing.T) {
	r := CheckReport{Nodes: []NodeCheck{
		{ID: "a", Findings: []Finding{{Kind: FindingUnreachable}}},
		{ID: "b", Findings: []Finding{{Kind: FindingServiceMissing, Service: "web"}, {Kind: FindingServiceStopped, Service: "lb"}}},
		{ID: "c", Findings: []Finding{{Kind: FindingHostKeyChanged}}},
		{ID: "d", Findings: []Finding{{Kind: FindingAddressesChanged}, {Kind: FindingNotChecked, Service: "web"}}},
		{ID: "e", Findings: []Finding{}},
	}}
	replace, missing, stopped := RepairOf(r)
	if !slices.Equal(replace, []string{"a", "c"}) {
		t.Errorf("replace %v, want [a c]", replace)
	}
	if len(missing) != 1 || !slices.Equal(missing["b"], []string{"web"}) || len(stopped) != 1 || !slices.Equal(stopped["b"], []string{"lb"}) {
		t.Errorf("missing %v, stopped %v, want b: web and b: lb", missing, stopped)
	}
}
