package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHKey is an SSH public key on a user's profile. BOOTSTRAP installs the
// cluster owner's keys into the nodes' authorized_keys
// (docs/operations.md#host-keys-and-logging-in).
type SSHKey struct {
	ID          string    `db:"id"`
	TenantID    string    `db:"tenant_id"`
	User        string    `db:"user_name"`
	Name        string    `db:"name"`
	Type        string    `db:"type"`
	Fingerprint string    `db:"fingerprint"` // SHA256:…
	PublicKey   string    `db:"public_key"`  // one authorized_keys line: type and base64, no options or comment
	CreatedAt   time.Time `db:"created_at"`
}

// ErrNotPublicKey is a key that is no SSH public key.
var ErrNotPublicKey = errors.New("not an SSH public key")

// ParseSSHPublicKey reads one public key as authorized_keys and *.pub files
// write it ("ssh-ed25519 AAAA… comment"). It refuses private keys (so that
// one pasted by mistake is not stored), options, several keys and
// anything else. It returns the key as one line without the comment, and
// the comment.
func ParseSSHPublicKey(text string) (key ssh.PublicKey, line, comment string, err error) {
	text = strings.TrimSpace(text)
	if strings.Contains(text, "PRIVATE KEY") {
		return nil, "", "", fmt.Errorf("%w: this is a private key; give its public half (the .pub file, or ssh-keygen -y -f KEY) and keep the private key to yourself", ErrNotPublicKey)
	}
	if text == "" {
		return nil, "", "", fmt.Errorf("%w: empty; give one line like \"ssh-ed25519 AAAA… you@host\" (a .pub file)", ErrNotPublicKey)
	}
	key, comment, options, rest, perr := ssh.ParseAuthorizedKey([]byte(text))
	if perr != nil {
		return nil, "", "", fmt.Errorf("%w: %v; give one line like \"ssh-ed25519 AAAA… you@host\" (a .pub file)", ErrNotPublicKey, perr)
	}
	if len(options) > 0 {
		return nil, "", "", fmt.Errorf("%w: authorized_keys options (%s) are not accepted; give the key alone", ErrNotPublicKey, strings.Join(options, ","))
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return nil, "", "", fmt.Errorf("%w: more than one key; add them one at a time", ErrNotPublicKey)
	}
	if _, ok := key.(*ssh.Certificate); ok {
		return nil, "", "", fmt.Errorf("%w: a certificate (%s) is not accepted; give the plain public key", ErrNotPublicKey, key.Type())
	}
	return key, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))), strings.TrimSpace(comment), nil
}

const sshKeyColumns = `id, tenant_id, user_name, name, type, fingerprint, public_key, created_at`

// AddSSHKey puts a public key on a user's profile; name "" takes the key's
// comment. The same key twice → ErrConflict; a text that is no public key
// → ErrNotPublicKey.
func (s *Store) AddSSHKey(ctx context.Context, tenantID, user, publicKey, name string) (SSHKey, error) {
	key, line, comment, err := ParseSSHPublicKey(publicKey)
	if err != nil {
		return SSHKey{}, err
	}
	if name = strings.TrimSpace(name); name == "" {
		name = comment
	}
	fp := ssh.FingerprintSHA256(key)
	var k SSHKey
	err = s.db.GetContext(ctx, &k, `INSERT INTO user_ssh_keys (tenant_id, user_name, name, type, fingerprint, public_key)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING `+sshKeyColumns,
		tenantID, user, name, key.Type(), fp, line)
	if errors.Is(err, sql.ErrNoRows) {
		return SSHKey{}, fmt.Errorf("ssh key %s: %w", fp, ErrConflict)
	}
	if err != nil {
		if strings.Contains(err.Error(), "user_ssh_keys_tenant_id_user_name_fkey") {
			return SSHKey{}, fmt.Errorf("user %q: %w", user, ErrNotFound)
		}
		return SSHKey{}, fmt.Errorf("store: add ssh key: %w", err)
	}
	return k, nil
}

// SSHKeys lists a user's keys, oldest first.
func (s *Store) SSHKeys(ctx context.Context, tenantID, user string) ([]SSHKey, error) {
	ks := []SSHKey{}
	err := s.db.SelectContext(ctx, &ks, `SELECT `+sshKeyColumns+` FROM user_ssh_keys
		WHERE tenant_id = $1 AND user_name = $2 ORDER BY created_at, id`, tenantID, user)
	if err != nil {
		return nil, fmt.Errorf("store: ssh keys of %q: %w", user, err)
	}
	return ks, nil
}

// RemoveSSHKey takes a key off a user's profile; another's key, or none,
// → ErrNotFound.
func (s *Store) RemoveSSHKey(ctx context.Context, tenantID, user, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM user_ssh_keys
		WHERE id::text = $1 AND tenant_id = $2 AND user_name = $3`, id, tenantID, user)
	if err != nil {
		return fmt.Errorf("store: remove ssh key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("ssh key %s: %w", id, ErrNotFound)
	}
	return nil
}

// AuthorizedKeys are the public keys BOOTSTRAP and AUTHORIZE_KEYS install
// on a cluster's nodes: its owner's, and the tenant admins' when the
// tenant's AdminSSHKeys is on; one authorized_keys line each, sorted for a
// stable payload.
func (s *Store) AuthorizedKeys(ctx context.Context, tenantID, owner string) ([]string, error) {
	var ks []string
	err := s.db.SelectContext(ctx, &ks, `SELECT DISTINCT k.public_key FROM user_ssh_keys k
		JOIN users u ON u.tenant_id = k.tenant_id AND u.name = k.user_name
		JOIN tenants t ON t.id = k.tenant_id
		WHERE k.tenant_id = $1 AND (k.user_name = $2 OR (t.admin_ssh_keys AND u.role = 'admin'))
		ORDER BY k.public_key`, tenantID, owner)
	if err != nil {
		return nil, fmt.Errorf("store: authorized keys of %q: %w", owner, err)
	}
	return ks, nil
}

// SetAdminSSHKeys turns the tenant's AdminSSHKeys setting on or off.
func (s *Store) SetAdminSSHKeys(ctx context.Context, tenantID string, on bool) (Tenant, error) {
	var t Tenant
	err := s.db.GetContext(ctx, &t, `UPDATE tenants SET admin_ssh_keys = $2 WHERE id = $1 RETURNING `+tenantColumns, tenantID, on)
	if errors.Is(err, sql.ErrNoRows) {
		return Tenant{}, fmt.Errorf("tenant %s: %w", tenantID, ErrNotFound)
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("store: tenant %s admin ssh keys: %w", tenantID, err)
	}
	return t, nil
}
