// Package auth resolves bearer tokens to principals and carries the
// principal in request contexts.
package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cooprhq/coopr/store"
)

type ctxKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p store.Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the request's principal; ok is false for an
// unauthenticated request.
func FromContext(ctx context.Context) (store.Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(store.Principal)
	return p, ok
}

// Authenticator resolves token secrets.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (store.Principal, error)
}

// BearerToken returns the token of an "Authorization: Bearer …" value.
func BearerToken(header string) string {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

// Middleware puts the principal of the request's bearer token, if any, in
// its context. A request without a valid token goes on without one, for
// the handler to refuse (the API does, before reading the body; a
// websocket may bring its token later). A failing token store is a 503,
// not a silent downgrade.
func Middleware(a Authenticator, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret := BearerToken(r.Header.Get("Authorization"))
		if secret == "" {
			next.ServeHTTP(w, r)
			return
		}
		p, err := a.Authenticate(r.Context(), secret)
		switch {
		case errors.Is(err, store.ErrUnauthenticated):
			next.ServeHTTP(w, r)
		case err != nil:
			http.Error(w, "authentication is unavailable: the database did not answer", http.StatusServiceUnavailable)
		default:
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		}
	})
}

// RefusalCache is an Authenticator that remembers, for TTL, the secrets
// the one it wraps refused, and refuses them again without asking: a
// client retrying a bad token costs a map lookup, not a database query.
// Secrets are remembered by their SHA-256 only; at most max of them.
type RefusalCache struct {
	Authenticator
	TTL time.Duration
	// Lookups counts the questions put to the wrapped Authenticator.
	Lookups atomic.Int64

	mu      sync.Mutex
	refused map[[sha256.Size]byte]time.Time // until when
}

const refusalCacheMax = 100_000

// Authenticate answers from the refusals remembered, else asks.
func (c *RefusalCache) Authenticate(ctx context.Context, secret string) (store.Principal, error) {
	key := sha256.Sum256([]byte(secret))
	now := time.Now()
	c.mu.Lock()
	until, ok := c.refused[key]
	c.mu.Unlock()
	if ok && now.Before(until) {
		return store.Principal{}, store.ErrUnauthenticated
	}
	c.Lookups.Add(1)
	p, err := c.Authenticator.Authenticate(ctx, secret)
	if errors.Is(err, store.ErrUnauthenticated) {
		c.mu.Lock()
		if c.refused == nil || len(c.refused) >= refusalCacheMax {
			c.refused = map[[sha256.Size]byte]time.Time{} // forget rather than grow without bound
		}
		c.refused[key] = now.Add(c.TTL)
		c.mu.Unlock()
	}
	return p, err
}

// AgentCache is an Authenticator that remembers, for at most TTL, the
// principals of agent tokens: an agent makes a request or more per task,
// and each would otherwise cost a database query. It keys entries by the
// secret's SHA-256 only. Revocation stays immediate: Forget drops a
// token's entry at once (the server calls it on the database's
// revoke/delete notification, and on a revoke it serves itself), ForgetAll
// drops everything (the notification channel was lost), and a lookup that
// began before a Forget is not remembered, so a revocation committed while
// it read the row cannot be undone by it. Tokens of other kinds are never
// remembered: a user's role lives in another table, which tells no one
// when it changes.
type AgentCache struct {
	Authenticator
	TTL time.Duration
	// Lookups counts the questions put to the wrapped Authenticator.
	Lookups atomic.Int64

	mu    sync.Mutex
	gen   uint64 // counts Forget and ForgetAll calls
	byID  map[string][sha256.Size]byte
	known map[[sha256.Size]byte]agentEntry
}

type agentEntry struct {
	p     store.Principal
	until time.Time
}

const agentCacheMax = 10_000

// Authenticate answers from the principals remembered, else asks.
func (c *AgentCache) Authenticate(ctx context.Context, secret string) (store.Principal, error) {
	key := sha256.Sum256([]byte(secret))
	now := time.Now()
	c.mu.Lock()
	e, ok := c.known[key]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.p, nil
	}
	c.Lookups.Add(1)
	p, err := c.Authenticator.Authenticate(ctx, secret)
	if err != nil || p.Kind != store.TokenAgent || c.TTL <= 0 {
		return p, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return p, nil // something was forgotten meanwhile: maybe this
	}
	if c.known == nil || len(c.known) >= agentCacheMax {
		c.known, c.byID = map[[sha256.Size]byte]agentEntry{}, map[string][sha256.Size]byte{}
	}
	c.known[key] = agentEntry{p: p, until: now.Add(c.TTL)}
	c.byID[p.TokenID] = key
	return p, nil
}

// Forget drops what is remembered of the token with this id.
func (c *AgentCache) Forget(tokenID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if key, ok := c.byID[tokenID]; ok {
		delete(c.known, key)
		delete(c.byID, tokenID)
	}
}

// ForgetAll drops everything remembered.
func (c *AgentCache) ForgetAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.known, c.byID = nil, nil
}
