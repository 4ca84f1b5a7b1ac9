package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/cooprhq/coopr/catalog"
)

// Catalog entities are stored one row per version. The stored body carries its
// own "version" field, set by the store: an input version is ignored
// (docs/catalog.md#versions), and keeping the number in the body makes Raw and
// Value agree.

// CreateEntity validates raw as one entity of kind and stores it as version 1.
// An existing entity of the same name → ErrConflict; validation errors → a
// *catalog.ValidationError. The issues (warnings included) are returned either
// way. Shared kinds are stored under the superadmin tenant whatever tenant is
// given.
func (s *Store) CreateEntity(ctx context.Context, tenant string, kind catalog.Kind, raw []byte) (*catalog.Entity, catalog.Issues, error) {
	return s.writeEntity(ctx, tenant, kind, raw, false)
}

// UpdateEntity validates raw and stores it as a new version of the existing
// entity of the same name; a missing one → ErrNotFound.
func (s *Store) UpdateEntity(ctx context.Context, tenant string, kind catalog.Kind, raw []byte) (*catalog.Entity, catalog.Issues, error) {
	return s.writeEntity(ctx, tenant, kind, raw, true)
}

func (s *Store) writeEntity(ctx context.Context, tenant string, kind catalog.Kind, raw []byte, update bool) (*catalog.Entity, catalog.Issues, error) {
	if err := checkKind(kind); err != nil {
		return nil, nil, err
	}
	v, issues := catalog.ParseEntity(kind, "", raw)
	if err := issues.Err(); err != nil {
		return nil, issues, err
	}
	base, err := baseOf(v)
	if err != nil {
		return nil, issues, err
	}
	name := base.Name
	file := entityFile(kind, name)
	var body []byte
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		owner, err := ownerID(ctx, tx, tenant, kind)
		if err != nil {
			return err
		}
		if err := lockTenant(ctx, tx, owner); err != nil {
			return err
		}
		var newest int
		if err := tx.GetContext(ctx, &newest, `
			SELECT coalesce(max(version), 0) FROM catalog_entities
			WHERE tenant_id = $1 AND kind = $2 AND name = $3`, owner, kind, name); err != nil {
			return fmt.Errorf("store: %s %q: %w", kind.Singular(), name, err)
		}
		switch {
		case update && newest == 0:
			return fmt.Errorf("%s %q: %w", kind.Singular(), name, ErrNotFound)
		case !update && newest > 0:
			return fmt.Errorf("%s %q: %w", kind.Singular(), name, ErrConflict)
		}
		base.Version = newest + 1
		doc := raw
		var secrets map[string]any
		if kind == catalog.KindProvider {
			w, err := s.prepareProvider(ctx, tx, owner, file, name, raw, newest > 0)
			if err != nil {
				return err
			}
			issues = append(issues, w.issues...)
			if err := w.issues.Err(); err != nil {
				return err
			}
			doc, secrets = w.body, w.values
		}
		// The document goes as a string: lib/pq would send []byte as bytea.
		if err := tx.GetContext(ctx, &body, `
			INSERT INTO catalog_entities (tenant_id, kind, name, version, body)
			VALUES ($1, $2, $3, $4, $5::jsonb || jsonb_build_object('version', $4::integer))
			RETURNING body`, owner, kind, name, base.Version, string(doc)); err != nil {
			return fmt.Errorf("store: write %s %q: %w", kind.Singular(), name, err)
		}
		return s.storeSecrets(ctx, tx, owner, []sealedRow{{name: name, version: base.Version, values: secrets}})
	})
	if err != nil {
		return nil, issues, err
	}
	// Decoded from what was stored, so no sensitive value rides along.
	e, err := decodeStored(kind, name, body)
	if err != nil {
		return nil, issues, err
	}
	return e, issues, nil
}

