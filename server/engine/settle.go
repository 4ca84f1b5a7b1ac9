package engine

import (
	"context"
	"fmt"

	"github.com/cooprhq/coopr/planner"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// settleDone settles, at once, those of the jobs whose tasks allow it: a
// running job with every task done, or an ended one with none in flight
// (settleJob). It runs after a commit that may have ended a job's last
// task, never inside it: of finishes committing at the same moment, the
// last to commit then surely sees every task done, where a check inside
// each transaction could see the others' tasks still running, and leave
// the job to the scheduler. It returns the jobs it settled.
func (e *Engine) settleDone(ctx context.Context, jobs []string) []string {
	if len(jobs) == 0 {
		return nil
	}
	var due []string
	if err := e.settleDue.selectContext(ctx, &due, pq.Array(jobs)); err != nil {
		// The scheduler settles it on its next look at the job.
		e.log.Warn("engine: check for settled jobs", "jobs", jobs, "err", err)
		return nil
	}
	var settled []string
	for _, job := range due {
		_, ok, err := e.settleJob(ctx, job)
		if err != nil {
			e.log.Warn("engine: settle job", "job", job, "err", err)
			continue
		}
		if ok {
			settled = append(settled, job)
		}
	}
	return settled
}

// settleDueSQL lists the jobs of $1 that settleJob would end, prepared:
// it runs after every finish batch, and planning it each time
// cost Postgres ten times its execution. A backward scan finds an
// unfinished task at once while later stages wait; only near the job's
// end does it pass many done ones.
const settleDueSQL = `SELECT j.id FROM jobs j WHERE j.id = ANY($1) AND NOT j.settled AND CASE
		WHEN j.state = 'RUNNING' THEN (SELECT t.idx FROM tasks t WHERE t.job_id = j.id
			AND t.state NOT IN ('COMPLETE', 'SKIPPED') ORDER BY t.idx DESC LIMIT 1) IS NULL
		WHEN j.state IN ('COMPLETE', 'FAILED') THEN (SELECT t.idx FROM tasks t WHERE t.job_id = j.id
			AND t.state IN ('QUEUED', 'IN_PROGRESS') ORDER BY t.idx DESC LIMIT 1) IS NULL
		ELSE false END`

// settleJob ends a job as far as its rows allow, in one transaction that
// holds the job's row: a running job whose every task is done (COMPLETE or
// SKIPPED) completes, and an ended job with no task in flight is settled,
// giving its cluster the job's outcome. It reports the job's state and
// whether it is settled. Finishes call it for their jobs right after they
// commit, and the scheduler when its copy says the job may be done; both
// may call it for the same job at once, and the row lock makes one of them
// do it.
func (e *Engine) settleJob(ctx context.Context, job string) (JobState, bool, error) {
	var state JobState
	var settled bool
	err := e.tx(ctx, func(tx *sqlx.Tx) error {
		var j struct {
			Tenant  string       `db:"tenant_id"`
			Cluster string       `db:"cluster_id"`
			State   JobState     `db:"state"`
			Action  string       `db:"action"`
			Message string       `db:"message"`
			Success ClusterState `db:"success_status"`
			Failure ClusterState `db:"failure_status"`
			Settled bool         `db:"settled"`
		}
		if err := tx.GetContext(ctx, &j, `SELECT tenant_id, cluster_id, state, action, message, success_status,
			failure_status, settled FROM jobs WHERE id = $1 FOR UPDATE`, job); err != nil {
			return err
		}
		state, settled = j.State, j.Settled
		if j.Settled {
			return nil
		}
		var evs []event
		if j.State == JobRunning {
			var left bool
			if err := tx.GetContext(ctx, &left, `SELECT EXISTS (SELECT 1 FROM tasks
				WHERE job_id = $1 AND state NOT IN ('COMPLETE', 'SKIPPED'))`, job); err != nil {
				return err
			}
			if left {
				return nil
			}
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET state = 'COMPLETE', updated_at = now() WHERE id = $1`, job); err != nil {
				return err
			}
			state = JobComplete
			evs = append(evs, event{tenant: j.Tenant, cluster: j.Cluster, job: job, kind: "job", state: string(JobComplete)})
		}
		if state != JobComplete && state != JobFailed {
			return nil
		}
		var inFlight bool
		if err := tx.GetContext(ctx, &inFlight, `SELECT EXISTS (SELECT 1 FROM tasks
			WHERE job_id = $1 AND state IN ('QUEUED', 'IN_PROGRESS'))`, job); err != nil {
			return err
		}
		if inFlight {
			return insertEvents(ctx, tx, evs...)
		}
		status, msg := j.Success, ""
		if state == JobFailed {
			status, msg = j.Failure, j.Message
			if j.Action == string(planner.ClusterCreate) {
				nothing, err := nothingCreated(ctx, tx, job)
				if err != nil {
					return err
				}
				if nothing {
					status = ClusterTerminated
					if msg != abortMessage {
						msg = nothingCreatedMessage
					}
				}
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE jobs SET settled = true, updated_at = now() WHERE id = $1`, job); err != nil {
			return err
		}
		// A check leaves the message of the job before it.
		if _, err := tx.ExecContext(ctx, `UPDATE clusters SET status = $2,
			message = CASE WHEN $5 THEN message ELSE $3 END, updated_at = now()
			WHERE id = $1 AND latest_job_id = $4`, j.Cluster, status, msg, job, j.Action == string(planner.ClusterCheck)); err != nil {
			return err
		}
		if j.Action == string(planner.ScaleIn) && state == JobComplete {
			// A scale-in lowers the cluster's size when it completes
			// (docs/operations.md#quotas): until then the nodes still count.
			if _, err := tx.ExecContext(ctx, `UPDATE clusters SET size = (SELECT count(*) FROM nodes WHERE cluster_id = $1)
				WHERE id = $1`, j.Cluster); err != nil {
				return err
			}
		}
		if j.Action == string(planner.ClusterCheck) {
			summary, err := recordCheck(ctx, tx, j.Cluster, job)
			if err != nil {
				return err
			}
			if msg == "" {
				msg = summary
			}
		}
		settled = true
		evs = append(evs, event{tenant: j.Tenant, cluster: j.Cluster, job: job, kind: "cluster", state: string(status), message: msg})
		return insertEvents(ctx, tx, evs...)
	})
	if err != nil {
		return "", false, fmt.Errorf("job %s: %w", job, err)
	}
	return state, settled, nil
}
