package leader

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cooprhq/coopr/store/storetest"
)

func testConfig() Config {
	return Config{Name: "test", LockKey: `hashtext(current_schema() || ':coopr-leader-test')`, TTL: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// A leader that stops renewing its lease but keeps its connection open (a
// frozen host) is replaced once the lease runs out: the standby ends the
// leader's connection, takes the lock and the lease, and the old term is
// no longer valid.
func TestStandbyReplacesSilentLeader(t *testing.T) {
	db := storetest.New(t).DB()
	ctx := context.Background()
	first, err := Acquire(ctx, db, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	// Freeze it: no more renewals, the connection and its lock kept.
	first.stop()
	<-first.renewed

	second, err := Acquire(ctx, db, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Release()
	if first.Valid() {
		t.Error("the silent leader's term is still valid after a standby took over")
	}
	if second.Number != first.Number+1 {
		t.Errorf("terms %d then %d, want consecutive", first.Number, second.Number)
	}
	var pid int
	if err := first.conn.GetContext(ctx, &pid, `SELECT pg_backend_pid()`); err == nil {
		t.Errorf("the silent leader's connection (pid %d) still works", pid)
	}
}

// A leader whose renewal finds another holder learns it lost, and its
// context ends.
func TestRenewalFindsAnotherHolder(t *testing.T) {
	db := storetest.New(t).DB()
	ctx := context.Background()
	term, err := Acquire(ctx, db, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer term.Release()
	lctx, cancel := term.Context(ctx)
	defer cancel()
	if _, err := db.ExecContext(ctx, `UPDATE leader_leases SET holder = 'someone else' WHERE name = 'test'`); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the term's context did not end")
	}
	if err := term.Err(); !errors.Is(err, ErrLost) || term.Valid() {
		t.Errorf("term: %v (valid %v), want ErrLost", err, term.Valid())
	}
}

// Release hands over at once: the lease expires and the lock is free.
func TestReleaseHandsOver(t *testing.T) {
	db := storetest.New(t).DB()
	ctx := context.Background()
	cfg := testConfig()
	cfg.TTL = time.Hour // a handover that waited for the lease would time out
	first, err := Acquire(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	second, err := Acquire(actx, db, cfg)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	second.Release()
	if second.Number != first.Number+1 {
		t.Errorf("terms %d then %d, want consecutive", first.Number, second.Number)
	}
	if !errors.Is(first.Err(), ErrLost) {
		t.Errorf("a released term: %v", first.Err())
	}
}
