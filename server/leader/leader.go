// Package leader elects the one server of a database schema that runs a
// server-wide loop: the engine's scheduler, the event relay
// (docs/operations.md#leadership-and-failover).
//
// The leader holds a session advisory lock, as servers always did, and
// also a lease: a row of leader_leases that it renews every third of the
// lease's TTL. The lock alone dies only with its connection, and a host
// that freezes or drops off the network leaves its connection open until
// the TCP stack of the database gives up, which takes minutes (or never,
// for a frozen process whose kernel still answers). A standby that finds
// the lock taken and the lease run out ends the holder's connection with
// pg_terminate_backend, which frees the lock, and takes both.
//
// Fencing: a leader counts its term as valid only until the TTL (less a
// tenth, for clocks that tick at slightly different rates) after it sent
// its last successful renewal, measured on the monotonic clock, which
// keeps running while the process is stopped. A standby acts only once
// the lease expired by the database's clock, which is later. So a leader
// that wakes from a freeze sees its term over before it does anything.
package leader

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
)

// DefaultTTL is how long a lease lives without renewal: a dead leader is
// replaced within about this long.
const DefaultTTL = 10 * time.Second

// ErrLost is the error of a term that ended without Release: the lease ran
// out, another server took it, or the leader's connection broke.
var ErrLost = errors.New("leadership lost")

// Config names what is led.
type Config struct {
	// Name is the lease's row in leader_leases.
	Name string
	// LockKey is the SQL expression of the advisory lock's bigint key.
	LockKey string
	// TTL of the lease; DefaultTTL when zero.
	TTL time.Duration
	Log *slog.Logger
}

// Term is one spell of leadership, from Acquire to Release or loss.
type Term struct {
	cfg    Config
	conn   *sqlx.Conn
	holder string
	// Number counts the terms of the lease, this one included.
	Number int64

	start time.Time    // the monotonic base of deadline
	until atomic.Int64 // the term is valid while time.Since(start) < until

	lostOnce sync.Once
	lost     chan struct{}
	err      error // set before lost closes

	stop    context.CancelFunc
	renewed chan struct{} // closed when the renewal loop returned
}

