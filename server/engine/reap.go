package engine

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// reap fails attempts whose lease expired (lost agent) or whose timeout
// passed; each counts as an attempt and is retried
// (docs/operations.md#timeouts, docs/operations.md#lost-agents).
func (s *scheduler) reap(ctx context.Context) {
	for {
		var changed bool
		err := s.tx(ctx, func(tx *sqlx.Tx) error {
			var rows []struct {
				attemptRow
				Expired  bool `db:"expired"`
				TimedOut bool `db:"timed_out"`
				Timeout  int  `db:"timeout_seconds"`
			}
			if err := tx.SelectContext(ctx, &rows, `SELECT `+attemptColumns+`, t.lease_expires_at < now() AS expired,
				t.timeout_at < now() AS timed_out, t.timeout_seconds
				FROM tasks t JOIN jobs j ON j.id = t.job_id
				WHERE t.lease_expires_at IS NOT NULL AND t.state = 'IN_PROGRESS' AND (t.lease_expires_at < now() OR t.timeout_at < now())
				ORDER BY t.lease_expires_at LIMIT 100 FOR UPDATE OF t SKIP LOCKED`); err != nil {
				return err
			}
			for _, r := range rows {
				msg := fmt.Sprintf("lease expired: agent %s lost", r.Agent)
				if r.TimedOut {
					msg = fmt.Sprintf("timed out after %d s", r.Timeout)
				}
				change, reload, err := s.closeAttempt(ctx, tx, r.attemptRow, Result{Status: -1, Message: msg})
				if err != nil {
					return err
				}
				s.pending = append(s.pending, note{job: r.Job, task: change, reload: reload})
			}
			changed = len(rows) == 100
			return nil
		})
		if err != nil {
			s.logError(ctx, "engine: reap", "err", err)
			s.pending = nil
			return
		}
		if len(s.pending) > 0 {
			s.roomFreed()
		}
		for _, n := range s.pending {
			s.apply(ctx, n)
		}
		s.pending = nil
		if !changed {
			return
		}
	}
}
