// Package events carries committed state changes (the events table) to
// whoever watches: a relay copies them from Postgres to a Redis channel in
// commit order, and every server's hub hands them to its local subscribers.
package events

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/redis/go-redis/v9"

	"github.com/cooprhq/coopr/server/leader"
)

// Event is one committed state change of a cluster, job or task.
type Event struct {
	Seq     int64     `json:"seq" db:"id"`
	Tenant  string    `json:"tenant" db:"tenant_id"`
	Cluster string    `json:"cluster,omitempty" db:"cluster_id"`
	Job     string    `json:"job,omitempty" db:"job_id"`
	Task    string    `json:"task,omitempty" db:"task_id"`
	Kind    string    `json:"kind" db:"kind"` // cluster, job or task
	State   string    `json:"state" db:"state"`
	Attempt int       `json:"attempt,omitempty" db:"attempt"`
	Message string    `json:"message,omitempty" db:"message"`
	At      time.Time `json:"at" db:"created_at"`
	// Txid is the transaction that made the change (0 when unknown): a
	// subscriber drops the changes its first snapshot already saw.
	Txid uint64 `json:"txid,omitempty" db:"-"`
}

// Snapshot is a Postgres snapshot (pg_current_snapshot()), to tell which
// changes a read taken under it saw.
type Snapshot struct {
	xmin, xmax uint64
	running    map[uint64]bool
}

// ParseSnapshot reads the text form "xmin:xmax:xip,…".
func ParseSnapshot(s string) (Snapshot, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Snapshot{}, fmt.Errorf("snapshot %q: want xmin:xmax:xip", s)
	}
	var sn Snapshot
	var err error
	if sn.xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if sn.xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot %q: %w", s, err)
	}
	sn.running = map[uint64]bool{}
	for _, x := range strings.Split(parts[2], ",") {
		if x == "" {
			continue
		}
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return Snapshot{}, fmt.Errorf("snapshot %q: %w", s, err)
		}
		sn.running[n] = true
	}
	return sn, nil
}

// Saw tells whether a read under the snapshot saw ev's change: ev's
// transaction had committed when the snapshot was taken.
func (sn Snapshot) Saw(ev Event) bool {
	t := ev.Txid
	return t != 0 && (t < sn.xmin || t < sn.xmax && !sn.running[t])
}

// Channel names the Redis keys events travel on: a capped stream of
// events (a stream, not pub/sub, so that a hub that reconnects picks up
// where it stopped), and pub/sub channels for task output and agents.
// An entry of the stream holds the events a relay round published
// together, in order, as a JSON array under "b" (an entry per event, under
// "e", was one XADD and one entry for readers to parse per event: most of
// the relay's share of Redis and of the stream readers' CPU).
func Channel(prefix string) string { return prefix + ":events" }

// streamCap bounds the event stream, in entries (each of one event or
// more, at most maxEntryBytes). A hub further behind than this (cut off
// from Redis while another server relays) misses the entries trimmed, and
// tells its subscribers to re-read state (Hub.checkMissed).
const streamCap = 100_000

// entryEvents decodes a stream entry's events: a round's under "b", or
// one under "e" as relays wrote them before.
func entryEvents(values map[string]any) ([]Event, error) {
	if raw, ok := values["b"].(string); ok {
		var evs []Event
		err := json.Unmarshal([]byte(raw), &evs)
		return evs, err
	}
	raw, _ := values["e"].(string)
	var ev Event
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		return nil, err
	}
	return []Event{ev}, nil
}

// Relay copies committed events to Redis. Every server runs one; an
// advisory lock lets one relay at a time, and another takes over within a
// second when it stops. Transactions are relayed once all older ones have
// ended, tracked by a watermark kept in Postgres, so an event is never
// skipped; after a crash between publishing and saving the watermark a few
// may be published twice, which subscribers tolerate.
type Relay struct {
	db      *sqlx.DB
	dsn     string
	rdb     redis.UniversalClient
	channel string
	log     *slog.Logger
	// Poll bounds how long an event can wait when a notification is lost.
	Poll time.Duration
	// Pace is the least time between the starts of two rounds when the
	// first published events (DefaultPace when zero; negative: none).
	// Under load every engine commit wakes the relay, and a round per wake
	// cost a statement, a Redis round trip and their system calls for a
	// few events each; paced, a round takes the events of every commit
	// since the last. A lone event after a quiet spell goes at once; one
	// right behind a busy round waits at most Pace.
	Pace time.Duration
	// LeaderTTL is the relaying leadership's lease (leader.DefaultTTL
	// when zero).
	LeaderTTL time.Duration
	// OnBatch, if set, sees every batch after it is published (the engine
	// learns there of changes made by other servers).
	OnBatch func([]Event)
	// Local, if set, is this server's hub: the relay hands it what it
	// publishes, as well as adding it to the stream. Under load every
	// round trip waits behind the subscribers' work, and reading back what
	// this process just wrote was one more.
	Local *Hub

	// round is roundSQL prepared on the session Run relays on: a round
	// runs at every wake, and planning it took Postgres longer than
	// running it.
	round *sql.Stmt

	wakes   chan struct{} // Wake → RunWakes, to the relaying server
	local   chan struct{} // Wake → Run, when this server relays
	leading atomic.Bool   // this server relays
}

