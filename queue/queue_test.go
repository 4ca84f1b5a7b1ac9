package queue_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/redis/go-redis/v9"
)

// newQueue gives each test its own prefix on the shared test Redis.
func newQueue(t testing.TB, idle time.Duration) (*queue.Queue, *redis.Client) {
	t.Helper()
	rdb, prefix := queuetest.New(t)
	return queue.New(rdb, queue.Options{Prefix: prefix, ClaimIdle: idle}), rdb
}

func items(prefix string, n int) []queue.Item {
	out := make([]queue.Item, n)
	for i := range out {
		out[i] = queue.Item{TaskID: fmt.Sprintf("%s-%d", prefix, i), Attempt: 1 + i%3}
	}
	return out
}

// drain reads until nothing is left, acknowledging as it goes.
func drain(t *testing.T, q *queue.Queue, tenant, consumer string, max int) []queue.Item {
	t.Helper()
	var got []queue.Item
	for {
		es, err := q.Next(t.Context(), tenant, consumer, max, 0)
		if errors.Is(err, queue.ErrEmpty) {
			return got
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if len(es) == 0 || len(es) > max {
			t.Fatalf("next returned %d entries for max %d", len(es), max)
		}
		ids := make([]string, len(es))
		for i, e := range es {
			got = append(got, e.Item)
			ids[i] = e.ID
		}
		if err := q.Ack(t.Context(), tenant, ids...); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
}

func wantLen(t *testing.T, q *queue.Queue, tenant string, want int64) {
	t.Helper()
	if n, err := q.Len(t.Context(), tenant); err != nil || n != want {
		t.Errorf("len = %d, %v; want %d", n, err, want)
	}
}

func TestPublishNextAck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		n, max   int
		oneByOne bool
	}{
		{"one", 1, 1, true},
		{"five by two", 5, 2, true},
		{"many by ten", 95, 10, false},
		{"max zero means one", 3, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, _ := newQueue(t, time.Minute)
			in := items("task", tc.n)
			if tc.oneByOne {
				for _, it := range in {
					if err := q.Publish(t.Context(), "t1", it); err != nil {
						t.Fatal(err)
					}
				}
			} else if err := q.PublishMany(t.Context(), "t1", in); err != nil {
				t.Fatal(err)
			}
			wantLen(t, q, "t1", int64(tc.n))
			got := drain(t, q, "t1", "agent-1:0", max(tc.max, 1))
			if !reflect.DeepEqual(got, in) {
				t.Errorf("got %v, want %v", got, in)
			}
			wantLen(t, q, "t1", 0)
		})
	}
}

func TestTenantsAreSeparate(t *testing.T) {
	t.Parallel()
	q, _ := newQueue(t, time.Minute)
	a, b := queue.Item{TaskID: "a", Attempt: 1}, queue.Item{TaskID: "b", Attempt: 1}
	if err := q.Publish(t.Context(), "t1", a); err != nil {
		t.Fatal(err)
	}
	if err := q.Publish(t.Context(), "t2", b); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, q, "t2", "x:0", 10); !reflect.DeepEqual(got, []queue.Item{b}) {
		t.Errorf("t2: %v", got)
	}
	if got := drain(t, q, "t1", "x:0", 10); !reflect.DeepEqual(got, []queue.Item{a}) {
		t.Errorf("t1: %v", got)
	}
}

func TestPublishRejectsEmptyTaskID(t *testing.T) {
	t.Parallel()
	q, _ := newQueue(t, time.Minute)
	if err := q.Publish(t.Context(), "t1", queue.Item{Attempt: 1}); err == nil {
		t.Error("publish of an empty task id succeeded")
	}
	if err := q.PublishMany(t.Context(), "t1", []queue.Item{{TaskID: "a"}, {}}); err == nil {
		t.Error("publish many with an empty task id succeeded")
	}
	wantLen(t, q, "t1", 0)
}

