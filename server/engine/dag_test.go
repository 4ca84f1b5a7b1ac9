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

// A service task waits for every node's bring-up while the config may
// read other nodes' addresses, and only for its own node's otherwise.
func TestAddressGate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		ready  bool
	}{
		{"no macros", `{"web": {"greeting": "hello"}}`, true},
		{"own macros", `{"web": {"listen": "%ip.self%:80", "name": "%host.self%"}}`, true},
		{"peers' addresses", `{"lb": {"backends": "%join(ip.service.web, ',')%"}}`, false},
		{"unreadable", `not json`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tasks := []*taskState{
				{id: "0", idx: 0, node: "a", action: planner.Bootstrap, state: NotSubmitted},
				{id: "1", idx: 1, node: "b", action: planner.Bootstrap, state: NotSubmitted},
				{id: "2", idx: 2, node: "a", action: planner.Install, service: "web", state: NotSubmitted},
			}
			js := newJobState("j", "t", "c", JobRunning, false, tasks, [][2]int32{{0, 2}}, nil, nil)
			js.noGate = !configNeedsPeers([]byte(tc.config))
			js.setState(tasks[0], Queued)
			js.setState(tasks[0], Complete)
			r := js.ready(time.Now(), 0)
			got := len(r) == 2 && r[1] == tasks[2]
			if got != tc.ready {
				t.Fatalf("INSTALL on a ready with b not bootstrapped: %v, want %v", got, tc.ready)
			}
			js.setState(tasks[1], Queued)
			js.setState(tasks[1], Complete)
			if r := js.ready(time.Now(), 0); len(r) != 1 || r[0] != tasks[2] {
				t.Fatalf("INSTALL not ready once every node is up: %v", r)
			}
		})
	}
}
