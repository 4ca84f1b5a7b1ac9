// Package engine runs jobs: it turns a plan into task rows, queues each task
// the moment it is ready, hands tasks to agents under leases, and settles jobs
// and clusters (docs/operations.md, docs/task-protocol.md). Postgres holds
// every decision; Redis streams only wake agents.
package engine

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cooprhq/coopr/audit"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/errkind"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/queue"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Queue is what the engine needs of the task queue.
type Queue interface {
	PublishMany(ctx context.Context, tenant string, items []queue.Item) error
	Next(ctx context.Context, tenant, consumer string, max int, wait time.Duration) ([]queue.Entry, error)
	Ack(ctx context.Context, tenant string, ids ...string) error
	Pending(ctx context.Context, tenant string) (map[queue.Item]int, error)
}

// Config tunes the engine; zero fields take the defaults of docs/operations.md.
type Config struct {
	LeaseTTL          time.Duration // 30 s
	ReapInterval      time.Duration // 5 s
	ReconcileInterval time.Duration // 10 s
	BackoffBase       time.Duration // 5 s: attempt n waits base·2^(n−1)
	BackoffMax        time.Duration // 2 min
	MaxAttempts       int           // 3
	// Timeouts per action override the defaults (docs/operations.md#timeouts).
	Timeouts map[planner.Action]time.Duration
	Logger   *slog.Logger
	// SealSecrets stores a result's driver secrets in the finish's
	// transaction; nil refuses results that carry any.
	SealSecrets func(ctx context.Context, tx *sqlx.Tx, cluster, namespace string, values map[string]any) error
	// EventsCommitted is called after claims or finishes committed events
	// without a NOTIFY (their sessions set coopr.quiet_events); the server
	// wakes the event relay with it. Nil: the relay finds them at its next
	// poll.
	EventsCommitted func()
	// LeaderTTL is the scheduler's leadership lease: a leader that stops
	// renewing it (a frozen or cut-off host) is replaced after about this
	// long. Zero: leader.DefaultTTL.
	LeaderTTL time.Duration
}

var defaultTimeouts = map[planner.Action]time.Duration{
	planner.Create: 10 * time.Minute, planner.Confirm: 20 * time.Minute, planner.Delete: 10 * time.Minute,
	planner.NetworkAllocate: 10 * time.Minute, planner.NetworkRelease: 10 * time.Minute,
	planner.NetworkConfigure: 10 * time.Minute, planner.NetworkUnconfigure: 10 * time.Minute,
	planner.Bootstrap: 20 * time.Minute, planner.Install: 30 * time.Minute, planner.Configure: 30 * time.Minute,
	planner.Initialize: 30 * time.Minute, planner.Start: 10 * time.Minute, planner.Stop: 10 * time.Minute,
	planner.Remove: 30 * time.Minute, planner.Check: 2 * time.Minute, planner.Status: 2 * time.Minute,
	planner.Reboot: 10 * time.Minute, planner.AuthorizeKeys: 5 * time.Minute,
}

