// Package agent is `coopr agent`: it registers with the server, keeps its
// leases alive with heartbeats, runs one claim loop per tenant that claims
// for all the free task slots the server assigns it there, and runs each
// claimed task through the driver its role and name call for
// (docs/task-protocol.md).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cooprhq/coopr/client"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/internal/scrub"
	"github.com/cooprhq/coopr/wire"
)

// Config is the agent's configuration.
type Config struct {
	Server, Token string
	ID            string // stable across restarts; default the host name
	Capacity      int    // task slots at most
	Version       string
	// Grace is how long running tasks may go on after a stop before they
	// are cancelled and handed back. Default 30 s.
	Grace time.Duration
	// Notify, if set, hears the agent's state for a supervisor: "READY=1",
	// "STATUS=...", "STOPPING=1" (sd_notify's vocabulary).
	Notify func(state string)
	Log    *slog.Logger
	// ResourceDir caches plugin resources by digest. Default
	// $TMPDIR/coopr-agent-resources.
	ResourceDir string
}

// Agent runs tasks for the server.
type Agent struct {
	cfg         Config
	c           *client.Client
	reg         *drivers.Registry
	incarnation string
	log         *slog.Logger
	resources   *resourceCache

	mu      sync.Mutex
	held    map[string]*running // task id -> the run holding its claim
	loops   map[string]*tenantLoop
	stopped bool
}

// tenantLoop claims and runs one tenant's tasks. Its fields but the
// channels are guarded by the agent's mutex. A loop outlives its tenant's
// assignment (it idles with no slots) so that tasks it started keep their
// slots, and stop waits for them, if the tenant comes back or the agent
// stops.
type tenantLoop struct {
	stop     context.CancelFunc // ends claiming; running tasks finish
	done     chan struct{}      // closed once the loop and its tasks ended
	slots    int                // the server assigns slots 0..slots-1
	busy     map[int]bool       // slot -> running a task
	claiming map[int]bool       // slot -> in a request's claim
	// ended are the finishes of tasks that ended, not yet sent, and
	// endedAt when the first of them ended.
	ended   []wire.Finish
	endedAt time.Time
	// requests counts the exchanges in flight.
	requests int
	freed    chan struct{} // (buffered 1) a slot came free or a task ended
	// polls end the claims in flight: when slots are taken away they must
	// not bring back tasks for them.
	polls map[*context.CancelFunc]bool
}

// wake tells the loop a slot may have come free.
func (tl *tenantLoop) wake() {
	select {
	case tl.freed <- struct{}{}:
	default:
	}
}

type running struct {
	taskID, token string
	attempt       int
	cancel        context.CancelCauseFunc
	// ended: the run is over and its finish on its way. Heartbeats still
	// list the claim until the finish is answered (the lease must hold
	// while it is retried), so the server's cancelling it is expected.
	ended bool
	// batch counts the tasks of its claim's answer still running.
	batch *batch
}

// batch is the tasks one exchange's answer started, those still running
// counted under the agent's mutex.
type batch struct{ running int }

// linger is how long the finish of a task waits for the others its
// claim's answer started, still running, to end and go in the same
// exchange. Tasks claimed together and alike end together (no-op tasks
// within a millisecond or so); each exchange costs the server a request,
// a finish batch, a claim statement and a relay round, which a few tasks
// sharing it share. A task whose batch has ended, or ran alone, does not
// wait.
const linger = 2 * time.Millisecond

var (
	errCancelled = errors.New("cancelled by the server: the claim is no longer current")
	errHandBack  = errors.New("agent stopping")
)

// New returns an agent over a registry of drivers.
func New(cfg Config, reg *drivers.Registry) (*Agent, error) {
	if cfg.Server == "" || cfg.Token == "" {
		return nil, errors.New("agent: the server URL and an agent token are required (--server, --token or COOPR_SERVER, COOPR_TOKEN)")
	}
	if cfg.Capacity < 1 {
		return nil, fmt.Errorf("agent: capacity must be at least 1 (got %d)", cfg.Capacity)
	}
	if cfg.ID == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("agent: no --name and no host name: %w", err)
		}
		cfg.ID = host
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 30 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Notify == nil {
		cfg.Notify = func(string) {}
	}
	if cfg.ResourceDir == "" {
		cfg.ResourceDir = filepath.Join(os.TempDir(), "coopr-agent-resources")
	}
	// Every slot has a request in flight at times (a progress line, a
	// finish), besides the claim and the heartbeat: keep a connection for
	// each, where the default keeps two and dials afresh for the rest.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.Capacity + 4
	return &Agent{cfg: cfg, c: &client.Client{URL: strings.TrimRight(cfg.Server, "/"), Token: cfg.Token,
		HTTP: &http.Client{Transport: tr}}, reg: reg,
		incarnation: uuid.NewString(), log: cfg.Log, resources: newResourceCache(cfg.ResourceDir), held: map[string]*running{},
		loops: map[string]*tenantLoop{}}, nil
}

