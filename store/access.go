package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Roles of users (docs/operations.md#roles-and-visibility). The admin of the
// superadmin tenant is the superadmin.
const (
	RoleUser  = "user"
	RoleAdmin = "admin"
)

// Token kinds: user tokens act as their user; agent tokens (superadmin
// tenant only) serve the agent API.
const (
	TokenUser  = "user"
	TokenAgent = "agent"
)

// ErrUnauthenticated is an unknown, malformed or revoked token.
var ErrUnauthenticated = errors.New("unauthenticated")

// User is an account of a tenant.
type User struct {
	TenantID  string    `db:"tenant_id"`
	Name      string    `db:"name"`
	Role      string    `db:"role"`
	CreatedAt time.Time `db:"created_at"`
}

// Token describes an API token; its secret is never stored.
type Token struct {
	ID         string     `db:"id"`
	TenantID   string     `db:"tenant_id"`
	User       *string    `db:"user_name"` // nil for agent tokens
	Kind       string     `db:"kind"`
	Agents     *string    `db:"agents"` // agent tokens: the ids they serve (MatchAgents)
	Name       string     `db:"name"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
}

// Principal is who a token acts as.
type Principal struct {
	TokenID    string `db:"token_id"`
	TenantID   string `db:"tenant_id"`
	TenantName string `db:"tenant_name"`
	User       string `db:"user_name"` // "" for agents
	Role       string `db:"role"`      // "" for agents
	Kind       string `db:"kind"`
	// Agents is an agent token's pattern of agent ids (MatchAgents).
	Agents string `db:"agents"`
}

// MayActAs reports whether p, an agent token's principal, serves agentID.
func (p Principal) MayActAs(agentID string) bool {
	return p.Kind == TokenAgent && MatchAgents(p.Agents, agentID)
}

// MatchAgents reports whether agentID matches pattern, in which * stands
// for any characters (none included) and everything else for itself.
func MatchAgents(pattern, agentID string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == agentID
	}
	if !strings.HasPrefix(agentID, parts[0]) {
		return false
	}
	rest := agentID[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
}

// CheckAgentPattern explains what is wrong with an agent token's pattern:
// 1–128 letters, digits and _.@:- with * for any characters.
func CheckAgentPattern(pattern string) error {
	if pattern == "" || len(pattern) > 128 {
		return fmt.Errorf("%q: want 1–128 characters: an agent id (web-1), or a pattern with * (web-*; * alone for any)", pattern)
	}
	for _, r := range pattern {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.@:-*", r)) {
			return fmt.Errorf("%q: %q is not allowed (letters, digits, _.@:- and * only)", pattern, r)
		}
	}
	return nil
}

// Superadmin reports whether p may manage tenants, agents and driver types.
func (p Principal) Superadmin() bool {
	return p.Kind == TokenUser && p.TenantName == SuperadminTenant && p.Role == RoleAdmin
}

// Admin reports whether p administers its tenant.
func (p Principal) Admin() bool { return p.Kind == TokenUser && p.Role == RoleAdmin }

// tokenPrefix marks coopr tokens so that secret scanners and people can
// recognise one.
const tokenPrefix = "coopr_"

func hashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// CreateUser adds a user to a tenant; a taken name → ErrConflict.
func (s *Store) CreateUser(ctx context.Context, tenantID, name, role string) (User, error) {
	if role != RoleUser && role != RoleAdmin {
		return User{}, fmt.Errorf("store: role %q: want %q or %q", role, RoleUser, RoleAdmin)
	}
	var u User
	err := s.db.GetContext(ctx, &u, `INSERT INTO users (tenant_id, name, role) VALUES ($1, $2, $3)
		ON CONFLICT DO NOTHING RETURNING tenant_id, name, role, created_at`, tenantID, name, role)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("user %q: %w", name, ErrConflict)
	}
	if err != nil {
		return User{}, fmt.Errorf("store: create user %q: %w", name, err)
	}
	return u, nil
}

// Users lists a tenant's users by name.
func (s *Store) Users(ctx context.Context, tenantID string) ([]User, error) {
	var us []User
	err := s.db.SelectContext(ctx, &us, `SELECT tenant_id, name, role, created_at FROM users WHERE tenant_id = $1 ORDER BY name`, tenantID)
	return us, err
}

// CreateToken makes a user token and returns its secret, which exists
// nowhere else: only its hash is stored. Agent tokens come from
// CreateAgentToken.
func (s *Store) CreateToken(ctx context.Context, tenantID, user, kind, name string) (string, Token, error) {
	if kind != TokenUser {
		return "", Token{}, fmt.Errorf("store: create token of kind %q: agent tokens are made by CreateAgentToken", kind)
	}
	return s.createToken(ctx, tenantID, user, kind, name, nil)
}

// CreateAgentToken makes an agent token serving the agent ids agents
// matches (MatchAgents) and returns its secret.
func (s *Store) CreateAgentToken(ctx context.Context, tenantID, name, agents string) (string, Token, error) {
	if err := CheckAgentPattern(agents); err != nil {
		return "", Token{}, fmt.Errorf("store: agent token's agents %w", err)
	}
	return s.createToken(ctx, tenantID, "", TokenAgent, name, agents)
}

func (s *Store) createToken(ctx context.Context, tenantID, user, kind, name string, agents any) (string, Token, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	secret := tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	var owner any
	if kind == TokenUser {
		owner = user
	}
	var t Token
	err := s.db.GetContext(ctx, &t, `INSERT INTO api_tokens (tenant_id, user_name, kind, name, hash, agents)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+tokenColumns, tenantID, owner, kind, name, hashToken(secret), agents)
	if err != nil {
		if strings.Contains(err.Error(), "api_tokens_tenant_id_user_name_fkey") {
			return "", Token{}, fmt.Errorf("user %q: %w", user, ErrNotFound)
		}
		return "", Token{}, fmt.Errorf("store: create token: %w", err)
	}
	return secret, t, nil
}

