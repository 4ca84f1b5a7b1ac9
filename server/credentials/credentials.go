// Package credentials keeps secrets (sensitive provider fields, driver
// secrets) sealed in Postgres with AES-256-GCM under the server's key. It
// also seals providers' sensitive admin values for the store.
package credentials

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// ErrNoKey is a secret to store on a server started without a key.
var ErrNoKey = errors.New("this server has no credential key: set COOPR_CREDENTIAL_KEY (32 random bytes, base64) to accept sensitive fields")

// Store seals and opens secrets.
type Store struct {
	aead cipher.AEAD // nil without a key
}

// NewKey makes a random key in the form New takes: 32 bytes, base64.
func NewKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.StdEncoding.EncodeToString(b)
}

// New returns a store for a base64 key of 32 bytes; "" gives a store that
// refuses to seal (and has nothing to open).
func New(key string) (*Store, error) {
	if key == "" {
		return &Store{}, nil
	}
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(k) != 32 {
		return nil, errors.New("credential key: want 32 bytes, base64-encoded (e.g. `head -c32 /dev/urandom | base64`)")
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Store{aead: aead}, nil
}

// Enabled reports whether the store has a key.
func (s *Store) Enabled() bool { return s.aead != nil }

func aad(cluster, ns string) []byte { return []byte(cluster + "\x00" + ns) }

// Seal encrypts plain bound to aad, for secrets kept in other tables (the
// store's sealed provider values).
func (s *Store) Seal(plain, aad []byte) (nonce, sealed []byte, err error) {
	if s.aead == nil {
		return nil, nil, ErrNoKey
	}
	nonce = make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return nonce, s.aead.Seal(nil, nonce, plain, aad), nil
}

// Open decrypts what Seal made with the same aad.
func (s *Store) Open(nonce, sealed, aad []byte) ([]byte, error) {
	if s.aead == nil {
		return nil, ErrNoKey
	}
	if len(nonce) != s.aead.NonceSize() {
		return nil, errors.New("credentials: bad nonce")
	}
	return s.aead.Open(nil, nonce, sealed, aad)
}

// Put replaces a cluster's secrets of a namespace, in the caller's
// transaction. The cluster id and namespace are bound into the seal, so a
// sealed value moved to another row does not open.
//
// Values equal to those stored are not written again. A driver reports
// the same secret with every task of a node (the pool driver's key, with
// each CREATE and CONFIRM), and a write holds the row's lock until its
// transaction commits: the finishes of a cluster's nodes, which end
// together, then committed one after another, each waiting for the
// others' commits (up to 60 ms at 10 nodes), and every write made the
// claims of the cluster's next tasks read and decrypt its secrets again.
// Skipping on a look without the lock is as if this write had committed
// just before any other not yet visible to it.
func (s *Store) Put(ctx context.Context, tx *sqlx.Tx, cluster, ns string, values map[string]any) error {
	if len(values) == 0 {
		return nil
	}
	if s.aead == nil {
		return ErrNoKey
	}
	plain, err := json.Marshal(values)
	if err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := s.aead.Seal(nil, nonce, plain, aad(cluster, ns))
	for looked := false; ; looked = true {
		var old struct {
			Nonce  []byte `db:"nonce"`
			Sealed []byte `db:"sealed"`
		}
		err := tx.GetContext(ctx, &old, `SELECT nonce, sealed FROM credentials WHERE cluster_id = $1 AND namespace = $2`, cluster, ns)
		switch {
		case err == nil:
			if was, err := s.aead.Open(nil, old.Nonce, old.Sealed, aad(cluster, ns)); err == nil && bytes.Equal(was, plain) {
				return nil
			}
		case !errors.Is(err, sql.ErrNoRows):
			return err
		case !looked:
			// None yet (a cluster's first CREATEs, finishing together): an
			// insert that finds another's waits only for that one's commit,
			// and the values are compared again, where an upsert would wait
			// for the upserts queued before it too.
			res, err := tx.ExecContext(ctx, `INSERT INTO credentials (cluster_id, namespace, nonce, sealed) VALUES ($1, $2, $3, $4)
				ON CONFLICT (cluster_id, namespace) DO NOTHING`, cluster, ns, nonce, sealed)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 1 {
				return err
			}
			continue
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO credentials (cluster_id, namespace, nonce, sealed) VALUES ($1, $2, $3, $4)
			ON CONFLICT (cluster_id, namespace) DO UPDATE SET nonce = excluded.nonce, sealed = excluded.sealed, updated_at = now()`,
			cluster, ns, nonce, sealed)
		return err
	}
}

// Get opens a cluster's secrets by namespace. Secrets that no longer open
// (the key changed) are left out: the next operation needing them asks
// the user again (docs/operations.md#provider-fields).
func (s *Store) Get(ctx context.Context, db sqlx.QueryerContext, cluster string) (map[string]map[string]any, error) {
	var rows []struct {
		NS     string `db:"namespace"`
		Nonce  []byte `db:"nonce"`
		Sealed []byte `db:"sealed"`
	}
	if err := sqlx.SelectContext(ctx, db, &rows, `SELECT namespace, nonce, sealed FROM credentials WHERE cluster_id = $1`, cluster); err != nil {
		return nil, err
	}
	out := map[string]map[string]any{}
	if s.aead == nil {
		return out, nil
	}
	for _, r := range rows {
		plain, err := s.aead.Open(nil, r.Nonce, r.Sealed, aad(cluster, r.NS))
		if err != nil {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal(plain, &v); err != nil {
			return nil, fmt.Errorf("credentials of cluster %s: %w", cluster, err)
		}
		out[r.NS] = v
	}
	return out, nil
}

// ForTask is Get of the cluster a task belongs to, in one query.
func (s *Store) ForTask(ctx context.Context, db sqlx.QueryerContext, taskID string) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	if s.aead == nil {
		return out, nil
	}
	var rows []struct {
		Cluster string `db:"cluster_id"`
		NS      string `db:"namespace"`
		Nonce   []byte `db:"nonce"`
		Sealed  []byte `db:"sealed"`
	}
	if err := sqlx.SelectContext(ctx, db, &rows, `SELECT c.cluster_id, c.namespace, c.nonce, c.sealed
		FROM tasks t JOIN jobs j ON j.id = t.job_id JOIN credentials c ON c.cluster_id = j.cluster_id
		WHERE t.id = $1`, taskID); err != nil {
		return nil, err
	}
	for _, r := range rows {
		plain, err := s.aead.Open(nil, r.Nonce, r.Sealed, aad(r.Cluster, r.NS))
		if err != nil {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal(plain, &v); err != nil {
			return nil, fmt.Errorf("credentials of cluster %s: %w", r.Cluster, err)
		}
		out[r.NS] = v
	}
	return out, nil
}
