package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Tenant is an isolated user organisation (docs/catalog.md#tenants).
type Tenant struct {
	ID          string    `db:"id"` // a UUID; agents only ever see this
	Name        string    `db:"name"`
	Description string    `db:"description"`
	Workers     int       `db:"workers"`
	MaxClusters *int      `db:"max_clusters"` // nil = unlimited
	MaxNodes    *int      `db:"max_nodes"`    // nil = unlimited
	CreatedAt   time.Time `db:"created_at"`
	// AdminSSHKeys: the nodes of every cluster of the tenant also let in
	// the tenant admins' keys (docs/operations.md#keys-on-live-clusters).
	AdminSSHKeys bool `db:"admin_ssh_keys"`
}

const tenantColumns = `id, name, description, workers, max_clusters, max_nodes, created_at, admin_ssh_keys`

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
		WITH t AS (INSERT INTO tenants (name) VALUES ($1)
			ON CONFLICT (name) DO NOTHING
			RETURNING `+tenantColumns+`),
		u AS (INSERT INTO users (tenant_id, name, role) SELECT id, 'admin', 'admin' FROM t)
		SELECT * FROM t`, name)
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

// TenantSettings are a tenant's changeable fields; nil keeps the current
// value (on create: the default).
type TenantSettings struct {
	Description *string
	Workers     *int
	// MaxClusters and MaxNodes: nil keeps; a pointer to -1 clears (unlimited).
	MaxClusters *int
	MaxNodes    *int
}

// Tenants lists every tenant by name.
func (s *Store) Tenants(ctx context.Context) ([]Tenant, error) {
	var ts []Tenant
	err := s.db.SelectContext(ctx, &ts, `SELECT `+tenantColumns+` FROM tenants ORDER BY name`)
	return ts, err
}

func quota(q *int) (set bool, v any) {
	if q == nil {
		return false, nil
	}
	if *q < 0 {
		return true, nil
	}
	return true, *q
}

// CreateTenant makes a tenant with its admin user; a taken name →
// ErrConflict.
func (s *Store) CreateTenant(ctx context.Context, name string, set TenantSettings) (Tenant, error) {
	desc, workers := "", 0
	if set.Description != nil {
		desc = *set.Description
	}
	if set.Workers != nil {
		workers = *set.Workers
	}
	_, mc := quota(set.MaxClusters)
	_, mn := quota(set.MaxNodes)
	var t Tenant
	err := s.db.GetContext(ctx, &t, `
		WITH t AS (INSERT INTO tenants (name, description, workers, max_clusters, max_nodes) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (name) DO NOTHING RETURNING `+tenantColumns+`),
		u AS (INSERT INTO users (tenant_id, name, role) SELECT id, 'admin', 'admin' FROM t)
		SELECT * FROM t`, name, desc, workers, mc, mn)
	if errors.Is(err, sql.ErrNoRows) {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, ErrConflict)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("store: create tenant %q: %w", name, err)
	}
	return t, nil
}

// UpdateTenant changes the given settings of a tenant.
func (s *Store) UpdateTenant(ctx context.Context, name string, set TenantSettings) (Tenant, error) {
	setMC, mc := quota(set.MaxClusters)
	setMN, mn := quota(set.MaxNodes)
	var t Tenant
	err := s.db.GetContext(ctx, &t, `UPDATE tenants SET description = coalesce($2, description),
		workers = coalesce($3, workers),
		max_clusters = CASE WHEN $4 THEN $5::integer ELSE max_clusters END,
		max_nodes = CASE WHEN $6 THEN $7::integer ELSE max_nodes END
		WHERE name = $1 RETURNING `+tenantColumns, name, set.Description, set.Workers, setMC, mc, setMN, mn)
	if errors.Is(err, sql.ErrNoRows) {
		return Tenant{}, fmt.Errorf("tenant %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("store: update tenant %q: %w", name, err)
	}
	return t, nil
}

// DeleteTenant deletes a tenant that has no workers and no live cluster
// (else ErrConflict). The superadmin tenant cannot be deleted.
func (s *Store) DeleteTenant(ctx context.Context, name string) error {
	if name == SuperadminTenant {
		return fmt.Errorf("%w: the superadmin tenant cannot be deleted", ErrState)
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var t struct {
			ID      string `db:"id"`
			Workers int    `db:"workers"`
			Live    int    `db:"live"`
		}
		err := tx.GetContext(ctx, &t, `SELECT id, workers,
			(SELECT count(*) FROM clusters c WHERE c.tenant_id = tenants.id AND c.status <> 'TERMINATED') AS live
			FROM tenants WHERE name = $1 FOR UPDATE`, name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("tenant %q: %w", name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if t.Workers > 0 || t.Live > 0 {
			return fmt.Errorf("%w: tenant %q has %d workers and %d clusters not TERMINATED; set workers to 0 and delete its clusters first",
				ErrState, name, t.Workers, t.Live)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM tenants WHERE id = $1`, t.ID)
		return err
	})
}
