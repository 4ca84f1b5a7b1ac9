package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
)

// Session is a signed-in web UI session: it acts as the API token it was
// made from.
type Session struct {
	Principal
	ExpiresAt time.Time `db:"expires_at"`
}

// sessionSeen is how stale last_seen_at may get before a lookup writes it:
// a page makes many requests a minute, and one write a minute per session
// is enough for an idle timeout counted in hours.
const sessionSeen = time.Minute

// CreateSession makes a session for the user token tokenID that ends at the
// latest after lifetime, and returns its secret, which exists nowhere else:
// only its hash is stored. It also removes sessions that ended (expired,
// idle for longer than idle, or of a revoked token), so the table holds
// only live ones and a few that ended since the last sign-in.
func (s *Store) CreateSession(ctx context.Context, tokenID string, lifetime, idle time.Duration) (string, Session, error) {
	if lifetime <= 0 || idle <= 0 {
		return "", Session{}, fmt.Errorf("store: session lifetime %s and idle timeout %s must be positive", lifetime, idle)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	secret := base64.RawURLEncoding.EncodeToString(b)
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE expires_at <= now()
		OR last_seen_at <= now() - $1 * interval '1 microsecond'
		OR token_id IN (SELECT id FROM api_tokens WHERE revoked_at IS NOT NULL)`, idle.Microseconds()); err != nil {
		return "", Session{}, fmt.Errorf("store: remove ended sessions: %w", err)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO sessions (hash, token_id, expires_at)
		SELECT $1, id, now() + $3 * interval '1 microsecond' FROM api_tokens
		WHERE id = $2 AND kind = 'user' AND revoked_at IS NULL`, hashToken(secret), tokenID, lifetime.Microseconds())
	if err != nil {
		return "", Session{}, fmt.Errorf("store: create session: %w", err)
	}
	sess, err := s.Session(ctx, secret, idle)
	if errors.Is(err, ErrUnauthenticated) {
		// No row went in: the token is gone, revoked or not a user's.
		return "", Session{}, fmt.Errorf("token %s: %w", tokenID, ErrUnauthenticated)
	}
	return secret, sess, err
}

// Session resolves a session secret to its principal. A session that
// expired, was idle for longer than idle, or whose token was revoked is
// ErrUnauthenticated.
func (s *Store) Session(ctx context.Context, secret string, idle time.Duration) (Session, error) {
	if secret == "" {
		return Session{}, ErrUnauthenticated
	}
	var sess Session
	err := s.db.GetContext(ctx, &sess, `WITH seen AS (
			UPDATE sessions SET last_seen_at = now()
			WHERE hash = $1 AND last_seen_at < now() - $3 * interval '1 microsecond'
				AND last_seen_at > now() - $2 * interval '1 microsecond' AND expires_at > now()
			RETURNING hash)
		SELECT k.id AS token_id, k.tenant_id, n.name AS tenant_name, coalesce(k.user_name, '') AS user_name,
			coalesce(u.role, '') AS role, k.kind, s.expires_at
		FROM sessions s JOIN api_tokens k ON k.id = s.token_id JOIN tenants n ON n.id = k.tenant_id
		LEFT JOIN users u ON u.tenant_id = k.tenant_id AND u.name = k.user_name
		WHERE s.hash = $1 AND k.revoked_at IS NULL AND s.expires_at > now()
			AND s.last_seen_at > now() - $2 * interval '1 microsecond'`,
		hashToken(secret), idle.Microseconds(), sessionSeen.Microseconds())
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrUnauthenticated
	}
	if err != nil {
		return Session{}, fmt.Errorf("store: session: %w", err)
	}
	return sess, nil
}

// EndSession deletes a session; one already gone is no error.
func (s *Store) EndSession(ctx context.Context, secret string) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE hash = $1`, hashToken(secret)); err != nil {
		return fmt.Errorf("store: end session: %w", err)
	}
	return nil
}
