package engine

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cooprhq/coopr/planner"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Result is how an attempt ended (docs/task-protocol.md#results).
type Result struct {
	Status      int               `json:"status"` // 0 success; 200–299 failed and nothing created
	Message     string            `json:"message"`
	Retryable   *bool             `json:"retryable,omitempty"` // default true
	Hostname    string            `json:"hostname,omitempty"`
	IPAddresses map[string]string `json:"ipaddresses,omitempty"`
	Facts       map[string]any    `json:"facts,omitempty"`
	// Secrets are sealed through Config.SealSecrets, never stored in the
	// task rows or events.
	Secrets    map[string]any `json:"-"`
	StdoutTail string         `json:"stdoutTail,omitempty"`
	StderrTail string         `json:"stderrTail,omitempty"`
	// Unreachable, on a failure, is the driver saying the node is not
	// there to work on (it did not answer, has no address, or shows
	// another host key) and nothing ran on it. The node is marked
	// unreachable; a best-effort task is skipped at once. The driver only
	// reports: what may be skipped is the plan's to say.
	Unreachable bool `json:"unreachable,omitempty"`
}

func (r Result) retryable() bool { return r.Retryable == nil || *r.Retryable }

// attemptRow is a task being finished, locked.
type attemptRow struct {
	ID          string    `db:"id"`
	Job         string    `db:"job_id"`
	Tenant      string    `db:"tenant_id"`
	Cluster     string    `db:"cluster_id"`
	Idx         int       `db:"idx"`
	Node        string    `db:"node_id"`
	Action      string    `db:"action"`
	Service     string    `db:"service"`
	State       TaskState `db:"state"`
	Attempt     int       `db:"attempt"`
	Failures    int       `db:"failures"`
	MaxAttempts int       `db:"max_attempts"`
	Token       []byte    `db:"claim_token"`
	JobState    JobState  `db:"job_state"`
	Agent       string    `db:"agent_id"`
	BestEffort  bool      `db:"best_effort"`
}

// namespace is where the attempt's facts and secrets go: the driver role
// for node-level tasks, service:<name> for service tasks
// (docs/task-protocol.md#facts).
func (row attemptRow) namespace() string {
	if row.Service != "" {
		return "service:" + row.Service
	}
	a, _ := planner.ParseAction(row.Action)
	return a.Role()
}

const attemptColumns = `t.id, t.job_id, t.tenant_id, j.cluster_id, t.idx, t.node_id, t.action, t.service, t.state,
	t.attempt, t.failures, t.max_attempts, t.claim_token, j.state AS job_state, coalesce(t.agent_id, '') AS agent_id,
	t.best_effort`

// Finish records how a claimed attempt ended. A token that is not the
// attempt's current claim, or an attempt no longer IN_PROGRESS, gives
// ErrStaleClaim and changes nothing.
func (e *Engine) Finish(ctx context.Context, taskID string, attempt int, token string, r Result) error {
	if len(r.Secrets) > 0 && e.cfg.SealSecrets == nil {
		return fmt.Errorf("engine: finish task %s: the result carries secrets and this server has no credential store", taskID)
	}
	if r.Status == 0 && len(r.Facts) == 0 && len(r.Secrets) == 0 {
		// The common case in one statement: success with nothing to merge
		// but perhaps the node's name and addresses (a CONFIRM's).
		f, err := e.finishFast(ctx, taskID, attempt, token, r)
		if err != nil {
			if errors.Is(err, ErrStaleClaim) {
				return err
			}
			return fmt.Errorf("engine: finish task %s: %w", taskID, err)
		}
		// The scheduler queues the tasks this one held back while the
		// job's settle check runs: the next task of the node does not wait
		// for the check's round trip. Both may settle the job; its row
		// lock lets one do it (settleJob).
		e.stats.completed.Add(1)
		e.notify(note{job: f.job, task: &taskChange{id: taskID, state: Complete}})
		<-f.settled
		return nil
	}
	return e.finishTx(ctx, taskID, attempt, token, r)
}

