package engine

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// batcher runs calls that arrive together as one: calls that come while a
// batch is in flight wait for the next one. Alone, a call runs at once;
// under load, many share one statement and one commit, which is what bounds
// throughput when every commit waits for the disk.
type batcher[In, Out any] struct {
	run     func(ctx context.Context, in []In) ([]Out, []error)
	max     int // calls per batch
	workers int // batches in flight at once

	mu      sync.Mutex
	queue   []*batchCall[In, Out]
	running int
}

type batchCall[In, Out any] struct {
	ctx  context.Context
	in   In
	out  Out
	err  error
	done chan struct{}
}

// do runs in as part of a batch and returns its own result. The batch runs
// under the first call's context values but not its cancellation: one
// caller leaving must not fail the others' work.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	c := &batchCall[In, Out]{ctx: ctx, in: in, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.running < b.workers {
		b.running++
		go b.drain()
	}
	b.mu.Unlock()
	<-c.done
	return c.out, c.err
}

func (b *batcher[In, Out]) drain() {
	for {
		// Calls made together (the finishes of one exchange, each from a
		// goroutine of its own) join the queue in the moment it takes
		// them to run: let them, rather than take the first alone and
		// the rest in a batch of their own after its flush.
		runtime.Gosched()
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), b.max)
		calls := make([]*batchCall[In, Out], n)
		copy(calls, b.queue)
		b.queue = b.queue[n:]
		b.mu.Unlock()

		ins := make([]In, n)
		for i, c := range calls {
			ins[i] = c.in
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(calls[0].ctx), time.Minute)
		outs, errs := b.run(ctx, ins)
		cancel()
		for i, c := range calls {
			c.out, c.err = outs[i], errs[i]
			close(c.done)
		}
	}
}
