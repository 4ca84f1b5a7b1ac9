package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Plugin resource states (docs/task-protocol.md#plugin-resources), from the
// live and slated flags.
const (
	ResourceInactive = "inactive" // not live, not slated
	ResourceStaged   = "staged"   // slated: live at the next sync
	ResourceActive   = "active"   // live and slated
	ResourceRecalled = "recalled" // live: inactive at the next sync
)

// ResourceKey names a plugin resource across its versions.
type ResourceKey struct {
	PluginType   string `db:"plugin_type" json:"pluginType"` // providertypes or automatortypes
	Plugin       string `db:"plugin" json:"plugin"`
	ResourceType string `db:"resource_type" json:"resourceType"`
	Name         string `db:"name" json:"name"`
}

func (k ResourceKey) String() string {
	return k.PluginType + "/" + k.Plugin + "/" + k.ResourceType + "/" + k.Name
}

// ResourceRef is one version of a resource as a task payload lists it.
type ResourceRef struct {
	ResourceKey
	Version     int    `db:"version" json:"version"`
	Format      string `db:"format" json:"format"`
	Permissions string `db:"permissions" json:"permissions"`
	Digest      string `db:"digest" json:"digest"` // "sha256:<hex>"
}

// Resource is a stored version, without its bytes.
type Resource struct {
	ResourceRef
	Size      int64     `db:"size"`
	Live      bool      `db:"live"`
	Slated    bool      `db:"slated"`
	CreatedAt time.Time `db:"created_at"`
}

// State is the version's state (docs/task-protocol.md#plugin-resources).
func (r Resource) State() string {
	switch {
	case r.Live && r.Slated:
		return ResourceActive
	case r.Live:
		return ResourceRecalled
	case r.Slated:
		return ResourceStaged
	}
	return ResourceInactive
}

// Digest is the digest the store records for content.
func Digest(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

const resourceColumns = `plugin_type, plugin, resource_type, name, version, format, permissions, digest, size, live, slated, created_at`

// PutResource stores content as the next version (max + 1) of the
// resource of tenant tenantID; format and permissions come from the
// plugin's descriptor, checked by the caller.
func (s *Store) PutResource(ctx context.Context, tenantID string, key ResourceKey, format, permissions string, content []byte) (Resource, error) {
	var r Resource
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		return tx.GetContext(ctx, &r, `INSERT INTO resources (tenant_id, plugin_type, plugin, resource_type, name, version,
				format, permissions, content, digest, size)
			SELECT $1, $2, $3, $4, $5, coalesce(max(version), 0) + 1, $6, $7, $8, $9, $10 FROM resources
			WHERE tenant_id = $1 AND plugin_type = $2 AND plugin = $3 AND resource_type = $4 AND name = $5
			RETURNING `+resourceColumns,
			tenantID, key.PluginType, key.Plugin, key.ResourceType, key.Name, format, permissions, content,
			Digest(content), len(content))
	})
	if err != nil {
		return Resource{}, fmt.Errorf("store: put resource %s: %w", key, err)
	}
	return r, nil
}

// Resources lists the versions of a plugin's resources, by resource type,
// name and version.
func (s *Store) Resources(ctx context.Context, tenantID, pluginType, plugin string) ([]Resource, error) {
	out := []Resource{}
	if err := s.db.SelectContext(ctx, &out, `SELECT `+resourceColumns+` FROM resources
		WHERE tenant_id = $1 AND plugin_type = $2 AND plugin = $3
		ORDER BY resource_type, name, version`, tenantID, pluginType, plugin); err != nil {
		return nil, fmt.Errorf("store: resources of %s/%s: %w", pluginType, plugin, err)
	}
	return out, nil
}

// resourceChange locks the tenant, checks that the version exists and runs
// fn, returning the version as it ends.
func (s *Store) resourceChange(ctx context.Context, tenantID string, key ResourceKey, version int, fn func(tx *sqlx.Tx, r Resource) error) (Resource, error) {
	var r Resource
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		if err := s.getResource(ctx, tx, &r, tenantID, key, version); err != nil {
			return err
		}
		if err := fn(tx, r); err != nil {
			return err
		}
		return s.getResource(ctx, tx, &r, tenantID, key, version)
	})
	return r, err
}

