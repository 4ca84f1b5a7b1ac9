package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/store/storetest"
)

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsClient is one graphql-transport-ws connection of a protocol test.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWS(t *testing.T, s *servertest.Server, protocols ...string) *wsClient {
	t.Helper()
	if protocols == nil {
		protocols = []string{"graphql-transport-ws"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	return &wsClient{t: t, conn: conn}
}

func (c *wsClient) send(raw string) {
	c.t.Helper()
	if err := c.conn.Write(context.Background(), websocket.MessageText, []byte(raw)); err != nil {
		c.t.Fatalf("send %s: %v", raw, err)
	}
}

// next reads a message; closed is the close code when the server closed
// the connection instead.
func (c *wsClient) next() (m wsMsg, closed websocket.StatusCode) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, data, err := c.conn.Read(ctx)
	if err != nil {
		var ce websocket.CloseError
		if errors.As(err, &ce) {
			return wsMsg{}, ce.Code
		}
		c.t.Fatalf("read: %v", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("server sent %s: %v", data, err)
	}
	return m, 0
}

func (c *wsClient) expect(typ, id string) wsMsg {
	c.t.Helper()
	m, closed := c.next()
	if closed != 0 || m.Type != typ || m.ID != id {
		c.t.Fatalf("got %+v (closed %d), want %s for %q", m, closed, typ, id)
	}
	return m
}

func (c *wsClient) expectClose(code websocket.StatusCode) {
	c.t.Helper()
	for {
		m, closed := c.next()
		if closed == code {
			return
		}
		if closed != 0 {
			c.t.Fatalf("closed with %d, want %d", closed, code)
		}
		c.t.Logf("before the close: %+v", m)
	}
}

func (c *wsClient) init(token string) {
	c.t.Helper()
	c.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + token + `"}}`)
	c.expect("connection_ack", "")
}

// The graphql-transport-ws protocol as its specification has it: every
// refusal closes with the code it names; operations run, stream and end.
func TestWebsocketProtocol(t *testing.T) {
	dsn, _ := storetest.NewDSN(t)
	_, prefix := queuetest.New(t)
	cfg := server.Defaults()
	cfg.DatabaseURL, cfg.RedisURL, cfg.RedisPrefix = dsn, queuetest.URL(), prefix
	cfg.RateLimit, cfg.AgentRateLimit = 0, 0
	cfg.WebsocketInitTimeout = 300 * time.Millisecond
	s := servertest.StartWith(t, cfg)
	const agents = `{"query":"subscription { agentEvents { kind } }"}`
	// The server's own subscriber (the engine's feed) joins the hub once
	// the hub is ready; subscriptions of earlier cases end as their
	// sockets' closes reach the server, a moment after each case: a case
	// counting the hub's subscribers starts from that one alone.
	waitFor(t, "the engine's feed to subscribe", func() bool { return s.Srv.Hub().Subscribers() == 1 })
	const base = 1

	cases := []struct {
		name string
		run  func(t *testing.T, c *wsClient)
	}{
		{"ping is answered with pong", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"type":"ping","payload":{"n":1}}`)
			if m := c.expect("pong", ""); string(m.Payload) != `{"n":1}` {
				t.Errorf("pong payload %s, want the ping's", m.Payload)
			}
		}},
		{"a query answers next then complete", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"id":"q","type":"subscribe","payload":{"query":"{ __typename }"}}`)
			if m := c.expect("next", "q"); string(m.Payload) != `{"data":{"__typename":"Query"}}` {
				t.Errorf("next payload %s", m.Payload)
			}
			c.expect("complete", "q")
		}},
		{"an invalid document answers an error naming the field, and nothing more", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"id":"q","type":"subscribe","payload":{"query":"{ nosuchfield }"}}`)
			if m := c.expect("error", "q"); !strings.Contains(string(m.Payload), "nosuchfield") {
				t.Fatalf("error %s does not name the field", m.Payload)
			}
			c.send(`{"type":"ping"}`)
			c.expect("pong", "")
		}},
		{"without a token, subscriptions answer UNAUTHENTICATED", func(t *testing.T, c *wsClient) {
			c.send(`{"type":"connection_init"}`)
			c.expect("connection_ack", "")
			c.send(`{"id":"a","type":"subscribe","payload":` + agents + `}`)
			m, _ := c.next()
			if !strings.Contains(string(m.Payload), "UNAUTHENTICATED") {
				t.Fatalf("got %+v, want UNAUTHENTICATED", m)
			}
		}},
		{"an error message ends an operation without complete", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"id":"e","type":"subscribe","payload":5}`)
			c.expect("error", "e")
			c.send(`{"type":"ping"}`)
			c.expect("pong", "") // and no complete in between
		}},
		{"a bad token is forbidden", func(t *testing.T, c *wsClient) {
			c.send(`{"type":"connection_init","payload":{"Authorization":"Bearer nope"}}`)
			c.expectClose(4403)
		}},
		{"subscribe before connection_init is unauthorized", func(t *testing.T, c *wsClient) {
			c.send(`{"id":"a","type":"subscribe","payload":` + agents + `}`)
			c.expectClose(4401)
		}},
		{"a second connection_init", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"type":"connection_init"}`)
			c.expectClose(4429)
		}},
		{"no connection_init in time", func(t *testing.T, c *wsClient) {
			c.expectClose(4408)
		}},
		{"not JSON", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"type":`)
			c.expectClose(4400)
		}},
		{"an unknown message type", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"type":"start","id":"a"}`)
			c.expectClose(4400)
		}},
		{"an id in use", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			c.send(`{"id":"a","type":"subscribe","payload":` + agents + `}`)
			c.send(`{"id":"a","type":"subscribe","payload":` + agents + `}`)
			c.expectClose(4409)
		}},
		{"complete ends a subscription and frees its id", func(t *testing.T, c *wsClient) {
			c.init(s.Super)
			waitFor(t, "earlier cases' subscriptions to end", func() bool { return s.Srv.Hub().Subscribers() == base })
			before := base
			c.send(`{"id":"a","type":"subscribe","payload":` + agents + `}`)
			waitFor(t, "the subscription to start", func() bool { return s.Srv.Hub().Subscribers() == before+1 })
			c.send(`{"id":"a","type":"complete"}`)
			c.send(`{"id":"a","type":"subscribe","payload":{"query":"{ __typename }"}}`)
			c.expect("next", "a")
			c.expect("complete", "a")
			waitFor(t, "the completed subscription to end", func() bool { return s.Srv.Hub().Subscribers() == before })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, dialWS(t, s)) })
	}

	t.Run("a server shutting down closes with 1001", func(t *testing.T) {
		s := servertest.Start(t)
		c := dialWS(t, s)
		c.init(s.Super)
		c.send(`{"id":"a","type":"subscribe","payload":` + agents + `}`)
		go func() { _ = s.Stop() }()
		c.expectClose(websocket.StatusGoingAway)
	})
	t.Run("clients of the older graphql-ws protocol are still served", func(t *testing.T) {
		c := dialWS(t, s, "graphql-ws")
		if p := c.conn.Subprotocol(); p != "graphql-ws" {
			t.Fatalf("negotiated %q", p)
		}
		c.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + s.Super + `"}}`)
		c.expect("connection_ack", "")
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 5s for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
