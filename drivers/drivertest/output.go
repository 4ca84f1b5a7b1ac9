package drivertest

import (
	"slices"
	"strings"
	"sync"
)

// Recorder is a drivers.Output that keeps everything a driver wrote, in
// order. Safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Event is one line a driver wrote.
type Event struct {
	Stream  string // stdout, stderr or status
	Line    string
	Percent float64 // status only
}

// Stdout records a stdout line.
func (r *Recorder) Stdout(line string) { r.add(Event{Stream: "stdout", Line: line}) }

// Stderr records a stderr line.
func (r *Recorder) Stderr(line string) { r.add(Event{Stream: "stderr", Line: line}) }

// Status records a status line.
func (r *Recorder) Status(line string, percent float64) {
	r.add(Event{Stream: "status", Line: line, Percent: percent})
}

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Events is everything recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Lines is what was recorded on one stream.
func (r *Recorder) Lines(stream string) []string {
	var out []string
	for _, e := range r.Events() {
		if e.Stream == stream {
			out = append(out, e.Line)
		}
	}
	return out
}

// Contains reports whether a line of stream contains s.
func (r *Recorder) Contains(stream, s string) bool {
	return slices.ContainsFunc(r.Lines(stream), func(l string) bool { return strings.Contains(l, s) })
}
