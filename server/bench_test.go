package server_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkSubscriptionFanout: 1,000 subscribers watch a cluster while it
// is built; one of them never reads (its socket's receive buffer is 4 KiB,
// so the server's writes to it block). Each iteration builds one cluster
// (-benchtime Nx builds N, one after another). Reports the delivery lag
// from each change's commit time to its arrival, p50 and p99 over every
// delivery to the live subscribers of every iteration, and how many
// changes the stalled ones were spared.
func BenchmarkSubscriptionFanout(b *testing.B) {
	subscribers := 1000
	if n, err := strconv.Atoi(os.Getenv("COOPR_BENCH_SUBSCRIBERS")); err == nil {
		subscribers = n
	}
	w := newWorld(b)
	var lags []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		lags = append(lags, watchCreate(b, w, subscribers)...)
	}
	b.StopTimer()
	slices.Sort(lags)
	if len(lags) == 0 {
		b.Fatal("no deliveries")
	}
	b.ReportMetric(float64(len(lags))/float64(b.N*(subscribers-1)), "events/subscriber")
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(w.s.Srv.Hub().Dropped.Load()), "dropped-for-stalled")
}

// watchCreate creates a 3-node cluster, subscribes subscribers to it (the
// first stalled), runs the create (timed) and returns the lags the live
// subscribers saw.
func watchCreate(b *testing.B, w *world, subscribers int) []time.Duration {
	id := w.create(b, w.alice, 3)
	var mu sync.Mutex
	var lags []time.Duration
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{}, subscribers)
	var conns []*wsReader
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range subscribers {
		stalled := i == 0
		conn, err := dialReader(ctx, w.s.URL, stalled)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn)
		if err := conn.start(w.alice, id); err != nil {
			b.Fatal(err)
		}
		if stalled {
			ready <- struct{}{}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() {
				mu.Lock()
				lags = append(lags, mine...)
				mu.Unlock()
			}()
			// The clients share the machine with the server: read each
			// message with a glance, not a JSON decode, so that the
			// measurement is the server's.
			for first := true; ; first = false {
				msg, err := conn.read()
				if err != nil {
					return
				}
				now := time.Now()
				if !bytes.Contains(msg, []byte(`"type":"next"`)) {
					continue
				}
				if first {
					ready <- struct{}{}
					continue
				}
				i := bytes.Index(msg, []byte(`"at":"`))
				if i < 0 {
					continue
				}
				rest := msg[i+6:]
				at, err := time.Parse(time.RFC3339Nano, string(rest[:bytes.IndexByte(rest, '"')]))
				if err != nil {
					continue
				}
				mine = append(mine, now.Sub(at))
				if bytes.Contains(msg, []byte(`"kind":"CLUSTER"`)) && bytes.Contains(msg, []byte(`"state":"ACTIVE"`)) {
					return
				}
			}
		}()
	}
	for range subscribers {
		<-ready
	}
	b.StartTimer()
	if err := w.agent(w.alice, w.s, id, "ACTIVE"); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
	}
	b.StopTimer()
	cancel()
	for _, c := range conns {
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	return lags
}
