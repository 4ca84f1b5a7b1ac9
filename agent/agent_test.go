package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/wire"
)

// scripted is a driver for every role that the test steers.
type scripted struct {
	mu   sync.Mutex
	runs map[string]int // task name -> runs
	hang atomic.Bool    // runs wait for their context
}

func (d *scripted) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	d.mu.Lock()
	d.runs[t.TaskName]++
	d.mu.Unlock()
	out.Stdout("running " + t.TaskName)
	if d.hang.Load() {
		<-ctx.Done()
		return drivers.Result{Status: 1, Message: "interrupted"}
	}
	if t.TaskName == "CONFIRM" {
		return drivers.Result{IPAddresses: map[string]string{"access_v4": "10.2.0.1", "bind_v4": "10.2.0.1"}}
	}
	return drivers.Result{}
}

func registry(d drivers.Driver) *drivers.Registry {
	r := drivers.NewRegistry()
	r.Register(drivers.Descriptor{Role: drivers.RoleVM, Name: "rackspace"}, d)
	r.Register(drivers.Descriptor{Role: drivers.RoleNode, Name: "ssh"}, d)
	r.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "chef-solo"}, d)
	return r
}

type env struct {
	s                 *servertest.Server
	admin, agentToken string
}

func setup(t testing.TB) *env {
	t.Helper()
	s := servertest.Start(t)
	// The test catalog: its driver types are the superadmin's, its
	// templates acme's.
	for _, part := range []struct{ dir, tenant string }{
		{"../testdata/catalog/types", "superadmin"},
		{"../testdata/catalog/templates", "acme"},
	} {
		c, is, err := catalog.LoadPath(part.dir)
		if err != nil || is.HasErrors() {
			t.Fatalf("%s: %v %v", part.dir, err, is.Errors())
		}
		if _, err := s.Srv.Store().EnsureTenant(context.Background(), part.tenant); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Srv.Store().ImportCatalog(context.Background(), part.tenant, c); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{s: s}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", tenant: "acme"}) { secret } }`, nil, &tok)
	e.admin = tok.CreateAPIToken.Secret
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	e.agentToken = tok.CreateAPIToken.Secret
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 3}) { id } }`, nil, &struct{}{})
	return e
}

func (e *env) start(t testing.TB, d drivers.Driver, grace time.Duration) (stop func() error) {
	t.Helper()
	_, stop = e.startAgent(t, d, grace)
	return stop
}

func (e *env) startAgent(t testing.TB, d drivers.Driver, grace time.Duration) (_ *agent.Agent, stop func() error) {
	t.Helper()
	return e.startAgentWith(t, d, grace, 4)
}

func (e *env) startAgentWith(t testing.TB, d drivers.Driver, grace time.Duration, capacity int) (_ *agent.Agent, stop func() error) {
	t.Helper()
	a, err := agent.New(agent.Config{Server: e.s.URL, Token: e.agentToken, ID: "test-agent", Capacity: capacity, Grace: grace,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, registry(d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var err2 error
	stop = func() error {
		once.Do(func() { cancel(); err2 = <-done })
		return err2
	}
	t.Cleanup(func() { _ = stop() })
	return a, stop
}

func (e *env) status(t testing.TB, id string) string {
	var c struct{ Cluster struct{ Status string } }
	e.s.Must(e.admin, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
	return c.Cluster.Status
}

func (e *env) create(t testing.TB) string {
	var cr struct{ CreateCluster struct{ ID string } }
	e.s.Must(e.admin, `mutation { createCluster(input: {name: "a", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	return cr.CreateCluster.ID
}

func waitStatus(t testing.TB, e *env, id, want string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		st := e.status(t, id)
		if st == want {
			return
		}
		if st != "PENDING" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var c struct {
		Cluster struct {
			Status, Message string
		}
	}
	e.s.Must(e.admin, `query($id: ID!) { cluster(id: $id) { status message } }`, map[string]any{"id": id}, &c)
	t.Fatalf("cluster %s is %s (%s), want %s", id, c.Cluster.Status, c.Cluster.Message, want)
}

// The agent alone, through the API, builds a cluster.
func TestAgentBuildsCluster(t *testing.T) {
	e := setup(t)
	d := &scripted{runs: map[string]int{}}
	e.start(t, d, time.Second)
	id := e.create(t)
	waitStatus(t, e, id, "ACTIVE")
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range []string{"CREATE", "CONFIRM", "BOOTSTRAP", "INSTALL", "CONFIGURE", "START"} {
		if d.runs[name] == 0 {
			t.Errorf("no %s ran: %v", name, d.runs)
		}
	}
	var agents struct {
		Agents []struct {
			ID    string
			Slots []struct{ Slots int }
		}
	}
	e.s.Must(e.s.Super, `{ agents { id slots { slots } } }`, nil, &agents)
	if len(agents.Agents) != 1 || agents.Agents[0].ID != "test-agent" || agents.Agents[0].Slots[0].Slots != 3 {
		t.Errorf("agents %+v", agents.Agents)
	}
}

// Stopping hands running tasks back after the grace period: they are
// retried, not left to their leases.
func TestAgentStopHandsBack(t *testing.T) {
	e := setup(t)
	d := &scripted{runs: map[string]int{}}
	d.hang.Store(true)
	stop := e.start(t, d, 300*time.Millisecond)
	id := e.create(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		d.mu.Lock()
		n := d.runs["CREATE"]
		d.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %s with a 300ms grace", took)
	}
	// A second agent finishes the job at once: the handed-back tasks are
	// queued again without counting as failures or waiting out a backoff.
	d2 := &scripted{runs: map[string]int{}}
	e.start(t, d2, time.Second)
	waitStatus(t, e, id, "ACTIVE")
	// Handed-back tasks did not count a failure. (A claim the server made
	// just as the agent hung up is failed by the next incarnation's
	// registration (docs/task-protocol.md#registration); that one may count.)
	var handed []struct {
		Task     string `db:"task_id"`
		Failures int    `db:"failures"`
	}
	if err := e.s.Srv.Store().DB().Select(&handed, `SELECT e.task_id, t.failures FROM events e JOIN tasks t ON t.id = e.task_id
		WHERE e.message = 'handed back: agent stopping'`); err != nil {
		t.Fatal(err)
	}
	if len(handed) == 0 {
		t.Fatal("no task was handed back")
	}
	for _, h := range handed {
		if h.Failures != 0 {
			t.Errorf("handed-back task %s counted %d failures", h.Task, h.Failures)
		}
	}
}

// panicky panics on CREATE's first run of each node and works otherwise.
type panicky struct {
	scripted
	panicked atomic.Int32
}

func (d *panicky) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if t.TaskName == "BOOTSTRAP" && d.panicked.Add(1) == 1 {
		panic("driver bug")
	}
	return d.scripted.Run(ctx, t, out)
}

// A driver that panics fails its task, without retry, and the agent goes
// on running the others.
func TestDriverPanicFailsTask(t *testing.T) {
	e := setup(t)
	d := &panicky{scripted: scripted{runs: map[string]int{}}}
	e.start(t, d, time.Second)
	id := e.create(t)
	waitStatus(t, e, id, "INCOMPLETE")
	var msg string
	if err := e.s.Srv.Store().DB().Get(&msg, `SELECT message FROM task_attempts WHERE message LIKE 'driver panicked%' LIMIT 1`); err != nil {
		t.Fatalf("no attempt says the driver panicked: %v", err)
	}
	if msg != "driver panicked: driver bug" {
		t.Errorf("attempt message %q", msg)
	}
	// Still alive: the retried job completes on the same agent.
	e.s.Must(e.admin, `mutation($id: ID!) { retryJob(id: $id) { id } }`, map[string]any{"id": id + "-001"}, &struct{}{})
	waitStatus(t, e, id, "ACTIVE")
}

// inFlight counts a driver's runs in flight, and the most at once.
type inFlight struct {
	mu       sync.Mutex
	now, top int
}

// enter counts a run in and returns how many are in flight with it.
func (f *inFlight) enter() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now++
	f.top = max(f.top, f.now)
	return f.now
}

