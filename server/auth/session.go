package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/cooprhq/coopr/store"
)

// The web UI signs in by exchanging an API token for a session held in an
// HttpOnly, SameSite=Strict cookie (docs/ui.md#sign-in-and-sessions). A
// cookie is sent by the browser whoever made the page, so every request a
// cookie authenticates must also show that one of our own pages made it:
// it carries CSRFHeader (a cross-site form cannot set a header, and a
// cross-origin script could only with a CORS preflight, which this server
// never allows), and writes come from an allowed origin.
const (
	CookieName = "coopr_session"
	CSRFHeader = "X-Coopr-CSRF"
)

// SessionStore resolves session secrets.
type SessionStore interface {
	Session(ctx context.Context, secret string, idle time.Duration) (store.Session, error)
}

// Sessions authenticates requests by their session cookie.
type Sessions struct {
	Store SessionStore
	// Idle is how long a session may go unused before it ends.
	Idle time.Duration
	// Origins are host patterns (path.Match; with "://", of the whole
	// origin) of other origins whose pages may use a session, as the
	// websocket's OriginPatterns. The server's own origin always may.
	Origins []string
}

type sessionKey struct{}

// withSessionSecret marks a websocket upgrade whose session the
// connection_init checks.
func withSessionSecret(ctx context.Context, secret string) context.Context {
	return context.WithValue(ctx, sessionKey{}, secret)
}

// Middleware authenticates requests that have the session cookie and no
// bearer token (a bearer token wins: it cannot be sent by another site, and
// the API behaves for it as it always has). A cookie request without
// CSRFHeader, or a write (anything but GET and HEAD) from a foreign origin,
// is refused with 403. A websocket upgrade cannot carry a header: its
// Origin must be allowed, and connection_init then checks the session
// (Principal). An ended session leaves the request unauthenticated, which
// the API answers with UNAUTHENTICATED.
func (s *Sessions) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(CookieName)
		if err != nil || c.Value == "" || BearerToken(r.Header.Get("Authorization")) != "" {
			next.ServeHTTP(w, r)
			return
		}
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			if err := s.websocketOrigin(r); err != nil {
				forbidden(w, err.Error())
				return
			}
			next.ServeHTTP(w, r.WithContext(withSessionSecret(r.Context(), c.Value)))
			return
		}
		if err := s.CheckRequest(r); err != nil {
			forbidden(w, err.Error())
			return
		}
		sess, err := s.Store.Session(r.Context(), c.Value, s.Idle)
		switch {
		case errors.Is(err, store.ErrUnauthenticated):
			next.ServeHTTP(w, r)
		case err != nil:
			http.Error(w, "authentication is unavailable: the database did not answer", http.StatusServiceUnavailable)
		default:
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), sess.Principal)))
		}
	})
}

// Principal is the principal of the session a websocket was upgraded with,
// checked now (at connection_init). ok is false when the upgrade had no
// session cookie; an ended session is store.ErrUnauthenticated.
func (s *Sessions) Principal(ctx context.Context) (p store.Principal, ok bool, err error) {
	secret, _ := ctx.Value(sessionKey{}).(string)
	if secret == "" {
		return store.Principal{}, false, nil
	}
	sess, err := s.Store.Session(ctx, secret, s.Idle)
	return sess.Principal, true, err
}

// SessionKey is store.SessionKey of the session a websocket was upgraded
// with, "" when it had none: the server ends the websocket when that
// session ends.
func SessionKey(ctx context.Context) string {
	secret, _ := ctx.Value(sessionKey{}).(string)
	if secret == "" {
		return ""
	}
	return store.SessionKey(secret)
}

// CheckRequest reports why r, a request a session cookie would
// authenticate, may not be one of our own pages' (nil when it is): it needs
// CSRFHeader, and a write needs an allowed Origin (or, without one, Referer).
func (s *Sessions) CheckRequest(r *http.Request) error {
	if r.Header.Get(CSRFHeader) == "" {
		return errors.New("a request authenticated by the session cookie needs the " + CSRFHeader + " header")
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil
	}
	from := r.Header.Get("Origin")
	if from == "" {
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return errors.New("a write authenticated by the session cookie needs an Origin or Referer header")
	}
	return s.allowed(r, from)
}

func (s *Sessions) websocketOrigin(r *http.Request) error {
	from := r.Header.Get("Origin")
	if from == "" {
		return errors.New("a websocket authenticated by the session cookie needs an Origin header")
	}
	return s.allowed(r, from)
}

// allowed checks an Origin or Referer value against the request's host and
// the allowed origins.
func (s *Sessions) allowed(r *http.Request, from string) error {
	u, err := url.Parse(from)
	if err != nil || u.Host == "" {
		return errors.New("origin " + strconv.Quote(from) + " is not a URL")
	}
	if strings.EqualFold(u.Host, r.Host) {
		return nil
	}
	origin := strings.ToLower(u.Scheme + "://" + u.Host)
	for _, p := range s.Origins {
		target := strings.ToLower(u.Host)
		if strings.Contains(p, "://") {
			target = origin
		}
		if ok, _ := path.Match(strings.ToLower(p), target); ok {
			return nil
		}
	}
	return errors.New("origin " + origin + " may not use this server's sessions (see allowed_origins)")
}

func forbidden(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusForbidden, "FORBIDDEN", msg)
}

// writeError answers as the GraphQL API does, so that clients show the
// message as they show the API's.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{"message": msg,
		"extensions": map[string]any{"code": code}}}})
}