// NewRelay returns a relay over db (opened from dsn, which the relay uses
// to LISTEN) publishing to rdb under prefix.
func NewRelay(db *sqlx.DB, dsn string, rdb redis.UniversalClient, prefix string, log *slog.Logger) *Relay {
	return &Relay{db: db, dsn: dsn, rdb: rdb, channel: Channel(prefix), log: log, Poll: 250 * time.Millisecond,
		wakes: make(chan struct{}, 1), local: make(chan struct{}, 1)}
}

// Wake tells the relaying server, whichever it is, that events committed
// without a NOTIFY (see migration 00015): this one directly, another
// through Redis. It never blocks: wakes that come while one is being sent
// are sent as one.
func (r *Relay) Wake() {
	wakes := r.wakes
	if r.leading.Load() {
		wakes = r.local
	}
	select {
	case wakes <- struct{}{}:
	default:
	}
}

// Leading reports whether this server relays.
func (r *Relay) Leading() bool { return r.leading.Load() }

// RunWakes sends the wakes of this server until ctx ends.
func (r *Relay) RunWakes(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wakes:
		}
		if err := r.rdb.Publish(ctx, r.channel+":wake", "").Err(); err != nil && ctx.Err() == nil {
			// The relay's poll finds the events anyway.
			r.log.Debug("events: wake the relay", "err", err)
		}
	}
}

// DefaultPace is the relay's Pace unless set.
const DefaultPace = 4 * time.Millisecond

// maxRelayFailures is how many rounds in a row may fail before Run gives
// up and ends (its caller runs it again).
const maxRelayFailures = 10

const relayLock = `hashtext(current_schema() || ':coopr-event-relay')`

// Run relays until ctx ends, once it leads the relaying (leader.Acquire:
// another server's relay may). It returns an error wrapping
// leader.ErrLost when its leadership ends under it; a caller runs it
// again.
func (r *Relay) Run(ctx context.Context) (err error) {
	outer := ctx
	defer func() {
		if outer.Err() != nil {
			err = nil // whatever failed was cut short by the shutdown
		}
	}()
	term, err := leader.Acquire(ctx, r.db, leader.Config{Name: "event-relay", LockKey: relayLock, TTL: r.LeaderTTL, Log: r.log})
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer term.Release()
	ctx, cancel := term.Context(ctx)
	defer cancel()
	defer func() {
		if lost := term.Err(); lost != nil && outer.Err() == nil {
			err = fmt.Errorf("events: %w", lost)
		}
	}()
	conn, err := r.db.Connx(ctx)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	defer func() {
		// Closed for good: back in the pool, its synchronous_commit = off
		// would reach other writers.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		_ = conn.Close()
	}()
	r.leading.Store(true)
	defer r.leading.Store(false)
	var schema string
	if err := conn.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	// The watermark is the only thing this session writes (see relay).
	if _, err := conn.ExecContext(ctx, `SET synchronous_commit = off`); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	round, err := conn.PrepareContext(ctx, roundSQL)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	r.round = round
	defer func() {
		r.round = nil
		_ = round.Close()
	}()
	pace := r.Pace
	if pace == 0 {
		pace = DefaultPace
	}
	l := pq.NewListener(r.dsn, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil && ctx.Err() == nil {
			r.log.Warn("events: listener", "event", ev, "err", err)
		}
	})
	defer l.Close()
	if err := l.Listen("coopr_events_" + schema); err != nil {
		return fmt.Errorf("events: listen: %w", err)
	}
	if _, err := r.db.ExecContext(ctx, `INSERT INTO event_relay (watermark)
		VALUES (pg_snapshot_xmin(pg_current_snapshot())) ON CONFLICT DO NOTHING`); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	ps := r.rdb.Subscribe(ctx, r.channel+":wake")
	defer ps.Close()
	wakes := ps.Channel()
	tick := time.NewTicker(r.Poll)
	defer tick.Stop()
	// unsaved is the watermark after the events last published, saved by
	// the next round's statement (or on the way out).
	var unsaved *string
	defer func() {
		if unsaved != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = conn.ExecContext(ctx, `UPDATE event_relay SET watermark = $1::xid8`, *unsaved)
		}
	}()
	// A transaction open anywhere on the server holds back events
	// committed after it began (see relay): while some are held back the
	// relay looks again soon, backing off, rather than wait for the next
	// wake or poll.
	const firstRetry, maxRetry = 10 * time.Millisecond, 250 * time.Millisecond
	backoff := firstRetry
	failures := 0
	var watch heldWatch
	for {
		start := time.Now()
		next, held, n, err := r.relay(ctx, conn, unsaved)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// A broken connection stays broken: end, to be run again on a
			// new one (and to let another server relay meanwhile).
			if failures++; failures >= maxRelayFailures || errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) {
				return fmt.Errorf("events: relay: %w", err)
			}
			r.log.Warn("events: relay", "err", err)
		} else {
			unsaved, failures = next, 0
			watch.round(ctx, conn, r.log, held, time.Now())
		}
		var retry <-chan time.Time
		if held {
			retry = time.After(min(backoff, r.Poll))
			backoff = min(backoff*2, maxRetry)
		} else {
			backoff = firstRetry
		}
		if n > 0 && pace > 0 {
			// Wakes meanwhile wait in their channels, to be taken together.
			if d := time.Until(start.Add(pace)); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-ctx.Done():
					t.Stop()
					return nil
				case <-t.C:
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.Notify:
		case <-wakes:
		case <-r.local:
		case <-tick.C:
		case <-retry:
		}
	}
}