// Acquire waits until this process leads cfg.Name, and returns the term,
// whose lease it renews until Release. Only ctx's end (or a database error)
// stops the wait.
func Acquire(ctx context.Context, db *sqlx.DB, cfg Config) (*Term, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	conn, err := db.Connx(ctx)
	if err != nil {
		return nil, fmt.Errorf("leader %s: %w", cfg.Name, err)
	}
	poll := min(time.Second, cfg.TTL/4)
	for {
		var ok bool
		if err := conn.GetContext(ctx, &ok, `SELECT pg_try_advisory_lock(`+cfg.LockKey+`)`); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("leader %s: lock: %w", cfg.Name, err)
		}
		if ok {
			break
		}
		if err := breakExpired(ctx, conn, cfg); err != nil && ctx.Err() == nil {
			cfg.Log.Warn("leader: checking the holder's lease", "lease", cfg.Name, "err", err)
		}
		select {
		case <-ctx.Done():
			_ = conn.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	t := &Term{cfg: cfg, conn: conn, holder: hex.EncodeToString(b), start: time.Now(), lost: make(chan struct{}),
		renewed: make(chan struct{})}
	sent := time.Now()
	if err := conn.GetContext(ctx, &t.Number, `INSERT INTO leader_leases (name, holder, pid, app, expires_at)
		VALUES ($1, $2, pg_backend_pid(), current_setting('application_name'), clock_timestamp() + $3 * interval '1 millisecond')
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, pid = excluded.pid, app = excluded.app,
			term = leader_leases.term + 1,
			acquired_at = clock_timestamp(), expires_at = excluded.expires_at
		RETURNING term`, cfg.Name, t.holder, cfg.TTL.Milliseconds()); err != nil {
		t.closeConn()
		return nil, fmt.Errorf("leader %s: lease: %w", cfg.Name, err)
	}
	t.extend(sent)
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = stop
	go t.renew(rctx)
	return t, nil
}

// breakExpired ends the connections of a holder whose lease ran out: the
// one holding the lock, which frees it, and every other one of the same
// process (its application_name), so that none of its transactions can
// still commit when it wakes. The holder must still hold the lock, so that
// a backend that merely reuses a dead leader's pid is left alone.
func breakExpired(ctx context.Context, conn *sqlx.Conn, cfg Config) error {
	var ended []struct {
		PID     int     `db:"pid"`
		App     string  `db:"app"`
		Overdue float64 `db:"overdue"`
		Ended   int     `db:"ended"`
	}
	err := conn.SelectContext(ctx, &ended, `WITH l AS (
			SELECT l.pid, l.app, extract(epoch FROM clock_timestamp() - l.expires_at)::float8 AS overdue
			FROM leader_leases l
			WHERE l.name = $1 AND l.expires_at < clock_timestamp() AND l.pid <> pg_backend_pid()
				AND EXISTS (SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted AND k.pid = l.pid
					AND k.objsubid = 1 AND ((k.classid::bigint << 32) | k.objid::bigint) = (`+cfg.LockKey+`)::bigint))
		SELECT l.pid, l.app, l.overdue, count(*) FILTER (WHERE pg_terminate_backend(a.pid)) AS ended
		FROM l JOIN pg_stat_activity a ON a.pid = l.pid
			OR (l.app <> '' AND a.application_name = l.app AND a.pid <> pg_backend_pid())
		GROUP BY l.pid, l.app, l.overdue`, cfg.Name)
	for _, e := range ended {
		cfg.Log.Warn("leader: the holder's lease ran out with its connection still open (a frozen or unreachable host): ended its connections",
			"lease", cfg.Name, "pid", e.PID, "app", e.App, "connections", e.Ended,
			"overdue", time.Duration(e.Overdue*float64(time.Second)).Round(time.Millisecond))
	}
	return err
}

// extend makes the term valid until the TTL, less a tenth, after sent.
func (t *Term) extend(sent time.Time) {
	t.until.Store(int64(sent.Sub(t.start) + t.cfg.TTL - t.cfg.TTL/10))
}

// Valid reports whether the term still holds: its lease cannot have run
// out, and it was not lost. A nil term is always valid (a loop run
// without election, in tests).
func (t *Term) Valid() bool {
	if t == nil {
		return true
	}
	select {
	case <-t.lost:
		return false
	default:
	}
	return int64(time.Since(t.start)) < t.until.Load()
}

// Lost is closed when the term is lost.
func (t *Term) Lost() <-chan struct{} { return t.lost }

// Err is why the term was lost (wrapping ErrLost), or nil.
func (t *Term) Err() error {
	select {
	case <-t.lost:
		return t.err
	default:
		return nil
	}
}

// Context returns a context of parent that ends when the term is lost.
func (t *Term) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-t.lost:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (t *Term) lose(err error) {
	t.lostOnce.Do(func() {
		t.err = fmt.Errorf("%s: %w: %w", t.cfg.Name, ErrLost, err)
		close(t.lost)
	})
}

// renew keeps the lease until ctx ends or the term is lost. Any failure
// loses the term: a broken connection has lost the lock with it, and a
// renewal that did not land within a third of the TTL leaves too little
// time to try again safely.
func (t *Term) renew(ctx context.Context) {
	defer close(t.renewed)
	every := t.cfg.TTL / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.lost:
			return
		case <-tick.C:
		}
		if !t.Valid() {
			t.lose(errors.New("the lease ran out before it could be renewed (was the process stopped?)"))
			return
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, every)
		res, err := t.conn.ExecContext(rctx, `UPDATE leader_leases SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
			WHERE name = $1 AND holder = $2`, t.cfg.Name, t.holder, t.cfg.TTL.Milliseconds())
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			t.lose(fmt.Errorf("renewing the lease: %w", err))
			return
		}
		if n, _ := res.RowsAffected(); n == 0 {
			t.lose(errors.New("another server took the lease"))
			return
		}
		if !t.Valid() {
			// The renewal landed, but after the term's end: another server
			// may have acted in between.
			t.lose(errors.New("the lease ran out while it was being renewed"))
			return
		}
		t.extend(sent)
	}
}

// Release ends the term: the lease expires and the lock is unlocked, so a
// standby takes over at its next try rather than after the TTL.
func (t *Term) Release() {
	t.stop()
	<-t.renewed
	if t.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// Expired rather than deleted, so that terms go on counting.
		_, _ = t.conn.ExecContext(ctx, `UPDATE leader_leases SET expires_at = clock_timestamp() WHERE name = $1 AND holder = $2`,
			t.cfg.Name, t.holder)
		_, _ = t.conn.ExecContext(ctx, `SELECT pg_advisory_unlock(`+t.cfg.LockKey+`)`)
	}
	t.lose(errors.New("released"))
	t.closeConn()
}

// closeConn closes the connection for good: if the unlock did not run, a
// pooled connection would keep the lock.
func (t *Term) closeConn() {
	_ = t.conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = t.conn.Close()
}
