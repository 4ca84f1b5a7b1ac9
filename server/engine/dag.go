package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/cooprhq/coopr/planner"
)

// encodeEdges writes sorted (from, to) edges as varints: the source as a
// delta from the previous source, the target as a delta from the previous
// target of the same source. A 10^6-edge plan takes a few MB instead of
// 10^6 rows.
func encodeEdges(edges [][2]int32) []byte {
	buf := binary.AppendUvarint(nil, uint64(len(edges)))
	var pf, pt int32
	for i, e := range edges {
		if i == 0 || e[0] != pf {
			buf = binary.AppendUvarint(buf, uint64(e[0]-pf))
			buf = binary.AppendUvarint(buf, uint64(e[1]))
		} else {
			buf = binary.AppendUvarint(buf, 0)
			buf = binary.AppendUvarint(buf, uint64(e[1]-pt))
		}
		pf, pt = e[0], e[1]
	}
	return buf
}

var errBadEdges = errors.New("engine: corrupt edge encoding")

func decodeEdges(buf []byte, n int) ([][2]int32, error) {
	count, k := binary.Uvarint(buf)
	if k <= 0 || count > uint64(len(buf)) {
		return nil, errBadEdges
	}
	buf = buf[k:]
	edges := make([][2]int32, 0, count)
	var pf, pt int64
	for i := uint64(0); i < count; i++ {
		df, k1 := binary.Uvarint(buf)
		if k1 <= 0 {
			return nil, errBadEdges
		}
		dt, k2 := binary.Uvarint(buf[k1:])
		if k2 <= 0 {
			return nil, errBadEdges
		}
		buf = buf[k1+k2:]
		f, t := pf+int64(df), int64(dt)
		if i > 0 && df == 0 {
			t = pt + int64(dt)
		}
		if f >= int64(n) || t >= int64(n) {
			return nil, fmt.Errorf("%w: edge %d -> %d outside %d tasks", errBadEdges, f, t, n)
		}
		edges = append(edges, [2]int32{int32(f), int32(t)})
		pf, pt = f, t
	}
	return edges, nil
}

// taskState is the scheduler's copy of a task row.
type taskState struct {
	id        string
	idx       int
	node      string
	action    planner.Action
	service   string
	state     TaskState
	attempt   int
	retryAt   time.Time // a FAILED task waiting to be re-queued; zero: not waiting
	predsLeft int       // predecessors not done (COMPLETE or SKIPPED)
	succ      []int32
	rollback  bool // a CONFIRM rollback task (counts as bring-up)
	// candFailed: counted in its job's failedCand.
	candFailed bool
}

// jobState is the scheduler's copy of a running job: what it needs to find
// ready tasks without reading Postgres.
type jobState struct {
	id, tenant, cluster string
	state               JobState
	settled             bool
	tasks               []*taskState
	byID                map[string]*taskState
	busy                map[string]int // node -> tasks QUEUED or IN_PROGRESS
	bringUpLeft         int            // bring-up tasks not done (the address gate)
	// noGate: the cluster's config reads no other node's names or
	// addresses, so a service task waits only for its own node's bring-up
	// (its DAG chain), not for every node's.
	noGate    bool
	doneCount int
	inFlight  int
	share     int // most tasks in flight at once; 0: no bound (see jobShare)
	// cand holds the indexes of tasks whose predecessors are done and
	// that wait to be queued (NOT_SUBMITTED, or FAILED awaiting a retry), so
	// that a wake-up looks at those, not at every task of a large job. A
	// bitset over the task indexes: a wake-up walks it in plan order
	// without sorting, and stops once it has what it may queue.
	cand []uint64
	// failedCand counts the FAILED candidates: with none, no retry waits.
	failedCand int
}

func (t *taskState) bringUp() bool { return t.rollback || t.action.BringUp() }

func (t *taskState) inFlight() bool { return t.state == Queued || t.state == InProgress }