func TestRedeliveryAfterClaimIdle(t *testing.T) {
	t.Parallel()
	const idle = 100 * time.Millisecond
	rdb, prefix := queuetest.New(t)
	// A and B are different processes: a Queue each, sharing only Redis.
	qa := queue.New(rdb, queue.Options{Prefix: prefix, ClaimIdle: idle})
	qb := queue.New(rdb, queue.Options{Prefix: prefix, ClaimIdle: idle})
	it := queue.Item{TaskID: "x", Attempt: 2}
	if err := qa.Publish(t.Context(), "t1", it); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := qa.Next(t.Context(), "t1", "a:0", 1, time.Second)
	if err != nil || len(got) != 1 || got[0].Item != it {
		t.Fatalf("A: %v, %v", got, err)
	}
	// Before ClaimIdle, B gets nothing. Whatever B gets must have been idle
	// for ClaimIdle, however slow this machine is.
	for {
		es, err := qb.Next(t.Context(), "t1", "b:0", 1, 20*time.Millisecond)
		if errors.Is(err, queue.ErrEmpty) {
			continue
		}
		if err != nil {
			t.Fatalf("B: %v", err)
		}
		// Redis keeps delivery times and its clock in whole milliseconds,
		// so an entry can read as idle for ClaimIdle up to 1 ms early.
		if d := time.Since(start); d < idle-time.Millisecond {
			t.Fatalf("B got %v after %v, before ClaimIdle %v", es, d, idle)
		}
		if len(es) != 1 || es[0] != got[0] {
			t.Fatalf("B got %v, want %v", es, got)
		}
		t.Logf("re-delivered after %v", time.Since(start))
		if d := time.Since(start); d > 20*idle {
			t.Errorf("re-delivered after %v for ClaimIdle %v", d, idle)
		}
		break
	}
	if err := qb.Ack(t.Context(), "t1", got[0].ID); err != nil {
		t.Fatal(err)
	}
	wantLen(t, qa, "t1", 0)
	if es, err := qa.Next(t.Context(), "t1", "a:0", 1, 2*idle); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("acked entry came back: %v, %v", es, err)
	}
}

func TestNextWait(t *testing.T) {
	t.Parallel()
	t.Run("empty times out", func(t *testing.T) {
		t.Parallel()
		q, _ := newQueue(t, time.Minute)
		for _, wait := range []time.Duration{0, 200 * time.Millisecond} {
			start := time.Now()
			if es, err := q.Next(t.Context(), "t1", "a:0", 1, wait); !errors.Is(err, queue.ErrEmpty) {
				t.Fatalf("wait %v: %v, %v", wait, es, err)
			}
			// Redis times a blocked read in whole milliseconds.
			if d := time.Since(start); d < wait-time.Millisecond || d > 5*wait+time.Second {
				t.Errorf("waited %v for %v", d, wait)
			}
		}
	})
	t.Run("concurrent publish wakes", func(t *testing.T) {
		t.Parallel()
		q, _ := newQueue(t, time.Minute)
		it := queue.Item{TaskID: "late", Attempt: 1}
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(50 * time.Millisecond)
			if err := q.Publish(context.Background(), "t1", it); err != nil {
				t.Error(err)
			}
		})
		defer wg.Wait()
		start := time.Now()
		es, err := q.Next(t.Context(), "t1", "a:0", 1, 30*time.Second)
		if err != nil || len(es) != 1 || es[0].Item != it {
			t.Fatalf("%v, %v", es, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("woke after %v", d)
		}
	})
	for _, tc := range []struct {
		name string
		ctx  func(context.Context) (context.Context, context.CancelFunc)
		want error
	}{
		{"cancel", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(p, 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"already cancelled", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			cancel()
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, _ := newQueue(t, time.Minute)
			ctx, cancel := tc.ctx(t.Context())
			defer cancel()
			start := time.Now()
			es, err := q.Next(ctx, "t1", "a:0", 1, 30*time.Second)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, %v; want %v", es, err, tc.want)
			}
			// One blocking slice (1s) at most after the cancellation.
			if d := time.Since(start); d > 6*time.Second {
				t.Errorf("returned %v after start", d)
			}
		})
	}
}

