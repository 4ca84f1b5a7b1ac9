package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Tenant is an isolated user organisation (SPEC §1.9).
type Tenant struct {
	ID          string    `db:"id"` // a UUID; agents only ever see this
	Name        string    `db:"name"`
	Description string    `db:"description"`
	Workers     int       `db:"workers"`
	MaxClusters *int      `db:"max_clusters"` // nil = unlimited
	MaxNodes    *int      `db:"max_nodes"`    // nil = unlimited
	CreatedAt   time.Time `db:"created_at"`
}

const tenantColumns = `id, name, description, workers, max_clusters, max_nodes, created_at`

// Tenant returns the tenant named name.
func (s *Store) Tenant(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := s.db.GetContext(ctx, &t, `SELECT `+tenantColumns+` FROM tenants WHERE name = $1`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("store: tenant %q: %w", name, err)
	}
	return t, nil
}

// EnsureTenant returns the tenant named name, creating it with default
// settings (no workers, no quotas) if it does not exist.
func (s *Store) EnsureTenant(ctx context.Context, name string) (Tenant, error) {
	if name == "" {
		return Tenant{}, errors.New("store: tenant name must not be empty")
	}
	// Read first so the common case writes nothing; a concurrent creator
	// makes the insert a no-op, and the second read then finds its row.
	t, err := s.Tenant(ctx, name)
	if !errors.Is(err, ErrNotFound) {
		return t, err
	}
	err = s.db.GetContext(ctx, &t, `
		INSERT INTO tenants (name) VALUES ($1)
		ON CONFLICT (name) DO NOTHING
		RETURNING `+tenantColumns, name)
	if errors.Is(err, sql.ErrNoRows) {
		return s.Tenant(ctx, name)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("store: ensure tenant %q: %w", name, err)
	}
	return t, nil
}

// tenantID returns the id of the tenant named name.
func tenantID(ctx context.Context, q sqlx.QueryerContext, name string) (string, error) {
	var id string
	err := sqlx.GetContext(ctx, q, &id, `SELECT id FROM tenants WHERE name = $1`, name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("tenant %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: tenant %q: %w", name, err)
	}
	return id, nil
}
