package events

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/store/storetest"
)

// A transaction left open holds events back: after heldWarnAfter the
// relay names it in the log (pid, database, how old), again at most every
// heldWarnEvery, and says when relaying goes on.
func TestHeldBackEventsNameTheTransaction(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	db := st.DB()
	tx, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	var pid int
	if _, err := tx.Exec(`SELECT pg_current_xact_id()`); err != nil { // takes a transaction id
		t.Fatal(err)
	}
	if err := tx.Get(&pid, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // older than any transaction begun after this point

	h, found, err := oldestHolder(ctx, db)
	if err != nil || !found {
		t.Fatalf("oldestHolder = %v, %v, %v; want the open transaction", h, found, err)
	}
	// Other tests share the database server: an older transaction of
	// theirs may come first, never a younger one.
	if h.PID != pid && h.Age < 0.05 {
		t.Errorf("oldest holder pid %d, %.3f s old; want pid %d or an older one", h.PID, h.Age, pid)
	}

	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var w heldWatch
	t0 := time.Now()
	w.round(ctx, db, log, true, t0)
	w.round(ctx, db, log, true, t0.Add(heldWarnAfter-time.Second))
	if buf.Len() != 0 {
		t.Fatalf("warned before %s: %s", heldWarnAfter, buf.String())
	}
	w.round(ctx, db, log, true, t0.Add(heldWarnAfter+time.Second))
	first := buf.String()
	if !strings.Contains(first, "held back by an open transaction") || !strings.Contains(first, "held_for=11s") ||
		!strings.Contains(first, fmt.Sprintf("pid=%d ", h.PID)) || !strings.Contains(first, "transaction_age=") {
		t.Fatalf("warning %q; want the holder's pid %d and how long", first, h.PID)
	}
	w.round(ctx, db, log, true, t0.Add(heldWarnAfter+heldWarnEvery/2))
	if buf.String() != first {
		t.Errorf("warned again within %s: %s", heldWarnEvery, buf.String()[len(first):])
	}
	w.round(ctx, db, log, true, t0.Add(heldWarnAfter+heldWarnEvery+2*time.Second))
	if n := strings.Count(buf.String(), "held back by an open transaction"); n != 2 {
		t.Errorf("%d warnings after %s more, want 2", n, heldWarnEvery)
	}
	w.round(ctx, db, log, false, t0.Add(2*heldWarnEvery))
	if !strings.Contains(buf.String(), "relayed again") {
		t.Errorf("no word that relaying goes on: %s", buf.String())
	}
	// A short wait says nothing.
	buf.Reset()
	w.round(ctx, db, log, true, t0)
	w.round(ctx, db, log, false, t0.Add(time.Second))
	if buf.Len() != 0 {
		t.Errorf("logged for a short wait: %s", buf.String())
	}
}
