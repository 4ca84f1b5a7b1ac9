package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/internal/scrub"
)

// close hands the lines its sender has not posted to the finish, in
// order, without a request of their own; only what a finish cannot carry
// is posted first. The server here holds the first batch (the lines the
// task printed early) until the task has ended, so that the rest is
// queued behind it whatever the machine's timing.
func TestCloseLeavesTheRestForTheFinish(t *testing.T) {
	for _, c := range []struct {
		name     string
		late     int // lines printed while the first batch is held
		carried  int // of them, left for the finish
		requests int // progress requests, the held one included
	}{
		{"a few", 20, 20, 1},
		{"as many as a finish takes", maxFinishLines, maxFinishLines, 1},
		{"more", maxFinishLines + 40, maxFinishLines + 40 - 2*maxBatchLines, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []string
			hold, held := make(chan struct{}), make(chan struct{})
			var once sync.Once
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bodies = append(bodies, string(b))
				mu.Unlock()
				once.Do(func() { close(held); <-hold })
				fmt.Fprint(w, `{"data":{}}`)
			}))
			defer srv.Close()
			a, err := New(Config{Server: srv.URL, Token: "t", ID: "a", Capacity: 1}, drivers.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := &progress{a: a, ctx: ctx, id: "task-1", attempt: 1, token: "00", redact: &redactor{set: scrub.New()}}
			p.Stdout("early")
			<-held
			for i := range c.late {
				p.Stdout(fmt.Sprintf("late %d", i))
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Released once close has begun: it then waits on the
				// held batch.
				for closing := false; !closing; time.Sleep(time.Millisecond) {
					p.mu.Lock()
					closing = p.closing
					p.mu.Unlock()
				}
				close(hold)
			}()
			rest := p.close(ctx)
			<-done
			if len(rest) != c.carried {
				t.Fatalf("%d lines left for the finish, want %d", len(rest), c.carried)
			}
			first := c.late - c.carried
			for i, l := range rest {
				if want := fmt.Sprintf("late %d", first+i); l.Chunk != want || l.Stream != "STDOUT" || l.Seq != first+i+2 {
					t.Fatalf("line %d for the finish: %+v, want %q seq %d", i, l, want, first+i+2)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(bodies) != c.requests {
				t.Fatalf("%d progress requests, want %d", len(bodies), c.requests)
			}
			for _, b := range bodies[1:] {
				if strings.Contains(b, fmt.Sprintf(`"late %d"`, first)) {
					t.Errorf("a line left for the finish was posted too")
				}
			}
		})
	}
}

// A server that never takes the lines: once the flush runs out, the
// finish carries the last lines it can, with a line saying how many went
// undelivered, so that the task's result still arrives (a finish with
// more lines would be refused, or exceed the request limit).
func TestCloseAfterAFlushThatRanOut(t *testing.T) {
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-hold
	}))
	defer srv.Close()
	defer close(hold) // before Close, which waits for the held request
	a, err := New(Config{Server: srv.URL, Token: "t", ID: "a", Capacity: 1}, drivers.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &progress{a: a, ctx: ctx, id: "task-1", attempt: 1, token: "00", redact: &redactor{set: scrub.New()}}
	const printed = 1000
	for i := range printed {
		p.Stdout(fmt.Sprintf("line %d %s", i, strings.Repeat("x", 100)))
	}
	fctx, done := context.WithTimeout(ctx, 300*time.Millisecond)
	defer done()
	rest := p.close(fctx)
	size := 0
	for _, l := range rest {
		size += len(l.Chunk)
	}
	if len(rest) > maxFinishLines || size > maxFinishBytes {
		t.Fatalf("the finish carries %d lines of %d bytes, more than %d lines or %d bytes", len(rest), size, maxFinishLines, maxFinishBytes)
	}
	if len(rest) < 2 || !strings.Contains(rest[0].Chunk, "earlier output lines were not delivered") {
		t.Fatalf("no note of the lines left out: %+v", rest[:min(len(rest), 1)])
	}
	if last := rest[len(rest)-1].Chunk; !strings.HasPrefix(last, fmt.Sprintf("line %d ", printed-1)) {
		t.Errorf("the finish's last line is %.20q, want the task's last", last)
	}
	for i := 2; i < len(rest); i++ {
		if rest[i].Seq != rest[i-1].Seq+1 {
			t.Fatalf("lines for the finish out of order: seq %d after %d", rest[i].Seq, rest[i-1].Seq)
		}
	}
}
