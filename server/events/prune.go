package events

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// pruneSlice bounds one delete, so that a backlog (a server that ran for
// months before it learnt to prune) is worked off in short transactions.
const pruneSlice = 10_000

// Prune deletes events older than keep that every reader of the table is
// done with: the relay and the webhook dispatcher read only above their
// watermarks, so an event below both is never read again, whatever its
// age. Events above either watermark stay, however old, so that a reader
// that was down catches up on all it missed. It returns how many it deleted.
func Prune(ctx context.Context, db *sqlx.DB, keep time.Duration) (int64, error) {
	var total int64
	for {
		// The slice is the oldest events by transaction id (an index
		// scan that stops after pruneSlice rows); those not old enough are
		// kept, and a slice that deleted fewer than it read was the last.
		// A missing watermark row (a reader that never ran) compares
		// as NULL and keeps everything; LEAST would have ignored it.
		res, err := db.ExecContext(ctx, `WITH c AS (SELECT e.id, e.created_at FROM events e
				WHERE e.txid < (SELECT watermark FROM event_relay) AND e.txid < (SELECT watermark FROM webhook_dispatch)
				ORDER BY e.txid LIMIT $1)
			DELETE FROM events e USING c WHERE e.id = c.id AND c.created_at < now() - $2 * interval '1 second'`,
			pruneSlice, keep.Seconds())
		if err != nil {
			return total, fmt.Errorf("prune events: %w", err)
		}
		n, _ := res.RowsAffected()
		total += n
		if n < pruneSlice {
			return total, nil
		}
	}
}
