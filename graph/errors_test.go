package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
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

// Each package's not-found and conflict errors get one code, and keep the
// message they had before the kinds were shared.
func TestPresentErrorKinds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		code, msg string
	}{
		{"store not found", fmt.Errorf("tenant %q: %w", "acme", store.ErrNotFound), CodeNotFound, `tenant "acme": not found`},
		{"store conflict", fmt.Errorf("user %q: %w", "bob", store.ErrConflict), CodeConflict, `user "bob": already exists`},
		{"store state", fmt.Errorf("%w: the superadmin tenant cannot be deleted", store.ErrState), CodeConflict, "not allowed now: the superadmin tenant cannot be deleted"},
		{"engine not found", fmt.Errorf("job %s: %w", "7", engine.ErrNotFound), CodeNotFound, "job 7: NOT_FOUND"},
		{"engine conflict", fmt.Errorf("%w: job 7 is RUNNING", engine.ErrConflict), CodeConflict, "CONFLICT: job 7 is RUNNING"},
		{"control not found", fmt.Errorf("cluster %s: %w", "7", control.ErrNotFound), CodeNotFound, "cluster 7: not found"},
		{"control conflict", fmt.Errorf("%w: cluster 7 is TERMINATED", control.ErrConflict), CodeConflict, "conflict: cluster 7 is TERMINATED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := PresentError(slog.New(slog.NewTextHandler(io.Discard, nil)))(context.Background(), tc.err)
			if out.Extensions["code"] != tc.code || out.Message != tc.msg {
				t.Errorf("got %v %q, want %s %q", out.Extensions["code"], out.Message, tc.code, tc.msg)
			}
		})
	}
}
