package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cooprhq/coopr/macro"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/server/leader"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Run drives the scheduler until ctx ends: it waits to lead the database
// schema's scheduling (leader.Acquire: another server's engine may hold
// it), loads every unsettled job, re-publishes queued tasks whose stream
// entries are gone, and then queues ready tasks, re-queues retries, reaps
// expired leases and settles finished jobs. It returns an error wrapping
// leader.ErrLost when its leadership ends under it; a caller runs it again.
func (e *Engine) Run(ctx context.Context) (err error) {
	defer func() {
		if ctx.Err() != nil && err != nil {
			err = ctx.Err() // whatever failed was cut short by the stop
		}
	}()
	term, err := leader.Acquire(ctx, e.db, leader.Config{Name: "engine",
		LockKey: `hashtext(current_schema() || ':coopr-engine')`, TTL: e.cfg.LeaderTTL, Log: e.log})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer term.Release()
	e.leading.Store(true)
	defer e.leading.Store(false)
	e.log.Info("engine: leading the scheduler", "term", term.Number)
	lctx, cancel := term.Context(ctx)
	defer cancel()
	s := &scheduler{Engine: e, jobs: map[string]*jobState{}, term: term}
	err = s.run(lctx)
	if ctx.Err() == nil && !term.Valid() {
		if lost := term.Err(); lost != nil {
			return fmt.Errorf("engine: %w", lost)
		}
		return fmt.Errorf("engine: %w: the lease ran out before it was renewed", leader.ErrLost)
	}
	return err
}

// Leading reports whether this engine's scheduler leads.
func (e *Engine) Leading() bool { return e.leading.Load() }

type scheduler struct {
	*Engine
	// term is the leadership the scheduler acts under: it checks it
	// before every step, so that after a freeze it stops before writing.
	term    *leader.Term
	jobs    map[string]*jobState
	pending []note // changes of a reap transaction, applied after commit
}

func (s *scheduler) run(ctx context.Context) error {
	if err := s.loadAll(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	s.reconcile(ctx)
	reap := time.NewTicker(s.cfg.ReapInterval)
	defer reap.Stop()
	reconcile := time.NewTicker(s.cfg.ReconcileInterval)
	defer reconcile.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		if !s.term.Valid() {
			return nil // Run reports the loss
		}
		s.step(ctx)
		retry.Reset(s.untilNextRetry())
		var n note
		var reaping, reconciling bool
		select {
		case <-ctx.Done():
			return nil
		case n = <-s.notes:
		case <-reap.C:
			reaping = true
		case <-reconcile.C:
			reconciling = true
		case <-retry.C:
			continue
		}
		if !s.term.Valid() {
			return nil // Run reports the loss
		}
		switch {
		case reaping:
			s.reap(ctx)
		case reconciling:
			s.reconcile(ctx)
			s.resyncInFlight(ctx)
			s.refreshShares(ctx)
			// A dropped note left the scheduler's copy stale: read it anew.
			if s.dropped.Swap(false) {
				if err := s.loadAll(ctx); err != nil {
					s.logError(ctx, "engine: reload jobs", "err", err)
				}
			}
		default:
			s.apply(ctx, n)
			// Take every note waiting so a burst of finishes becomes one
			// dispatch transaction.
			for more := true; more; {
				select {
				case n := <-s.notes:
					s.apply(ctx, n)
				default:
					more = false
				}
			}
		}
	}
}

func (s *scheduler) untilNextRetry() time.Duration {
	next := time.Hour
	now := time.Now()
	for _, js := range s.jobs {
		if t := js.nextRetry(); !t.IsZero() {
			next = min(next, max(t.Sub(now), time.Millisecond))
		}
	}
	return next
}

