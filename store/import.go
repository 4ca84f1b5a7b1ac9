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
	kind    catalog.Kind
	name    string
	file    string
	body    string
	secrets map[string]any // providers: sensitive admin values to seal
	force   bool           // write even if the body equals the newest version's
}

// ImportCatalog replaces the tenant's catalog with c
// (docs/catalog.md#import-and-export), in one transaction: every tenant-owned
// entity absent from c is deleted, and every entity of c is stored as a new
// version unless it equals the newest one (ignoring "version"), so importing
// the same catalog twice writes nothing. Shared kinds in c are upserted the
// same way under superadmin, but shared entities absent from c are kept: one
// tenant's import must not remove the descriptors every tenant relies on. A
// nil c empties the tenant's catalog.
//
// Every entity is validated before anything is written; errors come back as
// one *catalog.ValidationError. Cross-references are the caller's business
// (catalog.Check), as they are for single writes.
//
// Providers' sensitive admin values are sealed (secrets.go); a value
// written back as "__redacted__" keeps the newest version's.
func (s *Store) ImportCatalog(ctx context.Context, tenant string, c *catalog.Catalog) (ImportResult, error) {
	res, _, err := s.Import(ctx, tenant, c, ImportOptions{})
	return res, err
}

// ImportOptions adjust Import.
type ImportOptions struct {
	// SecretsFrom names a tenant whose providers' sensitive admin values
	// stand behind "__redacted__" values the importing tenant has nothing
	// to keep for: a new tenant's bootstrap copies the superadmin catalog
	// with its sealed values.
	SecretsFrom string
}

// Import is ImportCatalog returning the write's own warnings too (a
// sensitive provider field written back as "__redacted__" with no stored
// value to keep is left unset).
func (s *Store) Import(ctx context.Context, tenant string, c *catalog.Catalog, opt ImportOptions) (ImportResult, catalog.Issues, error) {
	from := opt.SecretsFrom
	var warnings catalog.Issues
	docs, err := importDocs(c)
	if err != nil {
		return ImportResult{}, nil, err
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
		if warnings, err = s.importProviders(ctx, tx, own, from, docs); err != nil {
			return err
		}
		var tenants, kinds, names, bodies []string
		var force []bool
		for _, d := range docs {
			owner := own
			if d.kind.Shared() {
				owner = super
			}
			tenants = append(tenants, owner)
			kinds = append(kinds, string(d.kind))
			names = append(names, d.name)
			bodies = append(bodies, d.body)
			force = append(force, d.force)
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
		var written []struct {
			Kind    string `db:"kind"`
			Name    string `db:"name"`
			Version int    `db:"version"`
		}
		if err := tx.SelectContext(ctx, &written, `
			WITH input AS (
				SELECT i.tenant_id::uuid AS tenant_id, i.kind, i.name, i.body::jsonb - 'version' AS body, i.force
				FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bool[]) AS i(tenant_id, kind, name, body, force)
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
			WHERE n.version IS NULL OR n.body <> i.body OR i.force
			RETURNING kind, name, version`,
			pq.Array(tenants), pq.Array(kinds), pq.Array(names), pq.Array(bodies), pq.Array(force)); err != nil {
			return fmt.Errorf("store: import into %q: write: %w", tenant, err)
		}
		secrets := map[string]map[string]any{}
		for _, d := range docs {
			if d.kind == catalog.KindProvider && len(d.secrets) > 0 {
				secrets[d.name] = d.secrets
			}
		}
		var sealed []sealedRow
		for _, w := range written {
			if v := secrets[w.Name]; w.Kind == string(catalog.KindProvider) && v != nil {
				sealed = append(sealed, sealedRow{name: w.Name, version: w.Version, values: v})
			}
		}
		if err := s.storeSecrets(ctx, tx, own, sealed); err != nil {
			return err
		}
		for _, w := range written {
			// Version 1 exactly when no version existed before.
			if w.Version == 1 {
				res.Created++
			} else {
				res.Updated++
			}
		}
		res.Unchanged = len(docs) - len(written)
		return nil
	})
	if err != nil {
		return ImportResult{}, nil, err
	}
	return res, warnings, nil
}

