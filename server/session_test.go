package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// browser makes the requests a page of the server's own origin makes.
type browser struct {
	t      *testing.T
	s      *servertest.Server
	cookie *http.Cookie
}

// request sends method path with body; header holds the headers to set,
// where "" deletes one of the defaults (Origin and the CSRF header).
func (b *browser) request(method, path, body string, header map[string]string) *http.Response {
	b.t.Helper()
	req, err := http.NewRequest(method, b.s.URL+path, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", b.s.URL)
	req.Header.Set("X-Coopr-CSRF", "1")
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func sessionCookie(resp *http.Response) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == "coopr_session" {
			return c
		}
	}
	return nil
}

// signIn exchanges token for a session and keeps its cookie.
func (b *browser) signIn(token string) map[string]any {
	b.t.Helper()
	resp := b.request("POST", "/auth/session", `{"token":"`+token+`"}`, nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("sign in: %d %s", resp.StatusCode, body)
	}
	b.cookie = sessionCookie(resp)
	if b.cookie == nil {
		b.t.Fatalf("sign in set no session cookie: %v", resp.Header["Set-Cookie"])
	}
	var who map[string]any
	if err := json.Unmarshal(body, &who); err != nil {
		b.t.Fatal(err)
	}
	return who
}

// graphql posts query as the page would (extra headers as in request) and
// returns the status and the first error's code ("" for none).
func (b *browser) graphql(query string, header map[string]string) (int, string, map[string]any) {
	b.t.Helper()
	q, _ := json.Marshal(map[string]string{"query": query})
	resp := b.request("POST", "/graphql", string(q), header)
	var out struct {
		Data   map[string]any
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		b.t.Fatalf("POST /graphql: %d, not JSON: %v", resp.StatusCode, err)
	}
	code := ""
	if len(out.Errors) > 0 {
		code, _ = out.Errors[0].Extensions["code"].(string)
	}
	return resp.StatusCode, code, out.Data
}

func (b *browser) me() string {
	b.t.Helper()
	_, code, data := b.graphql(`{ me { user tenant { name } } }`, nil)
	if code != "" {
		return code
	}
	me, _ := data["me"].(map[string]any)
	return me["user"].(string)
}

