package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// notifications opens a notification socket as systemd would and names it
// in NOTIFY_SOCKET, with a watchdog of WATCHDOG_USEC; messages arrive on
// the returned channel.
func notifications(t *testing.T, watchdog time.Duration) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	t.Setenv("WATCHDOG_USEC", strconv.FormatInt(watchdog.Microseconds(), 10))
	ch := make(chan string, 10000)
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			select {
			case ch <- string(buf[:n]):
			default: // a test that stopped reading
			}
		}
	}()
	return ch
}

// await reads notifications until one contains want.
func await(t *testing.T, ch <-chan string, want string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m := <-ch:
			if strings.Contains(m, want) {
				return m
			}
		case <-timeout:
			t.Fatalf("no notification with %q", want)
		}
	}
}

// Every database connection of a server is cut (as a Postgres restart or
// an administrator's pg_terminate_backend would): its scheduler and event
// relay fail, say so to systemd's watchdog by not feeding it, run again,
// lead again, and the server schedules jobs as before.
func TestLoopsRecoverFromLostConnections(t *testing.T) {
	ch := notifications(t, 200*time.Millisecond)
	cfg := servertest.Config(t)
	cfg.LeaderTTL = time.Second
	w := worldOn(t, servertest.StartWith(t, cfg))
	await(t, ch, "WATCHDOG=1")
	db, err := sqlx.Open("postgres", cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	var before map[string]lease
	for deadline := time.Now().Add(30 * time.Second); len(before) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the server never led both loops")
		}
		before = leases(t, db)
	}
	var ended int
	if err := db.Get(&ended, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, before["engine"].App); err != nil {
		t.Fatal(err)
	}
	t.Logf("ended %d connections of %s", ended, before["engine"].App)
	m := await(t, ch, "STATUS=unhealthy")
	t.Logf("while broken: %q", m)
	await(t, ch, "WATCHDOG=1")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			var dump []string
			_ = db.Select(&dump, `SELECT a.pid || ' ' || a.state || ' ' || coalesce(a.wait_event, '') || ' ' || left(a.query, 120) || ' locks:' ||
				coalesce((SELECT string_agg(k.locktype || ':' || k.objid || ':' || k.granted, ',') FROM pg_locks k WHERE k.pid = a.pid AND k.locktype = 'advisory'), '')
				FROM pg_stat_activity a WHERE a.application_name = $1`, before["engine"].App)
			t.Fatalf("the loops did not lead again: %+v, before %+v\n%s", leases(t, db), before, strings.Join(dump, "\n"))
		}
		after := leases(t, db)
		if after["engine"].Holder != before["engine"].Holder && after["event-relay"].Holder != before["event-relay"].Holder {
			break
		}
	}
	// A loop writes its lease before it sets its gauge: /metrics may lag
	// the table by a moment.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(w.s.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var missing []string
		for _, loop := range []string{"engine", "event relay"} {
			if !strings.Contains(string(metrics), `coopr_loop_restarts_total{loop="`+loop+`"}`) {
				missing = append(missing, "no restart of the "+loop+" counted")
			}
			if !strings.Contains(string(metrics), `coopr_leading{loop="`+loop+`"} 1`) {
				missing = append(missing, "the "+loop+" does not lead by /metrics")
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(strings.Join(missing, "; "))
		}
	}
	// The scheduler works: a cluster is built.
	var cr struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.alice, `mutation { createCluster(input: {name: "after", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	w.run(t, w.alice, cr.CreateCluster.ID, "ACTIVE")
}

// redisCutter forwards connections to Redis until cut, which closes them
// all and refuses new ones, as a Redis that went away would.
type redisCutter struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newRedisCutter(t *testing.T, target string) *redisCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &redisCutter{ln: ln}
	t.Cleanup(c.cut)
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

func (c *redisCutter) cut() {
	c.ln.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// A hub that cannot start (Redis went away after Open) fails Serve, which
// so ends the process for systemd to start again, rather than leaving it
// waiting for a hub that will never be ready.
func TestServeFailsWhenTheHubCannotStart(t *testing.T) {
	cfg := servertest.Config(t)
	u, err := url.Parse(cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	cutter := newRedisCutter(t, u.Host)
	u.Host = cutter.ln.Addr().String()
	cfg.RedisURL = u.String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cutter.cut()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "event hub") {
			t.Errorf("Serve: %v, want the event hub's failure", err)
		}
	case <-time.After(60 * time.Second):
		cancel()
		<-done
		t.Fatal("Serve waited for a hub that failed")
	}
}
