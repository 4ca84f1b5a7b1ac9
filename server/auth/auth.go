// Package auth resolves bearer tokens to principals and carries the
// principal in request contexts.
package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"

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