func (c *Config) fill() {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.ReapInterval <= 0 {
		c.ReapInterval = 5 * time.Second
	}
	if c.ReconcileInterval <= 0 {
		c.ReconcileInterval = 10 * time.Second
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = 5 * time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 2 * time.Minute
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Errors callers test with errors.Is.
var (
	// ErrStopped answers claims made or still waiting when the engine
	// stops.
	ErrStopped    = errors.New("engine: stopped (the server is shutting down)")
	ErrStaleClaim = errors.New("STALE_CLAIM: the claim is no longer current (finished, timed out or reaped)")
	// ErrConflict is a job or cluster whose state does not allow the
	// request; it is errkind.ErrState and keeps the engine's wording.
	ErrConflict = errkind.Labeled(errkind.ErrState, "CONFLICT")
	// ErrNotFound is a job or cluster that does not exist.
	ErrNotFound = errkind.Labeled(errkind.ErrNotFound, "NOT_FOUND")
)

// Engine runs jobs. Claim, Heartbeat, Finish and the job controls may be
// called from any goroutine; Run drives the scheduler and must run in one
// process at a time per database schema (it waits for an advisory lock).
type Engine struct {
	db    *sqlx.DB
	q     Queue
	cfg   Config
	log   *slog.Logger
	notes chan note
	// dropped is set when a note did not fit the channel; the scheduler
	// then reloads every job on its next reconcile tick.
	dropped atomic.Bool
	leading atomic.Bool // Run leads the scheduling

	// consumer names this engine in the tenant streams' consumer group.
	consumer       string
	fetchMu        sync.Mutex
	fetchers       map[string]*fetcher // tenant -> its waiting slots
	finishes       *batcher[finishIn, finished]
	stats          struct{ dispatched, claimed, completed, failed atomic.Int64 }
	claimSessions  *sessions
	finishSessions *sessions
	// dispatchSessions queue ready tasks (the scheduler's one goroutine).
	dispatchSessions *sessions
	// settleDue is settleDueSQL prepared on the pool's connections.
	settleDue prepared
	// roomQuery is claimRoomSQL prepared on the pool's connections.
	roomQuery prepared
	views     *views

	// life is the context of the engine's own goroutines (claim fetchers
	// and their acknowledgements), ended by Stop; running counts them.
	life    context.Context
	endLife context.CancelFunc
	running sync.WaitGroup
}

// note tells the scheduler that a job's rows changed.
type note struct {
	job string
	// task changes already committed; reload asks for the whole job again.
	task    *taskChange
	reload  bool
	onReady chan struct{} // closed when the note is applied (tests, shutdown)
	// external marks a change relayed from the events table, perhaps made
	// by another server, perhaps already applied from a local note.
	external *externalChange
}

type externalChange struct {
	kind, task string
	state      string // a TaskState or a JobState, as kind says
	attempt    int
}

type taskChange struct {
	id        string
	state     TaskState
	retryAt   time.Time
	jobFailed bool
}

// New returns an engine over db (migrated) and q.
func New(db *sqlx.DB, q Queue, cfg Config) *Engine {
	cfg.fill()
	host, _ := os.Hostname()
	e := &Engine{db: db, q: q, cfg: cfg, log: cfg.Logger, notes: make(chan note, 4096),
		consumer: fmt.Sprintf("engine:%s:%d:%s", host, os.Getpid(), newToken()[:8]), fetchers: map[string]*fetcher{}}
	e.life, e.endLife = context.WithCancel(context.Background())
	// One finish batch at a time: a second one in flight only waits for
	// the first one's flush to the disk and then flushes again, which was
	// measured slower than letting finishes gather behind the first.
	e.finishes = &batcher[finishIn, finished]{run: e.finishBatch, max: 256, workers: 1}
	// One kept session per tenant being served at the same moment, and
	// one per finish batch in flight.
	e.views = &views{db: db, m: map[string]*clusterView{}}
	e.claimSessions = &sessions{db: db, setup: claimSetup, query: claimSQL, maxIdle: 4}
	e.finishSessions = &sessions{db: db, setup: []string{`SET plan_cache_mode = force_generic_plan`, `SET coopr.quiet_events = on`},
		query: finishSQL, maxIdle: e.finishes.workers}
	// Queuing's plan is made once, as claims' and finishes' are: a plan
	// made while the tables were small (statistics lag) scanned every task
	// of the job at each call later on, until the tables were analyzed;
	// a job that outgrows the statistics has them analyzed at once
	// (analyzeIfOutgrown), which makes the plans again.
	e.dispatchSessions = &sessions{db: db, setup: append([]string{`SET plan_cache_mode = force_generic_plan`}, dispatchSetup...),
		query: dispatchSQL, maxIdle: 1}
	e.settleDue = prepared{db: db, query: settleDueSQL}
	e.roomQuery = prepared{db: db, query: claimRoomSQL}
	return e
}

// Stop ends the engine's own goroutines, the claim fetchers, answering
// the claims still waiting with ErrStopped, and waits for them (and for
// the acknowledgements of claims made). Call it once nothing calls the
// engine any more (the HTTP server has shut down); Run stops with its own
// context.
func (e *Engine) Stop() {
	e.endLife()
	e.running.Wait()
	for _, p := range []*sessions{e.claimSessions, e.finishSessions, e.dispatchSessions} {
		p.close()
	}
	e.settleDue.close()
	e.roomQuery.close()
}

// goOwned runs fn in a goroutine that Stop waits for.
func (e *Engine) goOwned(fn func()) {
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		fn()
	}()
}

func (e *Engine) notify(n note) {
	// Never block a claim or finish on the scheduler: a dropped note only
	// delays work until the next reconcile tick reloads every job.
	select {
	case e.notes <- n:
	default:
		e.dropped.Store(true)
	}
}

// Stats counts what this engine did since it started.
type Stats struct {
	Dispatched, Claimed, Completed, Failed int64
}

// Stats reads the counters.
func (e *Engine) Stats() Stats {
	return Stats{Dispatched: e.stats.dispatched.Load(), Claimed: e.stats.claimed.Load(),
		Completed: e.stats.completed.Load(), Failed: e.stats.failed.Load()}
}

// LeaseTTL is how long a claim lives without a heartbeat.
func (e *Engine) LeaseTTL() time.Duration { return e.cfg.LeaseTTL }

// Resync makes the scheduler read every job again at its next reconcile:
// changes were lost on the way to it.
func (e *Engine) Resync() { e.dropped.Store(true) }

// Changed tells the scheduler of a committed change, from any server: an
// event relayed from the events table. Changes it already knows are
// ignored, so every server may pass every event.
func (e *Engine) Changed(kind, job, task, state string, attempt int) {
	if job == "" || (kind != "job" && kind != "task") {
		return
	}
	e.notify(note{job: job, external: &externalChange{kind: kind, task: task, state: state, attempt: attempt}})
}

// JobSpec is a planned operation to run.
type JobSpec struct {
	TenantID, ClusterID string
	Action              planner.ClusterAction
	Plan                *planner.Plan
	// Services holds the definitions of the cluster's services, for
	// payloads, maxAttempts and timeouts.
	Services map[string]*catalog.Service
}

// statuses gives the cluster status after success and after failure
// (docs/planner.md#cluster-operations,
// docs/operations.md#cluster-transitions).
func statuses(a planner.ClusterAction) (success, failure ClusterState) {
	switch a {
	case planner.ClusterCreate:
		return ClusterActive, ClusterIncomplete
	case planner.ClusterDelete:
		return ClusterTerminated, ClusterIncomplete
	}
	return ClusterActive, ClusterInconsistent
}

func (e *Engine) limits(t planner.Task, services map[string]*catalog.Service) (attempts int, timeout time.Duration) {
	attempts, timeout = e.cfg.MaxAttempts, defaultTimeouts[t.Action]
	if d, ok := e.cfg.Timeouts[t.Action]; ok {
		timeout = d
	}
	if s := services[t.Service]; s != nil {
		if a, ok := s.Provisioner.Actions[t.Action.CatalogName()]; ok {
			if a.MaxAttempts > 0 {
				attempts = a.MaxAttempts
			}
			if a.Timeout > 0 {
				timeout = time.Duration(a.Timeout) * time.Millisecond
			}
		}
	}
	if timeout < time.Second {
		timeout = time.Second
	}
	return attempts, timeout
}

// Submit writes a job and its tasks and makes the cluster PENDING, in one
// transaction. A plan with no task completes at once and leaves the cluster
// as it was (docs/planner.md#stages).
func (e *Engine) Submit(ctx context.Context, spec JobSpec) (string, error) {
	var jobID string
	err := e.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		jobID, err = e.SubmitTx(ctx, tx, spec)
		return err
	})
	if err != nil {
		return "", err
	}
	e.Submitted(jobID)
	return jobID, nil
}