func TestStreamLoss(t *testing.T) {
	t.Parallel()
	it := queue.Item{TaskID: "after", Attempt: 3}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, q *queue.Queue, rdb *redis.Client)
	}{
		{"never existed", func(t *testing.T, q *queue.Queue, _ *redis.Client) {
			if es, err := q.Next(t.Context(), "nobody", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
				t.Fatalf("%v, %v", es, err)
			}
			if es, err := q.Next(t.Context(), "nobody2", "a:0", 1, 50*time.Millisecond); !errors.Is(err, queue.ErrEmpty) {
				t.Fatalf("%v, %v", es, err)
			}
			if p, err := q.Pending(t.Context(), "nobody3"); err != nil || len(p) != 0 {
				t.Fatalf("pending %v, %v", p, err)
			}
			if n, err := q.Len(t.Context(), "nobody3"); err != nil || n != 0 {
				t.Fatalf("len %v, %v", n, err)
			}
		}},
		{"deleted before next", func(t *testing.T, q *queue.Queue, rdb *redis.Client) {
			if err := q.Publish(t.Context(), "t1", queue.Item{TaskID: "lost", Attempt: 1}); err != nil {
				t.Fatal(err)
			}
			del(t, rdb, q.Key("t1"))
			if es, err := q.Next(t.Context(), "t1", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
				t.Fatalf("after loss: %v, %v", es, err)
			}
			publishAndGet(t, q, it)
		}},
		{"deleted, then published", func(t *testing.T, q *queue.Queue, rdb *redis.Client) {
			if _, err := q.Next(t.Context(), "t1", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
				t.Fatal(err)
			}
			del(t, rdb, q.Key("t1"))
			// Publish still believes the group exists: its XADD makes a
			// stream without one, and Next must recreate it from "0".
			publishAndGet(t, q, it)
		}},
		{"deleted while blocked", func(t *testing.T, q *queue.Queue, rdb *redis.Client) {
			if _, err := q.Next(t.Context(), "t1", "a:0", 1, 0); !errors.Is(err, queue.ErrEmpty) {
				t.Fatal(err)
			}
			type result struct {
				es  []queue.Entry
				err error
			}
			done := make(chan result, 1)
			go func() {
				es, err := q.Next(t.Context(), "t1", "a:0", 1, 30*time.Second)
				done <- result{es, err}
			}()
			time.Sleep(100 * time.Millisecond)
			del(t, rdb, q.Key("t1"))
			time.Sleep(50 * time.Millisecond)
			if err := q.Publish(t.Context(), "t1", it); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-done:
				if r.err != nil || len(r.es) != 1 || r.es[0].Item != it {
					t.Fatalf("%v, %v", r.es, r.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("next did not return after the stream was recreated")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, rdb := newQueue(t, time.Minute)
			tc.run(t, q, rdb)
		})
	}
}

func del(t *testing.T, rdb *redis.Client, key string) {
	t.Helper()
	if err := rdb.Del(t.Context(), key).Err(); err != nil {
		t.Fatal(err)
	}
}

func publishAndGet(t *testing.T, q *queue.Queue, it queue.Item) {
	t.Helper()
	if err := q.Publish(t.Context(), "t1", it); err != nil {
		t.Fatal(err)
	}
	es, err := q.Next(t.Context(), "t1", "a:0", 10, 5*time.Second)
	if err != nil || len(es) != 1 || es[0].Item != it {
		t.Fatalf("after recreation: %v, %v", es, err)
	}
	if err := q.Ack(t.Context(), "t1", es[0].ID); err != nil {
		t.Fatal(err)
	}
}

func TestMalformedEntriesSkipped(t *testing.T) {
	t.Parallel()
	good := queue.Item{TaskID: "good", Attempt: 1}
	for _, tc := range []struct {
		name   string
		values []any
	}{
		{"missing attempt", []any{"taskId", "t"}},
		{"missing taskId", []any{"attempt", "1"}},
		{"attempt x", []any{"taskId", "t", "attempt", "x"}},
		{"attempt not whole", []any{"taskId", "t", "attempt", "1.5"}},
		{"empty taskId", []any{"taskId", "", "attempt", "1"}},
		{"extra field", []any{"taskId", "t", "attempt", "1", "payload", "secret"}},
		{"other fields", []any{"task", "t", "try", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, rdb := newQueue(t, time.Minute)
			add := func() {
				t.Helper()
				if err := rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: q.Key("t1"), Values: tc.values}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			// Alone: skipped, and Next reports nothing.
			if err := q.PublishMany(t.Context(), "t1", nil); err != nil {
				t.Fatal(err)
			}
			add()
			if es, err := q.Next(t.Context(), "t1", "a:0", 10, 0); !errors.Is(err, queue.ErrEmpty) {
				t.Fatalf("malformed alone: %v, %v", es, err)
			}
			wantLen(t, q, "t1", 0)
			// Among good ones: only the good ones come out.
			add()
			if err := q.Publish(t.Context(), "t1", good); err != nil {
				t.Fatal(err)
			}
			add()
			if p, err := q.Pending(t.Context(), "t1"); err != nil || !reflect.DeepEqual(p, map[queue.Item]int{good: 1}) {
				t.Errorf("pending %v, %v", p, err)
			}
			if got := drain(t, q, "t1", "a:0", 10); !reflect.DeepEqual(got, []queue.Item{good}) {
				t.Errorf("got %v", got)
			}
			wantLen(t, q, "t1", 0)
			if n, err := rdb.XPending(t.Context(), q.Key("t1"), "agents").Result(); err != nil || n.Count != 0 {
				t.Errorf("still pending: %v, %v", n, err)
			}
		})
	}
}

func TestDeletedWhilePendingNotReturned(t *testing.T) {
	t.Parallel()
	const idle = 100 * time.Millisecond
	q, rdb := newQueue(t, idle)
	in := items("task", 3)
	if err := q.PublishMany(t.Context(), "t1", in); err != nil {
		t.Fatal(err)
	}
	es, err := q.Next(t.Context(), "t1", "a:0", 3, time.Second)
	if err != nil || len(es) != 3 {
		t.Fatalf("%v, %v", es, err)
	}
	// Consumer A dies; meanwhile the middle entry is deleted outside Ack.
	if err := rdb.XDel(t.Context(), q.Key("t1"), es[1].ID).Err(); err != nil {
		t.Fatal(err)
	}
	var got []queue.Entry
	for len(got) < 2 {
		more, err := q.Next(t.Context(), "t1", "b:0", 10, 5*time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, more...)
	}
	if want := []queue.Entry{es[0], es[2]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("re-delivered %v, want %v", got, want)
	}
	if err := q.Ack(t.Context(), "t1", got[0].ID, got[1].ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * idle)
	if es, err := q.Next(t.Context(), "t1", "c:0", 10, 0); !errors.Is(err, queue.ErrEmpty) {
		t.Errorf("deleted entry returned: %v, %v", es, err)
	}
	if n, err := rdb.XPending(t.Context(), q.Key("t1"), "agents").Result(); err != nil || n.Count != 0 {
		t.Errorf("still pending: %v, %v", n, err)
	}
}

func TestPending(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 998, 999, 1000, 2500} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			t.Parallel()
			q, _ := newQueue(t, time.Minute)
			acked := queue.Item{TaskID: "acked", Attempt: 1}
			dup := queue.Item{TaskID: "dup", Attempt: 2}
			if err := q.Publish(t.Context(), "t1", acked); err != nil {
				t.Fatal(err)
			}
			es, err := q.Next(t.Context(), "t1", "a:0", 1, time.Second)
			if err != nil || len(es) != 1 || es[0].Item != acked {
				t.Fatalf("%v, %v", es, err)
			}
			if err := q.Ack(t.Context(), "t1", es[0].ID); err != nil {
				t.Fatal(err)
			}
			in := append(items("task", n), dup, dup)
			if err := q.PublishMany(t.Context(), "t1", in); err != nil {
				t.Fatal(err)
			}
			// Delivered but unacknowledged entries still count.
			if _, err := q.Next(t.Context(), "t1", "a:0", 5, 0); err != nil {
				t.Fatal(err)
			}
			want := map[queue.Item]int{}
			for _, it := range in {
				want[it]++
			}
			got, err := q.Pending(t.Context(), "t1")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("pending has %d items (dup x%d, acked x%d), want %d", len(got), got[dup], got[acked], len(want))
			}
			wantLen(t, q, "t1", int64(len(in)))
		})
	}
}