// prepareProvider redacts and collects a provider document's sensitive
// admin values, in the write's transaction; hasPrev: earlier versions exist,
// whose newest keeps its values for fields written back as Redacted.
func (s *Store) prepareProvider(ctx context.Context, tx *sqlx.Tx, owner, file, name string, raw []byte, hasPrev bool) (providerWrite, error) {
	sets, err := loadSensitive(ctx, tx)
	if err != nil {
		return providerWrite{}, err
	}
	var prev *providerSecrets
	if hasPrev {
		all, err := s.newestSecrets(ctx, tx, owner, []string{name}, sets)
		if err != nil {
			return providerWrite{}, err
		}
		if ps, ok := all[name]; ok {
			prev = &ps
		}
	}
	return s.splitProvider(file, name, raw, sets, prev, nil)
}

// redactor returns a function that redacts stored bodies of kind (a no-op
// for kinds other than providers).
func (s *Store) redactor(ctx context.Context, kind catalog.Kind) (func([]byte) ([]byte, error), error) {
	if kind != catalog.KindProvider {
		return func(b []byte) ([]byte, error) { return b, nil }, nil
	}
	sets, err := loadSensitive(ctx, s.db)
	if err != nil {
		return nil, err
	}
	return func(b []byte) ([]byte, error) { return redactProvider(b, sets) }, nil
}

// Entity returns the given version of an entity, or the newest when version is
// 0, with its version number.
func (s *Store) Entity(ctx context.Context, tenant string, kind catalog.Kind, name string, version int) (*catalog.Entity, int, error) {
	if err := checkKind(kind); err != nil {
		return nil, 0, err
	}
	owner, err := ownerID(ctx, s.db, tenant, kind)
	if err != nil {
		return nil, 0, err
	}
	var row struct {
		Version int    `db:"version"`
		Body    []byte `db:"body"`
	}
	err = s.db.GetContext(ctx, &row, `
		SELECT version, body FROM catalog_entities
		WHERE tenant_id = $1 AND kind = $2 AND name = $3 AND ($4 = 0 OR version = $4)
		ORDER BY version DESC LIMIT 1`, owner, kind, name, version)
	if errors.Is(err, sql.ErrNoRows) {
		if version != 0 {
			return nil, 0, fmt.Errorf("%s %q version %d: %w", kind.Singular(), name, version, ErrNotFound)
		}
		return nil, 0, fmt.Errorf("%s %q: %w", kind.Singular(), name, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store: read %s %q: %w", kind.Singular(), name, err)
	}
	redact, err := s.redactor(ctx, kind)
	if err != nil {
		return nil, 0, err
	}
	if row.Body, err = redact(row.Body); err != nil {
		return nil, 0, err
	}
	e, err := decodeStored(kind, name, row.Body)
	if err != nil {
		return nil, 0, err
	}
	return e, row.Version, nil
}

// EntityVersions lists the stored versions of an entity, oldest first; none
// → ErrNotFound.
func (s *Store) EntityVersions(ctx context.Context, tenant string, kind catalog.Kind, name string) ([]int, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	owner, err := ownerID(ctx, s.db, tenant, kind)
	if err != nil {
		return nil, err
	}
	var versions []int
	if err := s.db.SelectContext(ctx, &versions, `
		SELECT version FROM catalog_entities
		WHERE tenant_id = $1 AND kind = $2 AND name = $3
		ORDER BY version`, owner, kind, name); err != nil {
		return nil, fmt.Errorf("store: versions of %s %q: %w", kind.Singular(), name, err)
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("%s %q: %w", kind.Singular(), name, ErrNotFound)
	}
	return versions, nil
}

// DeleteEntity removes one version of an entity, or every version when
// version is 0. Deleting a shared kind deletes it for every tenant: callers
// decide who may.
func (s *Store) DeleteEntity(ctx context.Context, tenant string, kind catalog.Kind, name string, version int) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		owner, err := ownerID(ctx, tx, tenant, kind)
		if err != nil {
			return err
		}
		if err := lockTenant(ctx, tx, owner); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `
			DELETE FROM catalog_entities
			WHERE tenant_id = $1 AND kind = $2 AND name = $3 AND ($4 = 0 OR version = $4)`,
			owner, kind, name, version)
		if err != nil {
			return fmt.Errorf("store: delete %s %q: %w", kind.Singular(), name, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("store: delete %s %q: %w", kind.Singular(), name, err)
		}
		if n == 0 {
			if version != 0 {
				return fmt.Errorf("%s %q version %d: %w", kind.Singular(), name, version, ErrNotFound)
			}
			return fmt.Errorf("%s %q: %w", kind.Singular(), name, ErrNotFound)
		}
		return nil
	})
}