// Submitted tells the scheduler about a job SubmitTx wrote, once its
// transaction has committed.
func (e *Engine) Submitted(jobID string) { e.notify(note{job: jobID, reload: true}) }

// SubmitTx is Submit inside the caller's transaction, so that a job commits
// with the rows that call for it (a new cluster and its nodes). Call
// Submitted after the commit. The cluster must not have a job in flight
// (ErrConflict); one that never had a job is being created.
func (e *Engine) SubmitTx(ctx context.Context, tx *sqlx.Tx, spec JobSpec) (string, error) {
	success, failure := statuses(spec.Action)
	services, err := json.Marshal(spec.Services)
	if err != nil {
		return "", fmt.Errorf("engine: submit: %w", err)
	}
	var jobID string
	err = func() error {
		var c struct {
			Status ClusterState `db:"status"`
			Fresh  bool         `db:"fresh"`
			Busy   string       `db:"busy"` // the latest job and its action
		}
		if err := tx.GetContext(ctx, &c, `SELECT status, latest_job_id IS NULL AS fresh,
				coalesce((SELECT j.id::text || ' (' || j.action || ')' FROM jobs j WHERE j.id = latest_job_id), '') AS busy
			FROM clusters WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, spec.ClusterID, spec.TenantID); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("cluster %s: %w", spec.ClusterID, ErrNotFound)
			}
			return err
		}
		status := c.Status
		if status == ClusterPending && !c.Fresh {
			return fmt.Errorf("%w: cluster %s is busy with job %s; wait for it to end, or abort it", ErrConflict, spec.ClusterID, c.Busy)
		}
		if spec.Action == planner.ClusterCheck || spec.Action == planner.UpdateSSHKeys {
			// A check changes nothing, and keys change nothing a
			// cluster's status tells: the cluster ends as it was
			// (docs/operations.md#checking-a-cluster,
			// docs/operations.md#keys-on-live-clusters).
			success, failure = status, status
		}
		state := JobRunning
		if len(spec.Plan.Tasks) == 0 {
			state = JobComplete
		}
		p := spec.Plan
		if err := tx.GetContext(ctx, &jobID, `WITH n AS (UPDATE clusters SET jobs_created = jobs_created + 1
				WHERE id = $2 RETURNING jobs_created)
			INSERT INTO jobs (id, tenant_id, cluster_id, action, state, prev_status,
			success_status, failure_status, settled, plan_hash, edges, stages, services)
			SELECT $2 || '-' || coopr_pad(n.jobs_created, 3), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 FROM n
			RETURNING id`,
			spec.TenantID, spec.ClusterID, string(spec.Action), state, status, success, failure, state == JobComplete,
			p.Hash(), encodeEdges(p.Edges), len(p.Stages), services); err != nil {
			return err
		}
		n := len(p.Tasks)
		idx, stage, attempts, timeouts := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		nodes, actions, svcs := make([]string, n), make([]string, n), make([]string, n)
		bestEffort := make([]bool, n)
		for i, t := range p.Tasks {
			a, to := e.limits(t, spec.Services)
			idx[i], stage[i], attempts[i], timeouts[i] = int64(i), int64(t.Stage), int64(a), int64(to/time.Second)
			nodes[i], actions[i], svcs[i], bestEffort[i] = t.Node, t.Action.String(), t.Service, t.BestEffort
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, job_id, tenant_id, idx, node_id, action, service, stage,
			state, max_attempts, timeout_seconds, best_effort)
			SELECT $1 || '-' || coopr_pad(i + 1, 3), $1, $2, i, n, a, s, st, 'NOT_SUBMITTED', ma, ts, be
			FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[], $9::int[], $10::boolean[])
				AS u(i, n, a, s, st, ma, ts, be)`,
			jobID, spec.TenantID, pq.Array(idx), pq.Array(nodes), pq.Array(actions), pq.Array(svcs),
			pq.Array(stage), pq.Array(attempts), pq.Array(timeouts), pq.BoolArray(bestEffort)); err != nil {
			return err
		}
		if spec.Action == planner.ScaleIn || spec.Action == planner.Repair {
			var leaving []string
			for _, t := range p.Tasks {
				if t.Action == planner.Delete {
					leaving = append(leaving, t.Node)
				}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET leaving = true WHERE cluster_id = $1 AND id = ANY($2)`,
				spec.ClusterID, pq.Array(leaving)); err != nil {
				return err
			}
		}
		clusterStatus := ClusterPending
		if state == JobComplete {
			clusterStatus = status
		}
		if _, err := tx.ExecContext(ctx, `UPDATE clusters SET status = $2, latest_job_id = $3, updated_at = now() WHERE id = $1`,
			spec.ClusterID, clusterStatus, jobID); err != nil {
			return err
		}
		return insertEvents(ctx, tx, event{tenant: spec.TenantID, cluster: spec.ClusterID, job: jobID, kind: "job", state: string(state)},
			event{tenant: spec.TenantID, cluster: spec.ClusterID, job: jobID, kind: "cluster", state: string(clusterStatus)})
	}()
	if err != nil {
		return "", fmt.Errorf("engine: submit %s: %w", spec.Action, err)
	}
	return jobID, nil
}

type event struct {
	tenant, cluster, job, task, kind, state, message string
	attempt                                          int
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func insertEvents(ctx context.Context, tx *sqlx.Tx, evs ...event) error {
	if len(evs) == 0 {
		return nil
	}
	n := len(evs)
	tenant, cluster, job, task := make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n), make([]sql.NullString, n)
	kind, state, msg := make([]string, n), make([]string, n), make([]string, n)
	attempt := make([]sql.NullInt64, n)
	ns := func(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
	for i, ev := range evs {
		tenant[i], cluster[i], job[i], task[i] = ns(ev.tenant), ns(ev.cluster), ns(ev.job), ns(ev.task)
		kind[i], state[i], msg[i] = ev.kind, ev.state, ev.message
		attempt[i] = sql.NullInt64{Int64: int64(ev.attempt), Valid: ev.attempt > 0}
	}
	if wrote, ok := eventTxs.Load(tx); ok {
		wrote.(*atomic.Bool).Store(true)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO events (tenant_id, cluster_id, job_id, task_id, kind, state, attempt, message)
		SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[])`,
		pq.Array(tenant), pq.Array(cluster), pq.Array(job), pq.Array(task), pq.Array(kind), pq.Array(state), pq.Array(attempt), pq.Array(msg))
	return err
}

// eventsCommitted tells the server that a quiet session committed events.
func (e *Engine) eventsCommitted() {
	if e.cfg.EventsCommitted != nil {
		e.cfg.EventsCommitted()
	}
}

// quietTx makes a transaction's events send no NOTIFY (migration 00015):
// a NOTIFY takes a lock that every notifying commit on the Postgres server
// waits for, held through the commit's flush to disk, so queuing a job's
// next tasks waited behind whichever finish, of any database, was
// flushing. The engine wakes the relay itself once it has committed.
const quietTx = `SET LOCAL coopr.quiet_events = on`

func (e *Engine) tx(ctx context.Context, fn func(*sqlx.Tx) error) error {
	return e.txWith(ctx, quietTx, fn)
}

// txWith runs fn in a transaction that setup (SET LOCAL statements, one
// round trip) prepares; setup must make it quiet.
func (e *Engine) txWith(ctx context.Context, setup string, fn func(*sqlx.Tx) error) error {
	tx, err := e.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, setup); err != nil {
		_ = tx.Rollback()
		return err
	}
	eventTxs.Store(tx, new(atomic.Bool))
	if err := fn(tx); err != nil {
		eventTxs.Delete(tx)
		_ = tx.Rollback()
		return err
	}
	// A mutation's audit entry commits with its change (docs/audit.md).
	err = audit.Commit(ctx, tx)
	if wrote, _ := eventTxs.LoadAndDelete(tx); err == nil && wrote.(*atomic.Bool).Load() {
		e.eventsCommitted()
	}
	return err
}

// eventTxs holds the engine's quiet transactions in flight, each with
// whether it wrote events (insertEvents), so that only the commits that
// did wake the relay.
var eventTxs sync.Map // *sqlx.Tx -> *atomic.Bool

// backoff is min(base·2^(n−1), max) ± 20% (docs/operations.md#retries), n the
// failures so far.
func (e *Engine) backoff(n int) time.Duration {
	d := e.cfg.BackoffBase
	for i := 1; i < n && d < e.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, e.cfg.BackoffMax)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
