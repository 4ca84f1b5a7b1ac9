package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"
)

// fast is an engine configuration that makes leases, reaping and backoff
// take milliseconds instead of seconds.
var fast = Config{LeaseTTL: 600 * time.Millisecond, ReapInterval: 50 * time.Millisecond,
	ReconcileInterval: 200 * time.Millisecond, BackoffBase: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond}

// leased is fast with leases that outlast any test, for tests that hold
// claims by hand (no heartbeats) and are not about leases: a loaded
// machine can take longer than fast's 600 ms between a claim and its
// finish, and the reaper then made the finish stale.
var leased = func() Config { c := fast; c.LeaseTTL = time.Minute; return c }()

type harness struct {
	t       *testing.T
	db      *sqlx.DB
	rdb     *redis.Client
	q       *queue.Queue
	tenant  string
	cluster string
	eng     atomic.Pointer[Engine] // swapped by start while agents run
	stop    func()                 // stops the running engine and waits for it
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	st := storetest.New(t)
	rdb, prefix := queuetest.New(t)
	h := &harness{t: t, db: st.DB(), rdb: rdb, q: queue.New(rdb, queue.Options{Prefix: prefix, ClaimIdle: 300 * time.Millisecond})}
	ctx := context.Background()
	ten, err := st.EnsureTenant(ctx, "acme")
	must(t, err)
	h.tenant = ten.ID
	must(t, h.db.GetContext(ctx, &h.cluster, `INSERT INTO clusters (tenant_id, name, status) VALUES ($1, 'c1', 'ACTIVE') RETURNING id`, h.tenant))
	h.start(cfg)
	return h
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (h *harness) engine() *Engine { return h.eng.Load() }

// claim claims a task of the tenant for agent a; none within 30 s fails
// the test. (The scheduler queues a submitted job's tasks a moment after
// the submit, which a loaded machine stretches past 2 s.)
func (h *harness) claim() *Assignment {
	h.t.Helper()
	a, err := h.engine().Claim(context.Background(), ClaimRequest{TenantID: h.tenant, AgentID: "a", Wait: 30 * time.Second})
	must(h.t, err)
	if a == nil {
		h.t.Fatal("no task within 30 s")
	}
	return a
}

// start runs a new engine instance, as a restarted server would.
func (h *harness) start(cfg Config) {
	if h.stop != nil {
		h.stop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	eng := New(h.db, h.q, cfg)
	h.eng.Store(eng)
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				h.t.Errorf("engine run: %v", err)
			}
			eng.Stop()
		})
	}
	h.t.Cleanup(h.stop)
}

// services used by the tests: base everywhere, db and app with the full
// lifecycle, app depending on db.
func testServices() map[string]*catalog.Service {
	mk := func(name string, actions []string, runtime ...string) *catalog.Service {
		s := &catalog.Service{Base: catalog.Base{Name: name}}
		s.Provisioner.Actions = map[string]catalog.Action{}
		for _, a := range actions {
			s.Provisioner.Actions[a] = catalog.Action{Type: "shell", Fields: map[string]string{"script": name + "-" + a}}
		}
		s.Dependencies.Runtime.Requires = runtime
		return s
	}
	return map[string]*catalog.Service{
		"base": mk("base", []string{"install", "configure"}),
		"db":   mk("db", []string{"install", "configure", "start", "stop"}, "base"),
		"app":  mk("app", []string{"install", "configure", "initialize", "start", "stop"}, "db"),
	}
}

// nodes writes n node rows: the first hosts db, the rest app; all base.
func (h *harness) nodes(n int) []planner.Node {
	var out []planner.Node
	for i := range n {
		svcs := []string{"base", "app"}
		if i == 0 {
			svcs = []string{"base", "db"}
		}
		id := fmt.Sprintf("%s-n%d", h.cluster[:8], i)
		_, err := h.db.Exec(`INSERT INTO nodes (id, cluster_id, nodenum, services) VALUES ($1, $2, $3, $4)`, id, h.cluster, 1000+i, pq.Array(svcs))
		must(h.t, err)
		out = append(out, planner.Node{ID: id, NodeNum: 1000 + i, Services: svcs})
	}
	return out
}