// ownerID returns the id of the tenant whose rows hold kind for tenant: the
// tenant itself, or superadmin for shared kinds. The named tenant must exist
// either way, so an unknown tenant never reads the shared types.
func ownerID(ctx context.Context, q sqlx.QueryerContext, tenant string, kind catalog.Kind) (string, error) {
	id, err := tenantID(ctx, q, tenant)
	if err != nil || !kind.Shared() || tenant == SuperadminTenant {
		return id, err
	}
	return tenantID(ctx, q, SuperadminTenant)
}

func checkKind(k catalog.Kind) error {
	if _, ok := catalog.ParseKind(string(k)); !ok {
		return fmt.Errorf("store: unknown catalog kind %q", k)
	}
	return nil
}

func entityFile(k catalog.Kind, name string) string { return string(k) + "/" + name + ".json" }

// baseOf returns the common fields of a value ParseEntity produced.
func baseOf(v any) (*catalog.Base, error) {
	switch x := v.(type) {
	case *catalog.Provider:
		return &x.Base, nil
	case *catalog.MachineType:
		return &x.Base, nil
	case *catalog.Service:
		return &x.Base, nil
	case *catalog.Template:
		return &x.Base, nil
	case *catalog.PluginType:
		return &x.Base, nil
	}
	return nil, fmt.Errorf("store: internal: unexpected catalog value %T", v)
}

// decodeStored turns a stored body back into an entity. Stored bodies were
// valid when written; failing now means validation got stricter since, which
// is reported rather than papered over.
func decodeStored(kind catalog.Kind, name string, body []byte) (*catalog.Entity, error) {
	doc, err := canonical(body)
	if err != nil {
		return nil, err
	}
	file := entityFile(kind, name)
	v, issues := catalog.ParseEntity(kind, file, doc)
	if err := issues.Err(); err != nil {
		return nil, fmt.Errorf("store: stored %s %q no longer validates: %w", kind.Singular(), name, err)
	}
	return &catalog.Entity{Kind: kind, Name: name, File: file, Raw: doc, Value: v}, nil
}

// canonical re-encodes a jsonb document with sorted keys and no spaces —
// the form catalog.Load gives Raw — instead of jsonb's length-first key
// order, so exports read naturally and diff cleanly against their source.
// Numbers pass through as written.
func canonical(body []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("store: stored document: %w", err)
	}
	out, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("store: stored document: %w", err)
	}
	return out, nil
}

// Versioned is an entity with its stored version number.
type Versioned struct {
	*catalog.Entity
	Version int
}

// Entities lists the newest version of every entity of kind, by name.
func (s *Store) Entities(ctx context.Context, tenant string, kind catalog.Kind) ([]Versioned, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	owner, err := ownerID(ctx, s.db, tenant, kind)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		Name    string `db:"name"`
		Version int    `db:"version"`
		Body    []byte `db:"body"`
	}
	if err := s.db.SelectContext(ctx, &rows, `
		SELECT DISTINCT ON (name) name, version, body FROM catalog_entities
		WHERE tenant_id = $1 AND kind = $2 ORDER BY name, version DESC`, owner, kind); err != nil {
		return nil, fmt.Errorf("store: list %s: %w", kind, err)
	}
	redact, err := s.redactor(ctx, kind)
	if err != nil {
		return nil, err
	}
	out := make([]Versioned, len(rows))
	for i, r := range rows {
		body, err := redact(r.Body)
		if err != nil {
			return nil, err
		}
		e, err := decodeStored(kind, r.Name, body)
		if err != nil {
			return nil, err
		}
		out[i] = Versioned{Entity: e, Version: r.Version}
	}
	return out, nil
}
