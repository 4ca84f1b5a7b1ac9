// Package audit records who changed what (docs/audit.md): every API
// mutation leaves one entry with the caller, the client address, the
// operation, its target and its outcome. A successful change writes its
// entry in the change's own transaction: the transaction helpers of the
// store, the control plane and the engine call Write before they commit,
// so a change is never without its entry nor an entry without its change.
// A refused or failed mutation, which changed nothing, is recorded on its
// own afterwards.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Entry is one mutation as the audit log keeps it. It never holds a
// secret: Target and Args carry only identifying arguments (ids, names,
// kinds, sizes), picked by name.
type Entry struct {
	TenantID  string // "" when the caller has none
	Tenant    string
	User      string // "" for an agent
	TokenID   string
	Address   string
	Operation string          // the mutation's field, e.g. createCluster
	Args      json.RawMessage // identifying arguments, see Pick
}

// pending is a mutation's entry on its way to the log.
type pending struct {
	mu        sync.Mutex
	e         Entry
	committed bool // a transaction holding the entry committed
}

type ctxKey struct{}

// Begin marks ctx as a mutation's: the first transaction that commits
// under it writes e.
func Begin(ctx context.Context, e Entry) context.Context {
	return context.WithValue(ctx, ctxKey{}, &pending{e: e})
}

func from(ctx context.Context) *pending {
	p, _ := ctx.Value(ctxKey{}).(*pending)
	return p
}

// Write adds ctx's entry, with outcome "ok", to the transaction about to
// commit, unless an earlier committed transaction of the same mutation
// holds it already; without an entry in ctx it does nothing. The caller
// calls Committed after the commit succeeds.
func Write(ctx context.Context, tx *sqlx.Tx) error {
	p := from(ctx)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	done := p.committed
	p.mu.Unlock()
	if done {
		return nil
	}
	return insert(ctx, tx, p.e, "ok", "")
}

// Commit writes ctx's entry into tx (Write), commits tx and notes that the
// entry is in (Committed): what every transaction helper does instead of
// tx.Commit. tx is rolled back when the entry cannot be written.
func Commit(ctx context.Context, tx *sqlx.Tx) error {
	if err := Write(ctx, tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	Committed(ctx)
	return nil
}

// Committed says the transaction that Write wrote to committed.
func Committed(ctx context.Context) {
	if p := from(ctx); p != nil {
		p.mu.Lock()
		p.committed = true
		p.mu.Unlock()
	}
}

// Finish ends a mutation: a failure is recorded with its code (nothing
// was changed, so its entry stands alone), and a success whose change no
// transaction carried (a single statement outside the helpers) is
// recorded now.
func Finish(ctx context.Context, db *sqlx.DB, code, message string, failed bool) error {
	p := from(ctx)
	if p == nil {
		return nil
	}
	p.mu.Lock()
	done := p.committed
	p.committed = true
	p.mu.Unlock()
	switch {
	case failed:
		if code == "" {
			code = "ERROR"
		}
		return insert(ctx, db, p.e, code, message)
	case !done:
		return insert(ctx, db, p.e, "ok", "")
	}
	return nil
}

func insert(ctx context.Context, q sqlx.ExecerContext, e Entry, outcome, message string) error {
	if len(message) > 1000 {
		message = message[:1000]
	}
	args := e.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var tenant, token any
	if e.TenantID != "" {
		tenant = e.TenantID
	}
	if e.TokenID != "" {
		token = e.TokenID
	}
	_, err := q.ExecContext(ctx, `INSERT INTO audit_log (tenant_id, tenant, actor, token_id, address, operation, args, outcome, message)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		tenant, e.Tenant, e.User, token, e.Address, e.Operation, []byte(args), outcome, message)
	if err != nil {
		return fmt.Errorf("audit: record %s: %w", e.Operation, err)
	}
	return nil
}

// Record is a stored entry.
type Record struct {
	ID        int64     `db:"id"`
	At        time.Time `db:"at"`
	TenantID  *string   `db:"tenant_id"`
	Tenant    string    `db:"tenant"`
	Actor     string    `db:"actor"`
	TokenID   *string   `db:"token_id"`
	Address   string    `db:"address"`
	Operation string    `db:"operation"`
	Args      []byte    `db:"args"`
	Outcome   string    `db:"outcome"`
	Message   string    `db:"message"`
}

// Filter narrows a listing; zero fields do not.
type Filter struct {
	TenantID   string // required unless AllTenants
	AllTenants bool
	Actor      string
	Operation  string
	Failed     *bool // true: only failures; false: only successes
	Since      time.Time
	Until      time.Time
	Before     int64 // an id: entries older than it (paging)
	Limit      int
}

// ErrNoTenant is a listing that names neither a tenant nor all of them.
var ErrNoTenant = errors.New("audit: a listing names a tenant or all tenants")

// List returns entries newest first.
func List(ctx context.Context, db sqlx.QueryerContext, f Filter) ([]Record, error) {
	if f.TenantID == "" && !f.AllTenants {
		return nil, ErrNoTenant
	}
	var since, until any
	if !f.Since.IsZero() {
		since = f.Since
	}
	if !f.Until.IsZero() {
		until = f.Until
	}
	rs := []Record{}
	err := sqlx.SelectContext(ctx, db, &rs, `SELECT id, at, tenant_id, tenant, actor, token_id, address, operation, args, outcome, message
		FROM audit_log
		WHERE ($1 = '' OR tenant_id = $1::uuid) AND ($2 = '' OR actor = $2) AND ($3 = '' OR operation = $3)
		  AND ($4::bool IS NULL OR (outcome <> 'ok') = $4) AND ($5::timestamptz IS NULL OR at >= $5)
		  AND ($6::timestamptz IS NULL OR at < $6) AND ($7 = 0 OR id < $7)
		ORDER BY id DESC LIMIT $8`,
		f.TenantID, f.Actor, f.Operation, f.Failed, since, until, f.Before, f.Limit)
	return rs, err
}

// Prune deletes entries older than keep, in slices so that a large
// backlog does not hold one long transaction.
func Prune(ctx context.Context, db *sqlx.DB, keep time.Duration) (int64, error) {
	var total int64
	for {
		res, err := db.ExecContext(ctx, `DELETE FROM audit_log WHERE id IN (
			SELECT id FROM audit_log WHERE at < now() - $1 * interval '1 second' ORDER BY id LIMIT 10000)`, keep.Seconds())
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if n < 10000 {
			return total, nil
		}
	}
}

type addrKey struct{}

// WithAddress notes the client address of the request ctx serves.
func WithAddress(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, addrKey{}, addr)
}

// Address is the client address WithAddress noted, or "".
func Address(ctx context.Context) string {
	a, _ := ctx.Value(addrKey{}).(string)
	return a
}