func (h *harness) submit(action planner.ClusterAction, nodes []planner.Node, services map[string]*catalog.Service) (string, *planner.Plan) {
	h.t.Helper()
	p, err := planner.Build(&planner.Request{Action: action, Services: services, Nodes: nodes})
	must(h.t, err)
	job, err := h.engine().Submit(context.Background(), JobSpec{TenantID: h.tenant, ClusterID: h.cluster, Action: action, Plan: p, Services: services})
	must(h.t, err)
	return job, p
}

// waitStatus waits for the cluster to settle in status.
func (h *harness) waitStatus(want string, timeout time.Duration) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	var status, msg string
	for time.Now().Before(deadline) {
		var r struct {
			Status  string `db:"status"`
			Message string `db:"message"`
		}
		must(h.t, h.db.Get(&r, `SELECT status, message FROM clusters WHERE id = $1`, h.cluster))
		status, msg = r.Status, r.Message
		if status == want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("cluster is %s (%q) after %v, want %s\n%s", status, msg, timeout, want, h.dump())
}

func (h *harness) dump() string {
	var rows []struct {
		Idx     int    `db:"idx"`
		Node    string `db:"node_id"`
		Action  string `db:"action"`
		Service string `db:"service"`
		State   string `db:"state"`
		Attempt int    `db:"attempt"`
		Message string `db:"message"`
	}
	_ = h.db.Select(&rows, `SELECT idx, node_id, action, service, state, attempt, message FROM tasks ORDER BY idx`)
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("  %d %s %s %s %s #%d %s\n", r.Idx, r.Node, r.Action, r.Service, r.State, r.Attempt, r.Message)
	}
	return s
}

// run is one execution of a task by the test agent.
type run struct {
	task, node, action, service string
	attempt                     int
	start, end                  time.Time
	result                      Result
}

// agent is an in-process agent whose driver is a script.
type agent struct {
	h      *harness
	id     string
	script func(a *Assignment, n int) (Result, time.Duration) // n: how often this (node, action, service) ran before
	// hang makes the driver never finish (no heartbeat either) when it
	// returns true: a lost agent.
	hang func(a *Assignment, n int) bool
	// heartbeat renews a task's claim while it runs. On for every agent:
	// a loaded machine holds a task past fast's short lease between its
	// claim and its finish (a test then saw it reaped and run twice, or
	// its finish stale); a hang (a lost agent) still stops it.
	heartbeat bool

	mu      sync.Mutex
	runs    []run
	count   map[string]int
	running map[string]int // node -> tasks running now
	overlap []string
	stale   []error
}

func (h *harness) agent(id string, slots int, script func(a *Assignment, n int) (Result, time.Duration)) *agent {
	ag := &agent{h: h, id: id, script: script, heartbeat: true, count: map[string]int{}, running: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for slot := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ag.loop(ctx, slot)
		}()
	}
	h.t.Cleanup(func() { cancel(); wg.Wait() })
	return ag
}

func key(a *Assignment) string {
	node, svc := "", ""
	if a.Node != nil {
		node = a.Node.ID
	}
	if a.Service != nil {
		svc = a.Service.Name
	}
	return node + "/" + a.TaskName + "/" + svc
}