func (f *inFlight) leave() {
	f.mu.Lock()
	f.now--
	f.mu.Unlock()
}

func (f *inFlight) counts() (now, most int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now, f.top
}

// gathering holds each CREATE until three run at once.
type gathering struct {
	scripted
	inFlight
	three    chan struct{}
	gathered sync.Once
}

func (d *gathering) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	n := d.enter()
	defer d.leave()
	if n == 3 && t.TaskName == "CREATE" {
		// Later CREATEs may find three in flight again.
		d.gathered.Do(func() { close(d.three) })
	}
	if t.TaskName == "CREATE" {
		select {
		case <-d.three:
		case <-time.After(15 * time.Second):
			return drivers.Result{Status: 1, Message: "the three CREATEs never ran together", Retryable: new(bool)}
		}
	}
	return d.scripted.Run(ctx, t, out)
}

// The agent's slots of a tenant run their tasks side by side (the claim
// loop claims for every free slot), and never more than the slots at once.
func TestAgentFillsItsSlots(t *testing.T) {
	e := setup(t)
	d := &gathering{scripted: scripted{runs: map[string]int{}}, three: make(chan struct{})}
	e.start(t, d, time.Second)
	var cr struct{ CreateCluster struct{ ID string } }
	// Five CREATEs are ready at once: the three slots take three.
	e.s.Must(e.admin, `mutation { createCluster(input: {name: "five", clusterTemplate: "lamp", numMachines: 5}) { id } }`, nil, &cr)
	waitStatus(t, e, cr.CreateCluster.ID, "ACTIVE")
	if _, most := d.counts(); most != 3 {
		t.Errorf("at most %d tasks ran at once on 3 slots, want 3", most)
	}
}

