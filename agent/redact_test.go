package agent

import (
	"testing"

	"github.com/cooprhq/coopr/drivers"
)

func TestRedactor(t *testing.T) {
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZWQyNTUxOQAAACDcoopr\n-----END OPENSSH PRIVATE KEY-----\n"
	r := newRedactor(&drivers.Task{Secrets: map[string]map[string]any{
		"ssh": {"privateKey": key, "port": "22"},
		"vm":  {"token": "tok-0123456789", "nested": map[string]any{"list": []any{"inner-secret-value"}}},
	}})
	for _, c := range []struct{ in, want string }{
		{"key line b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ here", "key line [redacted] here"},
		{"using tok-0123456789 and inner-secret-value", "using [redacted] and [redacted]"},
		{"listening on port 22", "listening on port 22"}, // short values stay: they are ordinary words
		{"nothing secret", "nothing secret"},
	} {
		if got := r.line(c.in); got != c.want {
			t.Errorf("line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
