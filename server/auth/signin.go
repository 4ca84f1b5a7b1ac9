package auth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cooprhq/coopr/store"
)

// SessionMaker is the store behind sign-in.
type SessionMaker interface {
	Authenticator
	SessionStore
	CreateSession(ctx context.Context, tokenID string, lifetime, idle time.Duration) (string, store.Session, error)
	EndSession(ctx context.Context, secret string) error
}

// SignIn serves /auth/session: POST exchanges an API token (JSON body
// {"token": …} or "Authorization: Bearer …") for a session cookie and says
// who it acts as, GET says who the cookie acts as, DELETE ends the session
// on the server and clears the cookie. Cookies are set here rather than by
// GraphQL mutations because a resolver has no response to set them on
// (and over a websocket there is none).
type SignIn struct {
	Sessions *Sessions
	Store    SessionMaker
	// Lifetime is how long a session lasts however busy it is.
	Lifetime time.Duration
}

// Who is what the endpoint says about a session: the roles as the API's
// Principal names them.
type Who struct {
	User       string    `json:"user"`
	Tenant     string    `json:"tenant"`
	Role       string    `json:"role"` // USER or ADMIN
	Superadmin bool      `json:"superadmin"`
	ExpiresAt  time.Time `json:"expiresAt"`
}

func who(s store.Session) Who {
	return Who{User: s.User, Tenant: s.TenantName, Role: strings.ToUpper(s.Role), Superadmin: s.Superadmin(),
		ExpiresAt: s.ExpiresAt.UTC()}
}

// maxSignInBody bounds a sign-in request: a token is under 100 bytes.
const maxSignInBody = 4 << 10

func (h *SignIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodPost:
		h.signIn(w, r)
	case http.MethodGet, http.MethodHead:
		h.current(w, r)
	case http.MethodDelete:
		h.signOut(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, "INVALID_INPUT", "use POST to sign in, GET to see the session, DELETE to sign out")
	}
}

func (h *SignIn) signIn(w http.ResponseWriter, r *http.Request) {
	// Signing a victim's browser in as someone else is a forgery too.
	if err := h.Sessions.CheckRequest(r); err != nil {
		forbidden(w, err.Error())
		return
	}
	token := BearerToken(r.Header.Get("Authorization"))
	if token == "" {
		var body struct {
			Token string `json:"token"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxSignInBody))
		if err := dec.Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			writeError(w, http.StatusBadRequest, "INVALID_INPUT", `the body must be JSON {"token": "coopr_…"}: `+err.Error())
			return
		}
		token = strings.TrimSpace(body.Token)
	}
	if token == "" {
		writeError(w, http.StatusBadRequest, "INVALID_INPUT", `no API token: send {"token": "coopr_…"} or "Authorization: Bearer coopr_…"`)
		return
	}
	p, err := h.Store.Authenticate(r.Context(), token)
	switch {
	case errors.Is(err, store.ErrUnauthenticated):
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "that API token is not valid: it may be mistyped or revoked")
		return
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "INTERNAL", "signing in is unavailable: the database did not answer")
		return
	case p.Kind != store.TokenUser:
		forbidden(w, "agent tokens serve the agent API and cannot sign in; use a user's token")
		return
	}
	secret, sess, err := h.Store.CreateSession(r.Context(), p.TokenID, h.Lifetime, h.Sessions.Idle)
	if errors.Is(err, store.ErrUnauthenticated) {
		// Revoked between the two statements.
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "that API token is not valid: it may be mistyped or revoked")
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "INTERNAL", "signing in is unavailable: the database did not answer")
		return
	}
	// A session this browser had before ends: one browser, one session.
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		_ = h.Store.EndSession(r.Context(), c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: secret, Path: "/", Expires: sess.ExpiresAt,
		MaxAge: int(time.Until(sess.ExpiresAt).Seconds()), HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: overTLS(r)})
	writeJSON(w, who(sess))
}

func (h *SignIn) current(w http.ResponseWriter, r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "not signed in")
		return
	}
	sess, err := h.Store.Session(r.Context(), c.Value, h.Sessions.Idle)
	switch {
	case errors.Is(err, store.ErrUnauthenticated):
		clearCookie(w, r)
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "the session has ended: sign in again")
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "INTERNAL", "sessions are unavailable: the database did not answer")
	default:
		writeJSON(w, who(sess))
	}
}

func (h *SignIn) signOut(w http.ResponseWriter, r *http.Request) {
	if err := h.Sessions.CheckRequest(r); err != nil {
		forbidden(w, err.Error())
		return
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if err := h.Store.EndSession(r.Context(), c.Value); err != nil {
			writeError(w, http.StatusServiceUnavailable, "INTERNAL", "signing out is unavailable: the database did not answer")
			return
		}
	}
	clearCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

func clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
}

// overTLS reports whether the browser reached us over TLS, directly or
// through a proxy that says so. Believing a forged header only makes the
// cookie stricter.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
