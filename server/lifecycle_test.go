package server_test

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

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
			t.Fatalf("the loops did not lead again: %+v, before %+v", leases(t, db), before)
		}
		after := leases(t, db)
		if after["engine"].Term > before["engine"].Term && after["event-relay"].Term > before["event-relay"].Term {
			break
		}
	}
	resp, err := http.Get(w.s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, loop := range []string{"engine", "event relay"} {
		if !strings.Contains(string(metrics), `coopr_loop_restarts_total{loop="`+loop+`"}`) {
			t.Errorf("no restart of the %s counted", loop)
		}
	}
	// The scheduler works: a cluster is built.
	var cr struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.alice, `mutation { createCluster(input: {name: "after", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	w.run(t, w.alice, cr.CreateCluster.ID, "ACTIVE")
}
