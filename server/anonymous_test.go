package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/server"
)

// post sends a GraphQL request with token ("" for none) and returns the
// HTTP status and the first error's code.
func post(t *testing.T, url, token, query string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequest(http.MethodPost, url+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Errors []struct {
			Extensions struct{ Code string }
		}
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if len(out.Errors) == 0 {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, out.Errors[0].Extensions.Code
}

// Issue 17, point 2: a client with no valid token costs the server
// nothing beyond refusing it, and no refused document is kept. Ten
// distinct 2 MB documents, sent without a token, once left 400 MB live.
// (The heap is the test process's, server and client: a forced
// collection before each reading leaves what something still holds.)
func TestRefusedDocumentsAreNotKept(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) { c.RateLimit = 0 })
	// Parsed, each of these would hold about 20 MB.
	big := func(i int) string { return aliases(50_000, "__typename") + strings.Repeat(" ", i) }
	// Under the document size limit, each parses to about 0.6 MB and is
	// refused for its selection set of 1,400 fields.
	refused := func(i int) string { return aliases(1400, "__typename") + strings.Repeat(" ", i) }
	cases := []struct {
		name, token string
		query       func(int) string
		status      int
		code        string
	}{
		{"no token", "", big, http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"a bogus token", "nope", big, http.StatusUnauthorized, "UNAUTHENTICATED"},
		{"a user's document over the size limit", w.alice, big, http.StatusOK, "LIMIT_EXCEEDED"},
		{"a user's documents refused by a limit", w.alice, refused, http.StatusOK, "LIMIT_EXCEEDED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := liveHeap()
			for i := range 14 {
				status, code := post(t, w.s.URL, c.token, c.query(i))
				if code != c.code || (c.status != http.StatusOK && status != c.status) {
					t.Fatalf("document %d: HTTP %d %s, want HTTP %d %s", i, status, code, c.status, c.code)
				}
			}
			grew := int64(liveHeap()) - int64(before)
			t.Logf("the live heap grew by %.1f MB", float64(grew)/(1<<20))
			if grew > 3<<20 {
				t.Errorf("the live heap grew by %.1f MB over 14 refused documents", float64(grew)/(1<<20))
			}
		})
	}
}

// A websocket acknowledged without a token has its operations refused
// before their documents are parsed.
func TestAnonymousWebsocketParsesNothing(t *testing.T) {
	w := newAttackWorld(t, 0, nil)
	c := dialWS(t, w.s)
	c.send(`{"type":"connection_init"}`)
	c.expect("connection_ack", "")
	before := liveHeap()
	for i := range 8 {
		id := fmt.Sprint(i)
		doc, _ := json.Marshal(aliases(25_000, "__typename") + strings.Repeat(" ", i))
		c.send(`{"id":"` + id + `","type":"subscribe","payload":{"query":` + string(doc) + `}}`)
		m := c.expect("next", id)
		if !strings.Contains(string(m.Payload), "UNAUTHENTICATED") {
			t.Fatalf("got %s, want UNAUTHENTICATED", m.Payload)
		}
		c.expect("complete", id)
	}
	if grew := int64(liveHeap()) - int64(before); grew > 4<<20 {
		t.Errorf("the live heap grew by %.1f MB over 8 refused documents", float64(grew)/(1<<20))
	}
}
