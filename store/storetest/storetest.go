// Package storetest gives each test its own migrated store in a throwaway
// Postgres schema, so tests that use the store can run in parallel against one
// database.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/store"
)

// EnvDSN names the variable holding the test database's DSN.
const EnvDSN = "COOPR_TEST_DATABASE_URL"

// DefaultDSN is used when EnvDSN is unset: the CI machine's database.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// DSN returns the test database's DSN.
func DSN() string {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	return DefaultDSN
}

// New returns a migrated store whose connections all use a fresh schema,
// dropped with everything in it when the test ends. An unreachable database
// fails the test: CI guarantees one, so a skip would only hide a broken setup.
func New(t testing.TB) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn, schema := NewDSN(t)
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("storetest: open store in schema %s: %v", schema, err)
	}
	t.Cleanup(func() { // runs before the drop: cleanups run last-in first-out
		if err := s.Close(); err != nil {
			t.Errorf("storetest: close store: %v", err)
		}
	})
	// A DSN parameter lib/pq did not pass on would silently put the tables
	// in the shared default schema; make sure it arrived.
	var current string
	if err := s.DB().GetContext(ctx, &current, `SELECT current_schema()`); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	if current != schema {
		t.Fatalf("storetest: connections use schema %q, want %q: search_path did not reach the server", current, schema)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
	return s
}

// NewDSN creates a fresh empty schema, dropped when the test ends, and returns
// a DSN whose connections use it, for tests of programs that open their own
// connections (the CLI, the server).
func NewDSN(t testing.TB) (dsn, schema string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := DSN()
	schema = "t_" + randomHex(8)
	dsn, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	admin, err := store.Open(ctx, base)
	if err != nil {
		t.Fatalf("storetest: cannot reach the test Postgres at %s (set %s to a reachable database): %v",
			redact(base), EnvDSN, err)
	}
	if _, err := admin.DB().ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		_ = admin.Close()
		t.Fatalf("storetest: create schema %s: %v", schema, err)
	}
	admin.DB().SetMaxOpenConns(1)
	// The admin connection outlives the users of the schema so the schema is
	// dropped even when they failed.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.DB().ExecContext(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("storetest: drop schema %s: %v", schema, err)
		}
		_ = admin.Close()
	})
	return dsn, schema
}

// withSearchPath adds search_path to dsn; lib/pq passes parameters it does not
// know to the server as run-time settings of every connection it opens.
func withSearchPath(dsn, schema string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvDSN, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " search_path=" + schema, nil
}

// redact hides a password in a URL DSN so failure messages can name the DSN.
func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return passwordParam.ReplaceAllString(dsn, "${1}xxxxx")
}

var passwordParam = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