// finishTx is Finish's transactional path: failures, facts and secrets.
func (e *Engine) finishTx(ctx context.Context, taskID string, attempt int, token string, r Result) error {
	var change *taskChange
	var reload bool
	var job string
	err := e.tx(ctx, func(tx *sqlx.Tx) error {
		var row attemptRow
		err := tx.GetContext(ctx, &row, `SELECT `+attemptColumns+` FROM tasks t JOIN jobs j ON j.id = t.job_id
			WHERE t.id = $1 FOR UPDATE OF t`, taskID)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrStaleClaim
		}
		if err != nil {
			return err
		}
		want, herr := hex.DecodeString(token)
		if row.State != InProgress || row.Attempt != attempt || herr != nil || subtle.ConstantTimeCompare(want, row.Token) != 1 {
			return ErrStaleClaim
		}
		job = row.Job
		change, reload, err = e.closeAttempt(ctx, tx, row, r)
		if err != nil {
			return err
		}
		if len(r.Secrets) > 0 {
			// Last: the row a write of them locks is the cluster's, shared
			// by its nodes' finishes, and it stays locked until the commit.
			if err := e.cfg.SealSecrets(ctx, tx, row.Cluster, row.namespace(), r.Secrets); err != nil {
				return fmt.Errorf("seal secrets: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrStaleClaim) {
			return err
		}
		return fmt.Errorf("engine: finish task %s: %w", taskID, err)
	}
	if r.Status == 0 {
		e.stats.completed.Add(1)
	} else {
		e.stats.failed.Add(1)
	}
	// As on the fast path, the scheduler queues what this finish made
	// ready while the settle check runs.
	e.notify(note{job: job, task: change, reload: reload})
	e.roomFreed()
	e.settleDone(ctx, []string{job})
	return nil
}

// finishIn is a successful attempt with no facts nor secrets to merge.
type finishIn struct {
	task, message, stdout, stderr string
	attempt                       int
	token                         []byte
	// hostname and addresses (JSON) for the node, as mergeFacts sets
	// them; nil: unchanged.
	hostname, addresses *string
}

// finished is a finish batch's answer to one call: the attempt's job, and
// a channel closed once the batch's jobs that its finishes may have ended
// are settled (settleDone).
type finished struct {
	job     string
	settled <-chan struct{}
}

func (e *Engine) finishFast(ctx context.Context, taskID string, attempt int, token string, r Result) (finished, error) {
	tok, err := hex.DecodeString(token)
	if err != nil || len(tok) == 0 {
		return finished{}, ErrStaleClaim
	}
	in := finishIn{task: taskID, attempt: attempt, token: tok, message: r.Message,
		stdout: tail(r.StdoutTail), stderr: tail(r.StderrTail)}
	if err := in.setNode(r); err != nil {
		return finished{}, err
	}
	return e.finishes.do(ctx, in)
}

// setNode takes the result's hostname and addresses for the node, as
// mergeFacts reads them: no hostname, or no addresses (nil, not empty),
// leaves the node's as they are.
func (in *finishIn) setNode(r Result) error {
	if r.Hostname != "" {
		in.hostname = &r.Hostname
	}
	if r.IPAddresses != nil {
		b, err := json.Marshal(r.IPAddresses)
		if err != nil {
			return err
		}
		ips := string(b)
		in.addresses = &ips
	}
	return nil
}

// finishBatch completes successful attempts in one statement, returning
// each one's job id or ErrStaleClaim.
func (e *Engine) finishBatch(ctx context.Context, in []finishIn) ([]finished, []error) {
	jobs, errs := make([]finished, len(in)), make([]error, len(in))
	// A task finished twice in one batch (a retried request) is finished
	// by a batch of its own after this one, so each call gets its own
	// verdict.
	seen := make(map[string]bool, len(in))
	var first, again []int
	for i, f := range in {
		if seen[f.task] {
			again = append(again, i)
		} else {
			seen[f.task] = true
			first = append(first, i)
		}
	}
	n := len(first)
	ids, attempts, tokens := make([]string, n), make([]int64, n), make([][]byte, n)
	msgs, outs, errTails := make([]string, n), make([]string, n), make([]string, n)
	hosts, ips := make([]sql.NullString, n), make([]sql.NullString, n)
	for k, i := range first {
		f := in[i]
		ids[k], attempts[k], tokens[k], msgs[k], outs[k], errTails[k] = f.task, int64(f.attempt), f.token, f.message, f.stdout, f.stderr
		if f.hostname != nil {
			hosts[k] = sql.NullString{String: *f.hostname, Valid: true}
		}
		if f.addresses != nil {
			ips[k] = sql.NullString{String: *f.addresses, Valid: true}
		}
	}
	var rows []struct {
		ID  string `db:"id"`
		Job string `db:"job_id"`
	}
	err := e.finishSessions.selectContext(ctx, &rows,
		pq.Array(ids), pq.Array(attempts), pq.ByteaArray(tokens), pq.Array(msgs), pq.Array(outs), pq.Array(errTails),
		pq.Array(hosts), pq.Array(ips), pq.Array(roleActions), pq.Array(roleNames))
	if pe := (*pq.Error)(nil); err != nil && len(first) > 1 && errors.As(err, &pe) && pe.Code.Class() == "22" {
		// One call's data that Postgres refuses (a NUL in an address, say)
		// fails the whole statement, and with it the finishes of other
		// agents and tenants that happened to share it: each is finished
		// alone, so that only its own fails. Nothing was written.
		for _, i := range first {
			rj, re := e.finishBatch(ctx, []finishIn{in[i]})
			jobs[i], errs[i] = rj[0], re[0]
		}
		e.finishAgain(ctx, in, again, jobs, errs)
		return jobs, errs
	}
	if err == nil && len(rows) > 0 {
		e.eventsCommitted()
		e.roomFreed()
	}
	done := make(map[string]string, len(rows))
	var touched []string
	for _, r := range rows {
		if !slices.Contains(touched, r.Job) {
			touched = append(touched, r.Job)
		}
		done[r.ID] = r.Job
	}
	// A job is settled by the time its last finish returns: the callers
	// wait for the check, and the next batch does not.
	settled := make(chan struct{})
	go func() {
		defer close(settled)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		e.settleDone(ctx, touched)
	}()
	for _, i := range first {
		switch job, ok := done[in[i].task]; {
		case err != nil:
			errs[i] = err
		case ok:
			jobs[i] = finished{job: job, settled: settled}
		default:
			errs[i] = ErrStaleClaim
		}
	}
	e.finishAgain(ctx, in, again, jobs, errs)
	return jobs, errs
}

// finishAgain finishes the calls at again, repeats of a task earlier in
// in, by a batch of their own.
func (e *Engine) finishAgain(ctx context.Context, in []finishIn, again []int, jobs []finished, errs []error) {
	if len(again) == 0 {
		return
	}
	rest := make([]finishIn, len(again))
	for k, i := range again {
		rest[k] = in[i]
	}
	rj, re := e.finishBatch(ctx, rest)
	for k, i := range again {
		jobs[i], errs[i] = rj[k], re[k]
	}
}

// finishSQL completes attempts, with their events, in one round trip, and
// sets their nodes' names and addresses as mergeFacts does (a CONFIRM's
// result: in a transaction of its own each, a bring-up's CONFIRMs cost
// Postgres nine statements apiece, every one planned). It
// locks the tasks in id order, as Heartbeat does: statements that lock many
// rows of one agent in different orders deadlock.
const finishSQL = `WITH i AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
				AS i(id, attempt, token, message, stdout, stderr, hostname, ips)),
		l AS MATERIALIZED (SELECT tasks.id FROM tasks JOIN i ON tasks.id = i.id
			WHERE tasks.attempt = i.attempt AND tasks.claim_token = i.token AND tasks.state = 'IN_PROGRESS'
			ORDER BY tasks.id FOR UPDATE OF tasks),
		t AS (UPDATE tasks SET state = 'COMPLETE', claim_token = NULL, lease_expires_at = NULL, timeout_at = NULL, message = i.message
			FROM i, l WHERE tasks.id = l.id AND tasks.id = i.id AND tasks.attempt = i.attempt AND tasks.claim_token = i.token
				AND tasks.state = 'IN_PROGRESS'
			RETURNING tasks.id, tasks.job_id, tasks.tenant_id, tasks.attempt, tasks.action, tasks.service, tasks.node_id,
				i.message, i.stdout, i.stderr, i.hostname, i.ips::jsonb AS ips),
		gone AS (DELETE FROM nodes n USING t WHERE t.action = 'DELETE' AND n.id = t.node_id AND n.leaving),
		back AS (UPDATE nodes n SET
				unreachable_since = CASE WHEN t.action = 'DELETE' THEN n.unreachable_since END,
				unreachable_reason = CASE WHEN t.action = 'DELETE' THEN n.unreachable_reason ELSE '' END,
				hostname = coalesce(t.hostname, n.hostname), ipaddresses = coalesce(t.ips, n.ipaddresses),
				facts = CASE WHEN t.hostname IS NULL AND t.ips IS NULL THEN n.facts ELSE n.facts || jsonb_build_object(t.ns,
					coalesce(n.facts -> t.ns, '{}')) END
			FROM (SELECT t.*, CASE WHEN t.service <> '' THEN 'service:' || t.service ELSE
					(SELECT r.role FROM unnest($9::text[], $10::text[]) AS r(action, role) WHERE r.action = t.action) END AS ns
				FROM t) t
			WHERE n.id = t.node_id AND CASE WHEN t.action = 'DELETE' THEN NOT n.leaving AND (t.hostname IS NOT NULL OR t.ips IS NOT NULL)
				ELSE n.unreachable_since IS NOT NULL OR t.hostname IS NOT NULL OR t.ips IS NOT NULL END),
		a AS (UPDATE task_attempts a SET finished_at = now(), status = 0, message = t.message, retryable = true,
			stdout_tail = t.stdout, stderr_tail = t.stderr FROM t WHERE a.task_id = t.id AND a.attempt = t.attempt),
		ev AS (INSERT INTO events (tenant_id, cluster_id, job_id, task_id, kind, state, attempt, message)
			SELECT t.tenant_id, j.cluster_id, t.job_id, t.id, 'task', 'COMPLETE', t.attempt, t.message FROM t JOIN jobs j ON j.id = t.job_id)
		SELECT id, job_id FROM t`

// roleActions and roleNames map the actions to their driver roles, the
// namespace of a task's facts when it has no service
// (attemptRow.namespace), for finishSQL.
var roleActions, roleNames = func() (actions, roles []string) {
	for a := planner.Action(1); ; a++ {
		if _, err := a.MarshalText(); err != nil {
			return actions, roles // past the last action
		}
		actions, roles = append(actions, a.String()), append(roles, a.Role())
	}
}()

// closeAttempt ends an IN_PROGRESS attempt and decides what follows: done,
// retry after backoff, CONFIRM rollback, or a failed job
// (docs/operations.md#retries, docs/operations.md#confirm-rollback).
func (e *Engine) closeAttempt(ctx context.Context, tx *sqlx.Tx, row attemptRow, r Result) (*taskChange, bool, error) {
	ev := func(kind string, state TaskState, msg string) event {
		return event{tenant: row.Tenant, cluster: row.Cluster, job: row.Job, task: row.ID, kind: kind, state: string(state), attempt: row.Attempt, message: msg}
	}
	retryable := r.retryable()
	if _, err := tx.ExecContext(ctx, `UPDATE task_attempts SET finished_at = now(), status = $3, message = $4,
		retryable = $5, stdout_tail = $6, stderr_tail = $7 WHERE task_id = $1 AND attempt = $2`,
		row.ID, row.Attempt, r.Status, r.Message, r.Status == 0 || retryable, tail(r.StdoutTail), tail(r.StderrTail)); err != nil {
		return nil, false, err
	}
	if err := mergeFacts(ctx, tx, row, r); err != nil {
		return nil, false, err
	}
	if r.Status == 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'COMPLETE', claim_token = NULL, lease_expires_at = NULL,
			timeout_at = NULL, message = $2 WHERE id = $1`, row.ID, r.Message); err != nil {
			return nil, false, err
		}
		if row.Action == planner.Delete.String() {
			// A node a scale-in removes leaves the cluster with its DELETE.
			if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE id = $1 AND leaving`, row.Node); err != nil {
				return nil, false, err
			}
		} else if err := nodeReached(ctx, tx, row.Node); err != nil {
			return nil, false, err
		}
		return &taskChange{id: row.ID, state: Complete}, false, insertEvents(ctx, tx, ev("task", Complete, r.Message))
	}
	failures := row.Failures + 1
	live := row.JobState == JobRunning || row.JobState == JobPaused
	msg := fmt.Sprintf("%s failed (attempt %d, status %d): %s", row.Action, row.Attempt, r.Status, r.Message)
	if r.Unreachable && row.Node != "" {
		if _, err := tx.ExecContext(ctx, `UPDATE nodes SET unreachable_since = coalesce(unreachable_since, now()),
			unreachable_reason = $2 WHERE id = $1`, row.Node, msg); err != nil {
			return nil, false, err
		}
	}
	if live && row.BestEffort && (r.Unreachable || !retryable || failures >= row.MaxAttempts) {
		// Cleanup inside a node being removed: the removal must not wait
		// on a node that is gone, nor fail for what it could not tidy.
		reason := "skipped: " + msg
		if r.Unreachable {
			reason = "skipped, node unreachable: " + msg
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'SKIPPED', failures = $2, claim_token = NULL,
			lease_expires_at = NULL, timeout_at = NULL, retry_at = NULL, message = $3 WHERE id = $1`, row.ID, failures, reason); err != nil {
			return nil, false, err
		}
		return &taskChange{id: row.ID, state: Skipped}, false, insertEvents(ctx, tx, ev("task", Skipped, reason))
	}
	if live && retryable && failures < row.MaxAttempts {
		if row.Action == planner.Confirm.String() {
			// The node is deleted and created again before CONFIRM runs
			// again; CONFIRM is due as soon as the rollback is done.
			if err := e.addRollback(ctx, tx, row); err != nil {
				return nil, false, err
			}
			if _, err := failTask(ctx, tx, row.ID, failures, msg, 0); err != nil {
				return nil, false, err
			}
			return nil, true, insertEvents(ctx, tx, ev("task", Failed, msg+"; rolling back: DELETE, CREATE, then CONFIRM again"))
		}
		retryAt, err := failTask(ctx, tx, row.ID, failures, msg, e.backoff(failures))
		if err != nil {
			return nil, false, err
		}
		return &taskChange{id: row.ID, state: Failed, retryAt: retryAt}, false,
			insertEvents(ctx, tx, ev("task", Failed, fmt.Sprintf("%s; retrying at %s", msg, retryAt.UTC().Format(time.RFC3339))))
	}
	if _, err := failTask(ctx, tx, row.ID, failures, msg, -1); err != nil {
		return nil, false, err
	}
	evs := []event{ev("task", Failed, msg)}
	change := &taskChange{id: row.ID, state: Failed}
	if live {
		if err := failJob(ctx, tx, row.Job, msg); err != nil {
			return nil, false, err
		}
		change.jobFailed = true
		evs = append(evs, event{tenant: row.Tenant, cluster: row.Cluster, job: row.Job, kind: "job", state: string(JobFailed), message: msg})
	}
	return change, false, insertEvents(ctx, tx, evs...)
}

// nodeReached clears the unreachable mark of a node a task just worked on.
func nodeReached(ctx context.Context, tx *sqlx.Tx, node string) error {
	if node == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE nodes SET unreachable_since = NULL, unreachable_reason = ''
		WHERE id = $1 AND unreachable_since IS NOT NULL`, node)
	return err
}