func TestSignIn(t *testing.T) {
	s := servertest.Start(t)
	admin, user := tenantTokens(t, s, "acme")
	var agent struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &agent)

	b := &browser{t: t, s: s}
	who := b.signIn(user)
	if who["user"] != "alice" || who["tenant"] != "acme" || who["role"] != "USER" || who["superadmin"] != false || who["expiresAt"] == "" {
		t.Errorf("sign in as alice answered %v", who)
	}
	c := b.cookie
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || len(c.Value) < 40 {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP, a long secret", c)
	}
	if lifetime := time.Until(c.Expires); lifetime < 7*24*time.Hour-time.Minute || lifetime > 7*24*time.Hour {
		t.Errorf("cookie expires in %s, want the session lifetime (7 days)", lifetime)
	}
	if got := b.me(); got != "alice" {
		t.Errorf("me with the cookie = %q, want alice", got)
	}
	if who := (&browser{t: t, s: s}).signIn(admin); who["role"] != "ADMIN" {
		t.Errorf("sign in as acme's admin answered %v", who)
	}

	// Through a TLS-terminating proxy the cookie is Secure.
	resp := b.request("POST", "/auth/session", "", map[string]string{"Authorization": "Bearer " + user, "X-Forwarded-Proto": "https"})
	if c := sessionCookie(resp); resp.StatusCode != http.StatusOK || c == nil || !c.Secure {
		t.Errorf("sign in behind TLS with a bearer header: %d, cookie %+v, want 200 and a Secure cookie", resp.StatusCode, c)
	}

	var tok struct {
		CreateAPIToken struct {
			Secret string
			Token  struct{ ID string }
		}
	}
	s.Must(admin, `mutation { createAPIToken(input: {name: "revoked", user: "alice"}) { secret token { id } } }`, nil, &tok)
	s.Must(admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": tok.CreateAPIToken.Token.ID}, &struct{}{})
	for _, tt := range []struct {
		name, body string
		header     map[string]string
		status     int
	}{
		{"a mistyped token", `{"token":"coopr_nope"}`, nil, http.StatusUnauthorized},
		{"not a token", `{"token":"hello"}`, nil, http.StatusUnauthorized},
		{"a revoked token", `{"token":"` + tok.CreateAPIToken.Secret + `"}`, nil, http.StatusUnauthorized},
		{"an agent token", `{"token":"` + agent.CreateAPIToken.Secret + `"}`, nil, http.StatusForbidden},
		{"no token", `{}`, nil, http.StatusBadRequest},
		{"not JSON", `token=x`, nil, http.StatusBadRequest},
		{"no CSRF header", `{"token":"` + user + `"}`, map[string]string{"X-Coopr-CSRF": ""}, http.StatusForbidden},
		{"another site's page", `{"token":"` + user + `"}`, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"no Origin nor Referer", `{"token":"` + user + `"}`, map[string]string{"Origin": ""}, http.StatusForbidden},
		{"a sandboxed page", `{"token":"` + user + `"}`, map[string]string{"Origin": "null"}, http.StatusForbidden},
	} {
		resp := (&browser{t: t, s: s}).request("POST", "/auth/session", tt.body, tt.header)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.status || sessionCookie(resp) != nil {
			t.Errorf("sign in with %s: %d %s, cookie %v; want %d and no cookie", tt.name, resp.StatusCode, body, sessionCookie(resp), tt.status)
		}
		var e struct{ Errors []struct{ Message string } }
		if json.Unmarshal(body, &e) != nil || len(e.Errors) != 1 || e.Errors[0].Message == "" {
			t.Errorf("sign in with %s: body %s, want {\"errors\": [{\"message\": …}]}", tt.name, body)
		}
	}
	// A same-origin Referer stands in for a missing Origin.
	resp = (&browser{t: t, s: s}).request("POST", "/auth/session", `{"token":"`+user+`"}`,
		map[string]string{"Origin": "", "Referer": s.URL + "/signin"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("sign in with a same-origin Referer and no Origin: %d, want 200", resp.StatusCode)
	}
}

func TestSessionCSRF(t *testing.T) {
	s := servertest.Start(t)
	_, user := tenantTokens(t, s, "acme")
	b := &browser{t: t, s: s}
	b.signIn(user)
	const write = `mutation { createAPIToken(input: {name: "csrf"}) { secret } }`
	for _, tt := range []struct {
		name   string
		header map[string]string
	}{
		{"no CSRF header", map[string]string{"X-Coopr-CSRF": ""}},
		{"another site's Origin", map[string]string{"Origin": "https://evil.example"}},
		{"a sibling origin", map[string]string{"Origin": strings.Replace(s.URL, "127.0.0.1", "localhost", 1)}},
		{"another site's Referer and no Origin", map[string]string{"Origin": "", "Referer": "https://evil.example/page"}},
		{"no Origin nor Referer", map[string]string{"Origin": ""}},
	} {
		status, code, data := b.graphql(write, tt.header)
		if status != http.StatusForbidden || code != "FORBIDDEN" || data != nil {
			t.Errorf("cookie POST with %s: %d %s %v, want 403 FORBIDDEN and nothing done", tt.name, status, code, data)
		}
	}
	var tokens struct{ APITokens []struct{ Name string } }
	s.Must(user, `{ apiTokens { name } }`, nil, &tokens)
	for _, tk := range tokens.APITokens {
		if tk.Name == "csrf" {
			t.Errorf("a refused request made a token")
		}
	}
	if status, code, _ := b.graphql(write, nil); status != http.StatusOK || code != "" {
		t.Errorf("cookie POST from our own page: %d %s, want 200", status, code)
	}
	// A read needs the header too, not an Origin (browsers send none on a
	// same-origin GET).
	for _, tt := range []struct {
		header map[string]string
		status int
	}{
		{map[string]string{"Origin": ""}, http.StatusOK},
		{map[string]string{"Origin": "", "X-Coopr-CSRF": ""}, http.StatusForbidden},
	} {
		resp := b.request("GET", "/graphql?query=%7B+me+%7B+user+%7D+%7D", "", tt.header)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.status || (tt.status == http.StatusOK && !strings.Contains(string(body), "alice")) {
			t.Errorf("cookie GET with %v: %d %s, want %d", tt.header, resp.StatusCode, body, tt.status)
		}
	}

	// Bearer requests are as they were: no header, any Origin.
	bearer := &browser{t: t, s: s}
	status, code, _ := bearer.graphql(`{ me { user } }`, map[string]string{"Authorization": "Bearer " + user,
		"X-Coopr-CSRF": "", "Origin": "https://evil.example"})
	if status != http.StatusOK || code != "" {
		t.Errorf("bearer POST with a foreign Origin and no CSRF header: %d %s, want 200", status, code)
	}
	// A bearer token wins over a cookie, whose checks then do not apply.
	status, code, _ = b.graphql(`{ me { user } }`, map[string]string{"Authorization": "Bearer " + user, "X-Coopr-CSRF": "", "Origin": ""})
	if status != http.StatusOK || code != "" {
		t.Errorf("bearer POST with a cookie and no CSRF header: %d %s, want 200", status, code)
	}
	// The CLI's client is unaffected.
	if r := s.Do(user, `{ me { user } }`, nil); r.Code() != "" {
		t.Errorf("bearer client: %+v", r.Errors)
	}
}

func TestAllowedOriginsMayUseSessions(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.AllowedOrigins = []string{"ui.example:8443"}
	s := servertest.StartWith(t, cfg)
	_, user := tenantTokens(t, s, "acme")
	b := &browser{t: t, s: s}
	b.signIn(user)
	if status, code, _ := b.graphql(`{ me { user } }`, map[string]string{"Origin": "https://ui.example:8443"}); status != http.StatusOK || code != "" {
		t.Errorf("cookie POST from an allowed origin: %d %s, want 200", status, code)
	}
	if status, _, _ := b.graphql(`{ me { user } }`, map[string]string{"Origin": "https://ui.example"}); status != http.StatusForbidden {
		t.Errorf("cookie POST from another port of the allowed host: %d, want 403", status)
	}
}

func TestSignOut(t *testing.T) {
	s := servertest.Start(t)
	_, user := tenantTokens(t, s, "acme")
	b := &browser{t: t, s: s}
	b.signIn(user)
	old := b.cookie
	if resp := b.request("GET", "/auth/session", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /auth/session while signed in: %d", resp.StatusCode)
	}
	// Signing out is a write: another site cannot sign the user out.
	if resp := b.request("DELETE", "/auth/session", "", map[string]string{"Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("sign out from another site: %d, want 403", resp.StatusCode)
	}
	if got := b.me(); got != "alice" {
		t.Fatalf("after a refused sign-out, me = %q", got)
	}
	resp := b.request("DELETE", "/auth/session", "", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sign out: %d, want 204", resp.StatusCode)
	}
	if c := sessionCookie(resp); c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Errorf("sign out cookie %+v, want it cleared", c)
	}
	// The server forgot the session: the old cookie, kept by a copy of
	// it, no longer works.
	b.cookie = old
	if got := b.me(); got != "UNAUTHENTICATED" {
		t.Errorf("me with the signed-out cookie = %q, want UNAUTHENTICATED", got)
	}
	if resp := b.request("GET", "/auth/session", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /auth/session with the signed-out cookie: %d, want 401", resp.StatusCode)
	}
	if resp := b.request("DELETE", "/auth/session", "", nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("signing out twice: %d, want 204", resp.StatusCode)
	}
	// The token itself lives on.
	if r := s.Do(user, `{ me { user } }`, nil); r.Code() != "" {
		t.Errorf("the token after signing out: %+v", r.Errors)
	}
}

func TestRevokingTheTokenEndsItsSessions(t *testing.T) {
	s := servertest.Start(t)
	admin, _ := tenantTokens(t, s, "acme")
	var tok struct {
		CreateAPIToken struct {
			Secret string
			Token  struct{ ID string }
		}
	}
	s.Must(admin, `mutation { createAPIToken(input: {name: "ui", user: "alice"}) { secret token { id } } }`, nil, &tok)
	b := &browser{t: t, s: s}
	b.signIn(tok.CreateAPIToken.Secret)
	sub := b.subscribe(t, nil)
	sub.close()
	s.Must(admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": tok.CreateAPIToken.Token.ID}, &struct{}{})
	if got := b.me(); got != "UNAUTHENTICATED" {
		t.Errorf("me after the token was revoked = %q, want UNAUTHENTICATED", got)
	}
	// A websocket opened now is refused at connection_init.
	if code := b.websocketClose(t); code != 4403 {
		t.Errorf("websocket after the token was revoked closed with %d, want 4403", code)
	}

	// Deleting the tenant ends its users' sessions.
	s.Must(s.Super, `mutation { createTenant(input: {name: "gone"}) { id } }`, nil, &struct{}{})
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "ui", tenant: "gone"}) { secret } }`, nil, &tok)
	b2 := &browser{t: t, s: s}
	b2.signIn(tok.CreateAPIToken.Secret)
	s.Must(s.Super, `mutation { deleteTenant(name: "gone") }`, nil, &struct{}{})
	if got := b2.me(); got != "UNAUTHENTICATED" {
		t.Errorf("me after the tenant was deleted = %q, want UNAUTHENTICATED", got)
	}
}

type wsSub struct {
	conn *websocket.Conn
	ctx  context.Context
}

func (w *wsSub) close() { _ = w.conn.Close(websocket.StatusNormalClosure, "") }

// dialWS opens /graphql's websocket as the page would, with the cookie and
// header overrides as in request.
func (b *browser) dialWS(t *testing.T, header map[string]string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	h.Set("Origin", b.s.URL)
	if b.cookie != nil {
		h.Set("Cookie", b.cookie.Name+"="+b.cookie.Value)
	}
	for k, v := range header {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.s.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h})
}

// subscribe runs a subscription that needs a principal over a websocket
// authenticated by the cookie alone and reads its first event.
func (b *browser) subscribe(t *testing.T, header map[string]string) *wsSub {
	t.Helper()
	conn, _, err := b.dialWS(t, header)
	if err != nil {
		t.Fatalf("websocket with the session cookie: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	w := &wsSub{conn: conn, ctx: ctx}
	if err := wsjson.Write(ctx, conn, map[string]any{"type": "connection_init"}); err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Type    string
		Payload json.RawMessage
	}
	if err := wsjson.Read(ctx, conn, &msg); err != nil || msg.Type != "connection_ack" {
		t.Fatalf("connection_init: %v %+v", err, msg)
	}
	// A cluster that does not exist: NOT_FOUND needs a principal;
	// without one it would be UNAUTHENTICATED.
	if err := wsjson.Write(ctx, conn, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { clusterEvents(clusterId: "00000000-0000-0000-0000-000000000000") { kind } }`}}); err != nil {
		t.Fatal(err)
	}
	if err := wsjson.Read(ctx, conn, &msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(msg.Payload), "NOT_FOUND") {
		t.Fatalf("subscription over the cookie's websocket: %s %s, want NOT_FOUND (signed in)", msg.Type, msg.Payload)
	}
	return w
}

