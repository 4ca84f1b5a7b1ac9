package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/catalog"
)

// Providers' sensitive admin values (docs/catalog.md#sensitive-admin-values):
// an admin field that the provider's type marks "sensitive" is sealed into
// provider_secrets, one row per provider version, and the catalog row holds
// Redacted in its place. Every read shows Redacted; writing Redacted back
// keeps the newest version's value, so export → import round-trips within one
// installation.

// Redacted stands in for a sensitive value in every catalog read and export.
const Redacted = "__redacted__"

// ErrNoKey is a sealed value needed on a store without a credential key.
var ErrNoKey = errors.New("no credential key: set COOPR_CREDENTIAL_KEY to the server's key (32 random bytes, base64)")

// Sealer encrypts secrets under the server's credential key (the
// credentials package's Store is one). aad binds a sealed value to the row
// it is stored in.
type Sealer interface {
	Enabled() bool
	Seal(plain, aad []byte) (nonce, sealed []byte, err error)
	Open(nonce, sealed, aad []byte) ([]byte, error)
}

// SetSealer gives the store the credential key that seals providers'
// sensitive admin values; call it before the store is used. Without one
// (or with one without a key) writing a non-empty sensitive value is
// refused.
func (s *Store) SetSealer(x Sealer) { s.sealer = x }

func (s *Store) canSeal() bool { return s.sealer != nil && s.sealer.Enabled() }

func providerAAD(tenantID, name string, version int) []byte {
	return []byte("providers\x00" + tenantID + "\x00" + name + "\x00" + strconv.Itoa(version))
}

// isSecret reports whether a provisioner value is one to seal: empty values
// reveal nothing and the placeholder is not a value.
func isSecret(v any) bool {
	s, ok := v.(string)
	return v != nil && (!ok || (s != "" && s != Redacted))
}

func isPlaceholder(v any) bool {
	s, ok := v.(string)
	return ok && s == Redacted
}

// sensitiveSets maps a provider type's name to its sensitive admin fields.
type sensitiveSets map[string]map[string]bool

// sensitiveOf reads the sensitive admin fields of a provider type body.
func sensitiveOf(body []byte) map[string]bool {
	var t struct {
		Parameters struct {
			Admin struct {
				Fields map[string]json.RawMessage `json:"fields"`
			} `json:"admin"`
		} `json:"parameters"`
	}
	if json.Unmarshal(body, &t) != nil {
		return nil
	}
	var out map[string]bool
	for name, raw := range t.Parameters.Admin.Fields {
		var f struct {
			Sensitive any `json:"sensitive"`
		}
		if json.Unmarshal(raw, &f) == nil && f.Sensitive == true {
			if out == nil {
				out = map[string]bool{}
			}
			out[name] = true
		}
	}
	return out
}

