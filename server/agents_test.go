package server_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// lampDrivers are the drivers the lamp template's tasks need.
func lampDrivers(providerType string) []any {
	return []any{map[string]any{"role": "vm", "name": providerType}, map[string]any{"role": "node", "name": "ssh"},
		map[string]any{"role": "automator", "name": "chef-solo"}}
}

type assignment struct {
	TaskID, ClaimToken string
	Attempt            int
	Payload            struct {
		TaskName string
		Service  *struct{ Name string }
		Node     *struct{ ID, Hostname string }
		Cluster  struct {
			ID     string
			Config map[string]any
		}
		Nodes map[string]any
	}
}

const claimQuery = `mutation($in: ClaimInput!) { claimTask(input: $in) { taskId attempt claimToken payload } }`
const finishQuery = `mutation($in: FinishInput!) { finishTask(input: $in) }`

func TestAgentAPI(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	reg := map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "capacity": 4, "version": "test",
		"drivers": lampDrivers("rackspace")}
	var setup struct {
		RegisterAgent struct {
			HeartbeatIntervalSeconds int
			Assignments              []struct {
				TenantID string
				Slots    int
			}
		}
	}
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds assignments { tenantId slots } } }`,
		map[string]any{"in": reg}, &setup)
	if setup.RegisterAgent.HeartbeatIntervalSeconds != 10 || len(setup.RegisterAgent.Assignments) != 0 {
		t.Fatalf("setup %+v: want no slots while the tenant has no workers", setup.RegisterAgent)
	}
	claim := map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 1}
	if r := s.Do(agent, claimQuery, map[string]any{"in": claim}); r.Code() != "SLOT_NOT_ASSIGNED" {
		t.Errorf("claim without slots: %+v", r.Errors)
	}
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 2}) { id } }`, nil, &struct{}{})
	var hb struct {
		AgentHeartbeat struct {
			Assignments []struct {
				TenantID string
				Slots    int
			}
		}
	}
	s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "agent-1", incarnation: "inc-1"}) { assignments { tenantId slots } } }`, nil, &hb)
	if a := hb.AgentHeartbeat.Assignments; len(a) != 1 || a[0].TenantID != w.tenantID || a[0].Slots != 2 {
		t.Fatalf("assignments %+v, want 2 slots of acme", a)
	}
	for _, c := range []struct{ name, token, query, code string }{
		{"user claims", w.alice, claimQuery, "FORBIDDEN"},
		{"agent reads me", agent, `{ me { user } }`, "FORBIDDEN"},
		{"agent lists clusters", agent, `{ clusters { nodes { id } } }`, "FORBIDDEN"},
		{"user lists agents", w.admin, `{ agents { id } }`, "FORBIDDEN"},
	} {
		if r := s.Do(c.token, c.query, map[string]any{"in": claim}); r.Code() != c.code {
			t.Errorf("%s: %+v, want %s", c.name, r.Errors, c.code)
		}
	}
	old := map[string]any{"agentId": "agent-1", "incarnation": "inc-0", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 1}
	if r := s.Do(agent, claimQuery, map[string]any{"in": old}); r.Code() != "AGENT_UNKNOWN" {
		t.Errorf("claim of an old incarnation: %+v", r.Errors)
	}
	if r := s.Do(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1",
		"tenantId": w.tenantID, "slot": 2, "waitSeconds": 1}}); r.Code() != "SLOT_NOT_ASSIGNED" {
		t.Errorf("claim on slot 2 of 2: %+v", r.Errors)
	}

	// Build a cluster through the agent API alone.
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "via-agent", "clusterTemplate": "lamp", "numMachines": 2}}, &cr)
	id := cr.CreateCluster.ID
	deadline := time.Now().Add(60 * time.Second)
	var sawService bool
	var last assignment
	for time.Now().Before(deadline) {
		var c struct{ Cluster struct{ Status string } }
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
		if c.Cluster.Status == "ACTIVE" {
			break
		}
		var got struct{ ClaimTask *assignment }
		s.Must(agent, claimQuery, map[string]any{"in": claim}, &got)
		if got.ClaimTask == nil {
			continue
		}
		a := got.ClaimTask
		// lamp on rackspace has no network tasks, the only ones that list
		// the cluster's nodes: a payload's size must not grow with the
		// cluster's.
		if a.Payload.Cluster.ID != id || a.Payload.Nodes != nil {
			t.Fatalf("payload names cluster %q and lists nodes %v", a.Payload.Cluster.ID, a.Payload.Nodes)
		}
		result := map[string]any{"status": 0}
		if a.Payload.TaskName == "CONFIRM" {
			result["ipaddresses"] = map[string]any{"access_v4": "10.9.0.1", "bind_v4": "10.9.0.1"}
		}
		if a.Payload.Service != nil && a.Payload.Service.Name == "php" {
			sawService = true
			// lamp's config names mysql-server's host: expanded at claim.
			php := a.Payload.Cluster.Config["php"].(map[string]any)["directives"].(map[string]any)["mysql.default_host"]
			if php == "%host.service.mysql-server%" || php == "" {
				t.Errorf("php task saw mysql.default_host = %v, want a hostname", php)
			}
		}
		s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
			"claimToken": a.ClaimToken, "result": result}}, &struct{}{})
		last = *a
	}
	var c struct{ Cluster struct{ Status string } }
	s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
	if c.Cluster.Status != "ACTIVE" || !sawService {
		t.Fatalf("cluster %s (saw a php task: %v)", c.Cluster.Status, sawService)
	}
	var tk struct {
		Job struct {
			Tasks []struct {
				Attempts []struct {
					Attempt    int
					Agent      string
					FinishedAt *time.Time
					Status     *int
				}
			}
		}
	}
	s.Must(w.alice, `query($id: ID!) { job(id: $id) { tasks { attempts { attempt agent finishedAt status } } } }`,
		map[string]any{"id": id + "-001"}, &tk)
	for i, task := range tk.Job.Tasks {
		if len(task.Attempts) != 1 || task.Attempts[0].Agent != "agent-1" || task.Attempts[0].FinishedAt == nil ||
			task.Attempts[0].Status == nil || *task.Attempts[0].Status != 0 {
			t.Errorf("task %d attempts %+v", i, task.Attempts)
		}
	}
	r := s.Do(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": last.TaskID, "attempt": last.Attempt,
		"claimToken": last.ClaimToken, "result": map[string]any{"status": 0}}})
	if r.Code() != "STALE_CLAIM" {
		t.Errorf("second finish: %+v, want STALE_CLAIM", r.Errors)
	}
}

// claimTasks claims for several slots in one request: at most one task a
// slot, each tagged with its slot, and an empty list when nothing came.
func TestClaimTasksAPI(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { cancel } }`, map[string]any{"in": map[string]any{
		"agentId": "agent-1", "incarnation": "inc-1", "capacity": 4, "drivers": lampDrivers("rackspace")}}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 4}) { id } }`, nil, &struct{}{})
	const q = `mutation($in: ClaimTasksInput!) { claimTasks(input: $in) { taskId slot attempt claimToken payload } }`
	in := func(slots []int, wait int) map[string]any {
		return map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "tenantId": w.tenantID,
			"slots": slots, "waitSeconds": wait}}
	}
	for _, c := range []struct {
		name  string
		slots []int
		code  string
		says  string
	}{
		{"no slots", []int{}, "INVALID_INPUT", "input.slots: must list at least one free slot"},
		{"a slot twice", []int{1, 2, 1}, "INVALID_INPUT", "input.slots: lists slot 1 twice"},
		{"a slot not assigned", []int{0, 4}, "SLOT_NOT_ASSIGNED", ""},
		{"a negative slot", []int{-1}, "SLOT_NOT_ASSIGNED", ""},
	} {
		r := s.Do(agent, q, in(c.slots, 0))
		if r.Code() != c.code || (c.says != "" && !strings.Contains(r.Errors[0].Message, c.says)) {
			t.Errorf("%s: %+v, want %s %q", c.name, r.Errors, c.code, c.says)
		}
	}
	var none struct{ ClaimTasks []assignment }
	s.Must(agent, q, in([]int{0, 1}, 0), &none)
	if none.ClaimTasks == nil || len(none.ClaimTasks) != 0 {
		t.Fatalf("claim with nothing queued: %+v, want an empty list", none.ClaimTasks)
	}

	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "batch", clusterTemplate: "lamp", numMachines: 3}) { id } }`, nil, &cr)
	// Once the three CREATEs are in the stream, one claim for three slots
	// gets all of them.
	opts, err := redis.ParseURL(queuetest.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	stream := s.Config.RedisPrefix + ":" + w.tenantID + ":tasks"
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, err := rdb.XLen(context.Background(), stream).Result(); err == nil && n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CREATEs never reached %s", stream)
		}
	}
	var got struct {
		ClaimTasks []struct {
			assignment
			Slot int
		}
	}
	slots := []int{1, 2, 3}
	s.Must(agent, q, in(slots, 1), &got)
	if len(got.ClaimTasks) != 3 {
		t.Fatalf("one claim for slots %v with 3 tasks queued got %d", slots, len(got.ClaimTasks))
	}
	seen := map[int]bool{}
	for _, a := range got.ClaimTasks {
		if !slices.Contains(slots, a.Slot) || seen[a.Slot] {
			t.Errorf("task %s for slot %d: not one of %v once", a.TaskID, a.Slot, slots)
		}
		seen[a.Slot] = true
		if a.Payload.TaskName != "CREATE" || a.Payload.Cluster.ID != cr.CreateCluster.ID || a.ClaimToken == "" {
			t.Errorf("claimed %+v, want a CREATE of %s", a.assignment, cr.CreateCluster.ID)
		}
	}
}