func (ag *agent) loop(ctx context.Context, slot int) {
	for ctx.Err() == nil {
		a, err := ag.h.engine().Claim(ctx, ClaimRequest{TenantID: ag.h.tenant, AgentID: ag.id, Slot: slot, Wait: 200 * time.Millisecond})
		if err != nil || a == nil {
			continue
		}
		k := key(a)
		node := ""
		if a.Node != nil {
			node = a.Node.ID
		}
		ag.mu.Lock()
		n := ag.count[k]
		ag.count[k]++
		if node != "" {
			ag.running[node]++
			if ag.running[node] > 1 {
				ag.overlap = append(ag.overlap, k)
			}
		}
		ag.mu.Unlock()
		r := run{task: a.TaskID, node: node, action: a.TaskName, attempt: a.Attempt, start: time.Now()}
		if a.Service != nil {
			r.service = a.Service.Name
		}
		if ag.hang != nil && ag.hang(a, n) {
			ag.mu.Lock()
			ag.running[node]--
			ag.mu.Unlock()
			continue
		}
		res, d := Result{}, time.Duration(0)
		if ag.script != nil {
			res, d = ag.script(a, n)
		}
		stopHB := make(chan struct{})
		if ag.heartbeat {
			go func() {
				tick := time.NewTicker(ag.h.engine().cfg.LeaseTTL / 3)
				defer tick.Stop()
				for {
					select {
					case <-stopHB:
						return
					case <-tick.C:
						_, _ = ag.h.engine().Heartbeat(ctx, ag.id, []ClaimRef{{a.TaskID, a.Attempt, a.ClaimToken}})
					}
				}
			}()
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
		close(stopHB)
		r.end, r.result = time.Now(), res
		ag.mu.Lock()
		if node != "" {
			ag.running[node]--
		}
		ag.runs = append(ag.runs, r)
		ag.mu.Unlock()
		if err := ag.h.engine().Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, res); err != nil {
			ag.mu.Lock()
			ag.stale = append(ag.stale, err)
			ag.mu.Unlock()
		}
	}
}

func (ag *agent) snapshot() []run {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return append([]run(nil), ag.runs...)
}

func succeed(*Assignment, int) (Result, time.Duration) { return Result{}, time.Millisecond }

// checkOrder checks every run against the plan: each task completed exactly
// once, after all its predecessors completed, and never two tasks of a node
// at once.
func checkOrder(t *testing.T, h *harness, ag *agent, p *planner.Plan) {
	t.Helper()
	runs := ag.snapshot()
	type ref struct{ node, action, service string }
	done := map[ref][]run{}
	for _, r := range runs {
		if r.result.Status == 0 {
			k := ref{r.node, r.action, r.service}
			done[k] = append(done[k], r)
		}
	}
	refOf := func(i int32) ref {
		task := p.Tasks[i]
		return ref{task.Node, task.Action.String(), task.Service}
	}
	for i := range p.Tasks {
		if n := len(done[refOf(int32(i))]); n != 1 {
			t.Errorf("task %v completed %d times", refOf(int32(i)), n)
		}
	}
	for _, e := range p.Edges {
		from, to := done[refOf(e[0])], done[refOf(e[1])]
		if len(from) == 1 && len(to) == 1 && to[0].start.Before(from[0].end) {
			t.Errorf("%v started before %v finished", refOf(e[1]), refOf(e[0]))
		}
	}
	if len(ag.overlap) > 0 {
		t.Errorf("tasks overlapped on a node: %v", ag.overlap)
	}
}

