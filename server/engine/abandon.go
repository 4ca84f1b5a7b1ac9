package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Abandon fails the IN_PROGRESS claims of an agent that it no longer holds:
// those not in keep and claimed at least olderThan ago (0: all). A heartbeat
// that omits a claim made long enough before it, and a new incarnation
// registering, both mean the agent lost it (docs/task-protocol.md#heartbeat).
// The attempts count and are retried like a lost lease.
func (e *Engine) Abandon(ctx context.Context, agentID string, keep []string, olderThan time.Duration) (int, error) {
	if keep == nil {
		// A nil slice goes to SQL as NULL, and id = ANY(NULL) keeps all.
		keep = []string{}
	}
	var notes []note
	err := e.tx(ctx, func(tx *sqlx.Tx) error {
		var rows []attemptRow
		if err := tx.SelectContext(ctx, &rows, `SELECT `+attemptColumns+` FROM tasks t JOIN jobs j ON j.id = t.job_id
			JOIN task_attempts a ON a.task_id = t.id AND a.attempt = t.attempt
			WHERE t.lease_expires_at IS NOT NULL AND t.state = 'IN_PROGRESS' AND t.agent_id = $1
				AND NOT (t.id = ANY($2::text[])) AND a.claimed_at <= now() - $3 * interval '1 millisecond'
			ORDER BY t.id FOR UPDATE OF t`, agentID, pq.Array(keep), olderThan.Milliseconds()); err != nil {
			return err
		}
		for _, r := range rows {
			change, reload, err := e.closeAttempt(ctx, tx, r, Result{Status: -1,
				Message: fmt.Sprintf("abandoned: agent %s no longer holds the claim", agentID)})
			if err != nil {
				return err
			}
			notes = append(notes, note{job: r.Job, task: change, reload: reload})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("engine: abandon claims of %s: %w", agentID, err)
	}
	var jobs []string
	for _, n := range notes {
		if !slices.Contains(jobs, n.job) {
			jobs = append(jobs, n.job)
		}
	}
	if len(notes) > 0 {
		e.roomFreed()
	}
	e.settleDone(ctx, jobs)
	for _, n := range notes {
		e.notify(n)
	}
	return len(notes), nil
}