func TestAgentEvents(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agents", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 2}) { cancel } }`, nil, &struct{}{})
	sub, err := s.Subscribe(s.Super, `subscription { agentEvents { kind agentId capacity busy live } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	next := func() (ev struct {
		Kind, AgentID  string
		Capacity, Busy int
		Live           bool
	}) {
		t.Helper()
		r, _, err := sub.Next(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			AgentEvents struct {
				Kind, AgentID  string
				Capacity, Busy int
				Live           bool
			}
		}
		if err := r.Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.AgentEvents
	}
	if ev := next(); ev.Kind != "SNAPSHOT" || ev.AgentID != "a" || ev.Capacity != 2 || !ev.Live {
		t.Fatalf("first event %+v", ev)
	}
	s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "a", incarnation: "1"}) { cancel } }`, nil, &struct{}{})
	if ev := next(); ev.Kind != "HEARTBEAT" || ev.AgentID != "a" {
		t.Errorf("after a heartbeat: %+v", ev)
	}
	s.Must(agent, `mutation { registerAgent(input: {agentId: "b", incarnation: "1", capacity: 3}) { cancel } }`, nil, &struct{}{})
	if ev := next(); ev.Kind != "REGISTERED" || ev.AgentID != "b" || ev.Capacity != 3 {
		t.Errorf("after a registration: %+v", ev)
	}
	if _, err := s.Srv.Store().DB().Exec(`UPDATE agents SET last_seen = now() - interval '1 minute' WHERE id = 'b'`); err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Kind != "LOST" || ev.AgentID != "b" || ev.Live {
		t.Errorf("after silence: %+v", ev)
	}
	if r := s.Do(w.admin, `{ agents { id } }`, nil); r.Code() != "FORBIDDEN" {
		t.Errorf("tenant admin lists agents: %+v", r.Errors)
	}
}