func (s *scheduler) apply(ctx context.Context, n note) {
	defer func() {
		if n.onReady != nil {
			close(n.onReady)
		}
	}()
	js := s.jobs[n.job]
	if n.external != nil {
		if !s.stale(js, n.external) {
			return
		}
		c := n.external
		if js != nil && c.kind == "task" && rank[TaskState(c.state)] > 0 {
			if t := js.byID[c.task]; t != nil {
				// A step of the usual progression: apply it as it is.
				t.attempt = c.attempt
				js.setState(t, TaskState(c.state))
				return
			}
		}
		// Anything else (a job this scheduler does not hold, a new task, a
		// failure): read the job again.
		if err := s.load(ctx, n.job); err != nil && !errors.Is(err, sql.ErrNoRows) {
			s.logError(ctx, "engine: load job", "job", n.job, "err", err)
		}
		return
	}
	if n.reload || js == nil || n.task == nil {
		if err := s.load(ctx, n.job); err != nil && !errors.Is(err, sql.ErrNoRows) {
			s.logError(ctx, "engine: load job", "job", n.job, "err", err)
		}
		return
	}
	t := js.byID[n.task.id]
	if t == nil {
		// A task the scheduler has not seen: a CONFIRM rollback added it.
		if err := s.load(ctx, n.job); err != nil {
			s.logError(ctx, "engine: load job", "job", n.job, "err", err)
		}
		return
	}
	t.retryAt = n.task.retryAt
	js.setState(t, n.task.state)
	if n.task.jobFailed {
		// The failure failed the job in the same transaction, dropping
		// what was queued.
		js.state = JobFailed
		for _, o := range js.tasks {
			if o.state == NotSubmitted || o.state == Queued {
				js.setState(o, Dropped)
			}
			o.retryAt = time.Time{}
		}
	}
}

// rank orders the states one attempt of a task passes through.
var rank = map[TaskState]int{Queued: 1, InProgress: 2, Complete: 3, Skipped: 3}

// stale reports whether a relayed change tells the scheduler something its
// copy lacks, so that the job must be read again. Changes it made or was
// told of locally come back relayed later and are ignored; a job it does
// not hold matters only when it starts running (another server submitted
// or retried it).
func (s *scheduler) stale(js *jobState, c *externalChange) bool {
	if c.kind == "job" {
		if js == nil {
			return JobState(c.state) == JobRunning
		}
		return js.state != JobState(c.state)
	}
	if js == nil {
		return false
	}
	t := js.byID[c.task]
	if t == nil {
		return true // added since the job was read (a CONFIRM rollback)
	}
	r, known := rank[TaskState(c.state)]
	switch {
	case c.attempt > t.attempt:
		return true
	case c.attempt < t.attempt:
		return false
	case known:
		return r > rank[t.state]
	default:
		// FAILED, DROPPED, NOT_SUBMITTED: rare, and their details (retry
		// time) are not in the event.
		return TaskState(c.state) != t.state
	}
}

// step dispatches ready tasks and settles finished jobs.
func (s *scheduler) step(ctx context.Context) {
	now := time.Now()
	for _, js := range s.jobs {
		if (js.state == JobRunning && js.allDone()) ||
			((js.state == JobFailed || js.state == JobComplete) && js.inFlightCount() == 0) {
			s.settle(ctx, js)
		}
		if js.state != JobRunning && js.state != JobPaused {
			continue
		}
		limit := 0 // no bound
		if js.share > 0 {
			limit = js.share - js.inFlightCount()
			if limit <= 0 {
				continue
			}
		}
		if ready := js.ready(now, limit); len(ready) > 0 {
			s.dispatch(ctx, js, ready)
		}
	}
}

// dispatch queues tasks: the state change and its events in one
// transaction, conditional on the job still running, then the stream
// entries. A crash between the two leaves QUEUED rows without entries,
// which the reconciler re-publishes.
func (s *scheduler) dispatch(ctx context.Context, js *jobState, ready []*taskState) {
	ids := make([]string, len(ready))
	for i, t := range ready {
		ids[i] = t.id
	}
	var rows []struct {
		ID      string `db:"id"`
		Attempt int    `db:"attempt"`
	}
	if err := s.dispatchSessions.selectContext(ctx, &rows, pq.Array(ids), js.id, js.tenant, js.cluster); err != nil {
		s.logError(ctx, "engine: dispatch", "job", js.id, "err", err)
		return
	}
	if len(rows) > 0 {
		s.eventsCommitted()
	}
	if len(rows) < len(ready) {
		// The job changed under us (paused, aborted): read it again.
		if err := s.load(ctx, js.id); err != nil {
			s.logError(ctx, "engine: load job", "job", js.id, "err", err)
		}
		return
	}
	s.stats.dispatched.Add(int64(len(rows)))
	items := make([]queue.Item, len(rows))
	for i, r := range rows {
		t := js.byID[r.ID]
		t.attempt = r.Attempt
		t.retryAt = time.Time{}
		js.setState(t, Queued)
		items[i] = queue.Item{TaskID: r.ID, Attempt: r.Attempt}
	}
	if err := s.q.PublishMany(ctx, js.tenant, items); err != nil {
		s.log.Warn("engine: publish failed; the reconciler will retry", "job", js.id, "tasks", len(items), "err", err)
	}
}

