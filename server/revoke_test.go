package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// userToken makes a tenant admin (who sees every cluster of the tenant) of
// the tenant of admin and a token for it, returning the token's secret and
// id.
func userToken(t *testing.T, s *servertest.Server, admin, user string) (secret, id string) {
	t.Helper()
	s.Must(admin, `mutation($u: String!) { createUser(name: $u, role: ADMIN) { name } }`, map[string]any{"u": user}, &struct{}{})
	var out struct {
		CreateAPIToken struct {
			Secret string
			Token  struct{ ID string }
		}
	}
	s.Must(admin, `mutation($u: String!) { createAPIToken(input: {name: $u, user: $u}) { secret token { id } } }`,
		map[string]any{"u": user}, &out)
	return out.CreateAPIToken.Secret, out.CreateAPIToken.Token.ID
}

// Issue 17, point 4: after revokeAPIToken an open websocket kept receiving
// events and could start new subscriptions. Ending a token or a session
// (revoked, its user or tenant deleted, signed out) on one server ends its
// websockets on every server within moments, without waiting for the
// periodic re-check (an hour here): the news comes from Postgres.
func TestEndedAccessEndsWebsocketsOnEveryServer(t *testing.T) {
	w := newAttackWorld(t, 1, func(c *server.Config) { c.RateLimit, c.AuthRecheckInterval = 0, time.Hour })
	a := w.s
	b := servertest.StartWith(t, a.Config)
	db := a.Srv.Store().DB()
	events := `{"query":"subscription($id: ID!) { clusterEvents(clusterId: $id) { kind } }","variables":{"id":"` + w.clusters[0] + `"}}`
	// A tenant of its own for the case that deletes it (no clusters).
	a.Must(a.Super, `mutation { createTenant(input: {name: "gone"}) { id } }`, nil, &struct{}{})
	var gone struct{ CreateAPIToken struct{ Secret string } }
	a.Must(a.Super, `mutation { createAPIToken(input: {name: "ui", tenant: "gone"}) { secret } }`, nil, &gone)
	nowhere := `{"query":"subscription { clusterEvents(clusterId: \"00000000-0000-0000-0000-000000000000\") { kind } }"}`

	for _, tt := range []struct {
		name     string
		protocol string // the websocket's
		session  bool   // the websocket is a web UI session's, signed in on a
		// token returns the token's secret and id; end ends its access on a.
		token func(t *testing.T) (string, string)
		end   func(t *testing.T, secret, id string, ui *browser)
		// closed is the close code of the ended websocket.
		closed websocket.StatusCode
	}{
		{name: "revokeAPIToken", protocol: "graphql-transport-ws", closed: 4403,
			token: func(t *testing.T) (string, string) { return userToken(t, a, w.admin, "bob") },
			end: func(t *testing.T, _, id string, _ *browser) {
				a.Must(w.admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": id}, &struct{}{})
			}},
		{name: "revokeAPIToken, older protocol", protocol: "graphql-ws", closed: websocket.StatusNormalClosure,
			token: func(t *testing.T) (string, string) { return userToken(t, a, w.admin, "carol") },
			end: func(t *testing.T, _, id string, _ *browser) {
				a.Must(w.admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": id}, &struct{}{})
			}},
		{name: "the user deleted", protocol: "graphql-transport-ws", closed: 4403,
			token: func(t *testing.T) (string, string) { return userToken(t, a, w.admin, "dave") },
			end: func(t *testing.T, _, _ string, _ *browser) {
				// The API has no way yet; the database's cascade is what counts.
				if _, err := db.Exec(`DELETE FROM users WHERE name = 'dave'`); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the tenant deleted", protocol: "graphql-transport-ws", closed: 4403,
			token: func(t *testing.T) (string, string) { return gone.CreateAPIToken.Secret, "" },
			end: func(t *testing.T, _, _ string, _ *browser) {
				a.Must(a.Super, `mutation { deleteTenant(name: "gone") }`, nil, &struct{}{})
			}},
		{name: "revoking a session's token", protocol: "graphql-transport-ws", session: true, closed: 4403,
			token: func(t *testing.T) (string, string) { return userToken(t, a, w.admin, "erin") },
			end: func(t *testing.T, _, id string, _ *browser) {
				a.Must(w.admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": id}, &struct{}{})
			}},
		{name: "signing out", protocol: "graphql-transport-ws", session: true, closed: 4403,
			token: func(t *testing.T) (string, string) { return userToken(t, a, w.admin, "frank") },
			end: func(t *testing.T, _, _ string, ui *browser) {
				ui.request("DELETE", "/auth/session", "", nil)
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			secret, id := tt.token(t)
			sub := events
			if tt.name == "the tenant deleted" {
				sub = nowhere
			}
			// The websocket is on b; the access ends through a.
			var c *wsClient
			var ui *browser
			if tt.session {
				ui = &browser{t: t, s: a}
				ui.signIn(secret)
				conn, _, err := (&browser{t: t, s: b, cookie: ui.cookie}).dialWS(t, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = conn.CloseNow() })
				c = &wsClient{t: t, conn: conn}
				c.send(`{"type":"connection_init"}`)
				c.expect("connection_ack", "")
			} else {
				c = dialWS(t, b, tt.protocol)
				c.init(secret)
			}
			start := "subscribe"
			if tt.protocol == "graphql-ws" {
				start = "start"
			}
			c.send(`{"id":"1","type":"` + start + `","payload":` + sub + `}`)
			for {
				m, closed := c.next()
				if closed != 0 {
					t.Fatalf("closed with %d before the first answer", closed)
				}
				if m.ID == "1" {
					// A tenant with no clusters has NOT_FOUND, and the socket stays.
					if sub == nowhere || (m.Type == "next" || m.Type == "data") && !strings.Contains(string(m.Payload), "errors") {
						break
					}
					t.Fatalf("first answer %s %s, want the cluster's SNAPSHOT", m.Type, m.Payload)
				}
			}

			began := time.Now()
			tt.end(t, secret, id, ui)
			c.expectClose(tt.closed)
			t.Logf("the websocket on the other server ended %s after the change", time.Since(began).Round(time.Millisecond))

			// Nothing works with it any more, on either server.
			for _, s := range []*servertest.Server{a, b} {
				if tt.session {
					if got := (&browser{t: t, s: s, cookie: ui.cookie}).me(); got != "UNAUTHENTICATED" {
						t.Errorf("me with the ended session = %q, want UNAUTHENTICATED", got)
					}
					if code := (&browser{t: t, s: s, cookie: ui.cookie}).websocketClose(t); code != 4403 {
						t.Errorf("a new websocket of the ended session closed with %d, want 4403", code)
					}
					continue
				}
				if r := s.Do(secret, `{ me { user } }`, nil); r.Code() != "UNAUTHENTICATED" {
					t.Errorf("HTTP with the ended token: %+v, want UNAUTHENTICATED", r.Errors)
				}
				n := dialWS(t, s)
				n.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + secret + `"}}`)
				n.expectClose(4403)
			}
		})
	}
}

// A session that expires changes no row, so nobody is told: the periodic
// re-check ends its websockets.
func TestExpiredSessionEndsItsWebsockets(t *testing.T) {
	cfg := servertest.Config(t)
	cfg.AuthRecheckInterval = 200 * time.Millisecond
	s := servertest.StartWith(t, cfg)
	admin, _ := tenantTokens(t, s, "acme")
	secret, _ := userToken(t, s, admin, "bob")
	ui := &browser{t: t, s: s}
	ui.signIn(secret)
	sub := ui.subscribe(t, nil)
	c := &wsClient{t: t, conn: sub.conn}
	// A while later, still open.
	time.Sleep(3 * cfg.AuthRecheckInterval)
	c.send(`{"type":"ping"}`)
	for m, closed := c.next(); m.Type != "pong"; m, closed = c.next() {
		if closed != 0 {
			t.Fatalf("closed with %d before the session expired", closed)
		}
	}

	if _, err := s.Srv.Store().DB().ExecContext(context.Background(), `UPDATE sessions SET expires_at = now()`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	c.expectClose(4403)
	t.Logf("the expired session's websocket ended %s after its expiry", time.Since(began).Round(time.Millisecond))
}