// failTask records a failed attempt. The task is retried after retryIn
// (0: as soon as its predecessors allow); a negative retryIn means never.
func failTask(ctx context.Context, tx *sqlx.Tx, id string, failures int, msg string, retryIn time.Duration) (time.Time, error) {
	var ms sql.NullInt64
	if retryIn >= 0 {
		ms = sql.NullInt64{Int64: retryIn.Milliseconds(), Valid: true}
	}
	var retryAt sql.NullTime
	err := tx.GetContext(ctx, &retryAt, `UPDATE tasks SET state = 'FAILED', failures = $2, claim_token = NULL,
		lease_expires_at = NULL, timeout_at = NULL, retry_at = now() + $3 * interval '1 millisecond', message = $4
		WHERE id = $1 RETURNING retry_at`, id, failures, ms, msg)
	return retryAt.Time, err
}

// failJob fails a live job: nothing new is dispatched and queued tasks are
// dropped; in-flight tasks finish (docs/operations.md#job-and-task-states).
func failJob(ctx context.Context, tx *sqlx.Tx, job, msg string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'FAILED', message = $2, updated_at = now()
		WHERE id = $1 AND state IN ('RUNNING', 'PAUSED')`, job, msg); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `WITH l AS MATERIALIZED (SELECT id FROM tasks
			WHERE job_id = $1 AND (state IN ('NOT_SUBMITTED', 'QUEUED') OR retry_at IS NOT NULL) ORDER BY id FOR UPDATE)
		UPDATE tasks t SET state = CASE WHEN t.state = 'FAILED' THEN 'FAILED' ELSE 'DROPPED' END, retry_at = NULL
		FROM l WHERE t.id = l.id`, job)
	return err
}

// addRollback adds DELETE then CREATE of the node before its CONFIRM.
func (e *Engine) addRollback(ctx context.Context, tx *sqlx.Tx, row attemptRow) error {
	var next int
	if err := tx.GetContext(ctx, &next, `SELECT max(idx) + 1 FROM tasks WHERE job_id = $1`, row.Job); err != nil {
		return err
	}
	var stage int
	if err := tx.GetContext(ctx, &stage, `SELECT stage FROM tasks WHERE id = $1`, row.ID); err != nil {
		return err
	}
	for i, a := range []planner.Action{planner.Delete, planner.Create} {
		attempts, timeout := e.limits(planner.Task{Action: a}, nil)
		var after any
		if i > 0 {
			after = next
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, job_id, tenant_id, idx, node_id, action, service, stage, state,
			max_attempts, timeout_seconds, rollback_of, after_idx)
			VALUES ($1 || '-' || coopr_pad($3 + 1, 3), $1, $2, $3, $4, $5, '', $6, 'NOT_SUBMITTED', $7, $8, $9, $10)`,
			row.Job, row.Tenant, next+i, row.Node, a.String(), stage, attempts, int(timeout/time.Second), row.Idx, after); err != nil {
			return err
		}
	}
	return nil
}