func TestStreamHoldsOnlyTaskIDAndAttempt(t *testing.T) {
	t.Parallel()
	q, rdb := newQueue(t, time.Minute)
	in := []queue.Item{
		{TaskID: "plain", Attempt: 1},
		{TaskID: "with space: and colon", Attempt: 0},
		{TaskID: "ünïcödé", Attempt: 1 << 40},
		{TaskID: "negative", Attempt: -1},
	}
	if err := q.Publish(t.Context(), "t1", in[0]); err != nil {
		t.Fatal(err)
	}
	if err := q.PublishMany(t.Context(), "t1", in[1:]); err != nil {
		t.Fatal(err)
	}
	// Raw reply: [[id, [field, value, ...]], ...], field order included.
	raw, err := rdb.Do(t.Context(), "XRANGE", q.Key("t1"), "-", "+").Slice()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != len(in) {
		t.Fatalf("%d entries, want %d", len(raw), len(in))
	}
	for i, e := range raw {
		fields := e.([]any)[1].([]any)
		want := []any{"taskId", in[i].TaskID, "attempt", strconv.Itoa(in[i].Attempt)}
		if !reflect.DeepEqual(fields, want) {
			t.Errorf("entry %d: %q, want %q", i, fields, want)
		}
	}
	if got := drain(t, q, "t1", "a:0", 10); !reflect.DeepEqual(got, in) {
		t.Errorf("round trip: %v, want %v", got, in)
	}
}