// newJobState builds the DAG of a job from its task rows and edges. Rollback
// tasks chain after one another (after) and before their CONFIRM (of).
func newJobState(id, tenant, cluster string, state JobState, settled bool, tasks []*taskState, edges [][2]int32, rollbackOf, after map[int]int) *jobState {
	js := &jobState{id: id, tenant: tenant, cluster: cluster, state: state, settled: settled,
		tasks: tasks, byID: make(map[string]*taskState, len(tasks)), busy: map[string]int{}, cand: make([]uint64, (len(tasks)+63)/64)}
	for _, t := range tasks {
		js.byID[t.id] = t
	}
	link := func(from, to int) {
		js.tasks[from].succ = append(js.tasks[from].succ, int32(to))
		if !done(js.tasks[from].state) {
			js.tasks[to].predsLeft++
		}
	}
	for _, e := range edges {
		link(int(e[0]), int(e[1]))
	}
	for idx, confirm := range rollbackOf {
		tasks[idx].rollback = true
		// Only the last of a rollback chain (the CREATE) precedes the
		// CONFIRM; the others precede the next rollback task.
		last := true
		for _, a := range after {
			if a == idx {
				last = false
			}
		}
		if last && confirm < len(tasks) {
			link(idx, confirm)
		}
	}
	for idx, a := range after {
		if a < len(tasks) {
			link(a, idx)
		}
	}
	for _, t := range tasks {
		js.track(t)
		if t.inFlight() {
			js.busy[t.node]++
			js.inFlight++
		}
		if t.bringUp() && !done(t.state) {
			js.bringUpLeft++
		}
		if done(t.state) {
			js.doneCount++
		}
	}
	return js
}

// ready lists the tasks to queue now, in plan order
// (docs/planner.md#dag-driven-execution): all predecessors done, the node
// idle, the address gate open, and any retry backoff over. At most one task
// per idle node is returned.
//
// limit > 0 stops the walk at that many: a job's share of the slots bounds
// what it may queue, and walking every candidate of a large job at each
// wake-up made a task's cost grow with the job.
func (js *jobState) ready(now time.Time, limit int) []*taskState {
	if js.state != JobRunning {
		return nil
	}
	taken := map[string]bool{}
	var out []*taskState
	for w, word := range js.cand {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			t := js.tasks[w*64+b]
			switch t.state {
			case NotSubmitted:
			case Failed:
				if t.retryAt.IsZero() || t.retryAt.After(now) {
					continue
				}
			default:
				continue
			}
			if t.node != "" && (js.busy[t.node] > 0 || taken[t.node]) {
				continue
			}
			if t.service != "" && js.bringUpLeft > 0 && !js.noGate {
				continue
			}
			if t.node != "" {
				taken[t.node] = true
			}
			out = append(out, t)
			if limit > 0 && len(out) == limit {
				return out
			}
		}
	}
	return out
}

// nextRetry is the earliest time a waiting retry becomes due.
func (js *jobState) nextRetry() time.Time {
	var next time.Time
	if js.failedCand == 0 {
		return next
	}
	for w, word := range js.cand {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &= word - 1
			t := js.tasks[w*64+b]
			if t.state == Failed && !t.retryAt.IsZero() && (next.IsZero() || t.retryAt.Before(next)) {
				next = t.retryAt
			}
		}
	}
	return next
}

// setState moves a task to state, keeping the counters right.
func (js *jobState) setState(t *taskState, state TaskState) {
	if t.inFlight() {
		js.inFlight--
		if js.busy[t.node] > 0 {
			js.busy[t.node]--
		}
	}
	wasDone := done(t.state)
	t.state = state
	if t.inFlight() {
		js.busy[t.node]++
		js.inFlight++
	}
	js.track(t)
	if done(state) && !wasDone {
		js.doneCount++
		if t.bringUp() {
			js.bringUpLeft--
		}
		for _, s := range t.succ {
			js.tasks[s].predsLeft--
			js.track(js.tasks[s])
		}
	}
}

// track keeps t's membership of the candidate set right.
func (js *jobState) track(t *taskState) {
	w, bit := t.idx/64, uint64(1)<<(t.idx%64)
	was := js.cand[w]&bit != 0
	if was && js.tasks[t.idx].candFailed {
		js.failedCand--
	}
	if t.predsLeft == 0 && (t.state == NotSubmitted || t.state == Failed) {
		js.cand[w] |= bit
		t.candFailed = t.state == Failed
		if t.candFailed {
			js.failedCand++
		}
	} else {
		js.cand[w] &^= bit
		t.candFailed = false
	}
}

func (js *jobState) inFlightCount() int { return js.inFlight }

func (js *jobState) allDone() bool { return js.doneCount == len(js.tasks) }
