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

// BenchmarkSubscriptionFanout: 1,000 subscribers watch one cluster while
// it is built; one of them never reads (its socket's receive buffer is
// 4 KiB, so the server's writes to it block). Reports the delivery lag
// from each change's commit time to its arrival, p50 and p99 over every
// delivery to the 999 live subscribers, and how many changes the stalled
// one was spared.
func BenchmarkSubscriptionFanout(b *testing.B) {
	subscribers := 1000
	if n, err := strconv.Atoi(os.Getenv("COOPR_BENCH_SUBSCRIBERS")); err == nil {
		subscribers = n
	}
	w := newWorld(b)
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
	b.ResetTimer()
	if err := w.agent(w.alice, w.s, id, "ACTIVE"); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
	}
	cancel()
	b.StopTimer()
	for _, c := range conns {
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lags)
	if len(lags) == 0 {
		b.Fatal("no deliveries")
	}
	b.ReportMetric(float64(len(lags))/float64(subscribers-1), "events/subscriber")
	b.ReportMetric(float64(lags[len(lags)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(w.s.Srv.Hub().Dropped.Load()), "dropped-for-stalled")
}
