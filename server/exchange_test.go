package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/wire"
)

type exchanged struct {
	ExchangeTasks struct {
		Finished []struct {
			TaskID  string
			Attempt int
			Code    *string
		}
		Assignments []struct {
			TaskID, ClaimToken string
			Slot, Attempt      int
			Payload            struct {
				TaskName string
				Node     *struct{ ID string }
			}
		}
		ClaimRefused *string
	}
}

// exchangeTasks finishes attempts and claims in one request: every finish
// is committed before the claim, so a node's next task is never handed out
// while the finish of the one before could still be lost; a finish sent
// again (its answer lost) is answered as recorded; the claim never takes
// more tasks than the slots listed, nor than the tenant's free workers.
func TestExchangeTasks(t *testing.T) {
	w := newWorld(t)
	s := w.s
	db := s.Srv.Store().DB()
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
		map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "capacity": 4,
			"drivers": lampDrivers("rackspace")}}, &struct{}{})
	workers := func(n int) {
		s.Must(s.Super, `mutation($n: Int!) { updateTenant(name: "acme", input: {name: "acme", workers: $n}) { id } }`,
			map[string]any{"n": n}, &struct{}{})
		s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "agent-1", incarnation: "inc-1"}) { heartbeatIntervalSeconds } }`,
			nil, &struct{}{})
	}
	workers(1)
	exchange := func(fins []map[string]any, slots []int, wait int) exchanged {
		t.Helper()
		if fins == nil {
			fins = []map[string]any{}
		}
		if slots == nil {
			slots = []int{}
		}
		var out exchanged
		s.Must(agent, wire.ExchangeQuery, map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1",
			"tenantId": w.tenantID, "finishes": fins, "slots": slots, "waitSeconds": wait}}, &out)
		return out
	}
	if r := exchange(nil, []int{0, 1}, 0).ExchangeTasks; r.ClaimRefused == nil || *r.ClaimRefused != wire.CodeSlotNotAssigned {
		t.Fatalf("claim for slot 1 of 1: refused %v, want %s", r.ClaimRefused, wire.CodeSlotNotAssigned)
	}

	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "exchanged", "clusterTemplate": "lamp", "numMachines": 2}}, &cr)
	id := cr.CreateCluster.ID

	// One worker: a second claim gets nothing while the first task runs,
	// though the other node's CREATE is queued and the slot listed free.
	first := exchange(nil, []int{0}, 20).ExchangeTasks.Assignments
	if len(first) != 1 {
		t.Fatalf("first claim: %d tasks, want 1", len(first))
	}
	if got := exchange(nil, []int{0}, 1).ExchangeTasks.Assignments; len(got) != 0 {
		t.Fatalf("claim with the tenant's one worker busy: %d tasks, want none", len(got))
	}
	var queued int
	if err := db.Get(&queued, `SELECT count(*) FROM tasks WHERE state = 'QUEUED'`); err != nil || queued == 0 {
		t.Fatalf("queued tasks %d (%v): the claim above had one to take", queued, err)
	}
	workers(2)

	finish := func(a struct {
		TaskID, ClaimToken string
		Slot, Attempt      int
		Payload            struct {
			TaskName string
			Node     *struct{ ID string }
		}
	}, status int) map[string]any {
		result := map[string]any{"status": status}
		if a.Payload.TaskName == "CONFIRM" {
			result["ipaddresses"] = map[string]any{"access_v4": "10.9.0.1", "bind_v4": "10.9.0.1"}
		}
		return map[string]any{"taskId": a.TaskID, "attempt": a.Attempt, "claimToken": a.ClaimToken, "result": result}
	}
	pending := []map[string]any{finish(first[0], 0)}
	lastOnNode := map[string]string{first[0].Payload.Node.ID: first[0].TaskID}
	var retried, stale bool
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var c struct{ Cluster struct{ Status string } }
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
		if c.Cluster.Status == "ACTIVE" {
			break
		}
		sent := pending
		r := exchange(sent, []int{0, 1}, 2).ExchangeTasks
		if len(r.Finished) != len(sent) {
			t.Fatalf("%d outcomes for %d finishes", len(r.Finished), len(sent))
		}
		for i, o := range r.Finished {
			if o.TaskID != sent[i]["taskId"] || o.Code != nil {
				t.Fatalf("finish %v: outcome %+v, want recorded", sent[i]["taskId"], o)
			}
		}
		if len(sent) > 0 && !retried {
			// The same finishes again, as after a lost answer: recorded.
			retried = true
			for i, o := range exchange(sent, nil, 0).ExchangeTasks.Finished {
				if o.Code != nil {
					t.Errorf("finish %v sent again: %s, want recorded", sent[i]["taskId"], *o.Code)
				}
			}
		}
		if len(r.Assignments) > 2 {
			t.Fatalf("%d tasks for 2 slots", len(r.Assignments))
		}
		pending = nil
		for _, a := range r.Assignments {
			if a.Payload.Node != nil {
				// The node's task before this one must be committed
				// COMPLETE by the time this one is handed out.
				if prev, ok := lastOnNode[a.Payload.Node.ID]; ok {
					var state string
					if err := db.Get(&state, `SELECT state FROM tasks WHERE id = $1`, prev); err != nil || state != "COMPLETE" {
						t.Fatalf("task %s (%s) handed out while its node's task %s is %s (%v)", a.TaskID, a.Payload.TaskName, prev, state, err)
					}
				}
				lastOnNode[a.Payload.Node.ID] = a.TaskID
			}
			if !stale {
				// A finish under another token, and the same claim with
				// another result sent after it was recorded: stale.
				stale = true
				bad := finish(a, 0)
				bad["claimToken"] = "00" + a.ClaimToken[2:]
				if a.ClaimToken[:2] == "00" {
					bad["claimToken"] = "11" + a.ClaimToken[2:]
				}
				if o := exchange([]map[string]any{bad}, nil, 0).ExchangeTasks.Finished; o[0].Code == nil || *o[0].Code != wire.CodeStaleClaim {
					t.Fatalf("finish under a wrong token: %+v, want %s", o, wire.CodeStaleClaim)
				}
				exchange([]map[string]any{finish(a, 0)}, nil, 0)
				if o := exchange([]map[string]any{finish(a, 1)}, nil, 0).ExchangeTasks.Finished; o[0].Code == nil || *o[0].Code != wire.CodeStaleClaim {
					t.Fatalf("a recorded finish sent again with another status: %+v, want %s", o, wire.CodeStaleClaim)
				}
				continue
			}
			pending = append(pending, finish(a, 0))
		}
	}
	var c struct{ Cluster struct{ Status string } }
	s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
	if c.Cluster.Status != "ACTIVE" || !retried || !stale {
		t.Fatalf("cluster %s, finishes retried %v, stale tried %v", c.Cluster.Status, retried, stale)
	}
	var running int
	if err := db.Get(&running, `SELECT count(*) FROM task_attempts WHERE finished_at IS NULL`); err != nil || running != 0 {
		t.Fatalf("%d attempts left open (%v)", running, err)
	}
}

// A finish carries its attempt's last output lines: they reach the task's
// log in order once the finish is recorded; a stale finish's lines are
// dropped, and a finish carrying more lines than allowed is refused.
func TestFinishCarriesOutput(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
		map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "capacity": 1,
			"drivers": lampDrivers("rackspace")}}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "agent-1", incarnation: "inc-1"}) { heartbeatIntervalSeconds } }`,
		nil, &struct{}{})
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "output", "clusterTemplate": "lamp", "numMachines": 1}}, &struct{}{})
	exchange := func(fins []map[string]any, slots []int) exchanged {
		t.Helper()
		var out exchanged
		s.Must(agent, wire.ExchangeQuery, map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1",
			"tenantId": w.tenantID, "finishes": fins, "slots": slots, "waitSeconds": 20}}, &out)
		return out
	}
	got := exchange([]map[string]any{}, []int{0}).ExchangeTasks.Assignments
	if len(got) != 1 {
		t.Fatalf("claimed %d tasks, want 1", len(got))
	}
	a := got[0]
	sub, err := s.Subscribe(w.alice, `subscription($id: ID!) { taskLog(taskId: $id) { seq stream chunk } }`,
		map[string]any{"id": a.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	lines := func(prefix string, n int) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			stream := "STDOUT"
			if i%3 == 2 {
				stream = "STDERR"
			}
			out[i] = map[string]any{"seq": i + 1, "stream": stream, "chunk": fmt.Sprintf("%s %d", prefix, i)}
		}
		return out
	}
	fin := func(token string, output []map[string]any) map[string]any {
		return map[string]any{"taskId": a.TaskID, "attempt": a.Attempt, "claimToken": token,
			"result": map[string]any{"status": 0}, "output": output}
	}
	// The recorded finish makes a secret and prints it in its last line.
	const made = "made-in-this-task-s3cr3t"
	recorded := fin(a.ClaimToken, append(lines("line", 5), map[string]any{"seq": 6, "stream": "STDOUT", "chunk": "password " + made}))
	recorded["result"] = map[string]any{"status": 0, "secrets": map[string]any{"password": made}}
	wrong := "00" + a.ClaimToken[2:]
	if a.ClaimToken[:2] == "00" {
		wrong = "11" + a.ClaimToken[2:]
	}
	for _, c := range []struct {
		name   string
		finish map[string]any
		code   string
	}{
		{"stale", fin(wrong, lines("stale", 3)), wire.CodeStaleClaim},
		{"too many lines", fin(a.ClaimToken, lines("many", 257)), "INVALID_INPUT"},
		{"recorded", recorded, ""},
	} {
		o := exchange([]map[string]any{c.finish}, []int{}).ExchangeTasks.Finished
		if len(o) != 1 || (o[0].Code == nil) != (c.code == "") || (o[0].Code != nil && *o[0].Code != c.code) {
			t.Fatalf("%s: outcome %+v, want code %q", c.name, o, c.code)
		}
	}
	// Only the recorded finish's lines, in order.
	for i := range 5 {
		r, end, err := sub.Next(10 * time.Second)
		if err != nil || end {
			t.Fatalf("log ended after %d lines: %v", i, err)
		}
		var l struct {
			TaskLog struct {
				Seq           int
				Stream, Chunk string
			}
		}
		if err := r.Decode(&l); err != nil {
			t.Fatal(err)
		}
		want := lines("line", 5)[i]
		if l.TaskLog.Seq != i+1 || l.TaskLog.Stream != want["stream"] || l.TaskLog.Chunk != want["chunk"] {
			t.Fatalf("line %d: %+v, want %v", i+1, l.TaskLog, want)
		}
	}
	r, end, err := sub.Next(10 * time.Second)
	if err != nil || end {
		t.Fatalf("log ended before the last line: %v", err)
	}
	var last struct{ TaskLog struct{ Chunk string } }
	if err := r.Decode(&last); err != nil {
		t.Fatal(err)
	}
	if c := last.TaskLog.Chunk; strings.Contains(c, made) || !strings.HasPrefix(c, "password ") {
		t.Errorf("the line printing the result's own secret was published as %q", c)
	}
}