const tokenColumns = `id, tenant_id, user_name, kind, name, agents, created_at, last_used_at, revoked_at`

// Tokens lists a tenant's tokens, newest first; user "" lists all of them.
func (s *Store) Tokens(ctx context.Context, tenantID, user string) ([]Token, error) {
	var ts []Token
	err := s.db.SelectContext(ctx, &ts, `SELECT `+tokenColumns+` FROM api_tokens
		WHERE tenant_id = $1 AND ($2 = '' OR user_name = $2) ORDER BY created_at DESC, id`, tenantID, user)
	return ts, err
}

// RevokeToken revokes a token of the tenant (of user, unless user is "").
func (s *Store) RevokeToken(ctx context.Context, tenantID, user, id string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now())
		WHERE id::text = $1 AND tenant_id = $2 AND ($3 = '' OR user_name = $3)`, id, tenantID, user)
	if err != nil {
		return fmt.Errorf("store: revoke token: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %s: %w", id, ErrNotFound)
	}
	return nil
}

// Authenticate resolves a token secret to its principal.
func (s *Store) Authenticate(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, tokenPrefix) {
		return Principal{}, ErrUnauthenticated
	}
	var p Principal
	err := s.db.GetContext(ctx, &p, `WITH t AS (
			UPDATE api_tokens SET last_used_at = now()
			WHERE hash = $1 AND revoked_at IS NULL AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
			RETURNING id)
		SELECT k.id AS token_id, k.tenant_id, n.name AS tenant_name, coalesce(k.user_name, '') AS user_name,
			coalesce(u.role, '') AS role, k.kind, coalesce(k.agents, '') AS agents
		FROM api_tokens k JOIN tenants n ON n.id = k.tenant_id
		LEFT JOIN users u ON u.tenant_id = k.tenant_id AND u.name = k.user_name
		WHERE k.hash = $1 AND k.revoked_at IS NULL`, hashToken(secret))
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("store: authenticate: %w", err)
	}
	return p, nil
}
