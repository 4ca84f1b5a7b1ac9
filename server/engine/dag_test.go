package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/cooprhq/coopr/planner"
)

// A wake-up takes ready tasks in plan order up to its limit, across the
// candidate set's words; retries count only while a FAILED task waits.
func TestReadyLimitAndRetries(t *testing.T) {
	var tasks []*taskState
	for i := range 150 {
		tasks = append(tasks, &taskState{id: fmt.Sprint(i), idx: i, node: fmt.Sprintf("n%d", i), action: planner.Create, state: NotSubmitted})
	}
	js := newJobState("j", "t", "c", JobRunning, false, tasks, nil, nil, nil)
	for _, tc := range []struct{ limit, want int }{{0, 150}, {1, 1}, {16, 16}, {149, 149}, {500, 150}} {
		r := js.ready(time.Now(), tc.limit)
		if len(r) != tc.want {
			t.Fatalf("limit %d: %d ready, want %d", tc.limit, len(r), tc.want)
		}
		for i, x := range r {
			if x.idx != i {
				t.Fatalf("limit %d: ready[%d] is task %d, want plan order", tc.limit, i, x.idx)
			}
		}
	}
	if !js.nextRetry().IsZero() {
		t.Error("a retry waits with no FAILED task")
	}
	due := time.Now().Add(time.Hour)
	js.setState(tasks[70], Queued)
	tasks[70].retryAt = due
	js.setState(tasks[70], Failed)
	if got := js.nextRetry(); !got.Equal(due) {
		t.Errorf("next retry %v, want %v", got, due)
	}
	if r := js.ready(time.Now(), 0); len(r) != 149 {
		t.Errorf("%d ready with one retry not yet due, want 149", len(r))
	}
	js.setState(tasks[70], Queued)
	if !js.nextRetry().IsZero() || js.failedCand != 0 {
		t.Errorf("a retry waits after the FAILED task was queued again (failedCand %d)", js.failedCand)
	}
}
