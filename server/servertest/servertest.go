// Package servertest runs a real coopr server for tests: real Postgres (a
// fresh schema), real Redis (a fresh key prefix), real HTTP on a loopback
// port.
package servertest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/client"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
)

// Server is a running server with a superadmin token.
type Server struct {
	t      testing.TB
	URL    string // http://127.0.0.1:PORT
	Super  string // a superadmin token
	Srv    *server.Server
	Config server.Config
	stop   func() error
}

// Start runs a server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Config(t))
}

// Config is the configuration Start uses (a fresh schema and key prefix,
// no rate limits, a credential key), to change before StartWith.
func Config(t testing.TB) server.Config {
	t.Helper()
	dsn, _ := storetest.NewDSN(t)
	_, prefix := queuetest.New(t)
	cfg := server.Defaults()
	cfg.DatabaseURL, cfg.RedisURL, cfg.RedisPrefix = dsn, queuetest.URL(), prefix
	// Long enough for a request a loaded machine (go test ./... runs
	// packages side by side) slows down, short enough that one that never
	// ends still fails the test.
	cfg.ShutdownTimeout = 15 * time.Second
	// Tests drive agents and clients as fast as they can, and benchmarks
	// open a thousand websockets with one token; the limits have their
	// own tests.
	cfg.RateLimit, cfg.AgentRateLimit = 0, 0
	cfg.WebsocketsPerToken = 0
	cfg.CredentialKey = Key()
	return cfg
}

// Key is a fresh credential key.
func Key() string { return credentials.NewKey() }

// StartWith runs a server with cfg (its listen address is ignored).
func StartWith(t testing.TB, cfg server.Config) *Server {
	t.Helper()
	s := &Server{t: t, Config: cfg, stop: func() error { return nil }}
	if err := s.serve("127.0.0.1:0"); err != nil {
		t.Fatalf("servertest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("servertest: serve: %v", err)
		}
	})
	ctx := context.Background()
	sup, err := s.Srv.Store().Tenant(ctx, store.SuperadminTenant)
	if err != nil {
		t.Fatalf("servertest: %v", err)
	}
	if s.Super, _, err = s.Srv.Store().CreateToken(ctx, sup.ID, "admin", store.TokenUser, "servertest"); err != nil {
		t.Fatalf("servertest: %v", err)
	}
	return s
}

// serve opens the server and serves it on addr until stop.
func (s *Server) serve(addr string) error {
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{s.t}, nil))
	}
	srv, err := server.Open(ctx, s.Config, log)
	if err != nil {
		cancel()
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		cancel()
		_ = srv.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	s.URL, s.Srv = "http://"+ln.Addr().String(), srv
	var stopped bool
	var stopErr error
	s.stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			stopErr = <-done
			_ = srv.Close()
		}
		return stopErr
	}
	return nil
}

// Stop shuts the server down as SIGTERM would and returns Serve's error.
func (s *Server) Stop() error { return s.stop() }

// Start serves again, on the same address, database and Redis, after Stop:
// a restart as clients see it.
func (s *Server) Start() {
	s.t.Helper()
	if err := s.serve(strings.TrimPrefix(s.URL, "http://")); err != nil {
		s.t.Fatalf("servertest: start: %v", err)
	}
}

// Restart stops the server as Stop does and starts it again on the same
// address, database and Redis prefix, as a restarted process would; Srv
// is the new server. It must not run while the test uses Srv elsewhere.
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.stop(); err != nil {
		s.t.Fatalf("servertest: restart: stop: %v", err)
	}
	if err := s.serve(strings.TrimPrefix(s.URL, "http://")); err != nil {
		s.t.Fatalf("servertest: restart: %v", err)
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// Error and Response are the client's.
type (
	Error    = client.Error
	Response = client.Response
)

// Do posts a GraphQL request with token ("" for none) over HTTP.
func (s *Server) Do(token, query string, vars map[string]any) *Response {
	s.t.Helper()
	r, err := s.Request(token, query, vars)
	if err != nil {
		s.t.Fatalf("graphql request: %v", err)
	}
	return r
}

// Request is Do returning transport errors instead of failing the test.
func (s *Server) Request(token, query string, vars map[string]any) (*Response, error) {
	return (&client.Client{URL: s.URL, Token: token}).Do(context.Background(), query, vars)
}

// Must is Do that fails the test on any GraphQL error and decodes data into v.
func (s *Server) Must(token, query string, vars map[string]any, v any) {
	s.t.Helper()
	if err := s.Do(token, query, vars).Decode(v); err != nil {
		s.t.Fatal(err)
	}
}

// CloneTasks grows a job to n tasks by copying its own after its last (the
// store holds what it is given; no provider here makes 1,000 nodes).
func CloneTasks(t testing.TB, db *sqlx.DB, job string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var cols []string
	if err := db.SelectContext(ctx, &cols, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tasks' AND is_generated = 'NEVER' ORDER BY ordinal_position`); err != nil {
		t.Fatal(err)
	}
	c := strings.Join(cols, ", ")
	if _, err := db.ExecContext(ctx, `
		WITH src AS (SELECT t.*, row_number() OVER (ORDER BY idx) - 1 AS k, count(*) OVER () AS n FROM tasks t WHERE job_id = $1),
		top AS (SELECT max(idx) AS idx, count(*) AS n FROM tasks WHERE job_id = $1)
		INSERT INTO tasks (`+c+`)
		SELECT `+c+` FROM (SELECT (jsonb_populate_record(NULL::tasks, to_jsonb(src) || jsonb_build_object(
			'id', gen_random_uuid(), 'idx', top.idx + 1 + g))).*
			FROM top, generate_series(0, $2 - 1 - top.n) AS g JOIN src ON src.k = g % src.n) AS r`, job, n); err != nil {
		t.Fatalf("copying tasks: %v", err)
	}
	var all []string
	if err := db.SelectContext(ctx, &all, `SELECT id::text FROM tasks WHERE job_id = $1 ORDER BY idx`, job); err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Fatalf("the job has %d tasks, want %d", len(all), n)
	}
	return all
}
