package agent_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/drivers"
)

// chatty prints lines on both streams in BOOTSTRAP, once the test has
// subscribed to the task's log, and returns at once after the last.
type chatty struct {
	scripted
	lines   int
	started chan string   // the BOOTSTRAP's task id
	watch   chan struct{} // closed once the test listens
	once    atomic.Bool
}

func (d *chatty) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if t.TaskName == "BOOTSTRAP" && d.once.CompareAndSwap(false, true) {
		d.started <- t.TaskID
		// Until the test hears one of these it may not be listening yet.
		for waiting := true; waiting; {
			out.Status("probe", 0)
			select {
			case <-d.watch:
				waiting = false
			case <-time.After(100 * time.Millisecond):
			}
		}
		for i := range d.lines {
			if i%10 == 9 {
				out.Stderr(fmt.Sprintf("err %d", i))
			} else {
				out.Stdout(fmt.Sprintf("out %d", i))
			}
		}
		return drivers.Result{Status: 1, Message: "bootstrap failed"}
	}
	return d.scripted.Run(ctx, t, out)
}

// A driver's output reaches the task's log whole and in order, the last
// lines before the finish that makes the claim stale, in far fewer
// requests than lines.
func TestProgressBatchedInOrder(t *testing.T) {
	e := setup(t)
	proxy, counts := classifyingProxy(t, e.s.URL)
	d := &chatty{scripted: scripted{runs: map[string]int{}}, lines: 200, started: make(chan string, 1), watch: make(chan struct{})}
	a, err := agent.New(agent.Config{Server: proxy, Token: e.agentToken, ID: "test-agent", Capacity: 4, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, registry(d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	id := e.create(t)
	var task string
	select {
	case task = <-d.started:
	case <-time.After(60 * time.Second):
		t.Fatal("no BOOTSTRAP ran")
	}
	sub, err := e.s.Subscribe(e.admin, `subscription($id: ID!) { taskLog(taskId: $id) { seq stream chunk lagged } }`,
		map[string]any{"id": task})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	type line struct {
		TaskLog struct {
			Seq           int
			Stream, Chunk string
			Lagged        bool
		}
	}
	next := func() line {
		t.Helper()
		r, end, err := sub.Next(30 * time.Second)
		if err != nil || end {
			t.Fatalf("log ended: %v", err)
		}
		var l line
		if err := r.Decode(&l); err != nil {
			t.Fatal(err)
		}
		if l.TaskLog.Lagged {
			t.Fatal("the subscription lagged: the test reads too slowly")
		}
		return l
	}
	seq := next().TaskLog.Seq // a probe
	close(d.watch)

	var got []string
	for len(got) < d.lines {
		l := next()
		if l.TaskLog.Seq != seq+1 {
			t.Fatalf("seq %d after %d (%q)", l.TaskLog.Seq, seq, l.TaskLog.Chunk)
		}
		seq = l.TaskLog.Seq
		if l.TaskLog.Chunk == "probe" {
			continue
		}
		got = append(got, l.TaskLog.Stream+" "+l.TaskLog.Chunk)
	}
	for i, g := range got {
		want := fmt.Sprintf("STDOUT out %d", i)
		if i%10 == 9 {
			want = fmt.Sprintf("STDERR err %d", i)
		}
		if g != want {
			t.Fatalf("line %d is %q, want %q", i+1, g, want)
		}
	}
	waitStatus(t, e, id, "ACTIVE")
	// 200 lines one request each would be 200 requests.
	if n := counts.progress.Load(); n > 20 || n == 0 {
		t.Errorf("%d progress requests for %d lines", n, d.lines)
	}
	var tails struct{ Stdout, Stderr string }
	if err := e.s.Srv.Store().DB().Get(&tails, `SELECT stdout_tail AS stdout, stderr_tail AS stderr
		FROM task_attempts WHERE message = 'bootstrap failed'`); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tails.Stderr, "err 199\n") || !strings.HasSuffix(tails.Stdout, "out 198\n") {
		t.Errorf("tails end %q / %q", tails.Stdout[max(0, len(tails.Stdout)-20):], tails.Stderr[max(0, len(tails.Stderr)-20):])
	}
}

// proxyCounts counts the agent's requests by what they carry.
type proxyCounts struct {
	progress atomic.Int64 // reportProgress requests with a chunk starting "out "
	finishes atomic.Int64 // exchangeTasks requests whose finish carries such a chunk
}

// classifyingProxy passes the agent's requests to the server and counts,
// of those carrying a chunk starting "out ", the progress reports and the
// exchanges.
func classifyingProxy(t *testing.T, target string) (string, *proxyCounts) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var n proxyCounts
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			b, _ := io.ReadAll(r.Body)
			if bytes.Contains(b, []byte(`"chunk":"out `)) {
				switch {
				case bytes.Contains(b, []byte("reportProgress")):
					n.progress.Add(1)
				case bytes.Contains(b, []byte("exchangeTasks")):
					n.finishes.Add(1)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// A task's last lines travel with its finish, not in a request of their
// own before it, and reach the task's log in order after the lines sent
// while it ran; its tails are kept as before.
func TestLastLinesRideTheFinish(t *testing.T) {
	e := setup(t)
	proxy, counts := classifyingProxy(t, e.s.URL)
	d := &chatty{scripted: scripted{runs: map[string]int{}}, lines: 20, started: make(chan string, 1), watch: make(chan struct{})}
	a, err := agent.New(agent.Config{Server: proxy, Token: e.agentToken, ID: "test-agent", Capacity: 4, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, registry(d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	id := e.create(t)
	var task string
	select {
	case task = <-d.started:
	case <-time.After(60 * time.Second):
		t.Fatal("no BOOTSTRAP ran")
	}
	sub, err := e.s.Subscribe(e.admin, `subscription($id: ID!) { taskLog(taskId: $id) { seq stream chunk lagged } }`,
		map[string]any{"id": task})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	type line struct {
		TaskLog struct {
			Seq           int
			Stream, Chunk string
			Lagged        bool
		}
	}
	next := func() line {
		t.Helper()
		r, end, err := sub.Next(30 * time.Second)
		if err != nil || end {
			t.Fatalf("log ended: %v", err)
		}
		var l line
		if err := r.Decode(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	seq := next().TaskLog.Seq // a probe, sent while the task ran
	close(d.watch)
	var got []string
	for len(got) < d.lines {
		l := next()
		if l.TaskLog.Seq != seq+1 {
			t.Fatalf("seq %d after %d (%q)", l.TaskLog.Seq, seq, l.TaskLog.Chunk)
		}
		seq = l.TaskLog.Seq
		if l.TaskLog.Chunk == "probe" {
			continue
		}
		got = append(got, l.TaskLog.Stream+" "+l.TaskLog.Chunk)
	}
	for i, g := range got {
		want := fmt.Sprintf("STDOUT out %d", i)
		if i%10 == 9 {
			want = fmt.Sprintf("STDERR err %d", i)
		}
		if g != want {
			t.Fatalf("line %d is %q, want %q", i+1, g, want)
		}
	}
	waitStatus(t, e, id, "ACTIVE")
	if p, f := counts.progress.Load(), counts.finishes.Load(); p != 0 || f == 0 {
		t.Errorf("the last lines went in %d progress requests and %d finishes; want none and one", p, f)
	}
	var tails struct{ Stdout, Stderr string }
	if err := e.s.Srv.Store().DB().Get(&tails, `SELECT stdout_tail AS stdout, stderr_tail AS stderr
		FROM task_attempts WHERE message = 'bootstrap failed'`); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tails.Stderr, "err 19\n") || !strings.HasSuffix(tails.Stdout, "out 18\n") {
		t.Errorf("tails end %q / %q", tails.Stdout, tails.Stderr)
	}
}
