package server_test

import (
	"testing"
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
	runOp(map[string]any{"operation": "CONFIGURE", "config": map[string]any{"tuned": "yes"}}, "")
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
