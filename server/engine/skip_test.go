package engine

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/planner"
)

// submitReq plans req over the harness's services and submits it.
func (h *harness) submitReq(req planner.Request) (string, *planner.Plan) {
	h.t.Helper()
	req.Services = testServices()
	p, err := planner.Build(&req)
	must(h.t, err)
	job, err := h.engine().Submit(context.Background(), JobSpec{TenantID: h.tenant, ClusterID: h.cluster, Action: req.Action, Plan: p, Services: req.Services})
	must(h.t, err)
	return job, p
}

type taskRow struct {
	State    TaskState `db:"state"`
	Message  string    `db:"message"`
	Attempt  int       `db:"attempt"`
	Failures int       `db:"failures"`
}

// task reads the job's task of node and action.
func (h *harness) task(job, node, action string) taskRow {
	h.t.Helper()
	var r taskRow
	must(h.t, h.db.Get(&r, `SELECT state, message, attempt, failures FROM tasks WHERE job_id = $1 AND node_id = $2 AND action = $3`,
		job, node, action))
	return r
}

type nodeMark struct {
	Since  sql.NullTime `db:"unreachable_since"`
	Reason string       `db:"unreachable_reason"`
}

func (h *harness) mark(node string) nodeMark {
	h.t.Helper()
	var m nodeMark
	must(h.t, h.db.Get(&m, `SELECT unreachable_since, unreachable_reason FROM nodes WHERE id = $1`, node))
	return m
}

const noRoute = "hosts: read /etc/hosts: ssh root@10.231.0.5:22: dial: dial tcp 10.231.0.5:22: connect: no route to host"

// A delete whose NETWORK_UNCONFIGURE finds its node unreachable skips that
// step at once with the reason, runs the DELETE anyway and ends
// TERMINATED; the node is marked unreachable.
func TestDeleteSkipsCleanupOfUnreachableNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	nodes := h.nodes(3)
	lost := nodes[1].ID
	ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		if a.TaskName == "NETWORK_UNCONFIGURE" && a.Node.ID == lost {
			return Result{Status: 1, Message: noRoute, Unreachable: true}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	job, _ := h.submitReq(planner.Request{Action: planner.ClusterDelete, Nodes: nodes, Network: true})
	h.waitStatus("TERMINATED", 20*time.Second)

	got := h.task(job, lost, "NETWORK_UNCONFIGURE")
	if got.State != Skipped || !strings.Contains(got.Message, "node unreachable") || !strings.Contains(got.Message, "no route to host") {
		t.Errorf("unconfigure of the lost node: %+v, want SKIPPED with the reason", got)
	}
	if n := ag.count[lost+"/NETWORK_UNCONFIGURE/"]; n != 1 {
		t.Errorf("unconfigure of the lost node ran %d times, want once (no retries)", n)
	}
	if d := h.task(job, lost, "DELETE"); d.State != Complete {
		t.Errorf("DELETE of the lost node: %+v", d)
	}
	var jobState JobState
	must(t, h.db.Get(&jobState, `SELECT state FROM jobs WHERE id = $1`, job))
	if jobState != JobComplete {
		t.Errorf("job %s", jobState)
	}
	var events int
	must(t, h.db.Get(&events, `SELECT count(*) FROM events WHERE job_id = $1 AND kind = 'task' AND state = 'SKIPPED' AND message = $2`,
		job, got.Message))
	if events != 1 {
		t.Errorf("%d SKIPPED events with the reason, want 1", events)
	}
	if m := h.mark(lost); !m.Since.Valid || !strings.Contains(m.Reason, "no route to host") {
		t.Errorf("lost node mark %+v", m)
	}
	if m := h.mark(nodes[0].ID); m.Since.Valid {
		t.Errorf("a reachable node is marked: %+v", m)
	}
}

// A best-effort task failing for another reason is retried like any task,
// and skipped with its last error once its attempts are used up; a
// non-retryable failure skips it at once.
func TestBestEffortSkippedAfterItsAttempts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		retryable bool
		runs      int
	}{
		{"retryable", true, 3},
		{"not retryable", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fast)
			nodes := h.nodes(2)
			ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
				if a.TaskName == "NETWORK_UNCONFIGURE" && a.Node.ID == nodes[0].ID {
					return Result{Status: 1, Message: "disk full", Retryable: &tc.retryable}, time.Millisecond
				}
				return Result{}, time.Millisecond
			})
			job, _ := h.submitReq(planner.Request{Action: planner.ClusterDelete, Nodes: nodes, Network: true})
			h.waitStatus("TERMINATED", 20*time.Second)
			got := h.task(job, nodes[0].ID, "NETWORK_UNCONFIGURE")
			if got.State != Skipped || !strings.HasSuffix(got.Message, "disk full") || got.Failures != tc.runs {
				t.Errorf("unconfigure: %+v, want SKIPPED with the last error after %d failures", got, tc.runs)
			}
			if n := ag.count[nodes[0].ID+"/NETWORK_UNCONFIGURE/"]; n != tc.runs {
				t.Errorf("ran %d times, want %d", n, tc.runs)
			}
			if m := h.mark(nodes[0].ID); m.Since.Valid {
				t.Errorf("node marked unreachable for a failure that was not: %+v", m)
			}
		})
	}
}