// relay publishes every event of transactions that ended since the
// watermark and returns the watermark after them, for the next round to
// save (unsaved: the one the last round returned, or nil). Under load the
// relay waits behind the subscribers' work for every round trip it makes,
// so the common case takes two: one statement saves the last round's
// watermark and reads the bounds with the first page of events, and one
// publishes them. The watermark is saved after what it covers was
// published, without waiting for the disk: losing it in a crash only
// publishes some events twice, which subscribers drop. held says that
// committed events wait behind a transaction still open; published counts
// the events published.
func (r *Relay) relay(ctx context.Context, conn *sqlx.Conn, unsaved *string) (_ *string, held bool, published int, _ error) {
	var rows *sql.Rows
	var err error
	if r.round != nil {
		rows, err = r.round.QueryContext(ctx, unsaved)
	} else {
		rows, err = conn.QueryContext(ctx, roundSQL, unsaved)
	}
	if err != nil {
		return nil, false, 0, err
	}
	var b relayBounds
	evs, err := scanEvents(rows, &b, nil)
	if err != nil {
		return nil, false, 0, err
	}
	if len(evs) == 0 {
		// Nothing ended with events since the watermark (saved now); it
		// moves with the next events.
		return nil, b.held, 0, nil
	}
	for {
		if err := r.publish(ctx, evs); err != nil {
			return nil, b.held, published, err
		}
		published += len(evs)
		if len(evs) < relayPage {
			break
		}
		last := evs[len(evs)-1]
		rows, err := conn.QueryContext(ctx, `SELECT id, tenant_id, cluster_id, job_id,
				task_id, kind, state, attempt, message, created_at, txid::text AS txid
			FROM events WHERE txid >= $1::xid8 AND txid < $2::xid8 AND (txid, id) > ($3::xid8, $4)
			ORDER BY txid, id LIMIT `+strconv.Itoa(relayPage), b.from, b.to, strconv.FormatUint(last.Txid, 10), last.Seq)
		if err != nil {
			return nil, b.held, published, err
		}
		if evs, err = scanEvents(rows, nil, nil); err != nil { // not reused: OnBatch may keep a batch
			return nil, b.held, published, err
		}
		if len(evs) == 0 {
			break
		}
	}
	return &b.to, b.held, published, nil
}

// relayBounds are the round's: the watermark it starts from, the one it
// ends at, and whether events wait behind a transaction still open.
type relayBounds struct {
	from, to string
	held     bool
}

