package graph

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cooprhq/coopr/solver"
)

// No log line or answer repeats a request's body: an internal error
// carrying a 1 MB value is logged, and a message answered, cut.
func TestPresentErrorClips(t *testing.T) {
	var buf bytes.Buffer
	present := PresentError(slog.New(slog.NewTextHandler(&buf, nil)))
	huge := strings.Repeat("é", 1<<19) // 1 MB
	out := present(context.Background(), errors.New("pq: value too long: "+huge))
	if out.Extensions["code"] != CodeInternal || strings.Contains(out.Message, "é") {
		t.Errorf("internal error answered %q", out.Message)
	}
	if n := buf.Len(); n > 2*maxErrorText {
		t.Errorf("a log line of %d bytes", n)
	}
	out = present(context.Background(), invalid("input.name", "%s", huge))
	if len(out.Message) > maxErrorText+100 || !utf8.ValidString(out.Message) {
		t.Errorf("an answer of %d bytes (valid UTF-8: %v)", len(out.Message), utf8.ValidString(out.Message))
	}
}

func TestCleanOutput(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"ok", 10, "ok"},
		{"a\x00b", 0, "a\uFFFDb"},
		{"bad \xff utf-8", 0, "bad \uFFFD utf-8"},
		{"ééé", 5, "éé"}, // cut on a rune's start
		{strings.Repeat("x", 20), 8, strings.Repeat("x", 8)},
	} {
		if got := cleanOutput(c.in, c.max); got != c.want {
			t.Errorf("cleanOutput(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// A solver failure with several problems lists them one per line in
// extensions.reasons, for the UI's explanation of why no layout exists.
func TestPresentSolverReasons(t *testing.T) {
	present := PresentError(slog.New(slog.NewTextHandler(io.Discard, nil)))
	cases := []struct {
		name string
		err  error
		want []string
	}{
		{"several", &solver.Error{Kind: solver.KindNoLayout, Message: "a; b", Reasons: []string{"a", "b"}}, []string{"a", "b"}},
		{"one", &solver.Error{Kind: solver.KindConflict, Message: "web conflicts with db"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := present(context.Background(), c.err)
			if out.Extensions["code"] != CodeInvalidInput || out.Extensions["kind"] == nil {
				t.Fatalf("extensions %v", out.Extensions)
			}
			got, _ := out.Extensions["reasons"].([]string)
			if !slices.Equal(got, c.want) {
				t.Errorf("reasons %v, want %v", got, c.want)
			}
		})
	}
}
