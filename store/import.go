package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/catalog"
)

// ImportResult counts what an import did, per entity.
type ImportResult struct {
	Created   int // new names
	Updated   int // changed documents, stored as a new version
	Unchanged int // identical to the newest version, nothing written
	Deleted   int // tenant entities absent from the import, all versions removed
}

// sharedKinds and tenantKinds partition catalog.Kinds.
var sharedKinds, tenantKinds = func() (shared, own []string) {
	for _, k := range catalog.Kinds {
		if k.Shared() {
			shared = append(shared, string(k))
		} else {
			own = append(own, string(k))
		}
	}
	return shared, own
}()

// importDoc is one entity to import, already validated.
type importDoc struct {
	kind catalog.Kind
	name string
	body string
}

// ImportCatalog replaces the tenant's catalog with c (SPEC §1.10), in one
// transaction: every tenant-owned entity absent from c is deleted, and every
// entity of c is stored as a new version unless it equals the newest one
// (ignoring "version"), so importing the same catalog twice writes nothing.
// Shared kinds in c are upserted the same way under superadmin, but shared
// entities absent from c are kept: one tenant's import must not remove the
// descriptors every tenant relies on. A nil c empties the tenant's catalog.
//
// Every entity is validated before anything is written; errors come back as
// one *catalog.ValidationError. Cross-references are the caller's business
// (catalog.Check), as they are for single writes.
func (s *Store) ImportCatalog(ctx context.Context, tenant string, c *catalog.Catalog) (ImportResult, error) {
	docs, err := importDocs(c)
	if err != nil {
		return ImportResult{}, err
	}
	var res ImportResult
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		own, err := tenantID(ctx, tx, tenant)
		if err != nil {
			return err
		}
		if err := lockTenant(ctx, tx, own); err != nil {
			return err
		}
		super := own
		if tenant != SuperadminTenant && slices.ContainsFunc(docs, func(d importDoc) bool { return d.kind.Shared() }) {
			if super, err = tenantID(ctx, tx, SuperadminTenant); err != nil {
				return err
			}
			// Superadmin's lock last: see lockTenant.
			if err := lockTenant(ctx, tx, super); err != nil {
				return err
			}
		}
		var tenants, kinds, names, bodies []string
		for _, d := range docs {
			owner := own
			if d.kind.Shared() {
				owner = super
			}
			tenants = append(tenants, owner)
			kinds = append(kinds, string(d.kind))
			names = append(names, d.name)
			bodies = append(bodies, d.body)
		}

		if err := tx.GetContext(ctx, &res.Deleted, `
			WITH gone AS (
				DELETE FROM catalog_entities e
				WHERE e.tenant_id = $1 AND e.kind = ANY($2::text[])
				  AND NOT EXISTS (
					SELECT 1 FROM unnest($3::text[], $4::text[]) AS i(kind, name)
					WHERE i.kind = e.kind AND i.name = e.name)
				RETURNING e.kind, e.name)
			SELECT count(DISTINCT (kind, name)) FROM gone`,
			own, pq.Array(tenantKinds), pq.Array(kinds), pq.Array(names)); err != nil {
			return fmt.Errorf("store: import into %q: delete: %w", tenant, err)
		}

		// One statement for every entity: compare each with its newest
		// version as jsonb (key order and spacing do not count) and insert
		// max+1 only for the new and the changed.
		var written []int
		if err := tx.SelectContext(ctx, &written, `
			WITH input AS (
				SELECT i.tenant_id::uuid AS tenant_id, i.kind, i.name, i.body::jsonb - 'version' AS body
				FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS i(tenant_id, kind, name, body)
			), newest AS (
				SELECT DISTINCT ON (e.tenant_id, e.kind, e.name)
				       e.tenant_id, e.kind, e.name, e.version, e.body - 'version' AS body
				FROM catalog_entities e JOIN input USING (tenant_id, kind, name)
				ORDER BY e.tenant_id, e.kind, e.name, e.version DESC
			)
			INSERT INTO catalog_entities (tenant_id, kind, name, version, body)
			SELECT i.tenant_id, i.kind, i.name, coalesce(n.version, 0) + 1,
			       i.body || jsonb_build_object('version', coalesce(n.version, 0) + 1)
			FROM input i LEFT JOIN newest n USING (tenant_id, kind, name)
			WHERE n.version IS NULL OR n.body <> i.body
			RETURNING version`,
			pq.Array(tenants), pq.Array(kinds), pq.Array(names), pq.Array(bodies)); err != nil {
			return fmt.Errorf("store: import into %q: write: %w", tenant, err)
		}
		for _, v := range written {
			// Version 1 exactly when no version existed before.
			if v == 1 {
				res.Created++
			} else {
				res.Updated++
			}
		}
		res.Unchanged = len(docs) - len(written)
		return nil
	})
	if err != nil {
		return ImportResult{}, err
	}
	return res, nil
}

// importDocs validates every entity of c, collecting all errors.
func importDocs(c *catalog.Catalog) ([]importDoc, error) {
	if c == nil {
		return nil, nil
	}
	var (
		docs   []importDoc
		issues catalog.Issues
		seen   = map[catalog.Kind]map[string]string{}
	)
	for _, k := range catalog.Kinds {
		seen[k] = map[string]string{}
		for _, e := range c.Entities(k) {
			file := e.File
			if file == "" {
				file = entityFile(k, e.Name)
			}
			v, is := catalog.ParseEntity(k, file, e.Raw)
			issues = append(issues, is.Errors()...)
			if is.HasErrors() {
				continue
			}
			base, err := baseOf(v)
			if err != nil {
				return nil, err
			}
			// The catalog keys entities by Entity.Name, but the document's own
			// name is what gets stored; two documents claiming one name would
			// otherwise fail later as a bare key violation.
			if prev, dup := seen[k][base.Name]; dup {
				issues = append(issues, catalog.Issue{File: file, Path: "name",
					Message: fmt.Sprintf("%s %q is also defined in %s", k.Singular(), base.Name, prev)})
				continue
			}
			seen[k][base.Name] = file
			docs = append(docs, importDoc{kind: k, name: base.Name, body: string(e.Raw)})
		}
	}
	if err := issues.Err(); err != nil {
		return nil, err
	}
	return docs, nil
}

// ExportCatalog returns the newest version of every entity of the tenant and
// of the shared kinds.
func (s *Store) ExportCatalog(ctx context.Context, tenant string) (*catalog.Catalog, error) {
	own, err := tenantID(ctx, s.db, tenant)
	if err != nil {
		return nil, err
	}
	super := own
	if tenant != SuperadminTenant {
		if super, err = tenantID(ctx, s.db, SuperadminTenant); err != nil {
			return nil, err
		}
	}
	var rows []struct {
		Kind string `db:"kind"`
		Name string `db:"name"`
		Body []byte `db:"body"`
	}
	// One statement, so the export is one consistent snapshot.
	if err := s.db.SelectContext(ctx, &rows, `
		SELECT DISTINCT ON (kind, name) kind, name, body
		FROM catalog_entities
		WHERE (tenant_id = $1 AND kind = ANY($3::text[]))
		   OR (tenant_id = $2 AND kind = ANY($4::text[]))
		ORDER BY kind, name, version DESC`,
		own, super, pq.Array(tenantKinds), pq.Array(sharedKinds)); err != nil {
		return nil, fmt.Errorf("store: export %q: %w", tenant, err)
	}
	c := catalog.New()
	for _, r := range rows {
		e, err := decodeStored(catalog.Kind(r.Kind), r.Name, r.Body)
		if err != nil {
			return nil, err
		}
		c.Put(e)
	}
	return c, nil
}
