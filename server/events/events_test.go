package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/redis/go-redis/v9"

	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

// relayFixture is a relay over a fresh schema and stream prefix, its
// watermark set, and the session it relays on; tenant is "acme"'s id.
type relayFixture struct {
	unsaved *string
	db      *sqlx.DB
	rdb     *redis.Client
	prefix  string
	relay   *Relay
	conn    *sqlx.Conn
	tenant  string
}

// publish runs rounds until one publishes: transactions of other tests on
// the same Postgres (every database's count) may hold the relay back.
func (f *relayFixture) publish(t *testing.T, ctx context.Context) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := f.round(ctx); err != nil {
			t.Fatal(err)
		}
		if f.unsaved != nil {
			return
		}
		if time.Now().After(end) {
			t.Fatal("the relay published nothing for 10s")
		}
	}
}

// round runs one relay round as Run does, carrying the unsaved watermark
// to the next.
func (f *relayFixture) round(ctx context.Context) error {
	next, _, _, err := f.relay.relay(ctx, f.conn, f.unsaved)
	if err == nil {
		f.unsaved = next
	}
	return err
}

// entryOf decodes a stream entry's events.
func entryOf(t *testing.T, m redis.XMessage) []Event {
	t.Helper()
	evs, err := entryEvents(m.Values)
	if err != nil {
		t.Fatalf("entry %s: %v", m.ID, err)
	}
	return evs
}