type setup struct {
	HeartbeatIntervalSeconds int
	Assignments              []struct {
		TenantID string
		Slots    int
	}
	Cancel []string
}

// Run works until ctx ends, then stops claiming, gives running tasks the
// grace period, and hands back what is left.
func (a *Agent) Run(ctx context.Context) error {
	var s setup
	if err := a.retry(ctx, "register", func(ctx context.Context) error { return a.register(ctx, &s) }); err != nil {
		return err
	}
	a.log.Info("agent registered", "agent", a.cfg.ID, "incarnation", a.incarnation, "capacity", a.cfg.Capacity)
	// The session outlives the stop: it closes once every claim is
	// finished or handed back, so the server never fails one it still gets.
	session, endSession := context.WithCancel(context.WithoutCancel(ctx))
	sessionDone := make(chan struct{})
	go func() {
		defer close(sessionDone)
		a.holdSession(session)
	}()
	defer func() {
		endSession()
		<-sessionDone
	}()
	// Tasks run under work, which outlives ctx by the grace period.
	work, endWork := context.WithCancel(context.WithoutCancel(ctx))
	defer endWork()
	a.assign(work, ctx, s)
	a.cfg.Notify("READY=1")
	interval := time.Duration(max(s.HeartbeatIntervalSeconds, 1)) * time.Second
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return a.stop(work, endWork)
		case <-tick.C:
		}
		var hb setup
		err := a.heartbeat(ctx, &hb)
		var ce *codeError
		switch {
		case errors.As(err, &ce) && ce.code == wire.CodeAgentUnknown:
			a.log.Warn("the server does not know this agent: registering again")
			if err := a.retry(ctx, "register", func(ctx context.Context) error { return a.register(ctx, &hb) }); err != nil {
				return a.stop(work, endWork)
			}
		case err != nil:
			// A blip: the next beat retries; leases outlive a few misses.
			a.log.Warn("heartbeat failed", "err", err)
			continue
		}
		a.cancel(hb.Cancel)
		a.assign(work, ctx, hb)
		busy, total := a.load()
		a.cfg.Notify(fmt.Sprintf("STATUS=%d/%d slots busy", busy, total))
	}
}

// holdSession keeps a session subscription open while the agent runs, so
// that the server learns at once when this process dies (its connection
// closes) instead of when its leases lapse. It reconnects with backoff.
func (a *Agent) holdSession(ctx context.Context) {
	wait := 200 * time.Millisecond
	vars := map[string]any{"a": a.cfg.ID, "i": a.incarnation}
	for ctx.Err() == nil {
		sub, err := a.c.Subscribe(ctx, `subscription($a: ID!, $i: String!) { agentSession(agentId: $a, incarnation: $i) { graceSeconds } }`, vars)
		if err == nil {
			r, done, err := sub.Next(ctx)
			if err == nil && !done && len(r.Errors) == 0 {
				a.log.Debug("agent session open")
				wait = 200 * time.Millisecond
				for {
					if _, done, err := sub.Next(ctx); err != nil || done {
						break
					}
				}
			} else if err == nil && len(r.Errors) > 0 {
				a.log.Debug("agent session refused", "err", r.Errors[0].Message)
			}
			sub.Close()
		}
		if ctx.Err() != nil {
			return
		}
		a.log.Debug("agent session lost; reconnecting", "in", wait, "err", err)
		sleep(ctx, wait/2+rand.N(wait))
		wait = min(wait*2, 10*time.Second)
	}
}

func (a *Agent) register(ctx context.Context, s *setup) error {
	var drv []wire.DriverRef
	for _, d := range a.reg.Descriptors() {
		drv = append(drv, wire.DriverRef{Role: d.Role, Name: d.Name, Version: d.Version})
	}
	host, _ := os.Hostname()
	var out struct{ RegisterAgent setup }
	err := a.do(ctx, `mutation($in: AgentRegistration!) { registerAgent(input: $in) {
		heartbeatIntervalSeconds assignments { tenantId slots } cancel } }`, map[string]any{"in": wire.Registration{
		AgentID: a.cfg.ID, Incarnation: a.incarnation, Version: a.cfg.Version, Host: host,
		Capacity: a.cfg.Capacity, Drivers: drv}}, &out)
	*s = out.RegisterAgent
	return err
}

