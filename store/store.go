// Package store keeps coopr's state in Postgres: tenants and the versioned
// catalog. The schema is created by SQL migrations embedded in the binary.
package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // registers the "postgres" driver
	"github.com/pressly/goose/v3"

	"github.com/cooprhq/coopr/audit"
	"github.com/cooprhq/coopr/internal/errkind"
)

// Errors callers test for with errors.Is; the store wraps them with the kind
// and name of what was missing or clashing. They are the errkind values, so
// a test for one also matches the engine's and the control layer's.
var (
	ErrNotFound = errkind.ErrNotFound
	ErrConflict = errkind.ErrConflict
	// ErrState is a change the object's current state does not allow.
	ErrState = errkind.ErrState
)

// SuperadminTenant is the built-in tenant that owns the shared driver
// descriptors. Migrate creates it.
const SuperadminTenant = "superadmin"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the Postgres store. It is safe for concurrent use.
type Store struct {
	db     *sqlx.DB
	sealer Sealer // nil: sensitive provider values are refused (secrets.go)
}

// Open connects to the database named by dsn (a lib/pq URL or key=value
// string) and checks that it answers.
func Open(ctx context.Context, dsn string) (*Store, error) {
	db, err := sqlx.Open("postgres", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open: %w", err)
	}
	// Postgres allows 100 connections by default and several coopr servers
	// may share one database, so keep each pool modest; recycling bounds the
	// life of a connection across failovers and server-side memory growth.
	db.SetMaxOpenConns(20)
	// As many idle as open: agents claim and finish in bursts, and a pool
	// that closes connections between bursts pays a Postgres fork per claim.
	db.SetMaxIdleConns(20)
	db.SetConnMaxLifetime(time.Hour)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	return &Store{db: db}, nil
}

// Close releases the connections.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the connection pool, for packages that keep their own tables.
func (s *Store) DB() *sqlx.DB { return s.db }

// Migrate brings the schema up to date. Applied migrations are recorded, so a
// second call does nothing; concurrent calls (servers starting together)
// serialize on an advisory lock.
func (s *Store) Migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, s.db.DB, fsys,
		goose.WithSessionLocker(schemaLocker{}),
		// Only the embedded SQL counts: Go migrations registered globally by
		// any other package must not leak in.
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return nil
}

// schemaLocker serializes migrations of one schema. goose's own Postgres
// locker uses one database-wide key and polls every few seconds; keying on
// the schema lets independent schemas (tests, side-by-side installs) migrate
// in parallel, and a blocking lock wakes as soon as the holder is done.
type schemaLocker struct{}

func (schemaLocker) SessionLock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx,
		`SELECT pg_advisory_lock(hashtextextended('coopr.migrate.' || current_schema(), 0))`)
	return err
}

func (schemaLocker) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx,
		`SELECT pg_advisory_unlock(hashtextextended('coopr.migrate.' || current_schema(), 0))`)
	return err
}

// inTx runs fn in a transaction, committing if it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	// A mutation's audit entry commits with its change (docs/audit.md).
	if err := audit.Commit(ctx, tx); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// tenantLockClass namespaces the store's per-tenant advisory locks (two-key
// form) so they cannot collide with single-key locks taken elsewhere.
const tenantLockClass = 0x636f6f70 // "coop"

// lockTenant serializes catalog writes of one tenant until the transaction
// ends. Callers that need a second tenant's lock take superadmin's last:
// nothing holding superadmin's lock ever waits for another, so no cycle can
// form.
func lockTenant(ctx context.Context, tx *sqlx.Tx, tenantID string) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`,
		tenantLockClass, tenantID); err != nil {
		return fmt.Errorf("store: lock tenant: %w", err)
	}
	return nil
}

// WithApplicationName returns dsn (a URL or key=value string) naming its
// connections name, which pg_stat_activity shows: a server names all of
// its connections alike, so that a standby taking over from it can end
// every one of them (server/leader).
func WithApplicationName(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("database url: %w", err)
		}
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " application_name='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(name) + "'", nil
}
