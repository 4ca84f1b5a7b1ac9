// Package queue carries task wake-ups on Redis streams: one stream per tenant,
// one consumer group of agent slots. Postgres stays the source of truth
// (docs/task-protocol.md#queues-and-claims), so an entry holds only a task id
// and an attempt number, never a payload or a secret, and losing the stream
// loses nothing the engine cannot re-publish.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Options names the streams and tunes re-delivery. The zero value is usable.
type Options struct {
	// Prefix namespaces the keys so that several deployments (or tests) can
	// share one Redis: streams are {Prefix}:{tenant}:tasks. Default "coopr".
	Prefix string
	// Group is the consumer group every agent slot reads through, so that
	// each entry goes to one slot only. Default "agents".
	Group string
	// ClaimIdle is how long an entry may stay delivered but unacknowledged
	// before another consumer takes it over: its consumer is presumed dead
	// between reading and acknowledging. Default 15s.
	ClaimIdle time.Duration
}

// Item is all an entry may say: run this attempt of this task. Everything
// else is read from Postgres, so nothing sensitive ever sits in Redis.
type Item struct {
	TaskID  string
	Attempt int
}

// Entry is an item as read from a stream, with the id Ack needs.
type Entry struct {
	ID string
	Item
}

// ErrEmpty is returned by Next when nothing arrived within its wait, so that
// callers can tell an idle queue from a failing one.
var ErrEmpty = errors.New("queue: no entry")

// Stream field names. Keeping them to two is the whole contract with Redis.
const (
	fieldTask    = "taskId"
	fieldAttempt = "attempt"
)

// pageSize bounds one XRANGE reply in Pending, so that a long stream never
// stalls Redis or the client with one huge reply.
const pageSize = 1000

// maxBlock bounds one blocking read. go-redis does not interrupt a blocked
// read when ctx is cancelled, so cancellation is noticed between slices.
const maxBlock = time.Second

// Queue reads and writes the tenant streams. It is safe for concurrent use;
// one Queue per process lets its agent slots share the group and sweep state.
type Queue struct {
	rdb  redis.UniversalClient
	opts Options

	mu     sync.Mutex
	known  map[string]bool   // tenants whose group this process has created
	sweeps map[string]*sweep // per tenant: the search for abandoned entries
}

// sweep remembers where the last XAUTOCLAIM stopped and when it ran.
type sweep struct {
	last   time.Time
	cursor string
}

// New returns a queue over rdb, filling in the defaults of opts.
func New(rdb redis.UniversalClient, opts Options) *Queue {
	if opts.Prefix == "" {
		opts.Prefix = "coopr"
	}
	if opts.Group == "" {
		opts.Group = "agents"
	}
	if opts.ClaimIdle <= 0 {
		opts.ClaimIdle = 15 * time.Second
	}
	return &Queue{rdb: rdb, opts: opts, known: map[string]bool{}, sweeps: map[string]*sweep{}}
}

// Key is the stream of a tenant; exported so that operators and tests can
// inspect the stream directly.
func (q *Queue) Key(tenant string) string { return q.opts.Prefix + ":" + tenant + ":tasks" }

// ensureGroup creates the group (and the stream) unless this process already
// did, so that the usual publish is a single round trip. force skips the
// cache: the stream may have been lost since (a flush or a restart without
// persistence). The group starts at "0" so that entries published into a
// stream that had lost its group are still delivered.
func (q *Queue) ensureGroup(ctx context.Context, tenant string, force bool) error {
	if !force {
		q.mu.Lock()
		known := q.known[tenant]
		q.mu.Unlock()
		if known {
			return nil
		}
	}
	err := q.rdb.XGroupCreateMkStream(ctx, q.Key(tenant), q.opts.Group, "0").Err()
	if err != nil && !hasPrefix(err, "BUSYGROUP") {
		return err
	}
	q.mu.Lock()
	q.known[tenant] = true
	q.mu.Unlock()
	return nil
}

func hasPrefix(err error, code string) bool {
	return err != nil && strings.HasPrefix(err.Error(), code)
}

// lostGroup tells the errors that mean the stream or its group is gone:
// NOGROUP for a read on a missing one, UNBLOCKED for a read that was blocked
// when the key was deleted. Both are cured by recreating the group.
func lostGroup(err error) bool { return hasPrefix(err, "NOGROUP") || hasPrefix(err, "UNBLOCKED") }