// holding runs every task until released (or cancelled).
type holding struct {
	inFlight
	release chan struct{}
}

func (d *holding) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	d.enter()
	defer d.leave()
	select {
	case <-d.release:
		return drivers.Result{}
	case <-ctx.Done():
		return drivers.Result{Status: 1, Message: "interrupted"}
	}
}

// A tenant's slots taken away and given back while their tasks run are
// not claimed for twice; and an agent stopping gives the tasks of slots
// taken away the same grace and hand-back as any other.
func TestAgentSlotsTakenAwayAndBack(t *testing.T) {
	e := setup(t)
	d := &holding{release: make(chan struct{})}
	a, stop := e.startAgent(t, d, 500*time.Millisecond)
	for range 2 {
		e.s.Must(e.admin, `mutation { createCluster(input: {name: "x", clusterTemplate: "lamp", numMachines: 3}) { id } }`, nil, &struct{}{})
	}
	ten, err := e.s.Srv.Store().EnsureTenant(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		now, _ := d.counts()
		if now == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tasks running after 10s, want 3", now)
		}
	}
	a.Reassign(ten.ID, 0)
	a.Reassign(ten.ID, 3)
	time.Sleep(time.Second) // time enough to claim for slots it wrongly thinks free
	if _, most := d.counts(); most != 3 {
		t.Fatalf("%d tasks ran at once on 3 slots", most)
	}
	a.Reassign(ten.ID, 0)
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 400*time.Millisecond {
		t.Errorf("stop took %s: the running tasks of slots taken away got no grace", took)
	}
	var handed int
	if err := e.s.Srv.Store().DB().Get(&handed, `SELECT count(*) FROM events WHERE message = 'handed back: agent stopping'`); err != nil {
		t.Fatal(err)
	}
	if handed != 3 {
		t.Errorf("%d tasks handed back at stop, want the 3 running", handed)
	}
}

// noisy fails BOOTSTRAP's first attempt after printing on both streams.
type noisy struct {
	scripted
	failed atomic.Bool
}

func (d *noisy) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if t.TaskName == "BOOTSTRAP" && d.failed.CompareAndSwap(false, true) {
		for i := range 300 {
			out.Stdout(fmt.Sprintf("bootstrap line %d", i))
		}
		out.Stderr("bootstrap: disk full")
		return drivers.Result{Status: 1, Message: "bootstrap failed"}
	}
	return d.scripted.Run(ctx, t, out)
}

