package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// abortMessage is the message of an aborted job.
const abortMessage = "Aborted by user"

// Pause stops dispatching the job's tasks; in-flight tasks finish.
func (e *Engine) Pause(ctx context.Context, jobID string) error {
	return e.control(ctx, jobID, []JobState{JobRunning}, JobPaused, "", nil)
}

// Resume runs a paused job again.
func (e *Engine) Resume(ctx context.Context, jobID string) error {
	return e.control(ctx, jobID, []JobState{JobPaused}, JobRunning, "", nil)
}

// Abort fails a running or paused job: queued tasks are dropped and
// in-flight ones are cancelled at their next heartbeat.
func (e *Engine) Abort(ctx context.Context, jobID string) error {
	return e.control(ctx, jobID, []JobState{JobRunning, JobPaused}, JobFailed, abortMessage, func(tx *sqlx.Tx) error {
		return failJob(ctx, tx, jobID, abortMessage)
	})
}

// RetryJob runs a failed job again from its unfinished tasks, with fresh
// attempt budgets (docs/operations.md#retrying-a-failed-job).
func (e *Engine) RetryJob(ctx context.Context, jobID string) error {
	return e.control(ctx, jobID, []JobState{JobFailed}, JobRunning, "", func(tx *sqlx.Tx) error {
		var r struct {
			Settled bool         `db:"settled"`
			Status  ClusterState `db:"status"`
			Latest  string       `db:"latest"`
		}
		if err := tx.GetContext(ctx, &r, `SELECT j.settled, c.status, coalesce(c.latest_job_id::text, '') AS latest
			FROM jobs j JOIN clusters c ON c.id = j.cluster_id WHERE j.id = $1 FOR UPDATE OF c`, jobID); err != nil {
			return err
		}
		if !r.Settled || r.Latest != jobID || (r.Status != ClusterIncomplete && r.Status != ClusterInconsistent) {
			return fmt.Errorf("%w: retry needs the cluster's latest job failed with no task in flight and the cluster INCOMPLETE or INCONSISTENT (it is %s)",
				ErrConflict, r.Status)
		}
		if _, err := tx.ExecContext(ctx, `WITH l AS MATERIALIZED (SELECT id FROM tasks
				WHERE job_id = $1 AND state IN ('FAILED', 'DROPPED', 'NOT_SUBMITTED') ORDER BY id FOR UPDATE)
			UPDATE tasks t SET state = 'NOT_SUBMITTED', failures = 0, retry_at = NULL FROM l WHERE t.id = l.id`, jobID); err != nil {
			return err
		}
		// A retried job runs with the tenant's current plugin resources.
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET settled = false, message = '',
			resource_generation = coalesce((SELECT generation FROM resource_generations g WHERE g.tenant_id = jobs.tenant_id), 0)
			WHERE id = $1`, jobID)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE clusters c SET status = 'PENDING', message = '', updated_at = now()
			FROM jobs j WHERE j.id = $1 AND c.id = j.cluster_id`, jobID)
		return err
	})
}

func (e *Engine) control(ctx context.Context, jobID string, from []JobState, to JobState, msg string, more func(*sqlx.Tx) error) error {
	err := e.tx(ctx, func(tx *sqlx.Tx) error {
		var j struct {
			State   JobState `db:"state"`
			Tenant  string   `db:"tenant_id"`
			Cluster string   `db:"cluster_id"`
		}
		err := tx.GetContext(ctx, &j, `SELECT state, tenant_id, cluster_id FROM jobs WHERE id = $1 FOR UPDATE`, jobID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("job %s: %w", jobID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		ok := false
		for _, f := range from {
			ok = ok || j.State == f
		}
		if !ok {
			return fmt.Errorf("%w: job %s is %s; this needs it %s", ErrConflict, jobID, j.State, joinStates(from, " or "))
		}
		if more != nil {
			if err := more(tx); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = $2, message = CASE WHEN $3 = '' THEN message ELSE $3 END,
			updated_at = now() WHERE id = $1`, jobID, to, msg); err != nil {
			return err
		}
		evs := []event{{tenant: j.Tenant, cluster: j.Cluster, job: jobID, kind: "job", state: string(to), message: msg}}
		if to == JobRunning && j.State == JobFailed {
			evs = append(evs, event{tenant: j.Tenant, cluster: j.Cluster, job: jobID, kind: "cluster", state: string(ClusterPending)})
		}
		return insertEvents(ctx, tx, evs...)
	})
	if err != nil {
		return fmt.Errorf("engine: job %s -> %s: %w", jobID, to, err)
	}
	e.notify(note{job: jobID, reload: true})
	return nil
}