// loadSensitive reads the sensitive admin fields of every provider type.
func loadSensitive(ctx context.Context, q sqlx.QueryerContext) (sensitiveSets, error) {
	var rows []struct {
		Name string `db:"name"`
		Body []byte `db:"body"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `
		SELECT DISTINCT ON (e.name) e.name, e.body FROM catalog_entities e JOIN tenants t ON t.id = e.tenant_id
		WHERE t.name = $1 AND e.kind = $2 ORDER BY e.name, e.version DESC`,
		SuperadminTenant, catalog.KindProviderType); err != nil {
		return nil, fmt.Errorf("store: provider types: %w", err)
	}
	out := sensitiveSets{}
	for _, r := range rows {
		if f := sensitiveOf(r.Body); f != nil {
			out[r.Name] = f
		}
	}
	return out, nil
}

// providerDoc decodes a provider document with numbers kept exact, and
// returns its type and provisioner (nil when absent).
func providerDoc(body []byte) (doc map[string]any, ptype string, prov map[string]any, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, "", nil, err
	}
	ptype, _ = doc["providertype"].(string)
	prov, _ = doc["provisioner"].(map[string]any)
	return doc, ptype, prov, nil
}

// redactProvider replaces every sensitive value a stored provider body
// holds in the clear (written before its type marked the field sensitive,
// or before its type existed) with Redacted.
func redactProvider(body []byte, sets sensitiveSets) ([]byte, error) {
	doc, ptype, prov, err := providerDoc(body)
	if err != nil {
		return nil, fmt.Errorf("store: stored provider: %w", err)
	}
	changed := false
	for k := range sets[ptype] {
		if isSecret(prov[k]) {
			prov[k] = Redacted
			changed = true
		}
	}
	if !changed {
		return body, nil
	}
	return json.Marshal(doc)
}

// providerSecrets is what one stored provider version holds of its
// sensitive values.
type providerSecrets struct {
	values map[string]any // sealed values, and any still in the clear in the body
	sealed map[string]any // the sealed values only
	locked bool           // sealed values this store has no key to open
}

type secretRow struct {
	Name    string `db:"name"`
	Version int    `db:"version"`
	Body    []byte `db:"body"`
	Nonce   []byte `db:"nonce"`
	Sealed  []byte `db:"sealed"`
}

// open reads a provider version's sensitive values. Values sealed under
// another key are lost (left out), as for cluster credentials.
func (s *Store) open(tenantID string, r secretRow, sets sensitiveSets) (providerSecrets, error) {
	out := providerSecrets{values: map[string]any{}, sealed: map[string]any{}}
	_, ptype, prov, err := providerDoc(r.Body)
	if err != nil {
		return out, fmt.Errorf("store: stored provider %q: %w", r.Name, err)
	}
	for k := range sets[ptype] {
		if isSecret(prov[k]) {
			out.values[k] = prov[k]
		}
	}
	if r.Sealed == nil {
		return out, nil
	}
	if !s.canSeal() {
		out.locked = true
		return out, nil
	}
	plain, err := s.sealer.Open(r.Nonce, r.Sealed, providerAAD(tenantID, r.Name, r.Version))
	if err != nil {
		return out, nil
	}
	if err := json.Unmarshal(plain, &out.sealed); err != nil {
		return out, fmt.Errorf("store: sealed values of provider %q: %w", r.Name, err)
	}
	maps.Copy(out.values, out.sealed)
	return out, nil
}

// newestSecrets reads the sensitive values of the newest version of each
// named provider of a tenant.
func (s *Store) newestSecrets(ctx context.Context, q sqlx.QueryerContext, tenantID string, names []string, sets sensitiveSets) (map[string]providerSecrets, error) {
	var rows []secretRow
	if err := sqlx.SelectContext(ctx, q, &rows, `
		SELECT DISTINCT ON (e.name) e.name, e.version, e.body, ps.nonce, ps.sealed
		FROM catalog_entities e
		LEFT JOIN provider_secrets ps ON ps.tenant_id = e.tenant_id AND ps.name = e.name AND ps.version = e.version
		WHERE e.tenant_id = $1 AND e.kind = $2 AND e.name = ANY($3::text[])
		ORDER BY e.name, e.version DESC`, tenantID, catalog.KindProvider, pq.Array(names)); err != nil {
		return nil, fmt.Errorf("store: provider secrets: %w", err)
	}
	out := make(map[string]providerSecrets, len(rows))
	for _, r := range rows {
		ps, err := s.open(tenantID, r, sets)
		if err != nil {
			return nil, err
		}
		out[r.Name] = ps
	}
	return out, nil
}

// ProviderSecrets returns the real sensitive admin values of a provider
// version (the newest when version is 0), for a cluster created from it.
// Sealed values the store has no key to open → ErrNoKey.
func (s *Store) ProviderSecrets(ctx context.Context, tenant, name string, version int) (map[string]any, error) {
	owner, err := tenantID(ctx, s.db, tenant)
	if err != nil {
		return nil, err
	}
	var r secretRow
	err = s.db.GetContext(ctx, &r, `
		SELECT e.name, e.version, e.body, ps.nonce, ps.sealed
		FROM catalog_entities e
		LEFT JOIN provider_secrets ps ON ps.tenant_id = e.tenant_id AND ps.name = e.name AND ps.version = e.version
		WHERE e.tenant_id = $1 AND e.kind = $2 AND e.name = $3 AND ($4 = 0 OR e.version = $4)
		ORDER BY e.version DESC LIMIT 1`, owner, catalog.KindProvider, name, version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("provider %q version %d: %w", name, version, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: provider %q: %w", name, err)
	}
	sets, err := loadSensitive(ctx, s.db)
	if err != nil {
		return nil, err
	}
	ps, err := s.open(owner, r, sets)
	if err != nil {
		return nil, err
	}
	if ps.locked {
		return nil, fmt.Errorf("sensitive admin values of provider %q are sealed: %w", name, ErrNoKey)
	}
	return ps.values, nil
}

// providerWrite is a provider document made ready to store.
type providerWrite struct {
	body    []byte         // the document, sensitive values redacted
	values  map[string]any // the sensitive values to seal with the new version
	changed bool           // values differ from the newest version's sealed ones
	issues  catalog.Issues
}

// splitProvider redacts a provider document's sensitive admin values and
// collects them: a value is sealed (refused without a key), Redacted keeps
// prev's value (else from's, when copying a catalog between tenants), and
// Redacted with no value to keep leaves the field unset, with a warning.
func (s *Store) splitProvider(file, name string, raw []byte, sets sensitiveSets, prev, from *providerSecrets) (providerWrite, error) {
	out := providerWrite{body: raw, values: map[string]any{}}
	doc, ptype, prov, err := providerDoc(raw)
	if err != nil {
		return out, fmt.Errorf("store: provider %q: %w", name, err)
	}
	changed := false
	for _, k := range slices.Sorted(maps.Keys(sets[ptype])) {
		v, ok := prov[k]
		placeholder := isPlaceholder(v)
		if !ok || !placeholder && !isSecret(v) {
			continue
		}
		path := "provisioner." + k
		if !placeholder {
			if !s.canSeal() {
				out.issues = append(out.issues, catalog.Issue{File: file, Path: path, Message: fmt.Sprintf(
					"provider type %s marks this field sensitive and there is no credential key to store it encrypted: "+
						"set COOPR_CREDENTIAL_KEY to the server's key (32 random bytes, base64), or leave the field empty", ptype)})
				continue
			}
			out.values[k] = v
			prov[k] = Redacted
			changed = true
			continue
		}
		var kept bool
		for _, src := range []*providerSecrets{prev, from} {
			if src == nil {
				continue
			}
			if pv, ok := src.values[k]; ok {
				out.values[k], kept = pv, true
				break
			}
			if src.locked {
				out.issues = append(out.issues, catalog.Issue{File: file, Path: path, Message: fmt.Sprintf(
					"%q keeps the stored value, which is sealed and the server has no credential key to open it: "+
						"set COOPR_CREDENTIAL_KEY on the server, or give the value", Redacted)})
				kept = true
				break
			}
		}
		if !kept {
			delete(prov, k)
			changed = true
			out.issues = append(out.issues, catalog.Issue{File: file, Path: path, Severity: catalog.SeverityWarning, Message: fmt.Sprintf(
				"%q stands for the stored value, but provider %s has none here (a new provider, or a document exported "+
					"from another installation): the field is left unset; give its value", Redacted, name)})
		}
	}
	if changed {
		if out.body, err = json.Marshal(doc); err != nil {
			return out, err
		}
	}
	var before map[string]any
	if prev != nil {
		before = prev.sealed
	}
	a, _ := json.Marshal(out.values)
	b, _ := json.Marshal(before)
	out.changed = len(out.values)+len(before) > 0 && !bytes.Equal(a, b)
	return out, nil
}

// sealedRow is one provider_secrets row to insert.
type sealedRow struct {
	name    string
	version int
	values  map[string]any
}

// storeSecrets seals and inserts provider secrets rows of a tenant.
func (s *Store) storeSecrets(ctx context.Context, tx *sqlx.Tx, tenantID string, rows []sealedRow) error {
	var names []string
	var versions []int64
	var nonces, sealed [][]byte
	for _, r := range rows {
		if len(r.values) == 0 {
			continue
		}
		if !s.canSeal() {
			return fmt.Errorf("sensitive values of provider %q: %w", r.name, ErrNoKey)
		}
		plain, err := json.Marshal(r.values)
		if err != nil {
			return err
		}
		n, sl, err := s.sealer.Seal(plain, providerAAD(tenantID, r.name, r.version))
		if err != nil {
			return fmt.Errorf("store: seal provider %q: %w", r.name, err)
		}
		names, versions = append(names, r.name), append(versions, int64(r.version))
		nonces, sealed = append(nonces, n), append(sealed, sl)
	}
	if len(names) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO provider_secrets (tenant_id, name, version, nonce, sealed)
		SELECT $1, u.name, u.version, u.nonce, u.sealed
		FROM unnest($2::text[], $3::int[], $4::bytea[], $5::bytea[]) AS u(name, version, nonce, sealed)`,
		tenantID, pq.Array(names), pq.Array(versions), pq.Array(nonces), pq.Array(sealed)); err != nil {
		return fmt.Errorf("store: write provider secrets: %w", err)
	}
	return nil
}