// xadd writes the two fields as a list rather than a map so that every entry
// has the same field order.
func (q *Queue) xadd(ctx context.Context, c redis.Cmdable, tenant string, it Item) *redis.StringCmd {
	return c.XAdd(ctx, &redis.XAddArgs{
		Stream: q.Key(tenant),
		Values: []any{fieldTask, it.TaskID, fieldAttempt, strconv.Itoa(it.Attempt)},
	})
}

// errNoTask refuses an item Next would discard as malformed, so that the
// mistake shows at the publisher instead of as a wake-up silently lost.
var errNoTask = errors.New("empty task id")

// Publish appends one entry. After the first call for a tenant it costs one
// round trip.
func (q *Queue) Publish(ctx context.Context, tenant string, it Item) error {
	if it.TaskID == "" {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, errNoTask)
	}
	if err := q.ensureGroup(ctx, tenant, false); err != nil {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, err)
	}
	// A flush between the group check and the XADD leaves a stream without
	// its group; Next recreates the group from "0", so nothing is missed.
	if err := q.xadd(ctx, q.rdb, tenant, it).Err(); err != nil {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, err)
	}
	return nil
}

// PublishMany appends entries in one pipelined round trip, in order, so that
// the engine can wake many tasks at once cheaply.
func (q *Queue) PublishMany(ctx context.Context, tenant string, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	for _, it := range items {
		if it.TaskID == "" {
			return fmt.Errorf("queue: publish tenant %s: %w", tenant, errNoTask)
		}
	}
	if err := q.ensureGroup(ctx, tenant, false); err != nil {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, err)
	}
	pipe := q.rdb.Pipeline()
	for _, it := range items {
		q.xadd(ctx, pipe, tenant, it)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, err)
	}
	return nil
}

// sweepFrom says whether this call should look for abandoned entries and
// from which cursor. The search is rate-limited: abandoned entries are at
// least ClaimIdle old anyway, so looking a few times per ClaimIdle finds
// them in time while most reads cost one round trip.
func (q *Queue) sweepFrom(tenant string) (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.sweeps[tenant]
	if s == nil {
		s = &sweep{cursor: "0-0"}
		q.sweeps[tenant] = s
	}
	now := time.Now()
	if now.Sub(s.last) < max(q.opts.ClaimIdle/4, 10*time.Millisecond) {
		return "", false
	}
	s.last = now
	return s.cursor, true
}

// sweptTo records where the next search resumes. XAUTOCLAIM looks at a
// bounded number of pending entries per call, so always starting at "0-0"
// would never reach an abandoned entry behind many live ones.
func (q *Queue) sweptTo(tenant, cursor string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if s := q.sweeps[tenant]; s != nil {
		s.cursor = cursor
	}
}

// Next returns up to max entries for consumer, waiting at most wait (0: do
// not block): first entries another consumer left unacknowledged for
// ClaimIdle, then new ones. It returns ErrEmpty when nothing arrived, and
// ctx.Err() when ctx ends first. A lost stream or group is recreated on the
// way. Malformed entries are acknowledged, deleted and never returned.
func (q *Queue) Next(ctx context.Context, tenant, consumer string, max int, wait time.Duration) ([]Entry, error) {
	if max < 1 {
		max = 1
	}
	key := q.Key(tenant)
	deadline := time.Now().Add(wait)
	fail := func(err error) ([]Entry, error) {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("queue: next tenant %s: %w", tenant, err)
	}
	// recreate cures a lost group, a bounded number of times so that a
	// stream deleted over and over cannot spin this loop.
	recreated := 0
	recreate := func(cause error) error {
		if recreated++; recreated > 3 {
			return cause
		}
		return q.ensureGroup(ctx, tenant, true)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if start, ok := q.sweepFrom(tenant); ok {
			msgs, next, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: q.opts.Group,
				Consumer: consumer, MinIdle: q.opts.ClaimIdle, Start: start, Count: int64(max)}).Result()
			switch {
			case err == nil:
				q.sweptTo(tenant, next)
				if out, err := q.decode(ctx, tenant, msgs); err != nil {
					return fail(err)
				} else if len(out) > 0 {
					return out, nil
				}
			case lostGroup(err):
				q.sweptTo(tenant, "0-0")
				if err := recreate(err); err != nil {
					return fail(err)
				}
			case errors.Is(err, redis.Nil):
				// Redis before 7 answers an entry deleted while pending with
				// a nil; treat the sweep as finding nothing rather than fail
				// every read.
				q.sweptTo(tenant, "0-0")
			default:
				return fail(err)
			}
		}
		// Blocking no longer than ClaimIdle lets a waiting consumer take over
		// abandoned entries on time.
		block := min(time.Until(deadline), maxBlock, q.opts.ClaimIdle)
		if block < time.Millisecond {
			// go-redis sends BLOCK in whole milliseconds, and BLOCK 0 waits
			// forever; a negative Block sends none and returns at once.
			block = -1
		}
		streams, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: q.opts.Group, Consumer: consumer,
			Streams: []string{key, ">"}, Count: int64(max), Block: block}).Result()
		switch {
		case err == nil:
			for _, s := range streams {
				out, err := q.decode(ctx, tenant, s.Messages)
				if err != nil {
					return fail(err)
				}
				if len(out) > 0 {
					return out, nil
				}
			}
		case errors.Is(err, redis.Nil):
		case lostGroup(err):
			if err := recreate(err); err != nil {
				return fail(err)
			}
			// Entries may have been published into the recreated stream
			// already: read again before giving up on the deadline.
			continue
		default:
			return fail(err)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return nil, ErrEmpty
		}
	}
}