// A task the plan did not make best-effort fails as before, whatever its
// driver says: an unreachable DELETE, or a CREATE, fails the job after its
// attempts and is never skipped. The node is marked unreachable.
func TestOnlyBestEffortIsSkipped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action planner.ClusterAction
		task   string
		status string
	}{
		{planner.ClusterDelete, "DELETE", "INCOMPLETE"},
		{planner.ClusterCreate, "CREATE", "INCOMPLETE"},
		{planner.StopServices, "STOP", "INCONSISTENT"},
	} {
		t.Run(tc.task, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fast)
			nodes := h.nodes(2)
			victim := nodes[1].ID
			ag := h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
				if a.TaskName == tc.task && a.Node.ID == victim {
					return Result{Status: 1, Message: noRoute, Unreachable: true}, time.Millisecond
				}
				return Result{}, time.Millisecond
			})
			job, _ := h.submitReq(planner.Request{Action: tc.action, Nodes: nodes, Network: true})
			h.waitStatus(tc.status, 20*time.Second)
			svc := ""
			if tc.task == "STOP" {
				svc = "app"
			}
			var got taskRow
			must(t, h.db.Get(&got, `SELECT state, message, attempt, failures FROM tasks WHERE job_id = $1 AND node_id = $2
				AND action = $3 AND service = $4`, job, victim, tc.task, svc))
			if got.State != Failed || got.Failures != 3 {
				t.Errorf("%s: %+v, want FAILED after 3 attempts", tc.task, got)
			}
			if n := ag.count[victim+"/"+tc.task+"/"+svc]; n != 3 {
				t.Errorf("%s ran %d times, want 3", tc.task, n)
			}
			var skipped int
			must(t, h.db.Get(&skipped, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state = 'SKIPPED'`, job))
			if skipped != 0 {
				t.Errorf("%d tasks skipped\n%s", skipped, h.dump())
			}
			if m := h.mark(victim); !m.Since.Valid || !strings.Contains(m.Reason, "no route to host") {
				t.Errorf("victim mark %+v", m)
			}
		})
	}
}

// SCALE_IN skips the STOP of a removed node that is gone, deletes it, and
// the cluster is ACTIVE with one node fewer.
func TestScaleInSkipsStopOfGoneNode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fast)
	nodes := h.nodes(3)
	gone := nodes[2].ID
	h.agent("a1", 4, func(a *Assignment, n int) (Result, time.Duration) {
		if a.TaskName == "STOP" && a.Node.ID == gone {
			return Result{Status: 1, Message: "ssh root@10.231.0.7:22: no SSH server answered: ssh: handshake failed: EOF", Unreachable: true}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	_, err := h.db.Exec(`UPDATE clusters SET size = 3 WHERE id = $1`, h.cluster)
	must(t, err)
	job, _ := h.submitReq(planner.Request{Action: planner.ScaleIn, Nodes: nodes, RemovedNodes: []string{gone}})
	h.waitStatus("ACTIVE", 20*time.Second)
	var stop taskRow
	must(t, h.db.Get(&stop, `SELECT state, message, attempt, failures FROM tasks WHERE job_id = $1 AND node_id = $2 AND action = 'STOP'`, job, gone))
	if stop.State != Skipped || !strings.Contains(stop.Message, "no SSH server answered") {
		t.Errorf("STOP of the gone node: %+v", stop)
	}
	var size, left int
	must(t, h.db.Get(&size, `SELECT size FROM clusters WHERE id = $1`, h.cluster))
	must(t, h.db.Get(&left, `SELECT count(*) FROM nodes WHERE id = $1`, gone))
	if size != 2 || left != 0 {
		t.Errorf("size %d, removed node rows %d\n%s", size, left, h.dump())
	}
}

// A node a task found unreachable is marked with the time and reason; a
// later task that reaches it clears the mark, through the finish batch as
// well as the transactional path.
func TestUnreachableMarkClearedWhenReached(t *testing.T) {
	t.Parallel()
	for _, facts := range []bool{false, true} {
		name := "batched finish"
		if facts {
			name = "finish with facts"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, fast)
			nodes := h.nodes(1)
			id := nodes[0].ID
			marked := make(chan struct{})
			h.agent("a1", 2, func(a *Assignment, n int) (Result, time.Duration) {
				if n == 0 {
					return Result{Status: 1, Message: noRoute, Unreachable: true}, time.Millisecond
				}
				<-marked
				if facts {
					return Result{Facts: map[string]any{"seen": true}}, time.Millisecond
				}
				return Result{}, time.Millisecond
			})
			h.submitReq(planner.Request{Action: planner.StartServices, Nodes: nodes, PlannedServices: []string{"db"}})
			waitFor(t, func() bool { return h.mark(id).Since.Valid })
			if m := h.mark(id); !strings.Contains(m.Reason, "START failed (attempt 1, status 1): "+noRoute) {
				t.Errorf("mark %+v", m)
			}
			close(marked)
			h.waitStatus("ACTIVE", 20*time.Second)
			if m := h.mark(id); m.Since.Valid || m.Reason != "" {
				t.Errorf("mark after the node was reached again: %+v", m)
			}
		})
	}
}

// A skipped task counts as done for its successors and its job, also when
// the job is read back from its rows.
func TestSkippedIsDone(t *testing.T) {
	a := &taskState{id: "a", idx: 0, node: "n", action: planner.NetworkUnconfigure, state: Skipped}
	b := &taskState{id: "b", idx: 1, node: "n", action: planner.Delete, state: NotSubmitted}
	js := newJobState("j", "t", "c", JobRunning, false, []*taskState{a, b}, [][2]int32{{0, 1}}, nil, nil)
	if r := js.ready(time.Now(), 0); len(r) != 1 || r[0] != b {
		t.Fatalf("ready %v, want the DELETE after a skipped task", r)
	}
	js.setState(b, Queued)
	js.setState(b, InProgress)
	js.setState(b, Complete)
	if !js.allDone() {
		t.Error("a job of a skipped and a complete task is not done")
	}
}