func (s *Store) getResource(ctx context.Context, q sqlx.QueryerContext, r *Resource, tenantID string, key ResourceKey, version int) error {
	err := sqlx.GetContext(ctx, q, r, `SELECT `+resourceColumns+` FROM resources
		WHERE tenant_id = $1 AND plugin_type = $2 AND plugin = $3 AND resource_type = $4 AND name = $5 AND version = $6`,
		tenantID, key.PluginType, key.Plugin, key.ResourceType, key.Name, version)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("resource %s version %d: %w", key, version, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: resource %s version %d: %w", key, version, err)
	}
	return nil
}

const resourceWhere = `tenant_id = $1 AND plugin_type = $2 AND plugin = $3 AND resource_type = $4 AND name = $5`

// StageResource slates version and unslates the name's other versions.
func (s *Store) StageResource(ctx context.Context, tenantID string, key ResourceKey, version int) (Resource, error) {
	return s.resourceChange(ctx, tenantID, key, version, func(tx *sqlx.Tx, _ Resource) error {
		_, err := tx.ExecContext(ctx, `UPDATE resources SET slated = (version = $6) WHERE `+resourceWhere,
			tenantID, key.PluginType, key.Plugin, key.ResourceType, key.Name, version)
		return err
	})
}

// RecallResource unslates version.
func (s *Store) RecallResource(ctx context.Context, tenantID string, key ResourceKey, version int) (Resource, error) {
	return s.resourceChange(ctx, tenantID, key, version, func(tx *sqlx.Tx, _ Resource) error {
		_, err := tx.ExecContext(ctx, `UPDATE resources SET slated = false WHERE `+resourceWhere+` AND version = $6`,
			tenantID, key.PluginType, key.Plugin, key.ResourceType, key.Name, version)
		return err
	})
}

// DeleteResource removes an inactive version no unfinished job of the
// tenant pinned a generation holding; anything else is ErrState.
func (s *Store) DeleteResource(ctx context.Context, tenantID string, key ResourceKey, version int) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		var r Resource
		if err := s.getResource(ctx, tx, &r, tenantID, key, version); err != nil {
			return err
		}
		if st := r.State(); st != ResourceInactive {
			return fmt.Errorf("%w: resource %s version %d is %s: only inactive versions can be deleted (recall it and sync first)",
				ErrState, key, version, st)
		}
		var jobs []string
		if err := tx.SelectContext(ctx, &jobs, `SELECT DISTINCT j.id FROM jobs j
			JOIN resource_generation_members m ON m.tenant_id = j.tenant_id AND m.generation = j.resource_generation
			JOIN resources r ON r.id = m.resource_id
			WHERE j.tenant_id = $1 AND (NOT j.settled OR j.state IN ('RUNNING', 'PAUSED'))
				AND r.plugin_type = $2 AND r.plugin = $3 AND r.resource_type = $4 AND r.name = $5 AND r.version = $6
			ORDER BY j.id LIMIT 5`,
			tenantID, key.PluginType, key.Plugin, key.ResourceType, key.Name, version); err != nil {
			return err
		}
		if len(jobs) > 0 {
			return fmt.Errorf("%w: resource %s version %d is used by running jobs %v", ErrState, key, version, jobs)
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM resources WHERE `+resourceWhere+` AND version = $6`,
			tenantID, key.PluginType, key.Plugin, key.ResourceType, key.Name, version)
		return err
	})
	return err
}

// SyncResources makes the tenant's slated versions live, the others not,
// in one transaction, and returns the new resource generation.
func (s *Store) SyncResources(ctx context.Context, tenantID string) (int, error) {
	var gen int
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if err := lockTenant(ctx, tx, tenantID); err != nil {
			return err
		}
		// Unset first: at most one live version per name at every row.
		if _, err := tx.ExecContext(ctx, `UPDATE resources SET live = false WHERE tenant_id = $1 AND live AND NOT slated`,
			tenantID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE resources SET live = true WHERE tenant_id = $1 AND slated AND NOT live`,
			tenantID); err != nil {
			return err
		}
		if err := tx.GetContext(ctx, &gen, `INSERT INTO resource_generations (tenant_id, generation) VALUES ($1, 1)
			ON CONFLICT (tenant_id) DO UPDATE SET generation = resource_generations.generation + 1, synced_at = now()
			RETURNING generation`, tenantID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO resource_generation_members (tenant_id, generation, resource_id)
			SELECT $1, $2, id FROM resources WHERE tenant_id = $1 AND live`, tenantID, gen)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: sync resources: %w", err)
	}
	return gen, nil
}

// ResourceGeneration is the tenant's current resource generation (0 before
// the first sync).
func (s *Store) ResourceGeneration(ctx context.Context, tenantID string) (int, error) {
	var gen int
	err := s.db.GetContext(ctx, &gen, `SELECT coalesce(max(generation), 0) FROM resource_generations WHERE tenant_id = $1`, tenantID)
	return gen, err
}

// PluginRef names a plugin: "providertypes/<name>" or "automatortypes/<name>".
type PluginRef = string

// GenerationResources lists the resources of the plugins that were live
// in the tenant's generation.
func (s *Store) GenerationResources(ctx context.Context, tenantID string, generation int, plugins []PluginRef) ([]ResourceRef, error) {
	out := []ResourceRef{}
	if generation == 0 || len(plugins) == 0 {
		return out, nil
	}
	err := s.db.SelectContext(ctx, &out, `SELECT r.plugin_type, r.plugin, r.resource_type, r.name, r.version, r.format,
			r.permissions, r.digest
		FROM resource_generation_members m JOIN resources r ON r.id = m.resource_id
		WHERE m.tenant_id = $1 AND m.generation = $2 AND r.plugin_type || '/' || r.plugin = ANY($3::text[])
		ORDER BY r.plugin_type, r.plugin, r.resource_type, r.name`, tenantID, generation, pq.Array(plugins))
	if err != nil {
		return nil, fmt.Errorf("store: resources of generation %d: %w", generation, err)
	}
	return out, nil
}

// SetTaskResources records the resources listed in a claimed attempt's
// payload, under its claim token (hex).
func (s *Store) SetTaskResources(ctx context.Context, taskID, claimToken string, refs []ResourceRef) error {
	tok, err := hex.DecodeString(claimToken)
	if err != nil {
		return fmt.Errorf("store: claim token: %w", err)
	}
	raw, err := json.Marshal(refs)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO task_resources (task_id, claim_token, resources) VALUES ($1, $2, $3)
		ON CONFLICT (task_id) DO UPDATE SET claim_token = excluded.claim_token, resources = excluded.resources`,
		taskID, tok, raw)
	if err != nil {
		return fmt.Errorf("store: task resources: %w", err)
	}
	return nil
}