// scanEvents reads rows of events, after the bounds when b is not nil (as
// roundSQL gives them: a row of bounds alone when there are no events),
// appended to evs. Scanned by hand: sqlx's reflection was a third of the
// relay's CPU.
func scanEvents(rows *sql.Rows, b *relayBounds, evs []Event) ([]Event, error) {
	defer rows.Close()
	var (
		seq, attempt                                     sql.NullInt64
		tenant, cluster, job, task, kind, state, message sql.NullString
		at                                               sql.NullTime
		txid, from, to                                   sql.RawBytes
		held                                             bool
	)
	dest := []any{&seq, &tenant, &cluster, &job, &task, &kind, &state, &attempt, &message, &at, &txid}
	if b != nil {
		dest = append([]any{&from, &to, &held}, dest...)
	}
	first := true
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return evs, err
		}
		if b != nil && first {
			b.from, b.to, b.held = string(from), string(to), held
		}
		first = false
		if !seq.Valid {
			continue // the bounds alone
		}
		ev := Event{Seq: seq.Int64, Tenant: tenant.String, Cluster: cluster.String, Job: job.String, Task: task.String,
			Kind: kind.String, State: state.String, Attempt: int(attempt.Int64), Message: message.String, At: at.Time}
		ev.Txid, _ = strconv.ParseUint(string(txid), 10, 64)
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return evs, err
	}
	if b != nil && first {
		return evs, errors.New("round: no bounds")
	}
	return evs, nil
}

// relayPage is the most events a round reads in one statement.
const relayPage = 5000 // as in roundSQL

// roundSQL saves the last round's watermark ($1, or NULL) and reads the
// bounds with the first page of events, or alone when there are none (an
// empty round was a second statement for held).
const roundSQL = `WITH saved AS (
			UPDATE event_relay SET watermark = $1::xid8 WHERE $1::xid8 IS NOT NULL RETURNING watermark),
		w AS (SELECT COALESCE((SELECT watermark FROM saved), (SELECT watermark FROM event_relay)) AS lo,
			pg_snapshot_xmin(pg_current_snapshot()) AS hi,
			` + heldSQL + ` AS held)
		SELECT w.lo::text AS from_xid, w.hi::text AS to_xid, w.held, e.id, e.tenant_id, e.cluster_id,
			e.job_id, e.task_id, e.kind, e.state, e.attempt, e.message, e.created_at, e.txid::text AS txid
		FROM w LEFT JOIN LATERAL (SELECT * FROM events WHERE txid >= w.lo AND txid < w.hi
			ORDER BY txid, id LIMIT 5000) e ON true`

// heldSQL tells whether events wait behind a transaction still open: some
// event's transaction is at or above the snapshot's xmin. It reads the
// newest event's txid from the end of the index, where EXISTS over the
// range was planned as a scan of the whole table (the planner expects
// many events above an xmin it does not know), which made every relay
// round cost as much as the table is long: a 5,000-node create's share of
// Postgres's time went mostly to it.
const heldSQL = `coalesce((SELECT txid FROM events ORDER BY txid DESC LIMIT 1) >= pg_snapshot_xmin(pg_current_snapshot()), false)`

// maxEntryBytes bounds a stream entry: a page of events with long
// messages (an agent's, up to its request's size) must not grow one entry
// past what Redis takes in one string, nor a reader's reply with it.
const maxEntryBytes = 1 << 20

// publish adds batch to the stream, as one entry of at most maxEntryBytes
// (a single event may pass it) in one round trip each.
func (r *Relay) publish(ctx context.Context, batch []Event) error {
	for len(batch) > 0 {
		b, n := appendEvents(make([]byte, 0, 256*len(batch)), batch, maxEntryBytes)
		if err := r.publishEntry(ctx, batch[:n], b); err != nil {
			return err
		}
		batch = batch[n:]
	}
	return nil
}

// publishEntry adds the entry b, batch encoded, in one round trip.
func (r *Relay) publishEntry(ctx context.Context, batch []Event, b []byte) error {
	// MULTI: the entry before the one added is known for sure, for the
	// local hub (see Hub.relayed).
	if r.Local != nil {
		r.Local.publishing.Lock()
		defer r.Local.publishing.Unlock()
	}
	pipe := r.rdb.TxPipeline()
	before := pipe.XRevRangeN(ctx, r.channel, "+", "-", 1)
	add := pipe.XAdd(ctx, &redis.XAddArgs{Stream: r.channel, MaxLen: streamCap, Approx: true, Values: []any{"b", b}})
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if r.Local != nil {
		prev := "0-0"
		if msgs := before.Val(); len(msgs) > 0 {
			prev = msgs[0].ID
		}
		r.Local.relayed(prev, add.Val(), batch)
	}
	if r.OnBatch != nil {
		r.OnBatch(batch)
	}
	return nil
}
