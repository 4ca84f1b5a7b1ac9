package queue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

func newQueue(t testing.TB, idle time.Duration) (*queue.Queue, func() context.Context) {
	rdb, prefix := queuetest.New(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix, ClaimIdle: idle})
	return q, context.Background
}

func items(n int) []queue.Item {
	out := make([]queue.Item, n)
	for i := range out {
		out[i] = queue.Item{TaskID: fmt.Sprintf("task-%d", i), Attempt: 1 + i%3}
	}
	return out
}

func TestPublishNextAck(t *testing.T) {
	t.Parallel()
	q, ctx := newQueue(t, time.Minute)
	in := items(5)
	if err := q.PublishMany(ctx(), "t1", in); err != nil {
		t.Fatal(err)
	}
	var got []queue.Item
	for len(got) < len(in) {
		es, err := q.Next(ctx(), "t1", "a:0", 2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			got = append(got, e.Item)
			if err := q.Ack(ctx(), "t1", e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(in) {
		t.Errorf("got %v, want %v", got, in)
	}
	if n, err := q.Len(ctx(), "t1"); err != nil || n != 0 {
		t.Errorf("len %d %v", n, err)
	}
	if _, err := q.Next(ctx(), "t1", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("empty: %v", err)
	}
	// A tenant whose stream never existed is empty, not an error.
	if _, err := q.Next(ctx(), "nobody", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("new tenant: %v", err)
	}
}

func TestRedeliveryAfterClaimIdle(t *testing.T) {
	t.Parallel()
	q, ctx := newQueue(t, 150*time.Millisecond)
	if err := q.Publish(ctx(), "t1", queue.Item{TaskID: "x", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if es, err := q.Next(ctx(), "t1", "a:0", 1, time.Second); err != nil || len(es) != 1 {
		t.Fatalf("%v %v", es, err)
	}
	// Not yet idle long enough: B gets nothing.
	if _, err := q.Next(ctx(), "t1", "b:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
		t.Fatalf("early redelivery: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	es, err := q.Next(ctx(), "t1", "b:0", 1, 0)
	if err != nil || len(es) != 1 || es[0].TaskID != "x" {
		t.Fatalf("redelivery: %v %v", es, err)
	}
}

func TestNextWaits(t *testing.T) {
	t.Parallel()
	q, ctx := newQueue(t, time.Minute)
	start := time.Now()
	if _, err := q.Next(ctx(), "t1", "a:0", 1, 300*time.Millisecond); !errors.Is(err, queue.ErrEmpty) {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("waited %v for 300ms", d)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = q.Publish(context.Background(), "t1", queue.Item{TaskID: "late", Attempt: 1})
	}()
	start = time.Now()
	es, err := q.Next(ctx(), "t1", "a:0", 1, 10*time.Second)
	if err != nil || len(es) != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("%v %v after %v", es, err, time.Since(start))
	}
	c, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := q.Next(c, "t1", "a:0", 1, 10*time.Second); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("cancel: %v after %v", err, time.Since(start))
	}
}

func TestStreamLoss(t *testing.T) {
	t.Parallel()
	rdb, prefix := queuetest.New(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.Publish(ctx, "t1", queue.Item{TaskID: "a", Attempt: 1}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, q.Key("t1")).Err(); err != nil {
		t.Fatal(err)
	}
	// Reading recreates the group; publishing after the loss works.
	if _, err := q.Next(ctx, "t1", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
		t.Fatalf("after loss: %v", err)
	}
	if err := rdb.Del(ctx, q.Key("t1")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := q.Publish(ctx, "t1", queue.Item{TaskID: "b", Attempt: 2}); err != nil {
		t.Fatal(err)
	}
	es, err := q.Next(ctx, "t1", "a:0", 1, time.Second)
	if err != nil || len(es) != 1 || es[0].TaskID != "b" {
		t.Fatalf("%v %v", es, err)
	}
}

func TestMalformedAndPending(t *testing.T) {
	t.Parallel()
	rdb, prefix := queuetest.New(t)
	q := queue.New(rdb, queue.Options{Prefix: prefix})
	ctx := context.Background()
	if err := q.PublishMany(ctx, "t1", append(items(1100), queue.Item{TaskID: "task-0", Attempt: 1})); err != nil {
		t.Fatal(err)
	}
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: q.Key("t1"), Values: map[string]any{"taskId": "x"}})
	rdb.XAdd(ctx, &redis.XAddArgs{Stream: q.Key("t1"), Values: map[string]any{"taskId": "x", "attempt": "one"}})
	pending, err := q.Pending(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1100 || pending[queue.Item{TaskID: "task-0", Attempt: 1}] != 2 {
		t.Errorf("pending: %d items, task-0 x%d", len(pending), pending[queue.Item{TaskID: "task-0", Attempt: 1}])
	}
	// The stream holds only taskId and attempt.
	msgs, err := rdb.XRange(ctx, q.Key("t1"), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs[:1101] {
		if len(m.Values) != 2 || m.Values["taskId"] == nil || m.Values["attempt"] == nil {
			t.Fatalf("entry fields %v", m.Values)
		}
	}
	n := 0
	for {
		es, err := q.Next(ctx, "t1", "a:0", 500, 0)
		if errors.Is(err, queue.ErrEmpty) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if e.TaskID == "x" {
				t.Fatalf("malformed entry returned: %v", e)
			}
			if err := q.Ack(ctx, "t1", e.ID); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n != 1101 {
		t.Errorf("read %d entries, want 1101", n)
	}
	if l, _ := q.Len(ctx, "t1"); l != 0 {
		t.Errorf("malformed entries left: len %d", l)
	}
}

func BenchmarkPublishNextAck(b *testing.B) {
	q, ctx := newQueue(b, time.Minute)
	for i := 0; b.Loop(); i++ {
		if err := q.Publish(ctx(), "t1", queue.Item{TaskID: "x", Attempt: i}); err != nil {
			b.Fatal(err)
		}
		es, err := q.Next(ctx(), "t1", "a:0", 1, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Ack(ctx(), "t1", es[0].ID); err != nil {
			b.Fatal(err)
		}
	}
}