// dispatchSQL queues tasks with their events, conditional on the job
// still running, in one statement prepared on a kept session
// (dispatchSetup): one round trip, where a transaction of its own took
// five.
// Queuing does not wait for the disk, as a claim does not: lost in a
// crash, the tasks are NOT_SUBMITTED again and the scheduler queues them
// anew when it loads the job; an entry for the lost attempt names the
// attempt the new one gets, or one no longer current, which is skipped.
// The finish that made them ready committed synchronously before.
const dispatchSQL = `WITH l AS MATERIALIZED (SELECT id FROM tasks
			WHERE id = ANY($1) AND state IN ('NOT_SUBMITTED', 'FAILED')
				AND EXISTS (SELECT 1 FROM jobs WHERE id = $2 AND state = 'RUNNING')
			ORDER BY id FOR UPDATE),
		q AS (UPDATE tasks t SET state = 'QUEUED', attempt = t.attempt + 1, retry_at = NULL FROM l WHERE t.id = l.id
			RETURNING t.id, t.attempt),
		ev AS (INSERT INTO events (tenant_id, cluster_id, job_id, task_id, kind, state, attempt, message)
			SELECT $3::uuid, $4, $2, q.id, 'task', 'QUEUED', q.attempt, '' FROM q)
		SELECT id, attempt FROM q`

// dispatchSetup prepares a dispatch session: quiet (see quietTx), and
// asynchronous (see dispatchSQL).
var dispatchSetup = []string{`SET synchronous_commit = off`, `SET coopr.quiet_events = on`}

// nothingCreatedMessage is the message for a create that made nothing
// (docs/operations.md#nothing-created).
const nothingCreatedMessage = "Unable to create nodes, please check your provider settings"

// settle completes a job its copy says is done, and settles an ended job
// with nothing in flight. Finishes settle their jobs themselves as they
// commit (settleDone); this catches the rest (a job whose last task was
// reaped, a job loaded already done) and checks the rows, not the copy.
func (s *scheduler) settle(ctx context.Context, js *jobState) {
	state, settled, err := s.settleJob(ctx, js.id)
	if err != nil {
		s.logError(ctx, "engine: settle job", "job", js.id, "err", err)
		return
	}
	js.state = state
	if settled {
		delete(s.jobs, js.id)
	}
}

// nothingCreated: no CREATE or NETWORK_ALLOCATE ever succeeded and every
// failed attempt reported a 200–299 status (docs/operations.md#nothing-created).
func nothingCreated(ctx context.Context, tx *sqlx.Tx, job string) (bool, error) {
	var bad int
	err := tx.GetContext(ctx, &bad, `SELECT count(*) FROM task_attempts a JOIN tasks t ON t.id = a.task_id
		WHERE t.job_id = $1 AND a.finished_at IS NOT NULL AND (
			(a.status = 0 AND t.action IN ('CREATE', 'NETWORK_ALLOCATE'))
			OR (a.status <> 0 AND (a.status < 200 OR a.status > 299)))`, job)
	return bad == 0, err
}

