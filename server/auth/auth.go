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
