package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/server/servertest"
)

type opPreview struct {
	Action   string
	Added    []struct{ Nodenum int }
	Removed  []int
	Changed  []struct{ Add []string }
	Tasks    []struct{ Action string }
	PlanHash string
}

func TestClusterOperations(t *testing.T) {
	w := newWorld(t)
	s := w.s
	id := w.create(t, w.alice, 3)
	w.run(t, w.alice, id, "ACTIVE")
	preview := func(in map[string]any) (opPreview, string) {
		t.Helper()
		var out struct{ PreviewOperation opPreview }
		r := s.Do(w.alice, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
			action added { nodenum } removed changed { add } tasks { action } planHash } }`, map[string]any{"id": id, "in": in})
		if r.Code() != "" {
			return out.PreviewOperation, r.Code()
		}
		if err := r.Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.PreviewOperation, ""
	}
	runOp := func(in map[string]any, hash string) string {
		t.Helper()
		var out struct{ RunOperation struct{ ID, Action string } }
		s.Must(w.alice, `mutation($id: ID!, $in: OperationInput!, $h: String) { runOperation(clusterId: $id, input: $in, expectedPlanHash: $h) { id action } }`,
			map[string]any{"id": id, "in": in, "h": hash}, &out)
		w.run(t, w.alice, id, "ACTIVE")
		return out.RunOperation.Action
	}
	nodes := func() (int, int) {
		var c struct {
			Cluster struct {
				Size  int
				Nodes []struct{ Nodenum int }
			}
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { size nodes { nodenum } } }`, map[string]any{"id": id}, &c)
		return c.Cluster.Size, len(c.Cluster.Nodes)
	}

	// Scale out 3 → 5, run exactly what was previewed.
	out, code := preview(map[string]any{"operation": "SCALE", "numMachines": 5})
	if code != "" || out.Action != "SCALE_OUT" || len(out.Added) != 2 || out.Added[0].Nodenum != 1003 {
		t.Fatalf("scale-out preview %+v %s", out, code)
	}
	if a := runOp(map[string]any{"operation": "SCALE", "numMachines": 5}, out.PlanHash); a != "SCALE_OUT" {
		t.Errorf("ran %s", a)
	}
	if size, n := nodes(); size != 5 || n != 5 {
		t.Errorf("after scale-out: size %d, %d nodes", size, n)
	}
	// Scale in 5 → 4: the removed node's record goes with its DELETE.
	out, _ = preview(map[string]any{"operation": "SCALE", "numMachines": 4})
	if out.Action != "SCALE_IN" || len(out.Removed) != 1 {
		t.Fatalf("scale-in preview %+v", out)
	}
	var job struct{ RunOperation struct{ ID string } }
	s.Must(w.alice, `mutation($id: ID!, $in: OperationInput!) { runOperation(clusterId: $id, input: $in) { id } }`,
		map[string]any{"id": id, "in": map[string]any{"operation": "SCALE", "numMachines": 4}}, &job)
	if size, _ := nodes(); size != 5 {
		t.Errorf("size %d while the scale-in runs, want 5 until it completes", size)
	}
	w.run(t, w.alice, id, "ACTIVE")
	if size, n := nodes(); size != 4 || n != 4 {
		t.Errorf("after scale-in: size %d, %d nodes", size, n)
	}
	// Add a service the template allows.
	out, code = preview(map[string]any{"operation": "ADD_SERVICES", "services": []string{"hadoop-mapreduce-historyserver"}})
	if code != "" || out.Action != "ADD_SERVICES" || len(out.Changed) == 0 {
		t.Fatalf("add-services preview %+v %s", out, code)
	}
	runOp(map[string]any{"operation": "ADD_SERVICES", "services": []string{"hadoop-mapreduce-historyserver"}}, out.PlanHash)
	var c struct {
		Cluster struct {
			Services []string
			Config   map[string]any
		}
	}
	s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { services config } }`, map[string]any{"id": id}, &c)
	found := false
	for _, sv := range c.Cluster.Services {
		found = found || sv == "hadoop-mapreduce-historyserver"
	}
	if !found {
		t.Errorf("services after adding: %v", c.Cluster.Services)
	}
	// Restart one service; configure with a new config.
	out, _ = preview(map[string]any{"operation": "RESTART_SERVICES", "services": []string{"zookeeper-server"}})
	if out.Action != "RESTART_SERVICES" || len(out.Tasks) == 0 {
		t.Errorf("restart preview %+v", out)
	}
	runOp(map[string]any{"operation": "RESTART_SERVICES", "services": []string{"zookeeper-server"}}, out.PlanHash)
	runOp(map[string]any{"operation": "CONFIGURE", "config": map[string]any{"tuned": "yes"}, "replace": true}, "")
	c.Cluster.Config = nil // Unmarshal merges into a map it is given
	s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { services config } }`, map[string]any{"id": id}, &c)
	if c.Cluster.Config["tuned"] != "yes" || len(c.Cluster.Config) != 1 {
		t.Errorf("config after CONFIGURE: %v", c.Cluster.Config)
	}

	// Refusals.
	for _, tc := range []struct {
		name string
		in   map[string]any
		code string
	}{
		{"unknown service", map[string]any{"operation": "STOP_SERVICES", "services": []string{"nope"}}, "INVALID_INPUT"},
		{"same size", map[string]any{"operation": "SCALE", "numMachines": 4}, "INVALID_INPUT"},
		{"configure without config", map[string]any{"operation": "CONFIGURE"}, "INVALID_INPUT"},
		{"service outside the template", map[string]any{"operation": "ADD_SERVICES", "services": []string{"nginx"}}, "INVALID_INPUT"},
	} {
		if _, code := preview(tc.in); code != tc.code {
			t.Errorf("%s: %s, want %s", tc.name, code, tc.code)
		}
	}
	if r := s.Do(w.bob, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: STOP_SERVICES}) { id } }`,
		map[string]any{"id": id}); r.Code() != "NOT_FOUND" {
		t.Errorf("bob operates alice's cluster: %+v", r.Errors)
	}
	// While a job runs, another operation is a conflict.
	s.Must(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: STOP_SERVICES}) { id } }`, map[string]any{"id": id}, &struct{}{})
	if r := s.Do(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: START_SERVICES}) { id } }`,
		map[string]any{"id": id}); r.Code() != "CONFLICT" {
		t.Errorf("operation while PENDING: %+v", r.Errors)
	}
}

// CONFIGURE merges the given config into the cluster's (a partial config
// once replaced the whole, and the lb lost its backends); replace gives
// the old behaviour. The preview shows what changes, path by path.
func TestConfigureMergesByDefault(t *testing.T) {
	w := newWorld(t)
	s := w.s
	cfg := map[string]any{
		"lb":   map[string]any{"port": "80", "backends": "%join(map(ip.service.base,'$:80'),' ')%"},
		"web":  map[string]any{"greeting": "hello", "tls": map[string]any{"on": false}},
		"list": []any{1, 2},
		"old":  "going",
	}
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "conf", "clusterTemplate": "lamp", "numMachines": 2, "config": cfg}}, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")
	type change struct {
		Path     []string
		Kind     string
		Old, New any
	}
	preview := func(in map[string]any) (map[string]any, []change, *servertest.Response) {
		t.Helper()
		var out struct {
			PreviewOperation struct {
				Config        map[string]any
				ConfigChanges []change
			}
		}
		r := s.Do(w.alice, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
			config configChanges { path kind old new } } }`, map[string]any{"id": id, "in": in})
		if r.Code() == "" {
			if err := r.Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return out.PreviewOperation.Config, out.PreviewOperation.ConfigChanges, r
	}
	config := func() map[string]any {
		t.Helper()
		var c struct {
			Cluster struct{ Config map[string]any }
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { config } }`, map[string]any{"id": id}, &c)
		return c.Cluster.Config
	}
	show := func(v any) string { b, _ := json.Marshal(v); return string(b) }

	patch := map[string]any{"operation": "CONFIGURE", "config": map[string]any{
		"web":  map[string]any{"greeting": "bye", "tls": map[string]any{"cert": "c.pem"}},
		"list": []any{3},
		"old":  nil,
		"new":  map[string]any{"x": 1},
	}}
	merged := map[string]any{
		"lb":   cfg["lb"],
		"web":  map[string]any{"greeting": "bye", "tls": map[string]any{"on": false, "cert": "c.pem"}},
		"list": []any{3},
		"new":  map[string]any{"x": 1},
	}
	got, changes, r := preview(patch)
	if r.Code() != "" {
		t.Fatalf("preview: %+v", r.Errors)
	}
	if show(got) != show(merged) {
		t.Errorf("previewed config %s, want %s", show(got), show(merged))
	}
	want := []change{
		{Path: []string{"list"}, Kind: "CHANGED", Old: []any{1.0, 2.0}, New: []any{3.0}},
		{Path: []string{"new"}, Kind: "ADDED", New: map[string]any{"x": 1.0}},
		{Path: []string{"old"}, Kind: "REMOVED", Old: "going"},
		{Path: []string{"web", "greeting"}, Kind: "CHANGED", Old: "hello", New: "bye"},
		{Path: []string{"web", "tls", "cert"}, Kind: "ADDED", New: "c.pem"},
	}
	if show(changes) != show(want) {
		t.Errorf("changes\n%s\nwant\n%s", show(changes), show(want))
	}
	if c := config(); show(c) != show(cfg) {
		t.Errorf("the preview changed the config: %s", show(c))
	}
	s.Must(w.alice, `mutation($id: ID!, $in: OperationInput!) { runOperation(clusterId: $id, input: $in) { id } }`,
		map[string]any{"id": id, "in": patch}, &struct{}{})
	w.run(t, w.alice, id, "ACTIVE")
	if c := config(); show(c) != show(merged) {
		t.Errorf("config after the merge %s, want %s", show(c), show(merged))
	}

	// The macros checked are the merged config's.
	if _, _, r := preview(map[string]any{"operation": "CONFIGURE", "config": map[string]any{"web": map[string]any{"greeting": "%join(host.service.a)%"}}}); r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["field"] != "config.web.greeting" {
		t.Errorf("bad macro in the patch: %+v", r.Errors)
	}
	if _, _, r := preview(map[string]any{"operation": "SCALE", "numMachines": 3, "replace": true}); r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["field"] != "replace" {
		t.Errorf("replace on SCALE: %+v", r.Errors)
	}

	// replace: the config given is the whole config.
	whole := map[string]any{"operation": "CONFIGURE_WITH_RESTART", "replace": true, "config": map[string]any{"web": map[string]any{"greeting": "only"}}}
	_, changes, _ = preview(whole)
	var kinds []string
	for _, c := range changes {
		kinds = append(kinds, strings.Join(c.Path, ".")+" "+c.Kind)
	}
	if got := strings.Join(kinds, ", "); got != "lb REMOVED, list REMOVED, new REMOVED, web.greeting CHANGED, web.tls REMOVED" {
		t.Errorf("replace previews %s", got)
	}
	s.Must(w.alice, `mutation($id: ID!, $in: OperationInput!) { runOperation(clusterId: $id, input: $in) { id } }`,
		map[string]any{"id": id, "in": whole}, &struct{}{})
	w.run(t, w.alice, id, "ACTIVE")
	if c := config(); show(c) != `{"web":{"greeting":"only"}}` {
		t.Errorf("config after replace %s", show(c))
	}
}