// websocketClose opens a websocket with the cookie, sends connection_init
// and returns the close code the server answers with.
func (b *browser) websocketClose(t *testing.T) websocket.StatusCode {
	t.Helper()
	conn, _, err := b.dialWS(t, nil)
	if err != nil {
		t.Fatalf("websocket: %v", err)
	}
	defer conn.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := wsjson.Write(ctx, conn, map[string]any{"type": "connection_init"}); err != nil {
		t.Fatal(err)
	}
	var msg map[string]any
	err = wsjson.Read(ctx, conn, &msg)
	return websocket.CloseStatus(err)
}

func TestSessionWebsocket(t *testing.T) {
	s := servertest.Start(t)
	_, user := tenantTokens(t, s, "acme")
	b := &browser{t: t, s: s}
	b.signIn(user)
	b.subscribe(t, nil).close()
	for _, tt := range []struct {
		name   string
		header map[string]string
	}{
		{"another site's page", map[string]string{"Origin": "https://evil.example"}},
		{"no Origin", map[string]string{"Origin": ""}},
	} {
		conn, resp, err := b.dialWS(t, tt.header)
		if err == nil {
			conn.CloseNow()
		}
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			t.Errorf("websocket with the cookie from %s: %v (HTTP %d), want refused with 403", tt.name, err, status)
		}
	}
	// Signed out, the cookie's websocket is refused at connection_init.
	b.request("DELETE", "/auth/session", "", nil)
	if code := b.websocketClose(t); code != 4403 {
		t.Errorf("websocket after signing out closed with %d, want 4403", code)
	}
	// Bearer websockets are as they were, without an Origin.
	sub, err := s.Subscribe(user, `subscription { clusterEvents(clusterId: "00000000-0000-0000-0000-000000000000") { kind } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if r, _, err := sub.Next(10 * time.Second); err != nil || r.Code() != "NOT_FOUND" {
		t.Errorf("bearer subscription: %v %+v, want NOT_FOUND", err, r)
	}
}

func TestSessionSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "coopr.yaml")
	if err := os.WriteFile(file, []byte("database_url: postgres://x\nsession_idle_timeout: 30m\nsession_lifetime: 24h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := server.Load(file, func(string) string { return "" })
	if err != nil || cfg.SessionIdleTimeout != 30*time.Minute || cfg.SessionLifetime != 24*time.Hour {
		t.Fatalf("Load = %v %v %v", cfg.SessionIdleTimeout, cfg.SessionLifetime, err)
	}
	cfg.SessionIdleTimeout = 0
	if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "session_idle_timeout") {
		t.Errorf("Check with no idle timeout: %v, want an error naming session_idle_timeout", err)
	}

	// The server makes sessions of the configured lifetime.
	cfg = servertest.Config(t)
	cfg.SessionLifetime = time.Hour
	s := servertest.StartWith(t, cfg)
	_, user := tenantTokens(t, s, "acme")
	b := &browser{t: t, s: s}
	who := b.signIn(user)
	if left := time.Until(b.cookie.Expires); left > time.Hour || left < time.Hour-time.Minute {
		t.Errorf("cookie expires in %s, want the configured hour", left)
	}
	if exp, _ := time.Parse(time.RFC3339, who["expiresAt"].(string)); time.Until(exp) > time.Hour {
		t.Errorf("session expires at %v, more than an hour away", exp)
	}
}
