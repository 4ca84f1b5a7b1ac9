package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// startOnly is one service with only a start action: a START_SERVICES job
// over n nodes is n independent tasks.
func startOnly() map[string]*catalog.Service {
	s := &catalog.Service{Base: catalog.Base{Name: "s"}}
	s.Provisioner.Actions = map[string]catalog.Action{"start": {Type: "shell"}}
	return map[string]*catalog.Service{"s": s}
}

func independent(nodes []planner.Node) []planner.Node {
	for i := range nodes {
		nodes[i].Services = []string{"s"}
	}
	return nodes
}

// Fifty slots waiting at once are served by one stream reader: every task
// goes to exactly one slot, and each slot gets at most one task per claim.
func TestManySlotsClaimDistinctTasks(t *testing.T) {
	cfg := fast
	cfg.LeaseTTL = time.Minute // no lease may lapse while the spare slots wait
	h := newHarness(t, cfg)
	job, _ := h.submit(planner.StartServices, independent(h.nodes(50)), startOnly())
	// The claims wait long: on a loaded machine the rounds serving sixty
	// waiting slots take more than a second (claims waiting one came back
	// with one task of fifty). Once fifty tasks are handed out, the spare
	// slots stop waiting.
	ctx, spare := context.WithCancel(context.Background())
	defer spare()
	var mu sync.Mutex
	got := map[string]int{}
	handed := 0
	var wg sync.WaitGroup
	for slot := range 60 { // more slots than tasks: ten must come back empty
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := h.engine().Claim(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "a", Slot: slot, Wait: time.Minute})
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			if a != nil {
				mu.Lock()
				got[a.TaskID]++
				if handed++; handed == 50 {
					spare()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	want := claimedOnceEach(t, h, job, got)
	var inProgress int
	must(t, h.db.Get(&inProgress, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state = 'IN_PROGRESS'`, job))
	if inProgress != want {
		t.Errorf("%d tasks IN_PROGRESS, want %d", inProgress, want)
	}
}

// A claim for many slots gets a task for each of them when that many are
// queued, each tagged with its slot; claims together get every task once,
// and the attempts' events name the slots.
func TestClaimTasksForManySlots(t *testing.T) {
	cfg := fast
	cfg.LeaseTTL = time.Minute
	h := newHarness(t, cfg)
	job, _ := h.submit(planner.StartServices, independent(h.nodes(23)), startOnly())
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, err := h.q.Len(ctx, h.tenant)
		must(t, err)
		if n == 23 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 23 tasks in the stream after 10s", n)
		}
	}
	claims := [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 5, 7}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for _, slots := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A minute: with every task queued, each claim is answered
			// by the reader's next rounds, which a loaded machine slows
			// past a couple of seconds (claims then came back empty).
			as, err := h.engine().ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "a", Slots: slots, Wait: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			if len(as) != len(slots) {
				t.Errorf("one claim for %d slots with 23 tasks queued got %d", len(slots), len(as))
			}
			seen := map[int]bool{}
			for _, a := range as {
				if !slices.Contains(slots, a.Slot) || seen[a.Slot] {
					t.Errorf("task %s for slot %d: not one of %v once", a.TaskID, a.Slot, slots)
				}
				seen[a.Slot] = true
				var note string
				must(t, h.db.Get(&note, `SELECT message FROM events WHERE task_id = $1 AND state = 'IN_PROGRESS'`, a.TaskID))
				if want := fmt.Sprintf("claimed by a (slot %d)", a.Slot); note != want {
					t.Errorf("task %s: event says %q, want %q", a.TaskID, note, want)
				}
				mu.Lock()
				got[a.TaskID]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	claimedOnceEach(t, h, job, got)
	// Nothing is left: a claim for many slots waits out its time and
	// comes back empty.
	as, err := h.engine().ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "a", Slots: []int{0, 1}, Wait: 300 * time.Millisecond})
	if err != nil || len(as) != 0 {
		t.Errorf("claim with nothing queued: %d tasks, err %v", len(as), err)
	}
}

// A claim whose slot left before receiving it goes back to the queue under
// the same attempt; the abandoned token is stale.
func TestReleasedClaimIsQueuedAgain(t *testing.T) {
	h := newHarness(t, leased)
	h.submit(planner.StartServices, independent(h.nodes(1)), startOnly())
	ctx := context.Background()
	first := h.claim()
	h.engine().release(ctx, first)
	again := h.claim()
	if again.TaskID != first.TaskID || again.Attempt != first.Attempt || again.ClaimToken == first.ClaimToken {
		t.Fatalf("after release got task %s attempt %d, want %s attempt %d under a new token",
			again.TaskID, again.Attempt, first.TaskID, first.Attempt)
	}
	if err := h.engine().Finish(ctx, first.TaskID, first.Attempt, first.ClaimToken, Result{}); !errors.Is(err, ErrStaleClaim) {
		t.Fatalf("finish with the released token: %v, want ErrStaleClaim", err)
	}
	must(t, h.engine().Finish(ctx, again.TaskID, again.Attempt, again.ClaimToken, Result{}))
	var evs []string
	must(t, h.db.Select(&evs, `SELECT state FROM events WHERE task_id = $1 ORDER BY id`, first.TaskID))
	want := []string{"QUEUED", "IN_PROGRESS", "QUEUED", "IN_PROGRESS", "COMPLETE"}
	if len(evs) != len(want) {
		t.Fatalf("events %v, want %v", evs, want)
	}
	for i := range want {
		if evs[i] != want[i] {
			t.Fatalf("events %v, want %v", evs, want)
		}
	}
}

// Finishes of one task that meet in one batch each get their own verdict.
func TestFinishBatchDuplicates(t *testing.T) {
	h := newHarness(t, leased)
	h.submit(planner.StartServices, independent(h.nodes(2)), startOnly())
	ctx := context.Background()
	as := []*Assignment{h.claim(), h.claim()}
	in := func(a *Assignment, token string) finishIn {
		return finishIn{task: a.TaskID, attempt: a.Attempt, token: mustHex(token)}
	}
	outs, errs := h.engine().finishBatch(ctx, []finishIn{
		in(as[0], newToken()), in(as[0], as[0].ClaimToken), // wrong token first, then the right one
		in(as[1], as[1].ClaimToken), in(as[1], as[1].ClaimToken), // the same finish twice
	})
	waitSettled(outs)
	wantStale := []bool{true, false, false, true}
	for i, err := range errs {
		if stale := errors.Is(err, ErrStaleClaim); stale != wantStale[i] || (!stale && err != nil) {
			t.Errorf("finish %d: %v, want stale=%v", i, err, wantStale[i])
		}
	}
	var done int
	must(t, h.db.Get(&done, `SELECT count(*) FROM events WHERE state = 'COMPLETE' AND kind = 'task'`))
	if done != 2 {
		t.Errorf("%d COMPLETE events, want 2", done)
	}
}

// A job submitted through another server reaches this scheduler through
// the relayed events alone.
func TestChangedStartsUnknownJob(t *testing.T) {
	h := newHarness(t, leased)
	other := New(h.db, h.q, leased) // a second server's engine: it never runs its scheduler
	p, err := planner.Build(&planner.Request{Action: planner.StartServices, Services: startOnly(), Nodes: independent(h.nodes(3))})
	must(t, err)
	var jobID string
	err = other.tx(context.Background(), func(tx *sqlx.Tx) error {
		var err error
		jobID, err = other.SubmitTx(context.Background(), tx, JobSpec{TenantID: h.tenant, ClusterID: h.cluster,
			Action: planner.StartServices, Plan: p, Services: startOnly()})
		return err
	})
	must(t, err)
	// No local note: only the relayed job event tells the scheduler.
	h.engine().Changed("job", jobID, "", string(JobRunning), 0)
	h.agent("a1", 2, succeed)
	h.waitStatus("ACTIVE", 10*time.Second)
}

// Claims an agent no longer lists (or a new incarnation's) are failed and
// retried; those it lists, or that are younger than the grace, stay.
func TestAbandon(t *testing.T) {
	h := newHarness(t, Config{LeaseTTL: time.Minute, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	h.submit(planner.StartServices, independent(h.nodes(3)), startOnly())
	ctx := context.Background()
	var held []*Assignment
	for range 3 {
		a, err := h.engine().Claim(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "a", Wait: 2 * time.Second})
		must(t, err)
		if a == nil {
			t.Fatal("no task")
		}
		held = append(held, a)
	}
	n, err := h.engine().Abandon(ctx, "a", []string{held[0].TaskID}, time.Hour)
	must(t, err)
	if n != 0 {
		t.Errorf("abandoned %d claims younger than the grace", n)
	}
	n, err = h.engine().Abandon(ctx, "a", []string{held[0].TaskID}, 0)
	must(t, err)
	if n != 2 {
		t.Fatalf("abandoned %d, want the 2 unlisted claims", n)
	}
	if err := h.engine().Finish(ctx, held[1].TaskID, held[1].Attempt, held[1].ClaimToken, Result{}); !errors.Is(err, ErrStaleClaim) {
		t.Errorf("finish of an abandoned claim: %v, want ErrStaleClaim", err)
	}
	must(t, h.engine().Finish(ctx, held[0].TaskID, held[0].Attempt, held[0].ClaimToken, Result{}))
	// The abandoned tasks come back under a new attempt.
	got := map[string]int{}
	for len(got) < 2 {
		a, err := h.engine().Claim(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "b", Wait: 5 * time.Second})
		must(t, err)
		if a == nil {
			t.Fatalf("retries not queued; got %v", got)
		}
		got[a.TaskID] = a.Attempt
	}
	for _, a := range held[1:] {
		if got[a.TaskID] != a.Attempt+1 {
			t.Errorf("task %s retried as attempt %d, want %d", a.TaskID, got[a.TaskID], a.Attempt+1)
		}
	}
	// Keeping nothing (a new incarnation, a lost session) fails every claim.
	n, err = h.engine().Abandon(ctx, "b", nil, 0)
	must(t, err)
	if n != 2 {
		t.Errorf("abandoned %d of b's claims keeping none, want 2", n)
	}
}

// An agent's heartbeat renews its claims while finishes of the same claims
// are committed in batches: the statements lock the rows in one order, so
// neither is ever chosen as a deadlock victim, whatever order the agent
// lists its claims in.
func TestHeartbeatAndFinishesDoNotDeadlock(t *testing.T) {
	cfg := fast
	cfg.LeaseTTL = time.Minute
	h := newHarness(t, cfg)
	const n = 300
	h.submit(planner.StartServices, independent(h.nodes(n)), startOnly())
	ctx := context.Background()
	as := make([]*Assignment, n)
	for i := range as {
		as[i] = h.claim()
	}
	slices.SortFunc(as, func(a, b *Assignment) int { return strings.Compare(a.TaskID, b.TaskID) })
	refs := make([]ClaimRef, n)
	for i, a := range as {
		refs[n-1-i] = ClaimRef{TaskID: a.TaskID, Attempt: a.Attempt, Token: a.ClaimToken} // the other way round
	}
	done := make(chan struct{})
	beats := make(chan error, 1)
	go func() {
		defer close(beats)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := h.engine().Heartbeat(ctx, "a", refs); err != nil {
				beats <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for chunk := range slices.Chunk(as, 30) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in := make([]finishIn, len(chunk))
			for i, a := range chunk {
				in[i] = finishIn{task: a.TaskID, attempt: a.Attempt, token: mustHex(a.ClaimToken)}
			}
			outs, errs := h.engine().finishBatch(ctx, in)
			waitSettled(outs)
			for _, err := range errs {
				if err != nil {
					t.Errorf("finish: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	if err := <-beats; err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
}

// Claims and finishes commit their events quietly and say so: a claim
// once, a finish at least once (its statement, and the job's settling).
func TestQuietCommitsWakeTheRelay(t *testing.T) {
	var wakes atomic.Int64
	cfg := fast
	cfg.EventsCommitted = func() { wakes.Add(1) }
	h := newHarness(t, cfg)
	job, _ := h.submit(planner.StartServices, independent(h.nodes(1)), startOnly())
	submitted := wakes.Load()
	// The scheduler's queuing wakes the relay too: let it be done first,
	// its wake included, which comes a moment after the queued task shows
	// (on a loaded machine it came after the claim had begun).
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var queued bool
		must(t, h.db.Get(&queued, `SELECT EXISTS (SELECT 1 FROM tasks WHERE job_id = $1 AND state = 'QUEUED')`, job))
		if queued && wakes.Load() > submitted {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the task was not queued, or its queuing woke nobody, within 20 s (queued %v)", queued)
		}
	}
	before := wakes.Load()
	a := h.claim()
	if n := wakes.Load() - before; n != 1 {
		t.Fatalf("%d wakes from a claim, want 1", n)
	}
	before = wakes.Load()
	must(t, h.engine().Finish(context.Background(), a.TaskID, a.Attempt, a.ClaimToken, Result{}))
	if n := wakes.Load() - before; n < 1 {
		t.Fatalf("%d wakes from its finish, want at least 1", n)
	}
	var quiet string
	must(t, h.db.Get(&quiet, `SELECT coalesce(current_setting('coopr.quiet_events', true), '')`))
	if quiet == "on" {
		t.Fatal("a pool connection is quiet: its events would wake nobody")
	}
}

// The engine's transactions send no NOTIFY: queuing, claims, finishes
// with and without addresses, failures and settling. A NOTIFY takes a lock
// that every notifying commit on the Postgres server waits for through its
// flush, and queuing a job's next tasks waited behind it.
func TestEngineCommitsWithoutNotify(t *testing.T) {
	var wakes atomic.Int64
	cfg := leased // claims held by hand, no lease may lapse under load
	cfg.EventsCommitted = func() { wakes.Add(1) }
	h := newHarness(t, cfg)
	var schema string
	must(t, h.db.Get(&schema, `SELECT current_schema()`))
	var notes atomic.Int64
	l := pq.NewListener(storetest.DSN(), 10*time.Millisecond, time.Second, nil)
	t.Cleanup(func() { _ = l.Close() })
	must(t, l.Listen("coopr_events_"+schema))
	go func() {
		for n := range l.Notify {
			if n != nil {
				notes.Add(1)
			}
		}
	}()
	// The listener hears a commit that notifies.
	must(t, l.Ping())
	if _, err := h.db.Exec(`INSERT INTO events (tenant_id, kind, state) VALUES ($1, 'cluster', 'ACTIVE')`, h.tenant); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); notes.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no notification from a plain insert of an event within 5 s")
		}
	}
	notes.Store(0)

	job, _ := h.submit(planner.StartServices, independent(h.nodes(3)), startOnly())
	ctx := context.Background()
	a := h.claim()
	must(t, h.engine().Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, Result{}))
	b := h.claim()
	must(t, h.engine().Finish(ctx, b.TaskID, b.Attempt, b.ClaimToken, Result{Hostname: "n2", IPAddresses: map[string]string{"access_v4": "10.0.0.2"}}))
	c := h.claim()
	no := false
	must(t, h.engine().Finish(ctx, c.TaskID, c.Attempt, c.ClaimToken, Result{Status: 1, Message: "no", Retryable: &no}))
	h.waitStatus("INCONSISTENT", 5*time.Second) // the failed job settled
	var settled bool
	must(t, h.db.Get(&settled, `SELECT settled FROM jobs WHERE id = $1`, job))
	if !settled {
		t.Fatal("the job did not settle")
	}
	time.Sleep(200 * time.Millisecond) // a notification on its way
	if n := notes.Load(); n != 0 {
		t.Errorf("the engine's commits sent %d notifications, want none", n)
	}
	if wakes.Load() == 0 {
		t.Error("the engine's commits woke the relay no time")
	}
}

// waitSettled waits for the settling that follows a finish batch, as
// Finish does: it must not outlive the test's schema.
func waitSettled(outs []finished) {
	for _, o := range outs {
		if o.settled != nil {
			<-o.settled
		}
	}
}

// claimedOnceEach checks that every task of the job was handed out exactly
// once, by the counts got, and returns the number of tasks.
func claimedOnceEach(t *testing.T, h *harness, job string, got map[string]int) int {
	t.Helper()
	var want int
	must(t, h.db.Get(&want, `SELECT count(*) FROM tasks WHERE job_id = $1`, job))
	if len(got) != want {
		t.Fatalf("%d distinct tasks claimed, want all %d", len(got), want)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("task %s handed out %d times", id, n)
		}
	}
	return want
}

// Successful finishes that carry the node's name and addresses (a
// CONFIRM's) share the batch's one statement and commit, and leave the
// node as the transactional path would: name and addresses set, the
// result's facts namespace present, the unreachable mark cleared.
// TestFinishBatchIsolatesBadInput: a finish whose data Postgres refuses
// (a NUL in an address, which jsonb cannot hold) fails alone; the other
// finishes of its batch, other agents' and tenants' among them, complete.
func TestFinishBatchIsolatesBadInput(t *testing.T) {
	h := newHarness(t, leased)
	nodes := independent(h.nodes(3))
	h.submit(planner.StartServices, nodes, startOnly())
	a, b, c := h.claim(), h.claim(), h.claim()
	bad := `{"access_v4": "10.0.0.1\u0000"}`
	outs, errs := h.engine().finishBatch(context.Background(), []finishIn{
		{task: a.TaskID, attempt: a.Attempt, token: mustHex(a.ClaimToken)},
		{task: b.TaskID, attempt: b.Attempt, token: mustHex(b.ClaimToken), addresses: &bad},
		{task: c.TaskID, attempt: c.Attempt, token: mustHex(c.ClaimToken)},
	})
	waitSettled(outs)
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("the clean finishes failed with their batch-mate: %v, %v", errs[0], errs[2])
	}
	if errs[1] == nil || errors.Is(errs[1], ErrStaleClaim) {
		t.Fatalf("the bad finish: %v, want Postgres's refusal", errs[1])
	}
	var states []string
	must(t, h.db.Select(&states, `SELECT state FROM tasks WHERE id = ANY($1) ORDER BY id = $2`, pq.Array([]string{a.TaskID, b.TaskID, c.TaskID}), b.TaskID))
	if !slices.Equal(states, []string{"COMPLETE", "COMPLETE", "IN_PROGRESS"}) {
		t.Errorf("states %v, want the clean two COMPLETE and the bad one IN_PROGRESS", states)
	}
}

func TestFinishBatchSetsAddresses(t *testing.T) {
	h := newHarness(t, leased)
	nodes := independent(h.nodes(2))
	h.submit(planner.StartServices, nodes, startOnly())
	a, b := h.claim(), h.claim()
	_, err := h.db.Exec(`UPDATE nodes SET unreachable_since = now(), unreachable_reason = 'x' WHERE id = $1`, a.Node.ID)
	must(t, err)
	host, ips := "a.example", `{"access_v4": "10.1.0.1"}`
	outs, errs := h.engine().finishBatch(context.Background(), []finishIn{
		{task: a.TaskID, attempt: a.Attempt, token: mustHex(a.ClaimToken), hostname: &host, addresses: &ips},
		{task: b.TaskID, attempt: b.Attempt, token: mustHex(b.ClaimToken), addresses: &ips},
	})
	waitSettled(outs)
	for _, err := range errs {
		must(t, err)
	}
	var rows []struct {
		ID          string         `db:"id"`
		Hostname    string         `db:"hostname"`
		IPs         string         `db:"ipaddresses"`
		Facts       string         `db:"facts"`
		Unreachable sql.NullTime   `db:"unreachable_since"`
		Xid         string         `db:"view_xid"`
		State       sql.NullString `db:"state"`
	}
	must(t, h.db.Select(&rows, `SELECT n.id, n.hostname, n.ipaddresses::text AS ipaddresses, n.facts::text AS facts,
		n.unreachable_since, n.view_xid::text AS view_xid, (SELECT state FROM tasks WHERE id = ANY($2) AND node_id = n.id) AS state
		FROM nodes n WHERE n.id = ANY($1) ORDER BY n.id`, pq.Array([]string{a.Node.ID, b.Node.ID}), pq.Array([]string{a.TaskID, b.TaskID})))
	if len(rows) != 2 {
		t.Fatalf("%d nodes", len(rows))
	}
	wantHost := map[string]string{a.Node.ID: "a.example", b.Node.ID: ""}
	for _, r := range rows {
		if r.Hostname != wantHost[r.ID] || r.IPs != `{"access_v4": "10.1.0.1"}` || r.Facts != `{"service:s": {}}` ||
			r.Unreachable.Valid || r.State.String != "COMPLETE" {
			t.Errorf("node %s after its finish: %+v", r.ID, r)
		}
	}
	if rows[0].Xid != rows[1].Xid {
		t.Errorf("the two finishes committed apart (transactions %s and %s), want one", rows[0].Xid, rows[1].Xid)
	}
}

// A successful finish that sets its node's name and addresses leaves the
// node as the transactional path does, whatever the task: a node-level
// task (facts under its driver's role), a service task, a DELETE of a node
// that stays and of one that leaves, on a node marked unreachable or not.
func TestFinishBatchMatchesTheTransactionalPath(t *testing.T) {
	host, ips := "h.example", map[string]string{"access_v4": "10.1.0.1"}
	cases := []struct {
		name, action, service string
		hostname              string
		ips                   map[string]string
		unreachable, leaving  bool
	}{
		{name: "confirm", action: "CONFIRM", hostname: host, ips: ips},
		{name: "confirm, unreachable", action: "CONFIRM", ips: ips, unreachable: true},
		{name: "confirm, empty addresses", action: "CONFIRM", ips: map[string]string{}},
		{name: "service task", action: "START", service: "s", hostname: host},
		{name: "delete, node stays", action: "DELETE", ips: ips, unreachable: true},
		{name: "delete, node leaves", action: "DELETE", hostname: host, leaving: true},
	}
	h := newHarness(t, leased)
	nodes := independent(h.nodes(2 * len(cases)))
	h.submit(planner.StartServices, nodes, startOnly())
	type nodeRow struct {
		Hostname    sql.NullString `db:"hostname"`
		IPs         sql.NullString `db:"ipaddresses"`
		Facts       string         `db:"facts"`
		Unreachable bool           `db:"unreachable"`
		Reason      string         `db:"unreachable_reason"`
	}
	read := func(node string) *nodeRow {
		var r nodeRow
		err := h.db.Get(&r, `SELECT hostname, ipaddresses::text AS ipaddresses, facts::text AS facts,
			unreachable_since IS NOT NULL AS unreachable, unreachable_reason FROM nodes WHERE id = $1`, node)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		must(t, err)
		return &r
	}
	ctx := context.Background()
	for _, c := range cases {
		var got [2]*nodeRow
		for k := range got {
			a := h.claim()
			_, err := h.db.Exec(`UPDATE tasks SET action = $2, service = $3 WHERE id = $1`, a.TaskID, c.action, c.service)
			must(t, err)
			_, err = h.db.Exec(`UPDATE nodes SET leaving = $2, unreachable_since = CASE WHEN $3 THEN now() END,
				unreachable_reason = CASE WHEN $3 THEN 'lost' ELSE '' END WHERE id = $1`, a.Node.ID, c.leaving, c.unreachable)
			must(t, err)
			r := Result{Hostname: c.hostname, IPAddresses: c.ips}
			if k == 0 {
				must(t, h.engine().finishTx(ctx, a.TaskID, a.Attempt, a.ClaimToken, r))
			} else {
				in := finishIn{task: a.TaskID, attempt: a.Attempt, token: mustHex(a.ClaimToken)}
				must(t, in.setNode(r))
				outs, errs := h.engine().finishBatch(ctx, []finishIn{in})
				waitSettled(outs)
				must(t, errs[0])
			}
			got[k] = read(a.Node.ID)
		}
		if (got[0] == nil) != (got[1] == nil) || got[0] != nil && *got[0] != *got[1] {
			t.Errorf("%s: the node after the transactional path %+v, after the batch %+v", c.name, got[0], got[1])
		}
	}
}
