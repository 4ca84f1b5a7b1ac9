package server_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cooprhq/coopr/server"
)

// lookups reads coopr_token_lookups_total from the server's metrics.
func lookups(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "coopr_token_lookups_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatal("no coopr_token_lookups_total in /metrics")
	return 0
}

func bogusToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "coopr_" + hex.EncodeToString(b)
}

// Issue 17, point 7: bogus tokens were looked up in Postgres at 4,200 a
// second. Requests without a valid token are limited per client address
// before the lookup, and a refused token is refused again without one.
func TestBadTokensAreLimitedByAddress(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) {
		c.RateLimit, c.UnauthenticatedRateLimit, c.UnauthenticatedRateBurst = 0, 0.001, 5
	})
	before := lookups(t, w.s.URL)
	codes := map[int]int{}
	for range 20 {
		status, _ := post(t, w.s.URL, bogusToken(), "{ __typename }")
		codes[status]++
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 15 {
		t.Errorf("20 bogus tokens: %v, want 5 refused (401) and then 15 limited (429)", codes)
	}
	if n := lookups(t, w.s.URL) - before; n != 5 {
		t.Errorf("%d tokens looked up, want 5", n)
	}
	if status, code := post(t, w.s.URL, "", "{ __typename }"); status != http.StatusTooManyRequests || code != "RATE_LIMITED" {
		t.Errorf("no token from a limited address: HTTP %d %s", status, code)
	}
}

// Websockets whose connection_init brings no valid token count too.
func TestAnonymousWebsocketsAreLimitedByAddress(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) {
		c.RateLimit, c.UnauthenticatedRateLimit, c.UnauthenticatedRateBurst = 0, 0.001, 3
	})
	for _, init := range []string{`{"type":"connection_init"}`, `{"type":"connection_init","payload":{"Authorization":"Bearer ` + bogusToken() + `"}}`} {
		c := dialWS(t, w.s)
		c.send(init)
		_, _ = c.next() // ack, or the close for a bad token
	}
	before := lookups(t, w.s.URL)
	c := dialWS(t, w.s) // the last try
	c.send(`{"type":"connection_init","payload":{"Authorization":"Bearer ` + bogusToken() + `"}}`)
	c.expectClose(4403)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(w.s.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a websocket from an address out of tries: %v %+v, want HTTP 429", err, resp)
	}
	if n := lookups(t, w.s.URL) - before; n != 1 {
		t.Errorf("%d tokens looked up, want 1", n)
	}
}

func TestRefusedTokensAreRemembered(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) { c.RateLimit, c.UnauthenticatedRateLimit = 0, 0 })
	before := lookups(t, w.s.URL)
	tok := bogusToken()
	for range 10 {
		if status, code := post(t, w.s.URL, tok, "{ __typename }"); status != http.StatusUnauthorized || code != "UNAUTHENTICATED" {
			t.Fatalf("bogus token: HTTP %d %s", status, code)
		}
	}
	if n := lookups(t, w.s.URL) - before; n != 1 {
		t.Errorf("one bogus token sent 10 times was looked up %d times, want once", n)
	}
	// A valid token is looked up every time, and answered.
	for range 3 {
		if status, code := post(t, w.s.URL, w.alice, "{ __typename }"); status != http.StatusOK || code != "" {
			t.Fatalf("alice: HTTP %d %s", status, code)
		}
	}
}