func (s *scheduler) loadAll(ctx context.Context) error {
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, `SELECT id FROM jobs WHERE NOT settled ORDER BY created_at`); err != nil {
		return fmt.Errorf("engine: list jobs: %w", err)
	}
	for _, id := range ids {
		if err := s.load(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// load reads a job and its tasks into the scheduler.
func (s *scheduler) load(ctx context.Context, id string) error {
	var j struct {
		Tenant  string   `db:"tenant_id"`
		Cluster string   `db:"cluster_id"`
		State   JobState `db:"state"`
		Settled bool     `db:"settled"`
		Edges   []byte   `db:"edges"`
		Workers int      `db:"workers"`
		Config  []byte   `db:"config"`
	}
	if err := s.db.GetContext(ctx, &j, `SELECT tenant_id, cluster_id, state, settled, edges,
		(SELECT workers FROM tenants WHERE id = jobs.tenant_id) AS workers,
		(SELECT config FROM clusters WHERE id = jobs.cluster_id) AS config FROM jobs WHERE id = $1`, id); err != nil {
		return err
	}
	if j.Settled {
		delete(s.jobs, id)
		return nil
	}
	var rows []struct {
		ID         string        `db:"id"`
		Idx        int           `db:"idx"`
		Node       string        `db:"node_id"`
		Action     string        `db:"action"`
		Service    string        `db:"service"`
		State      TaskState     `db:"state"`
		Attempt    int           `db:"attempt"`
		RetryAt    sql.NullTime  `db:"retry_at"`
		RollbackOf sql.NullInt64 `db:"rollback_of"`
		After      sql.NullInt64 `db:"after_idx"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, idx, node_id, action, service, state, attempt, retry_at,
		rollback_of, after_idx FROM tasks WHERE job_id = $1 ORDER BY idx`, id); err != nil {
		return err
	}
	tasks := make([]*taskState, len(rows))
	rollbackOf, after := map[int]int{}, map[int]int{}
	planned := 0
	for i, r := range rows {
		a, ok := planner.ParseAction(r.Action)
		if !ok || r.Idx != i {
			return fmt.Errorf("engine: job %s: bad task row %d (%s)", id, r.Idx, r.Action)
		}
		tasks[i] = &taskState{id: r.ID, idx: r.Idx, node: r.Node, action: a, service: r.Service, state: r.State, attempt: r.Attempt}
		if r.RetryAt.Valid {
			tasks[i].retryAt = r.RetryAt.Time
		}
		if r.RollbackOf.Valid {
			rollbackOf[i] = int(r.RollbackOf.Int64)
			if r.After.Valid {
				after[i] = int(r.After.Int64)
			}
		} else {
			planned++
		}
	}
	edges, err := decodeEdges(j.Edges, planned)
	if err != nil {
		return fmt.Errorf("engine: job %s: %w", id, err)
	}
	if _, seen := s.jobs[id]; !seen && len(rows) >= minAnalyzeTasks {
		s.analyzeIfOutgrown(len(rows))
	}
	js := newJobState(id, j.Tenant, j.Cluster, j.State, j.Settled, tasks, edges, rollbackOf, after)
	js.share = jobShare(j.Workers)
	js.noGate = !configNeedsPeers(j.Config)
	s.jobs[id] = js
	return nil
}

// minAnalyzeTasks is the fewest tasks of a job for which the scheduler
// checks that the statistics of the tables cover it.
const minAnalyzeTasks = 500

// analyzeIfOutgrown brings the statistics of tasks and nodes up to date,
// in the background, when a new job's n tasks are more than a fifth of
// the rows the statistics count. The claim and finish sessions run
// generic plans, made on those statistics: made when the tables held a
// few hundred rows, they scan where they should look up, and a fresh
// database's first large job (a 5,000-node create after smaller ones) cost
// Postgres three times the CPU per task until autovacuum analyzed the
// tables, a minute or more later. Analyzing invalidates the plans.
func (s *scheduler) analyzeIfOutgrown(n int) {
	s.goOwned(func() {
		ctx, cancel := context.WithTimeout(s.life, time.Minute)
		defer cancel()
		var counted float64
		if err := s.db.GetContext(ctx, &counted, `SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'tasks'::regclass`); err != nil {
			s.log.Warn("engine: read the tasks' statistics", "err", err)
			return
		}
		if float64(n) <= counted/5 {
			return
		}
		if _, err := s.db.ExecContext(ctx, `ANALYZE tasks, nodes`); err != nil && ctx.Err() == nil {
			s.log.Warn("engine: analyze tasks and nodes", "err", err)
		}
	})
}

// configNeedsPeers reports whether a cluster config, expanded for a node,
// may read other nodes' names or addresses (docs/planner.md#address-gate);
// a config that cannot be read is taken to.
func configNeedsPeers(raw []byte) bool {
	var cfg any
	if len(raw) > 0 && json.Unmarshal(raw, &cfg) != nil {
		return true
	}
	return macro.NeedsPeers(cfg)
}

// minJobShare is the fewest tasks a job may have in flight once its
// tenant has workers: enough that claims batch well when one job has the
// tenant to itself.
const minJobShare = 32

// jobShare bounds a job's tasks in flight (queued or running) by its
// tenant's worker count. A tenant's tasks wait in one FIFO stream, so
// without a bound a 20,000-task job queues everything at once and another
// job of the same tenant waits behind all of it; with it, a new job's
// first tasks wait behind at most the share's queued part, and the big
// job's next tasks queue behind them, round-robin as finishes free room.
// Twice the workers keeps every slot fed while the scheduler refills.
// A tenant without workers runs nothing through the API; the engine used
// alone (tests, benchmarks) is then left unbounded.
func jobShare(workers int) int {
	if workers <= 0 {
		return 0
	}
	return max(2*workers, minJobShare)
}

// refreshShares follows changes of the tenants' worker counts.
func (s *scheduler) refreshShares(ctx context.Context) {
	if len(s.jobs) == 0 {
		return
	}
	var rows []struct {
		ID      string `db:"id"`
		Workers int    `db:"workers"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, workers FROM tenants`); err != nil {
		s.logError(ctx, "engine: read workers", "err", err)
		return
	}
	share := make(map[string]int, len(rows))
	for _, r := range rows {
		share[r.ID] = jobShare(r.Workers)
	}
	for _, js := range s.jobs {
		js.share = share[js.tenant]
	}
}

// resyncInFlight reloads jobs whose in-flight tasks have moved on in
// Postgres without the scheduler hearing of it: a finish served by an
// engine that is not running the scheduler, whose note went nowhere.
func (s *scheduler) resyncInFlight(ctx context.Context) {
	var ids []string
	want := map[string]TaskState{}
	owner := map[string]string{}
	for _, js := range s.jobs {
		if js.inFlight == 0 {
			continue
		}
		for _, t := range js.tasks {
			if t.inFlight() {
				ids = append(ids, t.id)
				want[t.id], owner[t.id] = t.state, js.id
			}
		}
	}
	if len(ids) == 0 {
		return
	}
	var rows []struct {
		ID    string    `db:"id"`
		State TaskState `db:"state"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT id, state FROM tasks WHERE id = ANY($1)`, pq.Array(ids)); err != nil {
		s.logError(ctx, "engine: resync", "err", err)
		return
	}
	stale := map[string]bool{}
	for _, r := range rows {
		// QUEUED → IN_PROGRESS is a claim, which sends no note; anything
		// else means a change was missed.
		if r.State != want[r.ID] && !(want[r.ID] == Queued && r.State == InProgress) {
			stale[owner[r.ID]] = true
		}
	}
	for id := range stale {
		s.log.Debug("engine: job changed without a note; reading it again", "job", id)
		if err := s.load(ctx, id); err != nil && !errors.Is(err, sql.ErrNoRows) {
			s.logError(ctx, "engine: load job", "job", id, "err", err)
		}
	}
}

// reconcile re-publishes QUEUED attempts that have no stream entry, e.g.
// after Redis lost its data or a dispatch crashed before publishing.
func (s *scheduler) reconcile(ctx context.Context) {
	var rows []struct {
		Tenant  string `db:"tenant_id"`
		ID      string `db:"id"`
		Attempt int    `db:"attempt"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT tenant_id, id, attempt FROM tasks WHERE queued ORDER BY tenant_id, idx`); err != nil {
		s.logError(ctx, "engine: reconcile", "err", err)
		return
	}
	byTenant := map[string][]queue.Item{}
	for _, r := range rows {
		byTenant[r.Tenant] = append(byTenant[r.Tenant], queue.Item{TaskID: r.ID, Attempt: r.Attempt})
	}
	for tenant, items := range byTenant {
		have, err := s.q.Pending(ctx, tenant)
		if err != nil {
			s.logError(ctx, "engine: reconcile", "tenant", tenant, "err", err)
			continue
		}
		var missing []queue.Item
		for _, it := range items {
			if have[it] == 0 {
				missing = append(missing, it)
			}
		}
		if len(missing) > 0 {
			// A claim may have committed and deleted its entry between the
			// two reads: publish only what is still queued.
			missing, err = s.stillQueued(ctx, missing)
			if err != nil {
				s.logError(ctx, "engine: reconcile", "tenant", tenant, "err", err)
				continue
			}
		}
		if len(missing) == 0 {
			continue
		}
		s.log.Info("engine: re-publishing queued tasks without a stream entry", "tenant", tenant, "tasks", len(missing))
		if err := s.q.PublishMany(ctx, tenant, missing); err != nil {
			s.logError(ctx, "engine: reconcile publish", "tenant", tenant, "err", err)
		}
	}
}

func (s *scheduler) stillQueued(ctx context.Context, items []queue.Item) ([]queue.Item, error) {
	ids, attempts := make([]string, len(items)), make([]int64, len(items))
	for i, it := range items {
		ids[i], attempts[i] = it.TaskID, int64(it.Attempt)
	}
	var rows []struct {
		ID      string `db:"id"`
		Attempt int    `db:"attempt"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT t.id, t.attempt FROM tasks t
		JOIN unnest($1::text[], $2::int[]) AS i(id, attempt) ON t.id = i.id AND t.attempt = i.attempt
		WHERE t.state = 'QUEUED'`, pq.Array(ids), pq.Array(attempts))
	out := make([]queue.Item, len(rows))
	for i, r := range rows {
		out[i] = queue.Item{TaskID: r.ID, Attempt: r.Attempt}
	}
	return out, err
}

// logError logs a failed step unless the engine is stopping, when every
// statement in flight fails with the cancelled context.
func (s *scheduler) logError(ctx context.Context, msg string, args ...any) {
	if ctx.Err() == nil {
		s.log.Error(msg, args...)
	}
}
