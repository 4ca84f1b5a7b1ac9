package server

import (
	"net/http"
	"testing"
)

func TestClientAddress(t *testing.T) {
	for _, c := range []struct{ remote, want string }{
		{"127.0.0.1:4242", "127.0.0.1"},
		{"[::ffff:10.0.0.7]:80", "10.0.0.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:1", "2001:db8:1:2::/64"}, // the same /64: one client
		{"not an address", "not an address"},
	} {
		if got := clientAddress(&http.Request{RemoteAddr: c.remote}); got != c.want {
			t.Errorf("%s: %s, want %s", c.remote, got, c.want)
		}
	}
}
