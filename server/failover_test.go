package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// TestMain lets the test binary run as a coopr server process of its own
// (COOPR_TEST_SERVER_PROCESS=1, configured by the environment as `coopr
// server` is), for tests that freeze or kill a server.
func TestMain(m *testing.M) {
	if os.Getenv("COOPR_TEST_SERVER_PROCESS") == "1" {
		os.Exit(serveProcess())
	}
	os.Exit(m.Run())
}

func serveProcess() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := server.Load("", os.Getenv)
	if err != nil {
		log.Error("config", "err", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s, err := server.Open(ctx, cfg, log)
	if err != nil {
		log.Error("open", "err", err)
		return 1
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	if err := s.Serve(ctx, ln); err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// lockedBuffer collects a child's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startServerProcess runs a server process on cfg's database and Redis
// prefix; it is killed when the test ends.
func startServerProcess(t *testing.T, cfg server.Config) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "COOPR_TEST_SERVER_PROCESS=1", "COOPR_LISTEN=127.0.0.1:0",
		"COOPR_DATABASE_URL="+cfg.DatabaseURL, "COOPR_REDIS_URL="+cfg.RedisURL, "COOPR_REDIS_PREFIX="+cfg.RedisPrefix,
		"COOPR_CREDENTIAL_KEY="+cfg.CredentialKey, "COOPR_LEADER_TTL="+cfg.LeaderTTL.String())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a stopped process dies of SIGKILL too
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("server process output:\n%s", out.String())
		}
	})
	return cmd, out
}

type lease struct {
	Name   string `db:"name"`
	App    string `db:"app"`
	Holder string `db:"holder"`
	Term   int64  `db:"term"`
}

func leases(t *testing.T, db *sqlx.DB) map[string]lease {
	t.Helper()
	var ls []lease
	if err := db.Select(&ls, `SELECT name, app, holder, term FROM leader_leases`); err != nil {
		t.Fatal(err)
	}
	m := map[string]lease{}
	for _, l := range ls {
		m[l.Name] = l
	}
	return m
}

// A leader whose host freezes, its connections to Postgres left open (as
// when a host hangs or drops off the network), is replaced by a standby
// once its lease runs out, and the job it was scheduling finishes.
func TestLeaderFailoverFrozenHost(t *testing.T) {
	// COOPR_TEST_LEADER_TTL measures the failover with another lease (the
	// default's, 10s, say).
	ttl := 3 * time.Second
	if v := os.Getenv("COOPR_TEST_LEADER_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("COOPR_TEST_LEADER_TTL: %v", err)
		}
		ttl = d
	}
	cfg := servertest.Config(t)
	cfg.LeaderTTL = ttl
	db, err := sqlx.Open("postgres", cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })

	// The leader: a process of its own, which leads both loops before the
	// standby starts.
	a, aOut := startServerProcess(t, cfg)
	var first map[string]lease
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first server never led both loops; its output:\n%s", aOut.String())
		}
		var n int
		_ = db.Get(&n, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'leader_leases'`)
		if n == 0 {
			continue
		}
		if first = leases(t, db); len(first) == 2 {
			break
		}
	}
	// The standby, in this process, which the agent talks to.
	w := worldOn(t, servertest.StartWith(t, cfg))
	s := w.s
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 2}) { id } }`, nil, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
		map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "capacity": 2,
			"drivers": lampDrivers("rackspace")}}, &struct{}{})
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "failover", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var finished atomic.Int64
	active := make(chan error, 1)
	go func() {
		claim := map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 1}
		var beat time.Time
		for ctx.Err() == nil {
			// Heartbeats keep the agent's slots (it would lose them after
			// 30 s of silence) while the job waits for a scheduler.
			if time.Since(beat) > 3*time.Second {
				beat = time.Now()
				if err := s.Do(agent, `mutation { agentHeartbeat(input: {agentId: "agent-1", incarnation: "inc-1"}) { leaseTTLSeconds } }`,
					nil).Decode(&struct{}{}); err != nil {
					active <- err
					return
				}
			}
			var c struct{ Cluster struct{ Status string } }
			if err := s.Do(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}).Decode(&c); err != nil {
				active <- err
				return
			}
			if c.Cluster.Status == "ACTIVE" {
				active <- nil
				return
			}
			var got struct{ ClaimTask *assignment }
			if err := s.Do(agent, claimQuery, map[string]any{"in": claim}).Decode(&got); err != nil {
				active <- err
				return
			}
			if got.ClaimTask == nil {
				continue
			}
			a := got.ClaimTask
			result := map[string]any{"status": 0}
			if a.Payload.TaskName == "CONFIRM" {
				result["ipaddresses"] = map[string]any{"access_v4": "10.9.0.1", "bind_v4": "10.9.0.1"}
			}
			if err := s.Do(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
				"claimToken": a.ClaimToken, "result": result}}).Decode(&struct{}{}); err != nil {
				active <- err
				return
			}
			finished.Add(1)
		}
		active <- ctx.Err()
	}()
	for finished.Load() < 3 {
		select {
		case err := <-active:
			t.Fatalf("the cluster finished (%v) before the leader could be frozen", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if l := leases(t, db); l["engine"] != first["engine"] {
		t.Fatalf("the standby led before the freeze: %+v, first %+v", l, first)
	}
	// Freeze the leader: its connections stay open, and its kernel still
	// acknowledges on them, so Postgres would never end its session.
	frozen := time.Now()
	if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var tookOver time.Duration
	var ended error
	over := false
	for tookOver == 0 {
		select {
		case err := <-active:
			// Only a scheduler dispatches the job's next tasks: a job that
			// ends needed the standby's. Its relay's lease may move a
			// moment later, while the finished job no longer waits on it.
			if l := leases(t, db); l["engine"].App == first["engine"].App {
				t.Fatalf("the cluster finished (%v) before the standby led: leases %+v", err, l)
			}
			ended, over = err, true
		case <-ctx.Done():
			t.Fatalf("the standby never took over from the frozen leader: leases %+v", leases(t, db))
		case <-time.After(50 * time.Millisecond):
		}
		if l := leases(t, db); l["engine"].App != first["engine"].App && l["event-relay"].App != first["event-relay"].App {
			tookOver = time.Since(frozen)
		}
	}
	if !over {
		ended = <-active
	}
	if ended != nil {
		t.Fatalf("the job after the failover: %v", ended)
	}
	done := time.Since(frozen)
	t.Logf("leader TTL %s: the standby led both loops %s after the freeze; the cluster was ACTIVE %s after it",
		ttl, tookOver.Round(time.Millisecond), done.Round(time.Millisecond))
}
