package events

import (
	"context"
	"testing"
	"time"

	"github.com/cooprhq/coopr/store/storetest"
)

// Prune deletes old events both readers have passed, and nothing else:
// not a recent one, not an old one either reader has still to read, and
// nothing while a reader has never run. A backlog larger than one slice
// goes in one call.
func TestPruneEvents(t *testing.T) {
	ctx := context.Background()
	st := storetest.New(t)
	db := st.DB()
	ten, err := st.EnsureTenant(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	insert := func(message string, n int, age time.Duration) {
		t.Helper()
		if _, err := db.Exec(`INSERT INTO events (tenant_id, kind, state, message, created_at)
			SELECT $1, 'job', 'RUNNING', $2, now() - $3 * interval '1 second' FROM generate_series(1, $4)`,
			ten.ID, message, age.Seconds(), n); err != nil {
			t.Fatal(err)
		}
	}
	count := func(message string) int {
		t.Helper()
		var n int
		if err := db.Get(&n, `SELECT count(*) FROM events WHERE message = $1`, message); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A later transaction's own id is above every earlier event's.
	mark := func(table string) {
		t.Helper()
		if _, err := db.Exec(`UPDATE ` + table + ` SET watermark = pg_current_xact_id()`); err != nil {
			t.Fatal(err)
		}
	}
	const keep = 24 * time.Hour
	const backlog = pruneSlice + 5

	insert("old", backlog, 40*24*time.Hour)
	insert("recent", 3, time.Hour)
	if _, err := db.Exec(`DELETE FROM event_relay`); err != nil {
		t.Fatal(err)
	}
	mark("webhook_dispatch")
	if n, err := Prune(ctx, db, keep); err != nil || n != 0 {
		t.Fatalf("relay never ran: Prune = %d, %v; want 0 deleted", n, err)
	}
	if _, err := db.Exec(`INSERT INTO event_relay (watermark) VALUES (pg_current_xact_id())`); err != nil {
		t.Fatal(err)
	}
	insert("unread", 2, 40*24*time.Hour) // above the webhook dispatcher's watermark
	n, err := Prune(ctx, db, keep)
	if err != nil {
		t.Fatal(err)
	}
	if n != backlog || count("old") != 0 {
		t.Fatalf("Prune deleted %d, %d old left; want %d deleted, none left", n, count("old"), backlog)
	}
	if count("recent") != 3 || count("unread") != 2 {
		t.Fatalf("kept %d recent (want 3) and %d unread (want 2)", count("recent"), count("unread"))
	}
	mark("webhook_dispatch")
	if n, err := Prune(ctx, db, keep); err != nil || n != 0 {
		t.Fatalf("relay's watermark below the unread events: Prune = %d, %v; want 0", n, err)
	}
	mark("event_relay")
	if n, err := Prune(ctx, db, keep); err != nil || n != 2 || count("recent") != 3 {
		t.Fatalf("both readers past: Prune = %d, %v, %d recent left; want 2 deleted, 3 recent kept", n, err, count("recent"))
	}
}