// mergeFacts applies a result's facts, hostname and addresses to the node
// (docs/task-protocol.md#facts: facts on success and failure alike).
func mergeFacts(ctx context.Context, tx *sqlx.Tx, row attemptRow, r Result) error {
	if row.Node == "" || (len(r.Facts) == 0 && (r.Status != 0 || (r.Hostname == "" && r.IPAddresses == nil))) {
		return nil
	}
	ns := row.namespace()
	// No facts must reach SQL as NULL: JSON null concatenated to an
	// object makes an array.
	var facts any
	if len(r.Facts) > 0 {
		b, err := json.Marshal(r.Facts)
		if err != nil {
			return err
		}
		facts = string(b)
	}
	var host, ips any
	if r.Status == 0 {
		host = nullable(r.Hostname)
		if r.IPAddresses != nil {
			b, err := json.Marshal(r.IPAddresses)
			if err != nil {
				return err
			}
			ips = b
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE nodes SET
		facts = facts || jsonb_build_object($2::text, coalesce(facts -> $2::text, '{}') || coalesce($3::jsonb, '{}')),
		hostname = coalesce($4, hostname), ipaddresses = coalesce($5::jsonb, ipaddresses) WHERE id = $1`,
		row.Node, ns, facts, host, ips)
	return err
}

// tail keeps the last 2048 characters of output (docs/task-protocol.md#results).
func tail(s string) string {
	const keep = 2048
	if len(s) <= keep {
		return s
	}
	cut := s[len(s)-keep:]
	for len(cut) > 0 && !utf8.RuneStart(cut[0]) {
		cut = cut[1:]
	}
	return "[snipped]" + cut
}

// Finished reports whether the attempt was already finished by agentID with
// this status: a finish the agent sends again after its answer was lost,
// which is then answered as recorded rather than as stale. An attempt the
// server ended (reaped, abandoned, timed out) carries a status of its own.
func (e *Engine) Finished(ctx context.Context, taskID string, attempt int, agentID string, status int) (bool, error) {
	var ok bool
	err := e.db.GetContext(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM task_attempts
		WHERE task_id = $1 AND attempt = $2 AND agent_id = $3 AND finished_at IS NOT NULL AND status = $4)`,
		taskID, attempt, agentID, status)
	if err != nil {
		return false, fmt.Errorf("engine: finish task %s: %w", taskID, err)
	}
	return ok, nil
}