// importProviders redacts the provider documents among docs and collects
// their sensitive values, in the import's transaction (tenant own's lock
// held). The import's own provider types count before the stored ones: they
// are about to become the newest. Errors come back as one
// *catalog.ValidationError, warnings are returned.
func (s *Store) importProviders(ctx context.Context, tx *sqlx.Tx, own, from string, docs []importDoc) (catalog.Issues, error) {
	var names []string
	for _, d := range docs {
		if d.kind == catalog.KindProvider {
			names = append(names, d.name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sets, err := loadSensitive(ctx, tx)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if d.kind == catalog.KindProviderType {
			sets[d.name] = sensitiveOf([]byte(d.body))
		}
	}
	prev, err := s.newestSecrets(ctx, tx, own, names, sets)
	if err != nil {
		return nil, err
	}
	var source map[string]providerSecrets
	if from != "" {
		id, err := tenantID(ctx, tx, from)
		if err != nil {
			return nil, err
		}
		if source, err = s.newestSecrets(ctx, tx, id, names, sets); err != nil {
			return nil, err
		}
	}
	var issues catalog.Issues
	for i := range docs {
		d := &docs[i]
		if d.kind != catalog.KindProvider {
			continue
		}
		var p, f *providerSecrets
		if ps, ok := prev[d.name]; ok {
			p = &ps
		}
		if ps, ok := source[d.name]; ok {
			f = &ps
		}
		w, err := s.splitProvider(d.file, d.name, []byte(d.body), sets, p, f)
		if err != nil {
			return nil, err
		}
		issues = append(issues, w.issues...)
		d.body, d.secrets, d.force = string(w.body), w.values, w.changed
	}
	if err := issues.Err(); err != nil {
		return nil, err
	}
	return issues.Warnings(), nil
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
			docs = append(docs, importDoc{kind: k, name: base.Name, file: file, body: string(e.Raw)})
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
	// The export's own provider types say which values to redact.
	sets := sensitiveSets{}
	for _, r := range rows {
		if catalog.Kind(r.Kind) == catalog.KindProviderType {
			if f := sensitiveOf(r.Body); f != nil {
				sets[r.Name] = f
			}
		}
	}
	c := catalog.New()
	for _, r := range rows {
		if catalog.Kind(r.Kind) == catalog.KindProvider {
			if r.Body, err = redactProvider(r.Body, sets); err != nil {
				return nil, err
			}
		}
		e, err := decodeStored(catalog.Kind(r.Kind), r.Name, r.Body)
		if err != nil {
			return nil, err
		}
		c.Put(e)
	}
	return c, nil
}

// ChangedShared names ("kind/name") the shared entities of c that are new or
// differ from their newest stored version (ignoring "version", as Import
// compares). A tenant admin's export carries the shared descriptors its
// catalog uses; importing it back must not count as writing them.
func (s *Store) ChangedShared(ctx context.Context, c *catalog.Catalog) ([]string, error) {
	var kinds, names, bodies []string
	for _, k := range catalog.Kinds {
		if !k.Shared() {
			continue
		}
		for _, e := range c.Entities(k) {
			kinds, names, bodies = append(kinds, string(k)), append(names, e.Name), append(bodies, string(e.Raw))
		}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	super, err := tenantID(ctx, s.db, SuperadminTenant)
	if err != nil {
		return nil, err
	}
	var changed []string
	if err := s.db.SelectContext(ctx, &changed, `
		WITH input AS (
			SELECT i.kind, i.name, i.body::jsonb - 'version' AS body
			FROM unnest($2::text[], $3::text[], $4::text[]) AS i(kind, name, body)
		), newest AS (
			SELECT DISTINCT ON (e.kind, e.name) e.kind, e.name, e.body - 'version' AS body
			FROM catalog_entities e JOIN input USING (kind, name)
			WHERE e.tenant_id = $1
			ORDER BY e.kind, e.name, e.version DESC
		)
		SELECT i.kind || '/' || i.name FROM input i LEFT JOIN newest n USING (kind, name)
		WHERE n.body IS NULL OR n.body <> i.body
		ORDER BY 1`, super, pq.Array(kinds), pq.Array(names), pq.Array(bodies)); err != nil {
		return nil, fmt.Errorf("store: compare shared entities: %w", err)
	}
	return changed, nil
}