func newRelayFixture(t *testing.T) relayFixture {
	t.Helper()
	st := storetest.New(t)
	rdb, prefix := queuetest.New(t)
	db := st.DB()
	ten, err := st.EnsureTenant(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO event_relay (watermark) VALUES (pg_snapshot_xmin(pg_current_snapshot()))`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Connx(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return relayFixture{db: db, rdb: rdb, prefix: prefix, conn: conn, tenant: ten.ID,
		relay: NewRelay(db, "", rdb, prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

// An event whose transaction commits after a later-numbered one is still
// relayed, once, and not before its transaction ends.
func TestRelayWaitsForOlderTransactions(t *testing.T) {
	f := newRelayFixture(t)
	db, rdb, prefix, ctx := f.db, f.rdb, f.prefix, context.Background()
	read := "0-0"
	insert := `INSERT INTO events (tenant_id, kind, state, message) VALUES ($1, 'cluster', 'ACTIVE', $2)`

	slow, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback()
	if _, err := slow.Exec(insert, f.tenant, "slow"); err != nil { // takes its id first
		t.Fatal(err)
	}
	if _, err := db.Exec(insert, f.tenant, "fast"); err != nil { // commits first
		t.Fatal(err)
	}
	if err := f.round(ctx); err != nil {
		t.Fatal(err)
	}
	got := func(wait time.Duration) []string {
		var out []string
		res, err := rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{Channel(prefix), read}, Block: wait}).Result()
		if err != nil {
			return out // redis.Nil: nothing within wait
		}
		for _, m := range res[0].Messages {
			read = m.ID
			for _, ev := range entryOf(t, m) {
				out = append(out, ev.Message)
			}
		}
		return out
	}
	if evs := got(300 * time.Millisecond); len(evs) != 0 {
		t.Fatalf("relayed %v while an older transaction was open", evs)
	}
	if err := slow.Commit(); err != nil {
		t.Fatal(err)
	}
	f.publish(t, ctx)
	if err := f.round(ctx); err != nil { // nothing new: nothing again
		t.Fatal(err)
	}
	evs := got(500 * time.Millisecond)
	if len(evs) != 2 || evs[0] != "slow" || evs[1] != "fast" {
		t.Fatalf("relayed %v, want [slow fast] once each, in commit order of their transactions", evs)
	}
}

// A subscriber that stops reading loses events and is told so; the others
// get every event.
func TestHubStalledSubscriber(t *testing.T) {
	h := NewHub(nil, "x", slog.New(slog.NewTextHandler(io.Discard, nil)))
	stalled := h.SubscribeCluster("c1", 2)
	live := h.SubscribeCluster("c1", 100)
	other := h.SubscribeCluster("c2", 100)
	for i := range 50 {
		h.dispatch(Event{Seq: int64(i), Cluster: "c1"})
	}
	if len(live.C) != 50 || live.Lagged() {
		t.Errorf("live subscriber got %d of 50 (lagged %v)", len(live.C), live.Lagged())
	}
	// A burst that ends on dropped events leaves the stalled subscriber a
	// wake-up of its own: nothing after the drops would tell it.
	select {
	case <-stalled.Lost():
	default:
		t.Error("a subscriber that lost events is not woken to re-read")
	}
	select {
	case <-live.Lost():
		t.Error("a subscriber that lost nothing is woken as if it had")
	default:
	}
	if len(stalled.C) != 2 || !stalled.Lagged() || stalled.Lagged() {
		t.Errorf("stalled subscriber holds %d, want 2 and one lagged report", len(stalled.C))
	}
	if len(other.C) != 0 {
		t.Errorf("another cluster's subscriber got %d events", len(other.C))
	}
	if h.Dropped.Load() != 48 {
		t.Errorf("dropped %d, want 48", h.Dropped.Load())
	}
	h.Unsubscribe(live)
	h.dispatch(Event{Seq: 99, Cluster: "c1"})
	if len(live.C) != 50 {
		t.Error("an unsubscribed subscriber still receives")
	}
}

// Events beyond one page (5,000) are relayed in pages, every one once and
// in order, and the watermark then moves past them all.
func TestRelayPages(t *testing.T) {
	f := newRelayFixture(t)
	db, rdb, prefix, ctx := f.db, f.rdb, f.prefix, context.Background()
	const n = 12_001
	if _, err := db.Exec(`INSERT INTO events (tenant_id, kind, state, message)
		SELECT $1, 'cluster', 'ACTIVE', g::text FROM generate_series(1, $2) g`, f.tenant, n); err != nil {
		t.Fatal(err)
	}
	f.publish(t, ctx)
	if err := f.round(ctx); err != nil { // finds nothing new, saves the watermark
		t.Fatal(err)
	}
	msgs, err := rdb.XRange(ctx, Channel(prefix), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	// A page in one entry: an XADD each was most of the relay's cost in
	// Redis, and parsing an entry each the stream readers'.
	if pages := (n + relayPage - 1) / relayPage; len(msgs) != pages {
		t.Errorf("relayed %d events in %d stream entries, want %d (one a page)", n, len(msgs), pages)
	}
	var evs []Event
	for _, m := range msgs {
		evs = append(evs, entryOf(t, m)...)
	}
	if len(evs) != n {
		t.Fatalf("relayed %d events, want %d", len(evs), n)
	}
	for i, ev := range evs {
		if want := fmt.Sprint(i + 1); ev.Message != want {
			t.Fatalf("event %d is %q, want %q", i, ev.Message, want)
		}
	}
	var behind bool
	if err := db.Get(&behind, `SELECT watermark <= (SELECT max(txid) FROM events) FROM event_relay`); err != nil {
		t.Fatal(err)
	}
	if behind {
		t.Error("the watermark did not move past the relayed events")
	}
}

// Long messages (an agent's, up to its request's size) split a page into
// entries of at most maxEntryBytes, in order: one string of a page's
// events could pass what Redis takes.
func TestRelayEntriesBoundedInBytes(t *testing.T) {
	f := newRelayFixture(t)
	db, rdb, prefix, ctx := f.db, f.rdb, f.prefix, context.Background()
	const n, size = 30, 100 << 10
	if _, err := db.Exec(`INSERT INTO events (tenant_id, kind, state, message)
		SELECT $1, 'cluster', 'ACTIVE', g::text || ' ' || repeat('x', $3) FROM generate_series(1, $2) g`, f.tenant, n, size); err != nil {
		t.Fatal(err)
	}
	f.publish(t, ctx)
	msgs, err := rdb.XRange(ctx, Channel(prefix), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for _, m := range msgs {
		if b, _ := m.Values["b"].(string); len(b) > maxEntryBytes {
			t.Errorf("an entry of %d bytes, want at most %d", len(b), maxEntryBytes)
		}
		evs = append(evs, entryOf(t, m)...)
	}
	if len(msgs) < n*size/maxEntryBytes {
		t.Errorf("%d entries for %d events of %d bytes", len(msgs), n, size)
	}
	if len(evs) != n {
		t.Fatalf("relayed %d events, want %d", len(evs), n)
	}
	for i, ev := range evs {
		if want := fmt.Sprint(i + 1); !strings.HasPrefix(ev.Message, want+" ") {
			t.Fatalf("event %d is %.10q…, want %q first", i, ev.Message, want)
		}
	}
}

// Events committed by a quiet session (the engine's claims and finishes)
// send no NOTIFY; the relay finds them when woken through Redis, while
// other commits still wake it by NOTIFY.
func TestRelayWakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sr := newStoreRelay(t, ctx)
	st, ten, dsn, rdb, prefix, r := sr.st, sr.ten, sr.dsn, sr.rdb, sr.prefix, sr.r
	// As after a first run: events from now on are relayed.
	if _, err := st.DB().Exec(`INSERT INTO event_relay (watermark) VALUES (pg_snapshot_xmin(pg_current_snapshot()))`); err != nil {
		t.Fatal(err)
	} // only a NOTIFY or a wake moves it
	done := make(chan struct{}, 2)
	for _, run := range []func(context.Context) error{r.Run, r.RunWakes} {
		go func() { _ = run(ctx); done <- struct{}{} }()
	}
	defer func() { cancel(); <-done; <-done }()

	relayed := func(msg string, within time.Duration, nudge func()) bool {
		t.Helper()
		for end := time.Now().Add(within); time.Now().Before(end); {
			if nudge != nil {
				nudge()
			}
			msgs, err := rdb.XRange(ctx, Channel(prefix), "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				for _, ev := range entryOf(t, m) {
					if ev.Message == msg {
						return true
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}
	insert := `INSERT INTO events (tenant_id, kind, state, message) VALUES ($1, 'cluster', 'ACTIVE', $2)`
	// The relay's first pass may come before the event: only a NOTIFY
	// brings it then.
	if _, err := st.DB().Exec(insert, ten.ID, "loud"); err != nil {
		t.Fatal(err)
	}
	// Other tests' transactions on the same server can hold events back
	// for a while (and the relay retries while they do): be patient.
	if !relayed("loud", 15*time.Second, nil) {
		t.Fatal("an event committed by an ordinary session was not relayed: no NOTIFY woke the relay")
	}
	// Held back by a transaction open elsewhere, an event goes out soon
	// after that transaction ends, with no other wake.
	blocker, err := st.DB().Beginx()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := blocker.Exec(`SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().Exec(insert, ten.ID, "held back"); err != nil {
		t.Fatal(err)
	}
	if relayed("held back", 300*time.Millisecond, nil) {
		t.Fatal("an event was relayed while an older transaction was open")
	}
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	if !relayed("held back", 15*time.Second, nil) {
		t.Fatal("a held-back event was not relayed after the transaction holding it ended: the relay waited for a wake")
	}
	quiet, err := st.DB().Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	if _, err := quiet.ExecContext(ctx, `SET coopr.quiet_events = on`); err != nil {
		t.Fatal(err)
	}
	if _, err := quiet.ExecContext(ctx, insert, ten.ID, "quiet"); err != nil {
		t.Fatal(err)
	}
	if relayed("quiet", 500*time.Millisecond, nil) {
		t.Fatal("a quiet session's event woke the relay by NOTIFY")
	}
	// The relay subscribes to wakes as it starts: a wake sent before may be
	// lost, so it is sent again until one arrives.
	if !relayed("quiet", 5*time.Second, r.Wake) {
		t.Fatal("Wake did not bring the quiet event")
	}
	// Another server's engine wakes this relay through Redis.
	other := NewRelay(st.DB(), dsn, rdb, prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	go func() { _ = other.RunWakes(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done }()
	if _, err := quiet.ExecContext(ctx, insert, ten.ID, "quiet elsewhere"); err != nil {
		t.Fatal(err)
	}
	if !relayed("quiet elsewhere", 5*time.Second, other.Wake) {
		t.Fatal("another server's Wake did not bring the quiet event")
	}
}

// On the relaying server the hub takes events from the relay itself as
// well as from the stream: each is dispatched once, in the stream's
// order, whichever way comes first; events another server relays come
// through the stream.
func TestHubTakesRelayedEventsOnce(t *testing.T) {
	f := newRelayFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := startHub(t, ctx, f.rdb, f.prefix)
	sub := hub.SubscribeAll(100)
	f.relay.Local = hub
	// One transaction for all: the relay publishes a transaction's events
	// together, while separate ones could straddle a round (a transaction
	// open anywhere on the server holds later ones back).
	insert := func(msgs ...string) {
		tx := f.db.MustBegin()
		for _, m := range msgs {
			if _, err := tx.Exec(`INSERT INTO events (tenant_id, kind, state, message) VALUES ($1, 'cluster', 'ACTIVE', $2)`, f.tenant, m); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	insert("a", "b")
	f.publish(t, ctx)
	// Dispatched by the relay before the round returned, not by the
	// stream reader (which may not have run yet).
	if n := len(sub.C); n != 2 {
		t.Fatalf("%d events dispatched when the relay's round ended, want 2", n)
	}
	// Another server relays the next ones; this hub reads them from the
	// stream.
	insert("c")
	elsewhere := relayFixture{db: f.db, conn: f.conn, relay: NewRelay(f.db, "", f.rdb, f.prefix, f.relay.log), unsaved: f.unsaved}
	elsewhere.publish(t, ctx)
	f.unsaved = elsewhere.unsaved
	insert("d")
	f.publish(t, ctx)
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < 4 {
		select {
		case ev := <-sub.C:
			got = append(got, ev.Message)
		case <-timeout:
			t.Fatalf("got %v, want a b c d", got)
		}
	}
	select {
	case ev := <-sub.C:
		t.Fatalf("got %v and then %q again", got, ev.Message)
	case <-time.After(300 * time.Millisecond):
	}
	if strings.Join(got, " ") != "a b c d" {
		t.Fatalf("got %v, want a b c d", got)
	}
	// Entries the hub has not read yet sit between its last and a relayed
	// batch: the batch waits for the stream reader, which takes all in
	// order (dispatching it first would lose them).
	hub.relayed("1-0", "9999999999999-0", []Event{{Message: "e"}})
	if len(sub.C) != 0 {
		t.Fatal("a batch was dispatched ahead of entries the hub had not read")
	}
}

func TestSnapshotSaw(t *testing.T) {
	sn, err := ParseSnapshot("100:105:101,103")
	if err != nil {
		t.Fatal(err)
	}
	for txid, want := range map[uint64]bool{0: false, 99: true, 100: true, 101: false, 102: true, 103: false, 104: true, 105: false, 200: false} {
		if got := sn.Saw(Event{Txid: txid}); got != want {
			t.Errorf("txid %d: saw %v, want %v", txid, got, want)
		}
	}
	for _, bad := range []string{"", "1:2", "a:2:", "1:b:", "1:2:x"} {
		if _, err := ParseSnapshot(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// A relay round reads a few pages however many events the table holds:
// it runs at every wake, many times a second under load, and its cost
// grew with the table (a 5,000-node create's events) when it scanned it.
func TestRelayRoundCostIndependentOfEvents(t *testing.T) {
	f := newRelayFixture(t)
	db, ctx := f.db, context.Background()
	if _, err := db.Exec(`INSERT INTO events (tenant_id, kind, state, message)
		SELECT $1, 'cluster', 'ACTIVE', g::text FROM generate_series(1, 50000) g`, f.tenant); err != nil {
		t.Fatal(err)
	}
	f.publish(t, ctx)
	if err := f.round(ctx); err != nil { // saves the watermark past them
		t.Fatal(err)
	}
	for _, q := range []struct{ name, sql string }{
		{"round", roundSQL},
		{"held", `SELECT ` + heldSQL},
	} {
		t.Run(q.name, func(t *testing.T) {
			tx, err := db.Beginx()
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback() }()
			args := []any{}
			if strings.Contains(q.sql, "$1") {
				args = append(args, nil)
			}
			var plan []byte
			if err := tx.Get(&plan, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+q.sql, args...); err != nil {
				t.Fatal(err)
			}
			var out []struct {
				Plan struct {
					Hit  int `json:"Shared Hit Blocks"`
					Read int `json:"Shared Read Blocks"`
				} `json:"Plan"`
			}
			if err := json.Unmarshal(plan, &out); err != nil || len(out) != 1 {
				t.Fatalf("plan %s: %v", plan, err)
			}
			// 50,000 events fill several hundred pages; a few index pages
			// and the watermark's row are what a round needs.
			if pages := out[0].Plan.Hit + out[0].Plan.Read; pages > 50 {
				t.Errorf("a relay round with 50,000 events behind the watermark read %d pages, want at most 50:\n%s", pages, plan)
			}
		})
	}
}

// Under load every engine commit wakes the relay; paced, a round that
// published is followed by the next no sooner than Pace after it began,
// so that one round takes the events of many commits. A lone event after
// a quiet spell goes at once, and one right behind a busy round waits no
// longer than Pace.
func TestRelayPacesBusyRounds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sr := newStoreRelay(t, ctx)
	st, ten, r := sr.st, sr.ten, sr.r
	// Long enough to tell apart from a loaded machine's round times.
	const pace = 150 * time.Millisecond
	r.Pace = pace
	type batch struct {
		at   time.Time
		msgs []string
	}
	batches := make(chan batch, 1000)
	r.OnBatch = func(evs []Event) {
		b := batch{at: time.Now()}
		for _, ev := range evs {
			b.msgs = append(b.msgs, ev.Message)
		}
		batches <- b
	}
	if _, err := st.DB().Exec(`INSERT INTO event_relay (watermark) VALUES (pg_snapshot_xmin(pg_current_snapshot()))`); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	quiet, err := st.DB().Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	if _, err := quiet.ExecContext(ctx, `SET coopr.quiet_events = on`); err != nil {
		t.Fatal(err)
	}
	commit := func(msg string) time.Time {
		t.Helper()
		if _, err := quiet.ExecContext(ctx, `INSERT INTO events (tenant_id, kind, state, message) VALUES ($1, 'cluster', 'ACTIVE', $2)`, ten.ID, msg); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		r.Wake()
		return at
	}
	// wait returns the batch that brings msg (the last of those sent)
	// and how many batches came up to it.
	wait := func(msg string) (batch, int) {
		t.Helper()
		n := 0
		for timeout := time.After(15 * time.Second); ; {
			select {
			case b := <-batches:
				n++
				if b.msgs[len(b.msgs)-1] == msg {
					return b, n
				}
			case <-timeout:
				t.Fatalf("%q not relayed", msg)
			}
		}
	}
	// The relay leads and listens once a wake brings an event. Other
	// tests' transactions may hold events back (the relay then retries
	// 10-250 ms later): each timing is tried again until it holds.
	commit("first")
	wait("first")
	var lone time.Duration
	for try := 0; try < 10; try++ {
		time.Sleep(2 * pace) // quiet
		msg := fmt.Sprintf("lone %d", try)
		at := commit(msg)
		b, _ := wait(msg)
		if lone = b.at.Sub(at); lone < pace/2 {
			break
		}
	}
	if lone >= pace/2 {
		t.Fatalf("a lone event after a quiet spell took %v to relay, want well under the pace, %v", lone, pace)
	}
	// A burst of commits, each waking the relay: a round per pace, not
	// per wake.
	time.Sleep(2 * pace)
	start := time.Now()
	const commits = 60
	for i := range commits {
		commit(fmt.Sprintf("burst %d", i))
		time.Sleep(5 * time.Millisecond)
	}
	last, rounds := wait(fmt.Sprintf("burst %d", commits-1))
	elapsed := last.at.Sub(start)
	if most := int(elapsed/pace) + 2; rounds > most {
		t.Errorf("%d commits in %v took %d rounds, want at most %d at one per %v", commits, elapsed, rounds, most, pace)
	}
	// Right behind a busy round, an event waits for the pace, no longer.
	var behind time.Duration
	for try := 0; try < 10; try++ {
		time.Sleep(2 * pace)
		busy := fmt.Sprintf("busy %d", try)
		commit(busy)
		wait(busy)
		msg := fmt.Sprintf("behind %d", try)
		at := commit(msg)
		b, _ := wait(msg)
		if behind = b.at.Sub(at); behind < pace+pace/2 {
			break
		}
	}
	if behind >= pace+pace/2 {
		t.Errorf("an event right behind a busy round took %v to relay, want at most about the pace, %v", behind, pace)
	}
}

// A hub reads both kinds of stream entry in the stream's order: a round's
// events together (as relays write them) and one event alone (as they
// wrote them before, still in the stream after an upgrade).
func TestHubReadsBothEntryKinds(t *testing.T) {
	rdb, prefix := queuetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := startHub(t, ctx, rdb, prefix)
	sub := hub.SubscribeAll(100)
	add := func(field string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: Channel(prefix), Values: []any{field, b}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add("e", Event{Kind: "cluster", State: "ACTIVE", Message: "a"})
	add("b", []Event{{Kind: "task", State: "QUEUED", Message: "b"}, {Kind: "task", State: "COMPLETE", Attempt: 2, Message: "c"}})
	add("e", Event{Kind: "job", State: "COMPLETE", Message: "d"})
	var got []string
	for timeout := time.After(5 * time.Second); len(got) < 4; {
		select {
		case ev := <-sub.C:
			got = append(got, fmt.Sprintf("%s:%s:%d", ev.Message, ev.State, ev.Attempt))
		case <-timeout:
			t.Fatalf("got %v, want 4 events", got)
		}
	}
	if g, want := strings.Join(got, " "), "a:ACTIVE:0 b:QUEUED:0 c:COMPLETE:2 d:COMPLETE:0"; g != want {
		t.Fatalf("got %s, want %s", g, want)
	}
}

// An entry the hub cannot read (corrupt, or of a format it does not know)
// held events it cannot deliver: every subscriber is told it lagged, and
// woken to re-read state, rather than miss them unawares; the entries
// after it are delivered.
func TestHubBadEntryLagsSubscribers(t *testing.T) {
	rdb, prefix := queuetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := startHub(t, ctx, rdb, prefix)
	all, cluster := hub.SubscribeAll(100), hub.SubscribeCluster("c1", 100)
	add := func(field, v string) {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: Channel(prefix), Values: []any{field, v}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add("b", `[{"kind":"cluster","state":"ACTIVE","cluster":"c1","message":"a","at":"2026-01-01T00:00:00Z"}]`)
	add("b", `[{"kind":"cluster","state":"DELETING","cluster":"c1","at":"10000-01-01T00:00:00Z"}]`)
	add("b", `[{"kind":"cluster","state":"TERMINATED","cluster":"c1","message":"c","at":"2026-01-01T00:00:01Z"}]`)
	for _, sub := range []*Sub{all, cluster} {
		var got []string
		for timeout := time.After(5 * time.Second); len(got) < 2; {
			select {
			case ev := <-sub.C:
				got = append(got, ev.Message)
			case <-timeout:
				t.Fatalf("got %v, want a and c", got)
			}
		}
		select {
		case <-sub.Lost():
		default:
			t.Error("the subscriber was not woken to re-read state")
		}
		if !sub.Lagged() {
			t.Error("the subscriber was not told it lagged")
		}
	}
}

// On the relaying server, the stream reader leaves the entries the relay
// hands over to it rather than decode them too: its XREAD was often woken
// by an entry before the relay's round trip returned with its id.
func TestHubLeavesRelayedEntriesToTheRelay(t *testing.T) {
	f := newRelayFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := startHub(t, ctx, f.rdb, f.prefix)
	sub := hub.SubscribeAll(1000)
	f.relay.Local = hub
	const rounds = 40
	for i := range rounds {
		if _, err := f.db.Exec(`INSERT INTO events (tenant_id, kind, state, message) VALUES ($1, 'cluster', 'ACTIVE', $2)`, f.tenant, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			next, _, n, err := f.relay.relay(ctx, f.conn, f.unsaved)
			if err != nil {
				t.Fatal(err)
			}
			if next != nil {
				f.unsaved = next
			}
			if n > 0 {
				break
			}
			if time.Now().After(end) {
				t.Fatal("the relay published nothing for 10s")
			}
		}
	}
	// The reader has seen them all once another server's entry comes
	// through it.
	elsewhere := relayFixture{db: f.db, conn: f.conn, relay: NewRelay(f.db, "", f.rdb, f.prefix, f.relay.log), unsaved: f.unsaved}
	if _, err := f.db.Exec(`INSERT INTO events (tenant_id, kind, state, message) VALUES ($1, 'cluster', 'ACTIVE', 'elsewhere')`, f.tenant); err != nil {
		t.Fatal(err)
	}
	elsewhere.publish(t, ctx)
	var got []string
	for timeout := time.After(5 * time.Second); len(got) < rounds+1; {
		select {
		case ev := <-sub.C:
			got = append(got, ev.Message)
		case <-timeout:
			t.Fatalf("got %d events, want %d", len(got), rounds+1)
		}
	}
	for i, m := range got[:rounds] {
		if m != fmt.Sprint(i) {
			t.Fatalf("got %v, want 0 to %d in order, then elsewhere", got, rounds-1)
		}
	}
	if got[rounds] != "elsewhere" {
		t.Fatalf("last %q, want elsewhere", got[rounds])
	}
	if n := hub.decoded.Load(); n != 1 {
		t.Errorf("the stream reader decoded %d entries, want 1 (another server's): the relay hands over its own", n)
	}
}

// startHub runs a hub until the test ends (its context with it) and
// returns it once it reads the stream.
func startHub(t *testing.T, ctx context.Context, rdb *redis.Client, prefix string) *Hub {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	hub := NewHub(rdb, prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-hub.Ready()
	return hub
}

// storeRelay is a migrated store with a tenant, and a relay over it that
// polls only hourly (wakes move it).
type storeRelay struct {
	st          *store.Store
	ten         store.Tenant
	dsn, prefix string
	rdb         *redis.Client
	r           *Relay
}

func newStoreRelay(t *testing.T, ctx context.Context) storeRelay {
	t.Helper()
	var sr storeRelay
	sr.dsn, _ = storetest.NewDSN(t)
	st, err := store.Open(ctx, sr.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if sr.ten, err = st.EnsureTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	sr.st = st
	sr.rdb, sr.prefix = queuetest.New(t)
	sr.r = NewRelay(st.DB(), sr.dsn, sr.rdb, sr.prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sr.r.Poll = time.Hour
	return sr
}

// A hub that comes back after a failure goes on after the last event it
// dispatched. When events after that one are gone from the stream
// (trimmed, or lost with Redis's data) its subscribers are told to re-read
// state; when nothing is gone they get the events and are not.
func TestHubTellsSubscribersOfLostEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		away   func(ctx context.Context, rdb *redis.Client, stream, last string) error
		lagged bool
		want   []string // events delivered after the hub comes back
	}{
		{"nothing lost", func(ctx context.Context, rdb *redis.Client, stream, _ string) error {
			return addEvents(ctx, rdb, stream, "b1", "b2")
		}, false, []string{"b1", "b2"}},
		{"trimmed up to the last read", func(ctx context.Context, rdb *redis.Client, stream, last string) error {
			if err := addEvents(ctx, rdb, stream, "b1"); err != nil {
				return err
			}
			return rdb.XTrimMinID(ctx, stream, last).Err() // keeps last and after
		}, false, []string{"b1"}},
		{"all trimmed", func(ctx context.Context, rdb *redis.Client, stream, _ string) error {
			if err := addEvents(ctx, rdb, stream, "b1"); err != nil {
				return err
			}
			return rdb.XTrimMaxLen(ctx, stream, 0).Err()
		}, true, nil},
		{"deleted", func(ctx context.Context, rdb *redis.Client, stream, _ string) error {
			if err := addEvents(ctx, rdb, stream, "b1", "b2"); err != nil {
				return err
			}
			es, err := rdb.XRevRangeN(ctx, stream, "+", "-", 2).Result()
			if err != nil {
				return err
			}
			return rdb.XDel(ctx, stream, es[1].ID).Err() // b1
		}, true, []string{"b2"}},
		{"trimmed past the last read", func(ctx context.Context, rdb *redis.Client, stream, _ string) error {
			if err := addEvents(ctx, rdb, stream, "b1", "b2", "b3", "b4"); err != nil {
				return err
			}
			return rdb.XTrimMaxLen(ctx, stream, 2).Err()
		}, true, []string{"b3", "b4"}},
		{"stream gone", func(ctx context.Context, rdb *redis.Client, stream, _ string) error {
			return rdb.Del(ctx, stream).Err()
		}, true, nil},
		{"stream made anew", func(ctx context.Context, rdb *redis.Client, stream, _ string) error {
			if err := addEvents(ctx, rdb, stream, "lost"); err != nil {
				return err
			}
			if err := rdb.Del(ctx, stream).Err(); err != nil {
				return err
			}
			return addEvents(ctx, rdb, stream, "b1")
		}, true, []string{"b1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb, prefix := queuetest.New(t)
			ctx := t.Context()
			stream := Channel(prefix)
			hub := NewHub(rdb, prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
			sub := hub.SubscribeAll(100)
			run := func() (stop func()) {
				ctx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { defer close(done); _ = hub.Run(ctx) }()
				return func() { cancel(); <-done }
			}
			stop := run()
			<-hub.Ready()
			if err := addEvents(ctx, rdb, stream, "a0", "a"); err != nil {
				t.Fatal(err)
			}
			if got := takeEvents(t, sub, 2); got[1] != "a" {
				t.Fatalf("got %v, want a0 a", got)
			}
			stop()
			hub.lastMu.Lock()
			last := hub.last.String()
			hub.lastMu.Unlock()
			if err := tc.away(ctx, rdb, stream, last); err != nil {
				t.Fatal(err)
			}
			defer run()()
			if got := takeEvents(t, sub, len(tc.want)); !slices.Equal(got, tc.want) {
				t.Errorf("after coming back got %v, want %v", got, tc.want)
			}
			if tc.lagged {
				select {
				case <-sub.Lost():
				case <-time.After(5 * time.Second):
					t.Fatal("the subscriber was not woken to re-read state")
				}
			} else {
				// A last event through the stream: the hub checked before it.
				if err := addEvents(ctx, rdb, stream, "z"); err != nil {
					t.Fatal(err)
				}
				takeEvents(t, sub, 1)
			}
			if got := sub.Lagged(); got != tc.lagged {
				t.Errorf("lagged %v, want %v", got, tc.lagged)
			}
		})
	}
}

func addEvents(ctx context.Context, rdb *redis.Client, stream string, msgs ...string) error {
	for _, m := range msgs {
		b, err := json.Marshal([]Event{{Kind: "cluster", State: "ACTIVE", Message: m}})
		if err != nil {
			return err
		}
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"b", b}}).Err(); err != nil {
			return err
		}
	}
	return nil
}

func takeEvents(t *testing.T, sub *Sub, n int) []string {
	t.Helper()
	var got []string
	for timeout := time.After(5 * time.Second); len(got) < n; {
		select {
		case ev := <-sub.C:
			got = append(got, ev.Message)
		case <-timeout:
			t.Fatalf("got %v, want %d events", got, n)
		}
	}
	return got
}

// A hub reading far behind, overtaken by the stream's trimming, tells its
// subscribers to re-read state: here its reader is held (as the relay's
// hand-over holds it) while the stream is trimmed past it.
func TestHubOvertakenByTrimmingLagsSubscribers(t *testing.T) {
	t.Parallel()
	rdb, prefix := queuetest.New(t)
	ctx := t.Context()
	stream := Channel(prefix)
	hub := startHub(t, ctx, rdb, prefix)
	sub := hub.SubscribeAll(1000)
	if err := addEvents(ctx, rdb, stream, "a"); err != nil {
		t.Fatal(err)
	}
	takeEvents(t, sub, 1)
	hub.publishing.Lock()
	msgs := make([]string, 3*readBatch)
	for i := range msgs {
		msgs[i] = fmt.Sprint(i)
	}
	if err := addEvents(ctx, rdb, stream, msgs...); err != nil {
		hub.publishing.Unlock()
		t.Fatal(err)
	}
	// Whether the reader read some before the trimming or not, it gets at
	// most one batch (it waits for the lock at its first entry) before
	// the trimming, and a full batch of what is left after it.
	err := rdb.XTrimMaxLen(ctx, stream, int64(readBatch)).Err()
	hub.publishing.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("the subscriber was not woken to re-read state")
	}
	if !sub.Lagged() {
		t.Error("the subscriber was not told it lagged")
	}
}

// denyXInfo makes Redis refuse XINFO, as an ACL without it would.
type denyXInfo struct{}

func (denyXInfo) DialHook(next redis.DialHook) redis.DialHook { return next }
func (denyXInfo) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "xinfo" {
			err := errors.New("NOPERM this user has no permissions to run the 'xinfo|stream' command")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (denyXInfo) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A hub whose check for lost events cannot be made (Redis refuses XINFO)
// reads on, and tells its subscribers to re-read state rather than trust
// what it cannot check.
func TestHubReadsOnWithoutStreamInfo(t *testing.T) {
	t.Parallel()
	rdb, prefix := queuetest.New(t)
	ctx := t.Context()
	stream := Channel(prefix)
	if err := addEvents(ctx, rdb, stream, "old"); err != nil { // checked from at start
		t.Fatal(err)
	}
	rdb.AddHook(denyXInfo{})
	hub := NewHub(rdb, prefix, slog.New(slog.NewTextHandler(io.Discard, nil)))
	sub := hub.SubscribeAll(100)
	done := make(chan struct{})
	hctx, cancel := context.WithCancel(ctx)
	go func() { defer close(done); _ = hub.Run(hctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-hub.Ready()
	if err := addEvents(ctx, rdb, stream, "new"); err != nil {
		t.Fatal(err)
	}
	if got := takeEvents(t, sub, 1); got[0] != "new" {
		t.Fatalf("got %v, want new", got)
	}
	if !sub.Lagged() {
		t.Error("the subscriber was not told to re-read state when the check could not be made")
	}
}
