// Package queue carries task wake-ups on Redis streams: one stream per
// tenant, one consumer group of agent slots. Postgres stays the source of
// truth (SPEC §7.4), so an entry holds only a task id and an attempt number,
// never a payload or a secret, and losing the stream loses nothing the
// engine cannot re-publish.
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

// Options names the streams and tunes re-delivery.
type Options struct {
	Prefix string // default "coopr": streams are {prefix}:{tenant}:tasks
	Group  string // default "agents"
	// ClaimIdle is how long an entry may stay delivered but unacknowledged
	// before another consumer takes it over (its consumer died between read
	// and claim). Default 15 s.
	ClaimIdle time.Duration
}

// Item is what an entry says: run this attempt of this task.
type Item struct {
	TaskID  string
	Attempt int
}

// Entry is an item read from a stream, with the id to acknowledge it by.
type Entry struct {
	ID string
	Item
}

// ErrEmpty is returned by Next when nothing arrived in time.
var ErrEmpty = errors.New("queue: no entry")

// Queue reads and writes the tenant streams. It is safe for concurrent use.
type Queue struct {
	rdb  redis.UniversalClient
	opts Options

	mu    sync.Mutex
	known map[string]bool      // tenants whose group was created by this process
	swept map[string]time.Time // last XAUTOCLAIM per tenant
}

// autoClaimDue rate-limits the search for abandoned entries: they are at
// least ClaimIdle old anyway, so looking a few times per ClaimIdle finds
// them in time while most reads cost one round trip.
func (q *Queue) autoClaimDue(tenant string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	if now.Sub(q.swept[tenant]) < max(q.opts.ClaimIdle/4, 10*time.Millisecond) {
		return false
	}
	q.swept[tenant] = now
	return true
}

// New returns a queue over rdb.
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
	return &Queue{rdb: rdb, opts: opts, known: map[string]bool{}, swept: map[string]time.Time{}}
}

// Key is the stream of a tenant.
func (q *Queue) Key(tenant string) string { return q.opts.Prefix + ":" + tenant + ":tasks" }

func (q *Queue) ensureGroup(ctx context.Context, tenant string, force bool) error {
	q.mu.Lock()
	known := q.known[tenant]
	q.mu.Unlock()
	if known && !force {
		return nil
	}
	err := q.rdb.XGroupCreateMkStream(ctx, q.Key(tenant), q.opts.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return err
	}
	q.mu.Lock()
	q.known[tenant] = true
	q.mu.Unlock()
	return nil
}

func values(it Item) map[string]any {
	return map[string]any{"taskId": it.TaskID, "attempt": strconv.Itoa(it.Attempt)}
}

// Publish appends one entry.
func (q *Queue) Publish(ctx context.Context, tenant string, it Item) error {
	return q.PublishMany(ctx, tenant, []Item{it})
}

// PublishMany appends entries in one round trip.
func (q *Queue) PublishMany(ctx context.Context, tenant string, items []Item) error {
	if len(items) == 0 {
		return nil
	}
	if err := q.ensureGroup(ctx, tenant, false); err != nil {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, err)
	}
	pipe := q.rdb.Pipeline()
	for _, it := range items {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: q.Key(tenant), Values: values(it)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("queue: publish tenant %s: %w", tenant, err)
	}
	// A flush between the group check and the XADD leaves a stream without
	// the group; the next Next recreates it, reading from "0", so nothing
	// published is missed.
	return nil
}

func isNoGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

// Next returns up to max entries for consumer, waiting at most wait: first
// entries another consumer left unacknowledged for ClaimIdle, then new ones.
func (q *Queue) Next(ctx context.Context, tenant, consumer string, max int, wait time.Duration) ([]Entry, error) {
	if max < 1 {
		max = 1
	}
	key := q.Key(tenant)
	deadline := time.Now().Add(wait)
	for {
		if q.autoClaimDue(tenant) {
			msgs, _, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: q.opts.Group, Consumer: consumer,
				MinIdle: q.opts.ClaimIdle, Start: "0-0", Count: int64(max)}).Result()
			if isNoGroup(err) || errors.Is(err, redis.Nil) {
				if err := q.ensureGroup(ctx, tenant, true); err != nil {
					return nil, fmt.Errorf("queue: next tenant %s: %w", tenant, err)
				}
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, fmt.Errorf("queue: next tenant %s: %w", tenant, err)
			}
			if out := q.entries(ctx, tenant, msgs); len(out) > 0 {
				return out, nil
			}
		}
		block := min(time.Until(deadline), time.Second)
		if block < time.Millisecond {
			// go-redis sends BLOCK in whole milliseconds and BLOCK 0 waits
			// forever; a negative Block sends none and returns at once.
			block = -1
		}
		streams, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: q.opts.Group, Consumer: consumer,
			Streams: []string{key, ">"}, Count: int64(max), Block: block}).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case isNoGroup(err):
			if err := q.ensureGroup(ctx, tenant, true); err != nil {
				return nil, fmt.Errorf("queue: next tenant %s: %w", tenant, err)
			}
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("queue: next tenant %s: %w", tenant, err)
		default:
			for _, s := range streams {
				if out := q.entries(ctx, tenant, s.Messages); len(out) > 0 {
					return out, nil
				}
			}
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !time.Now().Before(deadline) {
			return nil, ErrEmpty
		}
	}
}

// entries decodes messages; malformed ones are removed, never returned.
func (q *Queue) entries(ctx context.Context, tenant string, msgs []redis.XMessage) []Entry {
	var out []Entry
	var bad []string
	for _, m := range msgs {
		id, _ := m.Values["taskId"].(string)
		at, _ := m.Values["attempt"].(string)
		n, err := strconv.Atoi(at)
		if id == "" || err != nil || len(m.Values) != 2 {
			bad = append(bad, m.ID)
			continue
		}
		out = append(out, Entry{ID: m.ID, Item: Item{TaskID: id, Attempt: n}})
	}
	if len(bad) > 0 {
		_ = q.Ack(ctx, tenant, bad...)
	}
	return out
}

// Ack acknowledges and deletes entries, so the stream holds only work not
// yet claimed.
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

// Pending counts the items that have an entry in the tenant's stream.
func (q *Queue) Pending(ctx context.Context, tenant string) (map[Item]int, error) {
	out := map[Item]int{}
	start := "-"
	for {
		msgs, err := q.rdb.XRangeN(ctx, q.Key(tenant), start, "+", 1000).Result()
		if err != nil {
			return nil, fmt.Errorf("queue: pending tenant %s: %w", tenant, err)
		}
		for _, m := range msgs {
			id, _ := m.Values["taskId"].(string)
			n, err := strconv.Atoi(fmt.Sprint(m.Values["attempt"]))
			if id != "" && err == nil {
				out[Item{TaskID: id, Attempt: n}]++
			}
		}
		if len(msgs) < 1000 {
			return out, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// Len is the number of entries in the tenant's stream.
func (q *Queue) Len(ctx context.Context, tenant string) (int64, error) {
	n, err := q.rdb.XLen(ctx, q.Key(tenant)).Result()
	if err != nil {
		return 0, fmt.Errorf("queue: len tenant %s: %w", tenant, err)
	}
	return n, nil
}