// A finished attempt keeps the end of what its driver printed, so a failed
// attempt's output can be read after the live stream is gone.
func TestAttemptKeepsOutputTails(t *testing.T) {
	e := setup(t)
	e.start(t, &noisy{scripted: scripted{runs: map[string]int{}}}, time.Second)
	id := e.create(t)
	waitStatus(t, e, id, "ACTIVE")
	var tails struct{ Stdout, Stderr string }
	if err := e.s.Srv.Store().DB().Get(&tails, `SELECT stdout_tail AS stdout, stderr_tail AS stderr
		FROM task_attempts WHERE message = 'bootstrap failed'`); err != nil {
		t.Fatalf("the failed attempt: %v", err)
	}
	if tails.Stderr != "bootstrap: disk full\n" {
		t.Errorf("stderr tail %q", tails.Stderr)
	}
	if !strings.HasSuffix(tails.Stdout, "bootstrap line 299\n") || strings.Contains(tails.Stdout, "bootstrap line 0\n") ||
		len(tails.Stdout) > 2048+len("[snipped]") {
		t.Errorf("stdout tail of %d bytes: %.80q…", len(tails.Stdout), tails.Stdout)
	}
}

// staggered runs the three CREATEs of a cluster together and ends them
// apart, the k-th to end 400 µs after the one before: alike tasks claimed
// together end about together, never at the same instant.
type staggered struct {
	gathering
	mu    sync.Mutex
	order int
}

func (d *staggered) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if t.TaskName != "CREATE" {
		return d.gathering.Run(ctx, t, out)
	}
	r := d.gathering.Run(ctx, t, out) // returns once all three run
	d.mu.Lock()
	k := d.order
	d.order++
	d.mu.Unlock()
	time.Sleep(time.Duration(k) * 400 * time.Microsecond)
	return r
}

// Tasks that an exchange's answer started together and that end within
// a few hundred microseconds of each other send their finishes in one
// exchange (each exchange costs the server a request, a finish batch, a
// claim statement and a relay round), not one each as they end.
func TestTasksClaimedTogetherFinishTogether(t *testing.T) {
	e := setup(t)
	u, err := url.Parse(e.s.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var mu sync.Mutex
	var exchanges [][]string // the tasks each exchange finished
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req struct {
			Variables struct {
				In wire.Exchange `json:"in"`
			} `json:"variables"`
		}
		if bytes.Contains(b, []byte("exchangeTasks")) && json.Unmarshal(b, &req) == nil && len(req.Variables.In.Finishes) > 0 {
			var ids []string
			for _, f := range req.Variables.In.Finishes {
				ids = append(ids, f.TaskID)
			}
			mu.Lock()
			exchanges = append(exchanges, ids)
			mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	d := &staggered{gathering: gathering{scripted: scripted{runs: map[string]int{}}, three: make(chan struct{})}}
	a, err := agent.New(agent.Config{Server: proxy.URL, Token: e.agentToken, ID: "test-agent", Capacity: 3, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, registry(d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var cr struct{ CreateCluster struct{ ID string } }
	e.s.Must(e.admin, `mutation { createCluster(input: {name: "three", clusterTemplate: "lamp", numMachines: 3}) { id } }`, nil, &cr)
	waitStatus(t, e, cr.CreateCluster.ID, "ACTIVE")

	// The CREATEs claimed by one statement (their attempts stamped with
	// its transaction's start) were started by one exchange's answer.
	var creates []struct {
		ID      string    `db:"id"`
		Claimed time.Time `db:"claimed_at"`
	}
	if err := e.s.Srv.Store().DB().Select(&creates, `SELECT t.id, a.claimed_at FROM tasks t JOIN task_attempts a ON a.task_id = t.id
		JOIN jobs j ON j.id = t.job_id WHERE j.cluster_id = $1 AND t.action = 'CREATE'`, cr.CreateCluster.ID); err != nil {
		t.Fatal(err)
	}
	claims := map[time.Time]bool{}
	create := map[string]bool{}
	for _, c := range creates {
		claims[c.Claimed], create[c.ID] = true, true
	}
	mu.Lock()
	defer mu.Unlock()
	sent := 0
	for _, ids := range exchanges {
		if slices.ContainsFunc(ids, func(id string) bool { return create[id] }) {
			sent++
		}
	}
	if len(creates) != 3 || sent > len(claims) {
		t.Errorf("%d CREATEs claimed in %d statements finished in %d exchanges, want no more than the claims (%v)",
			len(creates), len(claims), sent, exchanges)
	}
}
