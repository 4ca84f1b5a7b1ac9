package client

import (
	"context"
	"net"
	"strings"
	"testing"
)

func TestResponseErr(t *testing.T) {
	for _, tc := range []struct {
		code, msg, want string
	}{
		{"CONFLICT", "conflict: cluster 7 is TERMINATED", "CONFLICT: cluster 7 is TERMINATED"},
		{"NOT_FOUND", "cluster 1: not found", "NOT_FOUND: cluster 1: not found"},
		{"", "boom", "boom"},
	} {
		e := Error{Message: tc.msg}
		if tc.code != "" {
			e.Extensions = map[string]any{"code": tc.code}
		}
		r := &Response{Errors: []Error{e}}
		if got := r.Err().Error(); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.code, tc.msg, got, tc.want)
		}
	}
}

// A server that is not there is named, with where its address came from.
func TestDoNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = (&Client{URL: url}).Do(context.Background(), `{ me { name } }`, nil)
	if err == nil || !strings.Contains(err.Error(), "no coopr server answers at "+url) {
		t.Fatalf("err %v", err)
	}
}
