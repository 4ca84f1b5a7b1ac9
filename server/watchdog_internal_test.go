package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent/sdnotify"
)

// notifySocket opens a notification socket as systemd would and names it
// in NOTIFY_SOCKET; messages arrive on the returned channel.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	ch := make(chan string, 1000)
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return ch
}

// The watchdog is fed at a tick only while the server is healthy; while it
// is not, the tick says why in STATUS= instead.
func TestFeedWatchdogOnlyWhileHealthy(t *testing.T) {
	ch := notifySocket(t)
	var down atomic.Pointer[error]
	health := func(context.Context) error {
		if err := down.Load(); err != nil {
			return *err
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	tick := make(chan time.Time)
	done := make(chan struct{})
	go func() {
		defer close(done)
		feedWatchdog(ctx, tick, sdnotify.New(slog.New(slog.NewTextHandler(io.Discard, nil))).Notify, health)
	}()
	defer func() {
		cancel()
		<-done
	}()
	next := func() string {
		t.Helper()
		select {
		case m := <-ch:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
			return ""
		}
	}
	if m := next(); !strings.Contains(m, "WATCHDOG=1") {
		t.Fatalf("first check while healthy: %q", m)
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"healthy", nil},
		{"scheduler down", errors.New("the engine is down, waiting to run again")},
		{"still down", errors.New("the engine is down, waiting to run again")},
		{"http down", errors.New("the HTTP server is not serving")},
		{"recovered", nil},
	} {
		if c.err != nil {
			down.Store(&c.err)
		} else {
			down.Store(nil)
		}
		tick <- time.Now()
		m := next()
		if c.err == nil && m != "WATCHDOG=1\nSTATUS=serving" {
			t.Errorf("%s: %q, want the watchdog fed", c.name, m)
		}
		if c.err != nil && (strings.Contains(m, "WATCHDOG") || m != "STATUS=unhealthy: "+c.err.Error()) {
			t.Errorf("%s: %q, want only STATUS naming the problem", c.name, m)
		}
	}
}
