package server_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/coder/websocket"

	"github.com/cooprhq/coopr/server"
)

// answers reads until each of ids has had its first message and returns
// how many were a next without errors, and the codes of the others.
func (c *wsClient) answers(ids int) (accepted int, codes map[string]int) {
	c.t.Helper()
	codes = map[string]int{}
	seen := map[string]bool{}
	for len(seen) < ids {
		m, closed := c.next()
		if closed != 0 {
			c.t.Fatalf("closed with %d after %d answers", closed, len(seen))
		}
		if m.ID == "" || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		var p struct {
			Errors []struct{ Extensions struct{ Code string } }
		}
		if m.Type == "error" {
			_ = json.Unmarshal(m.Payload, &p.Errors)
		} else {
			_ = json.Unmarshal(m.Payload, &p)
		}
		if (m.Type == "next" || m.Type == "data") && len(p.Errors) == 0 {
			accepted++
		} else if len(p.Errors) > 0 {
			codes[p.Errors[0].Extensions.Code]++
		} else {
			codes[m.Type]++
		}
	}
	return accepted, codes
}

// Issue 17, point 3: one websocket once took 20,000 subscriptions at
// 22,000 goroutines and 2.25 GB. A connection runs at most
// websocket_operations at once; the rest are refused before they are read
// or run.
func TestWebsocketOperationsPerConnection(t *testing.T) {
	w := newAttackWorld(t, 1, func(c *server.Config) { c.RateLimit = 0 })
	sub := `{"query":"subscription($id: ID!) { clusterEvents(clusterId: $id) { kind } }","variables":{"id":"` + w.clusters[0] + `"}}`
	for _, proto := range []struct{ name, subscribe, complete string }{
		{"graphql-transport-ws", "subscribe", "complete"},
		{"graphql-ws", "start", "stop"},
	} {
		t.Run(proto.name, func(t *testing.T) {
			c := dialWS(t, w.s, proto.name)
			c.init(w.alice)
			g0, h0 := runtime.NumGoroutine(), liveHeap()
			const flood = 300
			for i := range flood {
				c.send(fmt.Sprintf(`{"id":"%d","type":"%s","payload":%s}`, i, proto.subscribe, sub))
			}
			accepted, codes := c.answers(flood)
			if accepted != 50 || codes["LIMIT_EXCEEDED"] != flood-50 {
				t.Errorf("%d subscriptions accepted and %v refused, want 50 and %d LIMIT_EXCEEDED", accepted, codes, flood-50)
			}
			goroutines, held := runtime.NumGoroutine()-g0, int64(liveHeap())-int64(h0)
			t.Logf("%d goroutines and %.1f MB held by %d subscriptions", goroutines, float64(held)/(1<<20), accepted)
			if goroutines > 50*4 {
				t.Errorf("%d more goroutines", goroutines)
			}
			if held > 8<<20 {
				t.Errorf("%.1f MB more live heap", float64(held)/(1<<20))
			}
			// Ending one makes room for one.
			c.send(fmt.Sprintf(`{"id":"0","type":"%s"}`, proto.complete))
			waitFor(t, "the ended subscription to go", func() bool {
				c.send(fmt.Sprintf(`{"id":"again","type":"%s","payload":%s}`, proto.subscribe, sub))
				for {
					m, _ := c.next()
					if m.ID != "again" {
						continue
					}
					if m.Type == "next" || m.Type == "data" {
						return true
					}
					if proto.subscribe == "subscribe" {
						return false
					}
					c.expect("complete", "again")
					return false
				}
			})
		})
	}
}

// Websocket messages take from the token's rate as HTTP requests do.
func TestWebsocketMessagesAreRateLimited(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) { c.RateLimit, c.RateBurst = 0.01, 6 })
	c := dialWS(t, w.s)
	c.init(w.alice)
	// Two requests of the burst: a ping and a query.
	c.send(`{"type":"ping"}`)
	c.expect("pong", "")
	c.send(`{"id":"q","type":"subscribe","payload":{"query":"{ __typename }"}}`)
	c.expect("next", "q")
	c.expect("complete", "q")
	// Two over HTTP, the same bucket.
	for range 2 {
		if r, err := w.s.Request(w.alice, `{ __typename }`, nil); err != nil || r.Code() != "" {
			t.Fatalf("HTTP request within the burst: %v %+v", err, r)
		}
	}
	const n = 5
	for i := range n {
		c.send(fmt.Sprintf(`{"id":"%d","type":"subscribe","payload":{"query":"{ __typename }"}}`, i))
	}
	accepted, codes := c.answers(n)
	if accepted != 2 || codes["RATE_LIMITED"] != n-2 {
		t.Errorf("%d accepted and %v refused, want 2 and %d RATE_LIMITED", accepted, codes, n-2)
	}
	if r, err := w.s.Request(w.alice, `{ __typename }`, nil); err != nil || r.Code() != "RATE_LIMITED" {
		t.Errorf("HTTP request over the rate: %v %+v", err, r)
	}
}

// A token holds at most websockets_per_token websockets open on a server.
func TestWebsocketsPerToken(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) { c.RateLimit, c.WebsocketsPerToken = 0, 2 })
	a, b := dialWS(t, w.s), dialWS(t, w.s)
	a.init(w.alice)
	b.init(w.alice)
	third := dialWS(t, w.s)
	third.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + w.alice + `"}}`)
	third.expectClose(4403)
	// Another token is counted apart.
	dialWS(t, w.s).init(w.admin)
	// A closed one is given back.
	_ = a.conn.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "a websocket to be given back", func() bool {
		c := dialWS(t, w.s)
		c.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + w.alice + `"}}`)
		m, closed := c.next()
		return closed == 0 && m.Type == "connection_ack"
	})
}