func (a *Agent) heartbeat(ctx context.Context, s *setup) error {
	a.mu.Lock()
	claims := make([]wire.Claim, 0, len(a.held))
	for _, r := range a.held {
		claims = append(claims, wire.Claim{TaskID: r.taskID, Attempt: r.attempt, ClaimToken: r.token})
	}
	a.mu.Unlock()
	var out struct{ AgentHeartbeat setup }
	err := a.do(ctx, `mutation($in: AgentHeartbeatInput!) { agentHeartbeat(input: $in) {
		heartbeatIntervalSeconds assignments { tenantId slots } cancel } }`, map[string]any{"in": wire.Heartbeat{
		AgentID: a.cfg.ID, Incarnation: a.incarnation, Claims: claims}}, &out)
	*s = out.AgentHeartbeat
	return err
}

// assign starts, resizes and stops tenant loops to match the server's
// assignment, capped at the agent's capacity.
func (a *Agent) assign(work, claimCtx context.Context, s setup) {
	want := map[string]int{}
	n := 0
	for _, as := range s.Assignments {
		k := min(as.Slots, a.cfg.Capacity-n)
		if k > 0 {
			want[as.TenantID] += k
			n += k
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	for tenant, tl := range a.loops {
		k := want[tenant]
		if k == tl.slots {
			continue
		}
		if k < tl.slots {
			for cancel := range tl.polls {
				(*cancel)()
			}
		}
		// Slots beyond a smaller assignment finish their task and are not
		// claimed for again.
		tl.slots = k
		tl.wake()
	}
	for tenant, k := range want {
		if a.loops[tenant] != nil {
			continue
		}
		ctx, stop := context.WithCancel(claimCtx)
		tl := &tenantLoop{stop: stop, done: make(chan struct{}), slots: k, busy: map[int]bool{}, claiming: map[int]bool{},
			freed: make(chan struct{}, 1), polls: map[*context.CancelFunc]bool{}}
		a.loops[tenant] = tl
		go func() {
			defer close(tl.done)
			defer func() {
				if r := recover(); r != nil {
					// A loop that dies is restarted by the next reconcile:
					// forget it, unless it was stopped meanwhile.
					a.log.Error("claim loop crashed; restarting it at the next heartbeat", "tenant", tenant, "panic", r)
					a.mu.Lock()
					if a.loops[tenant] == tl {
						delete(a.loops, tenant)
					}
					a.mu.Unlock()
				}
			}()
			a.loop(ctx, work, tenant, tl)
		}()
	}
}

func (a *Agent) load() (busy, total int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, tl := range a.loops {
		total += tl.slots
	}
	// A task that ended holds its claim until the server acknowledges its
	// finish, which may come with a long poll's answer: it is not busy.
	for _, r := range a.held {
		if !r.ended {
			busy++
		}
	}
	return busy, total
}

// maxClaimSlots is the most slots the server takes in one claim.
const maxClaimSlots = 256

// freeSlots lists the loop's assigned slots neither running a task nor
// being claimed for, no more than the agent's capacity has room for:
// tasks still running in slots an assignment took away count against it
// until they end. The caller holds a.mu.
func (a *Agent) freeSlots(tl *tenantLoop) []int {
	room := a.cfg.Capacity
	for _, o := range a.loops {
		room -= len(o.busy) + len(o.claiming)
	}
	var free []int
	for i := 0; i < tl.slots && len(free) < min(room, maxClaimSlots); i++ {
		if !tl.busy[i] && !tl.claiming[i] {
			free = append(free, i)
		}
	}
	return free
}

// wakeAll wakes every loop: one held back by the agent's capacity may have
// room now. The caller holds a.mu.
func (a *Agent) wakeAll() {
	for _, o := range a.loops {
		o.wake()
	}
}

// loop sends the tenant's finished tasks and claims for its free slots, in
// one exchange (docs/task-protocol.md#exchange), as soon as either is
// there, and runs each task it gets in its slot, until ctx ends and the
// tasks it started have finished and been reported. A task's end frees
// its slot, so that a steady slot costs one round trip per task: its
// finish and the claim of its next task travel together. Exchanges run
// side by side: one waiting for tasks never holds back a finish.
func (a *Agent) loop(ctx, work context.Context, tenant string, tl *tenantLoop) {
	for {
		// Tasks that end together (claimed together, run alike) finish
		// in one exchange: let the others that are ending append theirs.
		runtime.Gosched()
		a.mu.Lock()
		stopping := ctx.Err() != nil
		if wait := a.lingerFor(tl); wait > 0 && !stopping {
			a.mu.Unlock()
			t := time.NewTimer(wait)
			select {
			case <-tl.freed:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		fins := tl.ended
		tl.ended = nil
		var free []int
		if !stopping {
			free = a.freeSlots(tl)
		}
		for _, sl := range free {
			tl.claiming[sl] = true
		}
		idle := len(tl.busy) == 0 && tl.requests == 0
		if len(fins) > 0 || len(free) > 0 {
			tl.requests++
		}
		a.mu.Unlock()
		if len(fins) == 0 && len(free) == 0 {
			if stopping {
				if idle {
					return
				}
				<-tl.freed // a task or an exchange ended
				continue
			}
			select {
			case <-tl.freed:
			case <-ctx.Done():
			}
			continue
		}
		go func() {
			ended := false
			defer func() {
				if r := recover(); r != nil {
					a.log.Error("exchange crashed", "tenant", tenant, "panic", r)
					if !ended {
						// Its slots free again and its request counted
						// out, or stopping would wait for it forever.
						a.mu.Lock()
						a.release(tl, free)
						a.mu.Unlock()
					}
				}
			}()
			a.exchange(ctx, work, tenant, tl, fins, free)
			ended = true
		}()
	}
}

// lingerFor is how much longer the loop's ended tasks wait for the others
// of their batches still running (see linger); 0: send now. The caller
// holds a.mu.
func (a *Agent) lingerFor(tl *tenantLoop) time.Duration {
	if len(tl.ended) == 0 {
		return 0
	}
	left := linger - time.Since(tl.endedAt)
	if left <= 0 {
		return 0
	}
	for _, f := range tl.ended {
		if r := a.held[f.TaskID]; r != nil && r.batch != nil && r.batch.running > 0 {
			return left
		}
	}
	return 0
}

// exchange sends finishes and claims for free slots, and starts the tasks
// it gets. A claim cut short (slots taken away, the agent stopping) or a
// request that failed is sent again with its finishes alone, which the
// server answers as recorded where they already were.
func (a *Agent) exchange(ctx, work context.Context, tenant string, tl *tenantLoop, fins []wire.Finish, slots []int) {
	in := wire.Exchange{AgentID: a.cfg.ID, Incarnation: a.incarnation, TenantID: tenant, Finishes: fins, Slots: slots, WaitSeconds: 20}
	if in.Finishes == nil {
		in.Finishes = []wire.Finish{}
	}
	var out struct{ ExchangeTasks wire.Exchanged }
	var err error
	pause := time.Duration(0) // before the slots are claimed for again
	if len(slots) > 0 {
		poll, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		tl.polls[&cancel] = true
		a.mu.Unlock()
		err = a.do(poll, wire.ExchangeQuery, map[string]any{"in": in}, &out)
		a.mu.Lock()
		delete(tl.polls, &cancel)
		a.mu.Unlock()
		cancel()
		var ce *codeError
		switch {
		case err == nil:
		case poll.Err() != nil:
			// Slots taken away or the agent stopping: the server hands back
			// what it claimed for this request.
		case errors.As(err, &ce) && ce.code != wire.CodeRateLimited && ce.code != wire.CodeInternal:
			a.log.Warn("exchange refused", "tenant", tenant, "code", ce.code, "err", err)
			pause = time.Second + rand.N(time.Second)
		default:
			a.log.Warn("claim failed", "tenant", tenant, "slots", len(slots), "err", err)
			pause = time.Second + rand.N(time.Second)
		}
		if err == nil {
			switch out.ExchangeTasks.ClaimRefused {
			case wire.CodeSlotNotAssigned:
				// The assignment moved (an agent joined or left) since the
				// last heartbeat, whose answer will resize or stop this loop.
				a.log.Debug("slots no longer assigned; waiting for the next heartbeat", "tenant", tenant, "slots", slots)
				pause = 5*time.Second + rand.N(time.Second)
			case "":
			default:
				a.log.Warn("claim refused", "tenant", tenant, "code", out.ExchangeTasks.ClaimRefused)
				pause = time.Second + rand.N(time.Second)
			}
		}
	}
	if len(fins) > 0 && (len(slots) == 0 || err != nil) {
		// Reporting outlives the claim context: a result is worth delivering.
		in.Slots, in.WaitSeconds = []int{}, 0
		fctx, done := context.WithTimeout(context.WithoutCancel(work), 30*time.Second)
		err = a.retry(fctx, "finish", func(ctx context.Context) error {
			return a.do(ctx, wire.ExchangeQuery, map[string]any{"in": in}, &out)
		})
		done()
		if err != nil {
			a.log.Warn("finish failed; the leases will lapse and the tasks be retried", "tasks", len(fins), "err", err)
		}
	}
	got := out.ExchangeTasks
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range fins {
		delete(a.held, f.TaskID)
	}
	for _, o := range got.Finished {
		switch o.Code {
		case "":
		case wire.CodeStaleClaim:
			a.log.Info("finish refused: the claim was no longer current", "task", o.TaskID)
		default:
			a.log.Warn("finish refused", "task", o.TaskID, "code", o.Code, "err", o.Message)
		}
	}
	b := &batch{running: len(got.Assignments)}
	for _, c := range got.Assignments {
		delete(tl.claiming, c.Slot)
		tl.busy[c.Slot] = true
		rctx, cancel := context.WithCancelCause(work)
		a.held[c.TaskID] = &running{taskID: c.TaskID, token: c.ClaimToken, attempt: c.Attempt, cancel: cancel, batch: b}
		go a.runTask(rctx, work, tl, c)
	}
	if pause > 0 {
		// The slots wait out the pause before they are claimed for again;
		// the exchange counts as in flight until then.
		go func() {
			sleep(ctx, pause)
			a.mu.Lock()
			defer a.mu.Unlock()
			a.release(tl, slots)
		}()
		return
	}
	a.release(tl, slots)
}

// release ends an exchange: the slots it claimed for and got nothing for
// are free again. The caller holds a.mu.
func (a *Agent) release(tl *tenantLoop, slots []int) {
	for _, sl := range slots {
		if !tl.busy[sl] {
			delete(tl.claiming, sl)
		}
	}
	tl.requests--
	a.wakeAll()
}

// runTask runs a claimed task in its slot and queues its finish for the
// loop to send; the slot is free from then on.
func (a *Agent) runTask(ctx, work context.Context, tl *tenantLoop, c wire.Assignment) {
	var fin *wire.Finish
	defer func() {
		// A bug here must not take down the agent and every other task it
		// runs; the claim's lease lapses.
		if r := recover(); r != nil {
			a.log.Error("task runner crashed", "task", c.TaskID, "panic", r)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(tl.busy, c.Slot)
		if r := a.held[c.TaskID]; r != nil && r.batch != nil {
			r.batch.running--
		}
		if fin != nil {
			if len(tl.ended) == 0 {
				tl.endedAt = time.Now()
			}
			tl.ended = append(tl.ended, *fin)
			if r := a.held[c.TaskID]; r != nil {
				r.ended = true
			}
		} else {
			delete(a.held, c.TaskID)
		}
		a.wakeAll()
	}()
	fin = a.run(ctx, work, c.TaskID, c.Attempt, c.ClaimToken, c.Payload)
}

// run runs a task and returns its finish, or nil when there is none to
// send (the server cancelled the attempt, or it was handed back).
func (a *Agent) run(ctx, work context.Context, id string, attempt int, token string, payload json.RawMessage) *wire.Finish {
	defer func() {
		if r := a.heldRun(id); r != nil {
			r.cancel(nil)
		}
	}()
	res, tails, rest := a.execute(ctx, id, attempt, token, payload)
	if cause := context.Cause(ctx); cause != nil {
		// A run cut short by the agent is a retryable failure, whatever the
		// driver made of it.
		res = drivers.Result{Status: 1, Message: cause.Error()}
	}
	if errors.Is(context.Cause(ctx), errCancelled) {
		return nil // the server no longer wants this attempt's result
	}
	if errors.Is(context.Cause(ctx), errHandBack) {
		// The claim is still current: its last lines go before it is
		// handed back, which makes it stale.
		if len(rest) > 0 {
			fctx, done := context.WithTimeout(context.WithoutCancel(work), progressFlushTimeout)
			if err := a.postProgress(fctx, rest); err != nil {
				a.log.Debug("progress not reported", "task", id, "lines", len(rest), "err", err)
			}
			done()
		}
		a.handBack(work, id, attempt, token)
		return nil
	}
	// The attempt's last output stays with it (Task.attempts), so a failed
	// attempt's error can be read after the live stream is gone. Its last
	// lines travel with the finish rather than in a request of their own
	// before it.
	fin := &wire.Finish{Claim: wire.Claim{TaskID: id, Attempt: attempt, ClaimToken: token}, Result: wire.Result{
		Status: res.Status, Message: res.Message, Retryable: res.Retryable, Hostname: res.Hostname,
		IPAddresses: res.IPAddresses, Facts: res.Facts, Secrets: res.Secrets, Unreachable: res.Unreachable,
		StdoutTail: tails.stdout, StderrTail: tails.stderr}}
	for _, l := range rest {
		fin.Output = append(fin.Output, wire.OutputLine{Seq: l.Seq, Stream: l.Stream, Chunk: l.Chunk, Percent: l.Percent})
	}
	return fin
}

func (a *Agent) heldRun(id string) *running {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[id]
}

// handBack returns an unfinished claim to the queue so that another agent
// takes it at once; if that fails the lease lapses and it is retried.
func (a *Agent) handBack(work context.Context, id string, attempt int, token string) {
	ctx, done := context.WithTimeout(context.WithoutCancel(work), 10*time.Second)
	defer done()
	err := a.do(ctx, `mutation($in: ReleaseInput!) { releaseTask(input: $in) }`, map[string]any{"in": wire.Release{
		Claim: wire.Claim{TaskID: id, Attempt: attempt, ClaimToken: token}, Reason: errHandBack.Error()}}, &struct{}{})
	if err != nil {
		a.log.Warn("hand back failed; the lease will lapse and the task be retried", "task", id, "err", err)
		return
	}
	a.log.Info("task handed back", "task", id)
}

// execute runs a task's driver and returns its result, the ends of its
// output, and its last lines, not sent: they go with its finish.
func (a *Agent) execute(ctx context.Context, id string, attempt int, token string, payload json.RawMessage) (res drivers.Result, tails outputTails, rest []wire.Progress) {
	no := false
	defer func() {
		// A driver's bug fails its task, not the agent and every other
		// task it runs.
		if r := recover(); r != nil {
			a.log.Error("driver panicked", "task", id, "panic", r)
			res = drivers.Result{Status: 1, Message: fmt.Sprintf("driver panicked: %v", r), Retryable: &no}
		}
	}()
	t, err := drivers.Decode(payload)
	if err != nil {
		return drivers.Result{Status: 1, Message: err.Error(), Retryable: &no}, tails, nil
	}
	// Resources come from the server when the driver asks, under this
	// claim (docs/task-protocol.md#plugin-resources).
	t.Fetch = func(ctx context.Context, r drivers.Resource) (string, error) {
		return a.resources.get(ctx, a, id, token, r)
	}
	drv, _, err := a.reg.For(t)
	if err != nil {
		return drivers.Result{Status: 1, Message: err.Error()}, tails, nil
	}
	if t.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	out := &progress{a: a, ctx: ctx, id: id, attempt: attempt, token: token, redact: newRedactor(t)}
	defer func() {
		// What the sender has not sent goes with the finish, after which
		// the server refuses lines; a run that timed out still sends its
		// end.
		fctx, done := context.WithTimeout(context.WithoutCancel(ctx), progressFlushTimeout)
		defer done()
		rest = out.close(fctx)
		tails = out.tails()
	}()
	res = drv.Run(ctx, t, out)
	res.Message = out.redact.line(res.Message)
	return res, tails, rest
}

// redactor hides the payload's secrets in task output before it leaves
// the agent; the server scrubs again with every sensitive value it knows
// (the provider's too), and across chunks (docs/security.md).
type redactor struct{ set *scrub.Set }

func newRedactor(t *drivers.Task) *redactor { return &redactor{set: scrub.New(t.Secrets)} }

func (r *redactor) line(s string) string { return r.set.String(s) }

// cancel stops the runs of tasks the server cancelled.
func (a *Agent) cancel(ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, id := range ids {
		if r := a.held[id]; r != nil && !r.ended {
			a.log.Info("task cancelled by the server", "task", id)
			r.cancel(errCancelled)
		}
	}
}

// stop ends claiming, waits up to the grace period for running tasks, and
// cancels the rest: their drivers return, and each is finished as a
// retryable failure so the server re-queues it at once.
func (a *Agent) stop(work context.Context, endWork context.CancelFunc) error {
	a.cfg.Notify("STOPPING=1")
	a.mu.Lock()
	a.stopped = true
	loops := make([]*tenantLoop, 0, len(a.loops))
	for _, tl := range a.loops {
		tl.stop()
		loops = append(loops, tl)
	}
	a.mu.Unlock()
	done := make(chan struct{})
	go func() {
		for _, tl := range loops {
			<-tl.done
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(a.cfg.Grace):
		a.mu.Lock()
		for _, r := range a.held {
			r.cancel(errHandBack)
		}
		a.mu.Unlock()
		<-done
	}
	endWork()
	a.log.Info("agent stopped")
	return nil
}

// progress reports a task's output lines to the server. The driver's
// calls only queue a line: one goroutine per task sends what has queued, up
// to maxBatchLines lines in one request, so a driver reading a command's
// output never waits for the network and a chatty command costs one
// request per batch rather than per line. close hands back what is left
// for the task's finish to carry (no more than a finish takes: the sender
// posts the rest first).
type progress struct {
	a       *Agent
	ctx     context.Context // the task's run: ends with it
	id      string
	attempt int
	token   string
	redact  *redactor
	mu      sync.Mutex
	seq     int
	stdout  []byte // the last maxTail bytes of each stream, redacted
	stderr  []byte
	// The lines not sent yet, in order, and their bytes. more wakes the
	// sender (buffered 1); room, closed and replaced under mu, wakes a
	// driver held back by a full queue; closed ends the sender's linger.
	queue   []wire.Progress
	queued  int
	more    chan struct{}
	room    chan struct{}
	closed  chan struct{}
	closing bool
	done    chan struct{} // closed when the sender has ended; nil until it starts
	// flush is the context close sends the last lines under: it outlives
	// the run, which may have ended for a timeout.
	flush context.Context
}

const (
	// maxBatchLines bounds the lines of one request: each is a mutation,
	// which the server's cost limit weighs at 1,000 of its default 60,000.
	maxBatchLines = 32
	// maxBatchBytes bounds the output of one request.
	maxBatchBytes = 256 << 10
	// maxQueuedBytes is how much output may wait for the server before
	// the driver is held back: lines are never dropped to keep up.
	maxQueuedBytes = 4 << 20
	// batchLinger is how long the sender waits for more lines after the
	// first of a batch: a command printing fast fills batches, a command
	// printing now and then gets each line out at once.
	batchLinger = 20 * time.Millisecond
	// progressFlushTimeout bounds how long a task's last lines may hold up
	// its finish.
	progressFlushTimeout = 10 * time.Second
	// maxFinishLines and maxFinishBytes bound the lines a finish carries:
	// an exchange of 256 finishes stays well under the server's request
	// size.
	maxFinishLines = 64
	maxFinishBytes = 16 << 10
	// codeComplexityLimit is the server's answer to a request over its
	// cost limit.
	codeComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED"
)

// maxTail is how much of each stream an attempt keeps: the server keeps
// the last 2,048 characters (docs/operations.md#task-states).
const maxTail = 2048

// outputTails is the end of what a task printed on each stream.
type outputTails struct{ stdout, stderr string }

func keepTail(buf []byte, line string) []byte {
	buf = append(append(buf, line...), '\n')
	if len(buf) > 2*maxTail {
		buf = append(buf[:0:0], buf[len(buf)-maxTail:]...)
	}
	return buf
}

func lastBytes(b []byte) string {
	if len(b) > maxTail {
		b = b[len(b)-maxTail:]
	}
	return strings.ToValidUTF8(string(b), "")
}

func (p *progress) tails() outputTails {
	p.mu.Lock()
	defer p.mu.Unlock()
	return outputTails{stdout: lastBytes(p.stdout), stderr: lastBytes(p.stderr)}
}

func (p *progress) send(stream, line string, percent float64) {
	line = p.redact.line(line)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return // the driver's goroutines outlived its Run: too late
	}
	p.seq++
	switch stream {
	case "STDOUT":
		p.stdout = keepTail(p.stdout, line)
	case "STDERR":
		p.stderr = keepTail(p.stderr, line)
	}
	for p.queued > maxQueuedBytes && !p.closing && p.ctx.Err() == nil {
		room := p.room
		p.mu.Unlock()
		select {
		case <-room:
		case <-p.ctx.Done():
		}
		p.mu.Lock()
	}
	if p.closing {
		return
	}
	p.queue = append(p.queue, wire.Progress{Claim: wire.Claim{TaskID: p.id, Attempt: p.attempt, ClaimToken: p.token},
		Seq: p.seq, Stream: stream, Chunk: line, Percent: percent})
	p.queued += len(line)
	if p.done == nil {
		p.more = make(chan struct{}, 1)
		p.room = make(chan struct{})
		p.closed = make(chan struct{})
		p.done = make(chan struct{})
		go p.sender()
	}
	select {
	case p.more <- struct{}{}:
	default:
	}
}

// sender sends the queued lines in order until close has been called and
// the queue is empty.
func (p *progress) sender() {
	defer close(p.done)
	for {
		<-p.more
		// Let a burst gather; close cuts the wait short.
		t := time.NewTimer(batchLinger)
		select {
		case <-t.C:
		case <-p.closed:
			t.Stop()
		}
		for {
			p.mu.Lock()
			if p.closing && len(p.queue) <= maxFinishLines && p.queued <= maxFinishBytes {
				// The finish carries the rest.
				p.mu.Unlock()
				return
			}
			n, size := 0, 0
			for n < len(p.queue) && n < maxBatchLines && (n == 0 || size+len(p.queue[n].Chunk) <= maxBatchBytes) {
				size += len(p.queue[n].Chunk)
				n++
			}
			batch := p.queue[:n:n]
			p.queue = p.queue[n:]
			p.queued -= size
			closing := p.closing
			if n > 0 {
				close(p.room)
				p.room = make(chan struct{})
			}
			p.mu.Unlock()
			if n == 0 {
				if closing {
					return
				}
				break
			}
			ctx := p.ctx
			if closing {
				ctx = p.flush
			}
			if err := p.a.postProgress(ctx, batch); err != nil {
				// Output is best effort: a lost line must not fail the task.
				p.a.log.Debug("progress not reported", "task", p.id, "lines", len(batch), "err", err)
			}
		}
	}
}

// postProgress sends lines in one request: one reportProgress per line
// under an alias, which the server runs in order. A server whose cost
// limit is lower than its default gets the lines in smaller requests.
func (a *Agent) postProgress(ctx context.Context, lines []wire.Progress) error {
	if len(lines) > maxBatchLines {
		return errors.Join(a.postProgress(ctx, lines[:maxBatchLines]), a.postProgress(ctx, lines[maxBatchLines:]))
	}
	err := a.postOnce(ctx, lines)
	var ce *codeError
	if len(lines) > 1 && errors.As(err, &ce) && ce.code == codeComplexityLimit {
		half := len(lines) / 2
		return errors.Join(a.postProgress(ctx, lines[:half]), a.postProgress(ctx, lines[half:]))
	}
	return err
}

func (a *Agent) postOnce(ctx context.Context, lines []wire.Progress) error {
	var q strings.Builder
	q.WriteString("mutation(")
	vars := make(map[string]any, len(lines))
	for i := range lines {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "$p%d: ProgressInput!", i)
		vars[fmt.Sprintf("p%d", i)] = lines[i]
	}
	q.WriteString(") {")
	for i := range lines {
		fmt.Fprintf(&q, " p%d: reportProgress(input: $p%d)", i, i)
	}
	q.WriteString(" }")
	return a.do(ctx, q.String(), vars, &struct{}{})
}

// close lets the sender post, under ctx, what a finish cannot carry, and
// returns the lines left, in order, for the finish. Lines reported after
// close are dropped.
func (p *progress) close(ctx context.Context) []wire.Progress {
	p.mu.Lock()
	if p.closing {
		p.mu.Unlock()
		return nil
	}
	p.closing = true
	p.flush = ctx
	done, more := p.done, p.more
	if done != nil {
		close(p.closed)
		close(p.room) // a driver held back by a full queue gives up its line
		p.room = make(chan struct{})
	}
	p.mu.Unlock()
	if done != nil {
		select {
		case more <- struct{}{}:
		default:
		}
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rest := p.queue
	p.queue, p.queued = nil, 0
	return finishLines(rest)
}

// finishLines is what a finish can carry of the lines left: the last
// maxFinishLines within maxFinishBytes. More are left only when the
// server did not take them in time (the flush ran out); the task's result
// must still arrive, so the older ones give way, and a line says so.
func finishLines(rest []wire.Progress) []wire.Progress {
	total := 0
	for _, l := range rest {
		total += len(l.Chunk)
	}
	if len(rest) <= maxFinishLines && total <= maxFinishBytes {
		return rest
	}
	n, size := 0, 0
	for n < len(rest) && n < maxFinishLines-1 && size+len(rest[len(rest)-1-n].Chunk) <= maxFinishBytes-256 {
		size += len(rest[len(rest)-1-n].Chunk)
		n++
	}
	kept := rest[len(rest)-n:]
	dropped := len(rest) - n
	first := rest[dropped-1]
	note := wire.Progress{Claim: first.Claim, Seq: first.Seq, Stream: "STDERR",
		Chunk: fmt.Sprintf("coopr agent: %d earlier output lines were not delivered (the server did not take them in time)", dropped)}
	return append([]wire.Progress{note}, kept...)
}

func (p *progress) Stdout(line string)                  { p.send("STDOUT", line, 0) }
func (p *progress) Stderr(line string)                  { p.send("STDERR", line, 0) }
func (p *progress) Status(line string, percent float64) { p.send("STATUS", line, percent) }

// codeError is a GraphQL error with its code.
type codeError struct {
	code, msg string
}

func (e *codeError) Error() string { return e.code + ": " + e.msg }

func (a *Agent) do(ctx context.Context, query string, vars map[string]any, out any) error {
	errs, err := a.c.DoInto(ctx, query, vars, out)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		// An answer with errors gives nothing, not even the part of its
		// data that came with them (tasks claimed in it are left to their
		// leases).
		reflect.ValueOf(out).Elem().SetZero()
		return &codeError{code: errs[0].Code(), msg: errs[0].Message}
	}
	return nil
}

// retry calls fn with backoff and jitter until it succeeds, ctx ends, or
// the server refuses for good (an error with a code other than a rate
// limit).
func (a *Agent) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	wait := 200 * time.Millisecond
	for {
		err := fn(ctx)
		var ce *codeError
		if err == nil || ctx.Err() != nil || (errors.As(err, &ce) && ce.code != wire.CodeRateLimited && ce.code != wire.CodeInternal) {
			return err
		}
		a.log.Warn(what+" failed; retrying", "in", wait, "err", err)
		sleep(ctx, wait/2+rand.N(wait))
		wait = min(wait*2, 30*time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