func TestCreateTwentyNodes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	ag := h.agent("a1", 8, succeed)
	job, p := h.submit(planner.ClusterCreate, h.nodes(20), testServices())
	h.waitStatus("ACTIVE", 30*time.Second)
	checkOrder(t, h, ag, p)
	var state JobState
	must(t, h.db.Get(&state, `SELECT state FROM jobs WHERE id = $1`, job))
	if state != JobComplete {
		t.Errorf("job %s", state)
	}
	var events int
	must(t, h.db.Get(&events, `SELECT count(*) FROM events WHERE job_id = $1 AND kind = 'task' AND state = 'COMPLETE'`, job))
	if events != len(p.Tasks) {
		t.Errorf("%d COMPLETE events for %d tasks", events, len(p.Tasks))
	}
	if len(ag.stale) > 0 {
		t.Errorf("stale finishes: %v", ag.stale)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fails  int // failures of INSTALL db before it succeeds
		retry  bool
		status string
		runs   int
	}{
		{"two failures then success", 2, true, "ACTIVE", 3},
		{"attempts exhausted", 5, true, "INCOMPLETE", 3},
		{"non-retryable fails at once", 5, false, "INCOMPLETE", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fast)
			ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
				if a.TaskName == "INSTALL" && a.Service.Name == "db" && n < tc.fails {
					return Result{Status: 1, Message: "boom", Retryable: &tc.retry}, time.Millisecond
				}
				return Result{}, time.Millisecond
			})
			job, _ := h.submit(planner.ClusterCreate, h.nodes(3), testServices())
			h.waitStatus(tc.status, 20*time.Second)
			if got := ag.count[fmt.Sprintf("%s-n0/INSTALL/db", h.cluster[:8])]; got != tc.runs {
				t.Errorf("INSTALL db ran %d times, want %d", got, tc.runs)
			}
			if tc.status != "ACTIVE" {
				var r struct {
					State   JobState `db:"state"`
					Message string   `db:"message"`
				}
				must(t, h.db.Get(&r, `SELECT state, message FROM jobs WHERE id = $1`, job))
				if r.State != JobFailed || r.Message == "" {
					t.Errorf("job %+v", r)
				}
				var dropped, running int
				must(t, h.db.Get(&dropped, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state = 'DROPPED'`, job))
				must(t, h.db.Get(&running, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state IN ('QUEUED', 'IN_PROGRESS', 'NOT_SUBMITTED')`, job))
				if dropped == 0 || running != 0 {
					t.Errorf("dropped %d, still open %d\n%s", dropped, running, h.dump())
				}
			}
		})
	}
}

func TestNothingCreated(t *testing.T) {
	t.Parallel()
	// A lapsed lease (under load 60, heartbeats and all) made the CREATE
	// an attempt that may have created something: INCOMPLETE, not this.
	h := newHarness(t, leased)
	no := false
	h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		if a.TaskName == "CREATE" {
			return Result{Status: 201, Message: "bad credentials", Retryable: &no}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	h.submit(planner.ClusterCreate, h.nodes(3), testServices())
	h.waitStatus("TERMINATED", 20*time.Second)
	var msg string
	must(t, h.db.Get(&msg, `SELECT message FROM clusters WHERE id = $1`, h.cluster))
	if msg != nothingCreatedMessage {
		t.Errorf("message %q", msg)
	}
}

func TestConfirmRollback(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		if a.TaskName == "CONFIRM" && a.Node.NodeNum == 1001 && n == 0 {
			return Result{Status: 1, Message: "unreachable", Facts: map[string]any{"providerId": "i-1"}}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	h.submit(planner.ClusterCreate, h.nodes(2), testServices())
	h.waitStatus("ACTIVE", 20*time.Second)
	var seq []string
	for _, r := range ag.snapshot() {
		if r.node == h.cluster[:8]+"-n1" && (r.action == "CREATE" || r.action == "CONFIRM" || r.action == "DELETE") {
			seq = append(seq, r.action)
		}
	}
	want := []string{"CREATE", "CONFIRM", "DELETE", "CREATE", "CONFIRM"}
	if fmt.Sprint(seq) != fmt.Sprint(want) {
		t.Errorf("node 1001 ran %v, want %v", seq, want)
	}
	var facts string
	must(t, h.db.Get(&facts, `SELECT facts::text FROM nodes WHERE id = $1`, h.cluster[:8]+"-n1"))
	if facts != `{"vm": {"providerId": "i-1"}}` {
		t.Errorf("facts %s", facts)
	}
}

// TestLostAgent: an agent claims a task and goes silent; its lease expires,
// the attempt fails, another agent runs it, and the old claim's late finish
// is rejected without changing anything.
func TestLostAgent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	var lost *Assignment
	var once sync.Once
	ghost := h.agent("ghost", 1, nil)
	ghost.hang = func(a *Assignment, n int) bool {
		hang := false
		once.Do(func() { lost, hang = a, true })
		return hang
	}
	ghost.script = succeed
	h.agent("a1", 4, succeed)
	h.submit(planner.ClusterCreate, h.nodes(3), testServices())
	h.waitStatus("ACTIVE", 20*time.Second)
	if lost == nil {
		t.Fatal("the ghost claimed nothing")
	}
	var msg string
	must(t, h.db.Get(&msg, `SELECT message FROM task_attempts WHERE task_id = $1 AND attempt = $2`, lost.TaskID, lost.Attempt))
	if msg != "lease expired: agent ghost lost" {
		t.Errorf("attempt message %q", msg)
	}
	before := h.dump()
	if err := h.engine().Finish(context.Background(), lost.TaskID, lost.Attempt, lost.ClaimToken, Result{Status: 1}); !errors.Is(err, ErrStaleClaim) {
		t.Errorf("late finish: %v", err)
	}
	if err := h.engine().Finish(context.Background(), lost.TaskID, lost.Attempt+1, newToken(), Result{}); !errors.Is(err, ErrStaleClaim) {
		t.Errorf("forged finish: %v", err)
	}
	if after := h.dump(); after != before {
		t.Errorf("a stale finish changed tasks:\n%s\n%s", before, after)
	}
}

// TestEngineRestart kills the engine mid-job and starts another: the job
// finishes and no task runs again after it completed.
func TestEngineRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	ag := h.agent("a1", 4, func(*Assignment, int) (Result, time.Duration) { return Result{}, 5 * time.Millisecond })
	_, p := h.submit(planner.ClusterCreate, h.nodes(10), testServices())
	waitFor(t, func() bool {
		var n int
		must(t, h.db.Get(&n, `SELECT count(*) FROM tasks WHERE state = 'COMPLETE'`))
		return n >= len(p.Tasks)/3
	})
	h.stop()
	time.Sleep(100 * time.Millisecond) // agents keep finishing into Postgres meanwhile
	h.start(fast)
	h.waitStatus("ACTIVE", 30*time.Second)
	checkOrder(t, h, ag, p)
}

