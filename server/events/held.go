package events

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
)

// heldWarnAfter is how long events may wait behind an open transaction
// before the relay names it in the log, and heldWarnEvery how often it
// says so again while they still wait. Commit order is why they wait
// (see relay); a transaction left open (a stuck client, a session idle in
// a transaction, an application sharing the database server) otherwise
// stops every live view and webhook without a word.
const (
	heldWarnAfter = 10 * time.Second
	heldWarnEvery = time.Minute
)

// holder is the oldest transaction on the database server that holds an
// id: it holds back every event committed after it began.
type holder struct {
	PID      int            `db:"pid"`
	Database sql.NullString `db:"datname"`
	User     sql.NullString `db:"usename"`
	App      sql.NullString `db:"application_name"`
	State    sql.NullString `db:"state"`
	Age      float64        `db:"age"`
}

// oldestHolder reads the oldest transaction with an id from
// pg_stat_activity, across every database of the server (transaction ids
// are the server's). Without pg_read_all_stats (or superuser) other
// users' sessions show no transaction and may be missed: found is false
// then. The query text is left out: another application's may carry
// values not to be logged.
func oldestHolder(ctx context.Context, q sqlx.QueryerContext) (h holder, found bool, err error) {
	err = sqlx.GetContext(ctx, q, &h, `SELECT pid, datname, usename, application_name, state,
			extract(epoch FROM now() - xact_start)::float8 AS age
		FROM pg_stat_activity WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
		ORDER BY xact_start LIMIT 1`)
	if errors.Is(err, sql.ErrNoRows) {
		return h, false, nil
	}
	if err != nil {
		return h, false, fmt.Errorf("events: the transaction holding events back: %w", err)
	}
	return h, true, nil
}

// heldWatch tells, in the log, that events have waited long behind an
// open transaction, and which.
type heldWatch struct {
	since, warned time.Time
}

// round notes whether the last relay round was held back, and warns when
// it has been for heldWarnAfter (and every heldWarnEvery after that).
func (w *heldWatch) round(ctx context.Context, q sqlx.QueryerContext, log *slog.Logger, held bool, now time.Time) {
	if !held {
		if !w.warned.IsZero() {
			log.Info("events: relayed again; the transaction that held changes back ended", "held_for", now.Sub(w.since).Round(time.Second))
		}
		*w = heldWatch{}
		return
	}
	if w.since.IsZero() {
		w.since = now
	}
	if now.Sub(w.since) < heldWarnAfter || (!w.warned.IsZero() && now.Sub(w.warned) < heldWarnEvery) {
		return
	}
	w.warned = now
	h, found, err := oldestHolder(ctx, q)
	switch {
	case err != nil:
		log.Warn("events: changes held back by an open transaction; live views and webhooks wait for it to end",
			"held_for", now.Sub(w.since).Round(time.Second), "err", err)
	case !found:
		log.Warn("events: changes held back by an open transaction this user cannot see (grant it pg_read_all_stats to have it named); live views and webhooks wait for it to end",
			"held_for", now.Sub(w.since).Round(time.Second))
	default:
		log.Warn("events: changes held back by an open transaction; live views and webhooks wait for it to end (commit or end it, e.g. pg_terminate_backend(pid))",
			"held_for", now.Sub(w.since).Round(time.Second), "pid", h.PID, "database", h.Database.String,
			"user", h.User.String, "application", h.App.String, "state", h.State.String,
			"transaction_age", time.Duration(h.Age*float64(time.Second)).Round(time.Second))
	}
}