// A task needing a driver the claiming agent lacks goes to one that has
// it (docs/task-protocol.md#queues-and-claims).
func TestClaimSkipsMissingDriver(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agents", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	register := `mutation($id: String!, $d: [DriverInput!]) { registerAgent(input: {agentId: $id, incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`
	s.Must(agent, register, map[string]any{"id": "no-vm", "d": []any{map[string]any{"role": "node", "name": "ssh"},
		map[string]any{"role": "automator", "name": "chef-solo"}}}, &struct{}{})
	s.Must(agent, register, map[string]any{"id": "full", "d": lampDrivers("rackspace")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 2}) { id } }`, nil, &struct{}{})
	s.Must(w.alice, `mutation { createCluster(input: {name: "d", clusterTemplate: "lamp", numMachines: 1}) { id } }`, nil, &struct{}{})
	claim := func(agentID string) *assignment {
		var got struct{ ClaimTask *assignment }
		s.Must(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": agentID, "incarnation": "1", "tenantId": w.tenantID,
			"slot": 0, "waitSeconds": 1}}, &got)
		return got.ClaimTask
	}
	if a := claim("no-vm"); a != nil {
		t.Fatalf("the agent without a vm driver got %s", a.Payload.TaskName)
	}
	a := claim("full")
	if a == nil || a.Payload.TaskName != "CREATE" {
		t.Fatalf("the agent with every driver got %+v, want the CREATE", a)
	}
	var n int
	if err := s.Srv.Store().DB().Get(&n, `SELECT count(*) FROM events WHERE message LIKE '%agent no-vm has no vm driver "rackspace"%'`); err != nil || n == 0 {
		t.Errorf("no hand-back event for the missing driver (%d, %v)", n, err)
	}
	if a.Attempt != 1 {
		t.Errorf("the CREATE runs as attempt %d: a hand-back must not count", a.Attempt)
	}
}

// A task whose driver no live agent offers fails without retry once the
// grace period has passed.
func TestNoAgentOffersDriver(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) { c.DriverGrace = 500 * time.Millisecond })
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agents", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "no-vm", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": []any{map[string]any{"role": "automator", "name": "chef-solo"}}}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "d", clusterTemplate: "lamp", numMachines: 1}) { id } }`, nil, &cr)
	var job struct {
		Job struct{ State, Message string }
	}
	deadline := time.Now().Add(20 * time.Second)
	for job.Job.State != "FAILED" && time.Now().Before(deadline) {
		var got struct{ ClaimTask *assignment }
		s.Must(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": "no-vm", "incarnation": "1", "tenantId": w.tenantID,
			"slot": 0, "waitSeconds": 1}}, &got)
		if got.ClaimTask != nil {
			t.Fatalf("got %s without its driver", got.ClaimTask.Payload.TaskName)
		}
		s.Must(w.alice, `query($id: ID!) { job(id: $id) { state message } }`, map[string]any{"id": cr.CreateCluster.ID + "-001"}, &job)
	}
	if job.Job.State != "FAILED" || !strings.Contains(job.Job.Message, `no live agent offers the vm driver "rackspace"`) {
		t.Errorf("job %+v, want FAILED for the missing driver", job.Job)
	}
}

