package server

import (
	"context"
	"errors"
	"testing"

	"github.com/cooprhq/coopr/store"
)

// A websocket whose token was authenticated just before the news of its
// revocation came, and is counted just after, is refused: the news is
// remembered. Ending one token's or session's sockets leaves the others.
func TestTokenSocketsEnd(t *testing.T) {
	c := newTokenSockets(0, 0)
	open := func(token, session string) (context.Context, *socket, error) {
		s := &socket{}
		ctx, err := c.take(context.WithValue(context.Background(), socketKey{}, s), store.Principal{TokenID: token, Kind: store.TokenUser}, session)
		return ctx, s, err
	}
	a, _, err := open("t1", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := open("t2", "s2")
	ui, _, _ := open("t1", "s1")
	if n := c.end(sessionKey("s1")); n != 1 || ui.Err() == nil || a.Err() != nil {
		t.Errorf("ending session s1 ended %d sockets (its own ended: %v, the token's own: %v), want just its own", n, ui.Err() != nil, a.Err() != nil)
	}
	if !errors.Is(context.Cause(ui), errAccessEnded) {
		t.Errorf("cause %v, want errAccessEnded", context.Cause(ui))
	}
	if n := c.end(tokenKey("t1")); n != 2 || a.Err() == nil || b.Err() != nil {
		t.Errorf("ending token t1 ended %d sockets, want t1's (the one of s1 again) and not t2's", n)
	}
	if _, _, err := open("t1", ""); !errors.Is(err, errAccessEnded) {
		t.Errorf("a socket of t1 counted after its end: %v, want errAccessEnded", err)
	}
	if _, _, err := open("t3", "s1"); !errors.Is(err, errAccessEnded) {
		t.Errorf("a socket of session s1 counted after its end: %v, want errAccessEnded", err)
	}
	_, s, err := open("t2", "")
	if err != nil {
		t.Fatal(err)
	}
	s.release()
	if tokens, sessions := c.keys(); len(tokens) != 2 || len(sessions) != 2 {
		t.Errorf("keys %v %v, want t1, t2 and s1, s2 (ended sockets count until their connections end)", tokens, sessions)
	}
}
