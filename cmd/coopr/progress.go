package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/cooprhq/coopr/client"
)

// jobProgress is what the progress line shows of the job being followed.
type jobProgress struct {
	Job, Action string
	Total       int
	Done        int // COMPLETE or SKIPPED
	Failed      int // FAILED or DROPPED
	// Running are the tasks IN_PROGRESS, in plan order, as "ACTION
	// service@host".
	Running []string
	Elapsed time.Duration
}

// barWidth is the progress bar's inside, in cells.
const barWidth = 20

// renderProgress is the one line a terminal shows while a job runs, at
// most width columns (runes): the job, a bar, done/total, the failures and
// as many running tasks as fit, the rest counted.
func renderProgress(p jobProgress, width int) string {
	counts := fmt.Sprintf("%d/%d done", p.Done, p.Total)
	if p.Failed > 0 {
		counts += fmt.Sprintf(", %d failed", p.Failed)
	}
	if width > 0 && width < 60 {
		// No room for a bar: the counts alone.
		return clip(p.Job+" "+counts, width)
	}
	filled := 0
	if p.Total > 0 {
		filled = barWidth * p.Done / p.Total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", barWidth-filled)
	line := fmt.Sprintf("%s %s [%s] %s", p.Job, p.Action, bar, counts)
	if p.Elapsed > 0 {
		line += " " + p.Elapsed.Truncate(time.Second).String()
	}
	if len(p.Running) == 0 {
		return clip(line, width)
	}
	more := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf(", +%d more", n)
	}
	// As many running tasks as fit, the others counted.
	shown := 0
	for shown < len(p.Running) {
		next := line + " | " + strings.Join(p.Running[:shown+1], ", ") + more(len(p.Running)-shown-1)
		if width > 0 && utf8.RuneCountInString(next) > width {
			break
		}
		shown++
	}
	if shown == 0 {
		return clip(line+fmt.Sprintf(" | %d running", len(p.Running)), width)
	}
	return line + " | " + strings.Join(p.Running[:shown], ", ") + more(len(p.Running)-shown)
}

// clip cuts s to width runes, ending in … when it cut.
func clip(s string, width int) string {
	if width <= 0 || utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// progressLine is a task count for plain output: "[3/24 done]" or
// "[3/24 done, 1 failed]".
func progressLine(p jobProgress) string {
	s := "[" + strconv.Itoa(p.Done) + "/" + strconv.Itoa(p.Total) + " done"
	if p.Failed > 0 {
		s += ", " + strconv.Itoa(p.Failed) + " failed"
	}
	return s + "]"
}

// taskInfo is one task of the followed job.
type taskInfo struct {
	label, state string
}

// progressTracker keeps the followed job's tasks and their states from
// the cluster's events.
type progressTracker struct {
	job, action string
	order       []string // task ids in plan order
	tasks       map[string]*taskInfo
	started     time.Time
	ended       bool // the job completed or failed
}

// load reads a job's tasks as they stand.
func (t *progressTracker) load(ctx context.Context, c *client.Client, job string) error {
	var out struct {
		Job *struct {
			Action, State string
			Tasks         []struct {
				ID, Action, Service, State string
				Hostname                   *string
			}
		}
	}
	if err := gql(ctx, c, `query($id: ID!) { job(id: $id) { action state tasks { id action service state hostname } } }`,
		map[string]any{"id": job}, &out); err != nil {
		return err
	}
	if out.Job == nil {
		return notFound("job %s: not found", job)
	}
	if t.job != job {
		t.started = time.Now()
	}
	t.job, t.action, t.order, t.tasks = job, out.Job.Action, nil, map[string]*taskInfo{}
	t.ended = out.Job.State == "COMPLETE" || out.Job.State == "FAILED"
	for _, k := range out.Job.Tasks {
		label := k.Action
		if k.Service != "" {
			label += " " + k.Service
		}
		if k.Hostname != nil && *k.Hostname != "" {
			host, _, _ := strings.Cut(*k.Hostname, ".")
			label += "@" + host
		}
		t.order = append(t.order, k.ID)
		t.tasks[k.ID] = &taskInfo{label: label, state: k.State}
	}
	return nil
}

// set records a task's new state; false when the task is not the job's.
// A done task stays done: load reads the tasks as they stand, and the
// events of their earlier states may still be on their way (a task read
// COMPLETE, then its QUEUED event), which must not count it back down.
func (t *progressTracker) set(task, state string) bool {
	k, ok := t.tasks[task]
	if ok && k.state != "COMPLETE" && k.state != "SKIPPED" {
		k.state = state
	}
	return ok
}

func (t *progressTracker) progress(now time.Time) jobProgress {
	p := jobProgress{Job: t.job, Action: t.action, Total: len(t.order)}
	if !t.started.IsZero() {
		p.Elapsed = now.Sub(t.started)
	}
	for _, id := range t.order {
		k := t.tasks[id]
		switch k.state {
		case "COMPLETE", "SKIPPED":
			p.Done++
		case "FAILED", "DROPPED":
			p.Failed++
		case "IN_PROGRESS":
			p.Running = append(p.Running, k.label)
		}
	}
	return p
}

// isTerminal reports whether w is a terminal that can redraw a line, and
// its width.
func isTerminal(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" || !term.IsTerminal(int(f.Fd())) {
		return false, 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width < 20 {
		width = 80
	}
	return true, width
}
