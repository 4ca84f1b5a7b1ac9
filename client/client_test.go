package client

import "testing"

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
