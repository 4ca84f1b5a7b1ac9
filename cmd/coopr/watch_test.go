package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is output a command writes while the test reads it.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{changed: make(chan struct{})} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// await waits until the output holds s.
func (l *lockedBuffer) await(t *testing.T, s string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		l.mu.Lock()
		has, changed := strings.Contains(l.b.String(), s), l.changed
		l.mu.Unlock()
		if has {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %q within %s in:\n%s", s, within, l.String())
		}
	}
}

// A create that follows its cluster outlives the server: when the server
// goes away it says so once, reconnects when the server is back on the same
// address, and goes on to ACTIVE without printing anything twice.
func TestFollowSurvivesServerRestart(t *testing.T) {
	w := newCLIWorld(t)
	out, errOut := newLockedBuffer(), newLockedBuffer()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, []string{"cluster", "create", "single", "--name", "phoenix", "--server", w.s.URL, "--token", w.token}, out, errOut)
	}()
	// No agent yet: the cluster waits PENDING with its first tasks queued.
	out.await(t, "SNAPSHOT", 30*time.Second)

	w.s.Restart()
	errOut.await(t, "server went away (server shutting down); reconnecting…", 30*time.Second)
	errOut.await(t, "reconnected; following cluster 00000001 again", 30*time.Second)
	w.startAgent(t)

	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
	case <-ctx.Done():
		t.Fatalf("the create did not finish:\n%s%s", out, errOut)
	}
	stdout, stderr := out.String(), errOut.String()
	if stderr != "server went away (server shutting down); reconnecting…\nreconnected; following cluster 00000001 again\n" {
		t.Errorf("stderr:\n%s", stderr)
	}
	if n := strings.Count(stdout, "SNAPSHOT"); n != 1 {
		t.Errorf("%d SNAPSHOT lines, want 1 (the reconnection's repeats it):\n%s", n, stdout)
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		if len(l) > 14 && strings.Contains(l, "TASK") {
			// The line without its time: a task state printed twice.
			if seen[l[14:]] {
				t.Errorf("printed twice: %s", l)
			}
			seen[l[14:]] = true
		}
	}
	if !regexp.MustCompile(`CLUSTER .* ACTIVE`).MatchString(stdout) || !strings.Contains(stdout, `cluster 00000001 "phoenix" from single: ACTIVE`) {
		t.Errorf("stdout does not end ACTIVE:\n%s", stdout)
	}
}
