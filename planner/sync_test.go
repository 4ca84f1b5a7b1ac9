package planner

import (
	"slices"
	"testing"
)

func TestSyncTemplatePlans(t *testing.T) {
	services, nodes := workedExample()
	// app is what the sync adds, on B.
	cases := []struct {
		name   string
		req    Request
		stages []string
		edges  []string
	}{
		{
			name:   "nothing added, config unchanged: no task",
			req:    Request{Action: SyncTemplate, Nodes: nodes},
			stages: []string{},
		},
		{
			name: "an added service walks ADD_SERVICES' steps on its nodes only",
			req:  Request{Action: SyncTemplate, Nodes: nodes, PlannedServices: []string{"app"}, PlannedNodes: []string{"B"}},
			stages: []string{
				"A START db, B BOOTSTRAP", "B INSTALL app", "B CONFIGURE app", "B INITIALIZE app", "B START app",
			},
		},
		{
			name: "a changed config reconfigures every other service after a bootstrap",
			req:  Request{Action: SyncTemplate, Nodes: nodes, Reconfigure: true},
			stages: []string{
				"A BOOTSTRAP, B BOOTSTRAP", "A CONFIGURE db, B CONFIGURE app", "B CONFIGURE proxy",
			},
			edges: []string{"A BOOTSTRAP -> A CONFIGURE db", "B BOOTSTRAP -> B CONFIGURE proxy"},
		},
		{
			name: "both: the added service's CONFIGURE is planned once, in its own chain",
			req: Request{Action: SyncTemplate, Nodes: nodes, PlannedServices: []string{"app"}, PlannedNodes: []string{"B"},
				Reconfigure: true},
			stages: []string{
				"A BOOTSTRAP, B BOOTSTRAP", "A START db", "A CONFIGURE db, B CONFIGURE proxy", "B INSTALL app",
				"B CONFIGURE app", "B INITIALIZE app", "B START app",
			},
			edges: []string{"B INSTALL app -> B CONFIGURE app", "A START db -> B INITIALIZE app"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Services = services
			p := mustBuild(t, &tc.req)
			if got := stageLines(p); !slices.Equal(got, tc.stages) {
				t.Errorf("stages\n got: %q\nwant: %q", got, tc.stages)
			}
			edges := edgeLines(p)
			for _, e := range tc.edges {
				if !slices.Contains(edges, e) {
					t.Errorf("missing edge %s in %q", e, edges)
				}
			}
			if len(slices.Compact(slices.Clone(edges))) != len(edges) {
				t.Errorf("duplicate edges in %q", edges)
			}
			checkPlan(t, p)
		})
	}
}

func TestUpdateSSHKeysPlan(t *testing.T) {
	services, nodes := workedExample()
	withEmpty := append(slices.Clone(nodes), Node{ID: "C", NodeNum: 1002})
	p := mustBuild(t, &Request{Action: UpdateSSHKeys, Services: services, Nodes: withEmpty})
	if got, want := stageLines(p), []string{"A AUTHORIZE_KEYS, B AUTHORIZE_KEYS, C AUTHORIZE_KEYS"}; !slices.Equal(got, want) {
		t.Errorf("stages %q, want %q", got, want)
	}
	if len(p.Edges) != 0 {
		t.Errorf("edges %q", edgeLines(p))
	}
	if a := p.Tasks[0].Action; a.Role() != "node" || !a.NodeLevel() || a.BringUp() {
		t.Errorf("AUTHORIZE_KEYS: role %s, node level %v, bring-up %v", a.Role(), a.NodeLevel(), a.BringUp())
	}
	checkPlan(t, p)
}