// TaskResourceContent returns the bytes and digest of a resource version
// listed in the payload of the task's current claim. A claim that is not
// current (not IN_PROGRESS under claimToken) is errStale; a resource the
// payload does not list is ErrNotFound.
func (s *Store) TaskResourceContent(ctx context.Context, taskID, claimToken string, key ResourceKey, version int, errStale error) ([]byte, string, error) {
	tok, err := hex.DecodeString(claimToken)
	if err != nil || len(tok) == 0 {
		return nil, "", errStale
	}
	var t struct {
		Tenant    string         `db:"tenant_id"`
		Resources sql.NullString `db:"resources"`
	}
	err = s.db.GetContext(ctx, &t, `SELECT t.tenant_id, tr.resources FROM tasks t
		LEFT JOIN task_resources tr ON tr.task_id = t.id AND tr.claim_token = t.claim_token
		WHERE t.id = $1 AND t.claim_token = $2 AND t.state = 'IN_PROGRESS'`, taskID, tok)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", errStale
	}
	if err != nil {
		return nil, "", fmt.Errorf("store: task %s: %w", taskID, err)
	}
	var listed []ResourceRef
	if t.Resources.Valid {
		if err := json.Unmarshal([]byte(t.Resources.String), &listed); err != nil {
			return nil, "", fmt.Errorf("store: task %s resources: %w", taskID, err)
		}
	}
	found := false
	for _, r := range listed {
		if r.ResourceKey == key && r.Version == version {
			found = true
			break
		}
	}
	if !found {
		return nil, "", fmt.Errorf("resource %s version %d is not listed in task %s's payload: %w", key, version, taskID, ErrNotFound)
	}
	var row struct {
		Content []byte `db:"content"`
		Digest  string `db:"digest"`
	}
	err = s.db.GetContext(ctx, &row, `SELECT content, digest FROM resources WHERE `+resourceWhere+` AND version = $6`,
		t.Tenant, key.PluginType, key.Plugin, key.ResourceType, key.Name, version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", fmt.Errorf("resource %s version %d: %w", key, version, ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("store: resource %s version %d: %w", key, version, err)
	}
	return row.Content, row.Digest, nil
}
