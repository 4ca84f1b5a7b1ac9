package sdnotify_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent/sdnotify"
)

// listen opens a notification socket as systemd would and names it in
// NOTIFY_SOCKET; messages arrive on the returned channel.
func listen(t *testing.T) <-chan string {
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
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan string, within time.Duration) string {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(within):
		t.Fatalf("no notification within %s", within)
		return ""
	}
}

func TestNotifySendsStatesVerbatim(t *testing.T) {
	ch := listen(t)
	n := sdnotify.New(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, state := range []string{"READY=1", "STATUS=2/3 slots busy", "STOPPING=1", "READY=1\nSTATUS=ready"} {
		n.Notify(state)
		if got := next(t, ch, time.Second); got != state {
			t.Errorf("sent %q, socket got %q", state, got)
		}
	}
}

func TestNotifyFailures(t *testing.T) {
	tests := []struct {
		name     string
		socket   string // "" unsets NOTIFY_SOCKET
		wantWarn int
	}{
		{"not under systemd", "", 0},
		{"socket gone", "/nonexistent/notify.sock", 1}, // warned once, not per call
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NOTIFY_SOCKET", tt.socket)
			var log bytes.Buffer
			n := sdnotify.New(slog.New(slog.NewTextHandler(&log, nil)))
			for range 3 {
				n.Notify("STATUS=x")
			}
			if got := strings.Count(log.String(), "cannot notify systemd"); got != tt.wantWarn {
				t.Errorf("%d warnings, want %d:\n%s", got, tt.wantWarn, log.String())
			}
		})
	}
}

func TestWatchdogCadence(t *testing.T) {
	ch := listen(t)
	const usec = 200_000 // WatchdogSec=200ms: a ping every 100ms
	t.Setenv("WATCHDOG_USEC", strconv.Itoa(usec))
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	n := sdnotify.New(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Watchdog(ctx) }()
	var at []time.Time
	deadline := time.After(time.Second)
collect:
	for {
		select {
		case m := <-ch:
			if m != "WATCHDOG=1" {
				t.Fatalf("unexpected notification %q", m)
			}
			at = append(at, time.Now())
		case <-deadline:
			break collect
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// One at once, then one per 100ms: ~11 in a second. A loaded machine
	// may delay ticks but a ticker never sends them early.
	if len(at) < 7 || len(at) > 12 {
		t.Fatalf("%d pings in 1s, want about 11", len(at))
	}
	// The pace is judged by the median gap, not each gap: on a loaded
	// machine (load 20+ on one core) the scheduler delays a receive by
	// 100-150 ms, and the ticker's catch-up tick then comes 40 ms after
	// it, though the watchdog asks for one every 100 ms throughout. A
	// wrong interval (all of WatchdogSec, or a quarter of it) moves the
	// median out of the band.
	gaps := make([]time.Duration, 0, len(at)-1)
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	slices.Sort(gaps)
	if median := gaps[len(gaps)/2]; median < 80*time.Millisecond || median > 130*time.Millisecond {
		t.Errorf("median gap %s, want ~100ms (gaps %v)", median, gaps)
	}
	// Stopped means stopped. Watchdog has returned, so its last ping is
	// in the socket already; a marker sent now arrives after it (the
	// reader goroutine may be slow to pass pings on, so draining what it
	// has passed so far is not enough). After the marker, nothing more.
	mark, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: os.Getenv("NOTIFY_SOCKET"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer mark.Close()
	if _, err := mark.Write([]byte("MARK")); err != nil {
		t.Fatal(err)
	}
	for next(t, ch, 10*time.Second) != "MARK" {
	}
	select {
	case m := <-ch:
		t.Errorf("%q after the watchdog stopped", m)
	case <-time.After(250 * time.Millisecond):
	}
}

func TestWatchdogOff(t *testing.T) {
	tests := []struct {
		name, usec, pid string
		wantErr         bool
	}{
		{"no WatchdogSec", "", "", false},
		{"another process is watched", "200000", "1", false},
		{"malformed", "soon", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := listen(t)
			t.Setenv("WATCHDOG_USEC", tt.usec)
			t.Setenv("WATCHDOG_PID", tt.pid)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := sdnotify.New(nil).Watchdog(ctx)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			if ctx.Err() != nil {
				t.Fatal("Watchdog kept running with the watchdog off")
			}
			select {
			case m := <-ch:
				t.Errorf("sent %q with the watchdog off", m)
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}