func reportItems(b *testing.B, n int64) {
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
}

func BenchmarkPublish(b *testing.B) {
	q, _ := newQueue(b, time.Minute)
	ctx := b.Context()
	var n int64
	for b.Loop() {
		if err := q.Publish(ctx, "t1", queue.Item{TaskID: "x", Attempt: int(n)}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportItems(b, n)
}

func BenchmarkPublishMany(b *testing.B) {
	q, _ := newQueue(b, time.Minute)
	ctx := b.Context()
	batch := items("task", 100)
	var n int64
	for b.Loop() {
		if err := q.PublishMany(ctx, "t1", batch); err != nil {
			b.Fatal(err)
		}
		n += int64(len(batch))
	}
	reportItems(b, n)
}

func BenchmarkPublishNextAck(b *testing.B) {
	q, _ := newQueue(b, time.Minute)
	ctx := b.Context()
	var n int64
	for b.Loop() {
		if err := q.Publish(ctx, "t1", queue.Item{TaskID: "x", Attempt: int(n)}); err != nil {
			b.Fatal(err)
		}
		es, err := q.Next(ctx, "t1", "a:0", 1, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := q.Ack(ctx, "t1", es[0].ID); err != nil {
			b.Fatal(err)
		}
		n++
	}
	reportItems(b, n)
}

func BenchmarkNextAckParallel(b *testing.B) {
	q, _ := newQueue(b, time.Minute)
	ctx := b.Context()
	for i := 0; i < b.N; i += 1000 {
		batch := items(strconv.Itoa(i), min(1000, b.N-i))
		if err := q.PublishMany(ctx, "t1", batch); err != nil {
			b.Fatal(err)
		}
	}
	var consumers, acked atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		consumer := fmt.Sprintf("agent-%d:0", consumers.Add(1))
		// Each iteration stands for one item; a read of up to 10 pays for
		// the next iterations.
		credit := 0
		for pb.Next() {
			if credit > 0 {
				credit--
				continue
			}
			es, err := q.Next(ctx, "t1", consumer, 10, 0)
			if errors.Is(err, queue.ErrEmpty) {
				continue // the other goroutines hold the rest
			}
			if err != nil {
				b.Error(err)
				return
			}
			ids := make([]string, len(es))
			for i, e := range es {
				ids[i] = e.ID
			}
			if err := q.Ack(ctx, "t1", ids...); err != nil {
				b.Error(err)
				return
			}
			acked.Add(int64(len(es)))
			credit = len(es) - 1
		}
	})
	b.StopTimer()
	reportItems(b, acked.Load())
}