// An agent whose session connection drops and does not come back within
// the grace loses its claims at once, not when the leases lapse; one that
// reconnects in time keeps them.
func TestAgentSession(t *testing.T) {
	// The reconnect below must land within the grace: a websocket dial,
	// its init and the session's first answer, which a loaded machine
	// (load 30 and more in make test) can stretch past half a second.
	const grace = 2 * time.Second
	w := newWorldWith(t, func(c *server.Config) { c.AgentSessionGrace = grace })
	s := w.s
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": lampDrivers("rackspace")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "s", "clusterTemplate": "lamp", "numMachines": 2}}, &struct{}{})
	claim := func() *assignment {
		t.Helper()
		var got struct{ ClaimTask *assignment }
		for deadline := time.Now().Add(10 * time.Second); got.ClaimTask == nil && time.Now().Before(deadline); {
			s.Must(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": "a", "incarnation": "1",
				"tenantId": w.tenantID, "slot": 0, "waitSeconds": 2}}, &got)
		}
		if got.ClaimTask == nil {
			t.Fatal("nothing claimed")
		}
		return got.ClaimTask
	}
	open := func() *servertest.Subscription {
		t.Helper()
		sub, err := s.Subscribe(agent, `subscription { agentSession(agentId: "a", incarnation: "1") { graceSeconds } }`, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := sub.Next(5 * time.Second)
		if err != nil || r.Code() != "" {
			t.Fatalf("session: %v %+v", err, r)
		}
		return sub
	}
	state := func(id string) (string, int) {
		var st struct {
			State   string `db:"state"`
			Attempt int    `db:"attempt"`
		}
		if err := s.Srv.Store().DB().Get(&st, `SELECT state, attempt FROM tasks WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		return st.State, st.Attempt
	}

	a := claim()
	sub := open()
	// A blip: the connection drops and comes back within the grace.
	sub.Close()
	sub = open()
	time.Sleep(grace) // past the grace counted from the close
	if st, n := state(a.TaskID); st != "IN_PROGRESS" || n != a.Attempt {
		t.Fatalf("after a reconnect within the grace the claim is %s (attempt %d), want it kept", st, n)
	}
	// Gone for good.
	sub.Close()
	deadline := time.Now().Add(5*time.Second + grace)
	for {
		st, n := state(a.TaskID)
		if n > a.Attempt || (st != "IN_PROGRESS" && st != "COMPLETE") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim of an agent whose session is gone is still %s after %s (grace %s)", st, 5*time.Second+grace, grace)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var msg string
	if err := s.Srv.Store().DB().Get(&msg, `SELECT message FROM task_attempts WHERE task_id = $1 AND attempt = $2`, a.TaskID, a.Attempt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "abandoned") {
		t.Errorf("the failed attempt says %q", msg)
	}
}