// TestRedisLoss deletes the tenant's stream mid-job, as a Redis restart
// without persistence would: the reconciler re-publishes what was queued.
func TestRedisLoss(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	ag := h.agent("a1", 4, func(*Assignment, int) (Result, time.Duration) { return Result{}, 5 * time.Millisecond })
	_, p := h.submit(planner.ClusterCreate, h.nodes(10), testServices())
	for range 3 {
		waitFor(t, func() bool {
			n, err := h.rdb.XLen(context.Background(), h.q.Key(h.tenant)).Result()
			return err == nil && n > 0
		})
		must(t, h.rdb.Del(context.Background(), h.q.Key(h.tenant)).Err())
	}
	h.waitStatus("ACTIVE", 30*time.Second)
	checkOrder(t, h, ag, p)
}

func TestPauseResumeAbort(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	gate := make(chan struct{})
	ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		if a.TaskName == "INSTALL" {
			<-gate
		}
		return Result{}, time.Millisecond
	})
	job, _ := h.submit(planner.ClusterCreate, h.nodes(3), testServices())
	waitFor(t, func() bool {
		var n int
		must(t, h.db.Get(&n, `SELECT count(*) FROM tasks WHERE action = 'BOOTSTRAP' AND state = 'COMPLETE'`))
		return n == 3
	})
	must(t, h.engine().Pause(context.Background(), job))
	close(gate)
	time.Sleep(300 * time.Millisecond)
	var open int
	must(t, h.db.Get(&open, `SELECT count(*) FROM tasks WHERE state IN ('QUEUED', 'IN_PROGRESS')`))
	if open != 0 {
		t.Errorf("%d tasks in flight while paused\n%s", open, h.dump())
	}
	ran := len(ag.snapshot())
	time.Sleep(200 * time.Millisecond)
	if len(ag.snapshot()) != ran {
		t.Error("tasks ran while paused")
	}
	if err := h.engine().Pause(context.Background(), job); !errors.Is(err, ErrConflict) {
		t.Errorf("pause twice: %v", err)
	}
	must(t, h.engine().Resume(context.Background(), job))
	waitFor(t, func() bool { return len(ag.snapshot()) > ran })
	must(t, h.engine().Abort(context.Background(), job))
	h.waitStatus("INCOMPLETE", 20*time.Second)
	var msg string
	must(t, h.db.Get(&msg, `SELECT message FROM jobs WHERE id = $1`, job))
	if msg != abortMessage {
		t.Errorf("job message %q", msg)
	}
}

func TestRetryJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	var fixed sync.Mutex
	broken := true
	no := false
	ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		fixed.Lock()
		defer fixed.Unlock()
		if broken && a.TaskName == "START" && a.Service.Name == "db" {
			return Result{Status: 2, Message: "script error", Retryable: &no}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	job, p := h.submit(planner.ClusterCreate, h.nodes(3), testServices())
	h.waitStatus("INCOMPLETE", 20*time.Second)
	fixed.Lock()
	broken = false
	fixed.Unlock()
	must(t, h.engine().RetryJob(context.Background(), job))
	h.waitStatus("ACTIVE", 20*time.Second)
	// Tasks done before the failure did not run again.
	checkOrder(t, h, ag, p)
	if err := h.engine().RetryJob(context.Background(), job); !errors.Is(err, ErrConflict) {
		t.Errorf("retry of a complete job: %v", err)
	}
}

func TestEmptyPlanCompletesAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	job, _ := h.submit(planner.StartServices, []planner.Node{{ID: "x", Services: []string{"base"}}}, testServices())
	var r struct {
		State   JobState `db:"state"`
		Settled bool     `db:"settled"`
	}
	must(t, h.db.Get(&r, `SELECT state, settled FROM jobs WHERE id = $1`, job))
	if r.State != JobComplete || !r.Settled {
		t.Errorf("job %+v", r)
	}
	h.waitStatus("ACTIVE", time.Second)
	if _, err := h.engine().Submit(context.Background(), JobSpec{TenantID: h.tenant, ClusterID: h.cluster, Action: planner.StartServices,
		Plan: &planner.Plan{}, Services: testServices()}); err != nil {
		t.Error(err)
	}
}

func TestSubmitConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	nodes := h.nodes(2)
	h.submit(planner.ClusterCreate, nodes, testServices())
	p, err := planner.Build(&planner.Request{Action: planner.ClusterDelete, Services: testServices(), Nodes: nodes})
	must(t, err)
	_, err = h.engine().Submit(context.Background(), JobSpec{TenantID: h.tenant, ClusterID: h.cluster, Action: planner.ClusterDelete, Plan: p})
	if !errors.Is(err, ErrConflict) {
		t.Errorf("second job on a PENDING cluster: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEdgeEncoding(t *testing.T) {
	cases := [][][2]int32{
		nil,
		{{0, 1}},
		{{0, 1}, {0, 5}, {0, 6}, {3, 4}, {3, 9}, {7, 8}},
	}
	for _, edges := range cases {
		got, err := decodeEdges(encodeEdges(edges), 10)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(append([][2]int32{}, edges...)) {
			t.Errorf("%v -> %v %v", edges, got, err)
		}
	}
	if _, err := decodeEdges(encodeEdges([][2]int32{{0, 12}}), 10); err == nil {
		t.Error("out of range edge accepted")
	}
	if _, err := decodeEdges([]byte{5, 1}, 10); err == nil {
		t.Error("truncated encoding accepted")
	}
}

// TestTaskTimeout: a service action's own timeout fails an attempt whose
// agent is alive and heartbeating; the retry succeeds and the late finish
// of the timed-out attempt is rejected.
func TestTaskTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	services := testServices()
	start := services["db"].Provisioner.Actions["start"]
	start.Timeout = catalog.Duration(time.Second / time.Millisecond)
	services["db"].Provisioner.Actions["start"] = start
	ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		if a.TaskName == "START" && a.Service.Name == "db" && n == 0 {
			return Result{}, 2500 * time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	h.submit(planner.ClusterCreate, h.nodes(2), services)
	h.waitStatus("ACTIVE", 20*time.Second)
	var msgs []string
	must(t, h.db.Select(&msgs, `SELECT a.message FROM task_attempts a JOIN tasks t ON t.id = a.task_id
		WHERE t.action = 'START' AND t.service = 'db' ORDER BY a.attempt`))
	if len(msgs) != 2 || msgs[0] != "timed out after 1 s" {
		t.Errorf("attempts %q", msgs)
	}
	waitFor(t, func() bool {
		ag.mu.Lock()
		defer ag.mu.Unlock()
		return len(ag.stale) == 1
	})
	if !errors.Is(ag.stale[0], ErrStaleClaim) {
		t.Errorf("late finish: %v", ag.stale[0])
	}
}

// Ids follow docs/catalog.md#identifiers: an 8-digit cluster number,
// <clusterId>-<n> per job, <jobId>-<m> per task.
func TestSpecIDs(t *testing.T) {
	h := newHarness(t, fast)
	if len(h.cluster) != 8 || strings.Trim(h.cluster, "0123456789") != "" {
		t.Fatalf("cluster id %q, want 8 digits", h.cluster)
	}
	h.agent("a1", 2, succeed)
	nodes := h.nodes(1)
	job1, _ := h.submit(planner.StartServices, nodes, testServices())
	h.waitStatus("ACTIVE", 10*time.Second)
	job2, _ := h.submit(planner.StopServices, nodes, testServices())
	h.waitStatus("ACTIVE", 10*time.Second)
	if job1 != h.cluster+"-001" || job2 != h.cluster+"-002" {
		t.Errorf("job ids %q, %q; want %s-001 and %s-002", job1, job2, h.cluster, h.cluster)
	}
	var ids []string
	must(t, h.db.Select(&ids, `SELECT id FROM tasks WHERE job_id = $1 ORDER BY idx`, job1))
	for i, id := range ids {
		if want := fmt.Sprintf("%s-%03d", job1, i+1); id != want {
			t.Errorf("task %d id %q, want %q", i, id, want)
		}
	}
	var wide string
	must(t, h.db.Get(&wide, `SELECT coopr_pad(123456789, 8)`))
	if wide != "123456789" {
		t.Errorf("coopr_pad cut a wide number to %q", wide)
	}
}

// A job whose tasks outgrow the tables' statistics has them analyzed at
// once, not when autovacuum next looks (a minute or more): the claim and
// finish statements' generic plans are made on those statistics.
func TestLargeJobAnalyzesTheTables(t *testing.T) {
	h := newHarness(t, fast)
	nodes := make([]planner.Node, minAnalyzeTasks+50)
	ids, nums := make([]string, len(nodes)), make([]int64, len(nodes))
	for i := range nodes {
		ids[i], nums[i] = fmt.Sprintf("%s-m%d", h.cluster[:8], i), int64(2000+i)
		nodes[i] = planner.Node{ID: ids[i], NodeNum: 2000 + i, Services: []string{"s"}}
	}
	_, err := h.db.Exec(`INSERT INTO nodes (id, cluster_id, nodenum, services)
		SELECT id, $1, num, '{s}' FROM unnest($2::text[], $3::int[]) AS u(id, num)`, h.cluster, pq.Array(ids), pq.Array(nums))
	must(t, err)
	h.submit(planner.StartServices, nodes, startOnly())
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var tasks, nodeRows float64
		must(t, h.db.Get(&tasks, `SELECT reltuples FROM pg_class WHERE oid = 'tasks'::regclass`))
		must(t, h.db.Get(&nodeRows, `SELECT reltuples FROM pg_class WHERE oid = 'nodes'::regclass`))
		if tasks >= float64(len(nodes)) && nodeRows >= float64(len(nodes)) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("statistics count %.0f tasks and %.0f nodes 10 s after a job of %d, want at least that many", tasks, nodeRows, len(nodes))
		}
	}
}