// decode turns messages into entries. Malformed ones (wrong fields, an
// attempt that is not an integer, or no fields at all for an entry deleted
// while pending) would otherwise be re-delivered forever, so they are
// acknowledged and deleted here. Their removal failing is only an error when
// nothing valid came with them: valid entries are already this consumer's
// and would otherwise wait ClaimIdle, while the malformed ones stay pending
// and are met again by a later sweep.
func (q *Queue) decode(ctx context.Context, tenant string, msgs []redis.XMessage) ([]Entry, error) {
	var out []Entry
	var bad []string
	for _, m := range msgs {
		it, ok := parse(m.Values)
		if !ok {
			bad = append(bad, m.ID)
			continue
		}
		out = append(out, Entry{ID: m.ID, Item: it})
	}
	if len(bad) > 0 {
		if err := q.Ack(ctx, tenant, bad...); err != nil && len(out) == 0 {
			return nil, err
		}
	}
	return out, nil
}

// parse accepts exactly the two fields Publish writes.
func parse(v map[string]any) (Item, bool) {
	if len(v) != 2 {
		return Item{}, false
	}
	id, _ := v[fieldTask].(string)
	at, _ := v[fieldAttempt].(string)
	n, err := strconv.Atoi(at)
	if id == "" || err != nil {
		return Item{}, false
	}
	return Item{TaskID: id, Attempt: n}, true
}

// Ack acknowledges and deletes entries in one round trip. Deleting keeps the
// stream down to work not yet done, which is what Pending reports and what a
// recreated group (starting at "0") re-delivers.
func (q *Queue) Ack(ctx context.Context, tenant string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	pipe := q.rdb.Pipeline()
	pipe.XAck(ctx, q.Key(tenant), q.opts.Group, ids...)
	pipe.XDel(ctx, q.Key(tenant), ids...)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: ack tenant %s: %w", tenant, err)
	}
	return nil
}

// Pending counts, per item, the entries in the tenant's stream, delivered or
// not. The engine's reconciler compares it with Postgres and re-publishes
// queued attempts that have no entry, which is what makes a lost stream
// harmless. Malformed entries are not counted: they wake nothing.
func (q *Queue) Pending(ctx context.Context, tenant string) (map[Item]int, error) {
	out := map[Item]int{}
	start := "-"
	for {
		msgs, err := q.rdb.XRangeN(ctx, q.Key(tenant), start, "+", pageSize).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: pending tenant %s: %w", tenant, err)
		}
		for _, m := range msgs {
			if it, ok := parse(m.Values); ok {
				out[it]++
			}
		}
		if len(msgs) < pageSize {
			return out, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// Len is the number of entries in the tenant's stream, for metrics and tests.
func (q *Queue) Len(ctx context.Context, tenant string) (int64, error) {
	n, err := q.rdb.XLen(ctx, q.Key(tenant)).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: len tenant %s: %w", tenant, err)
	}
	return n, nil
}
