package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRenderProgress(t *testing.T) {
	running := []string{"INSTALL web@web-cluster-1-1001", "INSTALL web@web-cluster-1-1002", "CONFIGURE base@web-cluster-1-1000"}
	tests := []struct {
		name  string
		p     jobProgress
		width int
	}{
		{"start", jobProgress{Job: "00000001-001", Action: "CLUSTER_CREATE", Total: 24}, 100},
		{"running", jobProgress{Job: "00000001-001", Action: "CLUSTER_CREATE", Total: 24, Done: 9, Running: running, Elapsed: 75500 * time.Millisecond}, 160},
		{"narrow", jobProgress{Job: "00000001-001", Action: "CLUSTER_CREATE", Total: 24, Done: 9, Running: running}, 100},
		{"failed", jobProgress{Job: "00000001-002", Action: "SYNC_TEMPLATE", Total: 7, Done: 5, Failed: 1, Running: running[:1]}, 120},
		{"done", jobProgress{Job: "00000001-003", Action: "CLUSTER_DELETE", Total: 6, Done: 6, Elapsed: 12 * time.Second}, 100},
		{"tiny", jobProgress{Job: "00000001-003", Action: "CLUSTER_DELETE", Total: 6, Done: 3, Failed: 1, Running: running}, 40},
		{"one long task", jobProgress{Job: "00000001-005", Action: "CLUSTER_CREATE", Total: 9, Running: []string{strings.Repeat("x", 90)}}, 80},
		{"no tasks", jobProgress{Job: "00000001-004", Action: "UPDATE_SSH_KEYS"}, 80},
	}
	var all strings.Builder
	for _, tt := range tests {
		got := renderProgress(tt.p, tt.width)
		if n := len([]rune(got)); n > tt.width {
			t.Errorf("%s: %d runes, wider than %d: %q", tt.name, n, tt.width, got)
		}
		fmt.Fprintf(&all, "%-8s |%s|\n", tt.name, got)
	}
	golden(t, "progress/render.txt", all.String())
}

func TestProgressLine(t *testing.T) {
	for _, tt := range []struct {
		p    jobProgress
		want string
	}{
		{jobProgress{Total: 24, Done: 3}, "[3/24 done]"},
		{jobProgress{Total: 24, Done: 20, Failed: 2}, "[20/24 done, 2 failed]"},
	} {
		if got := progressLine(tt.p); got != tt.want {
			t.Errorf("progressLine(%+v) = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// fakeJob is a tracker loaded with a three-task job, as load would leave it.
func fakeJob() *progressTracker {
	tr := &progressTracker{job: "00000007-002", action: "UPDATE_SSH_KEYS", tasks: map[string]*taskInfo{}}
	for i, label := range []string{"AUTHORIZE_KEYS@k-7-1000", "AUTHORIZE_KEYS@k-7-1001", "AUTHORIZE_KEYS@k-7-1002"} {
		id := fmt.Sprintf("00000007-002-%03d", i+1)
		tr.order = append(tr.order, id)
		tr.tasks[id] = &taskInfo{label: label, state: "QUEUED"}
	}
	return tr
}

// The done count never goes back: a tracker loaded after a task completed
// still gets the events of its earlier states.
func TestProgressNeverGoesBack(t *testing.T) {
	tr := fakeJob()
	tr.tasks["00000007-002-001"].state = "COMPLETE"
	tr.tasks["00000007-002-002"].state = "SKIPPED"
	for _, st := range []string{"QUEUED", "IN_PROGRESS", "COMPLETE"} {
		for _, task := range []string{"00000007-002-001", "00000007-002-002"} {
			tr.set(task, st)
			if p := tr.progress(time.Now()); p.Done != 2 {
				t.Fatalf("after %s %s: %d done, want 2", task, st, p.Done)
			}
		}
	}
}

// The changes a job's events make to the output, on a terminal and not.
func TestWatcherProgressGolden(t *testing.T) {
	job := "00000007-002"
	at := time.Date(2026, 11, 24, 8, 0, 0, 0, time.Local)
	type ev struct {
		kind, state, task, message string
		attempt                    int
	}
	events := []ev{
		{kind: "TASK", state: "IN_PROGRESS", task: "001", attempt: 1},
		{kind: "TASK", state: "IN_PROGRESS", task: "002", attempt: 1},
		{kind: "TASK", state: "COMPLETE", task: "001", attempt: 1},
		{kind: "TASK", state: "FAILED", task: "002", attempt: 1, message: "ssh 10.0.0.2:22: connection refused"},
		{kind: "TASK", state: "IN_PROGRESS", task: "003", attempt: 2},
		{kind: "TASK", state: "COMPLETE", task: "003", attempt: 2},
		{kind: "JOB", state: "FAILED", message: "task 00000007-002-002 failed"},
		{kind: "CLUSTER", state: "ACTIVE", message: "task 00000007-002-002 failed"},
	}
	for _, tty := range []bool{false, true} {
		var out bytes.Buffer
		w := &watcher{id: "00000007", out: &out, track: fakeJob(), tty: tty, width: 100}
		for i, e := range events {
			var task *string
			if e.task != "" {
				id := job + "-" + e.task
				task = &id
			}
			attempt := &e.attempt
			if e.attempt == 0 {
				attempt = nil
			}
			w.trackEvent(context.Background(), e.kind, e.state, &job, task, false)
			w.show(e.kind, e.state, e.message, &job, task, attempt, at.Add(time.Duration(i)*time.Second), false)
		}
		w.clearBar()
		got := strings.NewReplacer("\r", "<CR>", "\x1b[K", "<EL>").Replace(out.String())
		name := "progress/plain.txt"
		if tty {
			name = "progress/terminal.txt"
		} else if strings.ContainsAny(out.String(), "\r\x1b") {
			t.Errorf("plain output holds terminal controls: %q", out.String())
		}
		golden(t, name, got)
	}
}

// A create whose output is not a terminal prints plain lines, each task
// change with the job's counts, up to every task done.
func TestCreatePlainProgress(t *testing.T) {
	w := newCLIWorld(t)
	w.startAgent(t)
	out, errOut := newLockedBuffer(), newLockedBuffer()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if code := run(ctx, []string{"cluster", "create", "single", "--name", "plain", "--server", w.s.URL, "--token", w.token}, out, errOut); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	stdout := out.String()
	if strings.ContainsAny(stdout, "\r\x1b") {
		t.Errorf("terminal controls in plain output: %q", stdout)
	}
	var counts []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, " TASK ") {
			i := strings.LastIndex(l, "  [")
			if i < 0 || !strings.HasSuffix(l, " done]") {
				t.Errorf("task line without counts: %q", l)
				continue
			}
			counts = append(counts, l[i+2:])
		}
	}
	if len(counts) == 0 {
		t.Fatalf("no task lines:\n%s", stdout)
	}
	var done, total int
	if _, err := fmt.Sscanf(counts[len(counts)-1], "[%d/%d done]", &done, &total); err != nil || done != total || total < 5 {
		t.Errorf("last count %q, want every task done", counts[len(counts)-1])
	}
}
