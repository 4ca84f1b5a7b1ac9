package server_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/servertest"
)

type clusterEvent struct {
	Kind, Seq, State, Message string
	JobID, TaskID             *string
	Lagged                    bool
	Cluster                   *struct{ Status string }
}

const clusterEventsQuery = `subscription($id: ID!) { clusterEvents(clusterId: $id) {
	kind seq state message jobId taskId lagged cluster { status } } }`

func (w *world) create(t testing.TB, token string, n int) string {
	t.Helper()
	var cr struct{ CreateCluster struct{ ID string } }
	w.s.Must(token, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "watched", "clusterTemplate": "hadoop-distributed", "numMachines": n}}, &cr)
	return cr.CreateCluster.ID
}

// first reads a subscription's first message, the SNAPSHOT: once it has
// arrived the subscription is registered and misses nothing after.
func first(t *testing.T, sub *servertest.Subscription) clusterEvent {
	t.Helper()
	r, _, err := sub.Next(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ ClusterEvents clusterEvent }
	if err := r.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.ClusterEvents
}

// collect reads clusterEvents until the cluster reaches status.
func collect(t *testing.T, sub *servertest.Subscription, status string, evs ...clusterEvent) []clusterEvent {
	t.Helper()
	for {
		r, done, err := sub.Next(30 * time.Second)
		if err != nil || done {
			t.Fatalf("subscription ended (done=%v): %v; got %d events", done, err, len(evs))
		}
		var out struct{ ClusterEvents clusterEvent }
		if err := r.Decode(&out); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, out.ClusterEvents)
		if e := out.ClusterEvents; e.Kind == "CLUSTER" && e.State == status {
			return evs
		}
	}
}

// checkOrder checks a cluster create's events: a snapshot first, every
// task QUEUED, then IN_PROGRESS, then COMPLETE, the job COMPLETE after all
// tasks, and the cluster last.
func checkCreateEvents(t *testing.T, evs []clusterEvent, tasks int) {
	t.Helper()
	if evs[0].Kind != "SNAPSHOT" || evs[0].Cluster == nil {
		t.Fatalf("first event %+v, want a SNAPSHOT with the cluster", evs[0])
	}
	step := map[string]int{}
	order := map[string]int{"QUEUED": 1, "IN_PROGRESS": 2, "COMPLETE": 3}
	complete, jobDone := 0, -1
	for i, e := range evs[1:] {
		switch e.Kind {
		case "TASK":
			// A task queued before the subscription began shows up first
			// in a later state; after that it must take every step.
			prev, seen := step[*e.TaskID]
			if (seen && order[e.State] != prev+1) || (!seen && order[e.State] == 0) {
				t.Errorf("task %s: %s after step %d", *e.TaskID, e.State, prev)
			}
			step[*e.TaskID] = order[e.State]
			if e.State == "COMPLETE" {
				complete++
				if jobDone >= 0 {
					t.Errorf("task %s completed after the job", *e.TaskID)
				}
			}
		case "JOB":
			if e.State == "COMPLETE" {
				jobDone = i
			}
		}
		if e.Lagged {
			t.Errorf("event %d lagged", i)
		}
	}
	if complete != tasks || jobDone < 0 {
		var seen []string
		for id, st := range step {
			if st != 3 {
				seen = append(seen, fmt.Sprintf("%s at step %d", id, st))
			}
		}
		t.Errorf("%d tasks completed of %d; job completed: %v; unfinished: %v", complete, tasks, jobDone >= 0, seen)
	}
}

func TestClusterEventsSubscription(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.alice, 3)
	sub, err := w.s.Subscribe(w.alice, clusterEventsQuery, map[string]any{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	progress, err := w.s.Subscribe(w.alice, `subscription($id: ID!) { jobProgress(jobId: $id) { kind state jobState done failed total } }`,
		map[string]any{"id": id + "-001"})
	if err != nil {
		t.Fatal(err)
	}
	defer progress.Close()
	var job struct {
		Job struct{ Counts struct{ Total int } }
	}
	w.s.Must(w.alice, `query($id: ID!) { job(id: $id) { counts { total } } }`, map[string]any{"id": id + "-001"}, &job)

	wait := w.runAsync(t, w.alice, id, "ACTIVE")
	evs := collect(t, sub, "ACTIVE")
	wait()
	if evs[0].State != "PENDING" {
		t.Errorf("snapshot state %s, want PENDING", evs[0].State)
	}
	checkCreateEvents(t, evs, job.Job.Counts.Total)

	var last struct {
		JobProgress struct {
			Kind, JobState      string
			Done, Failed, Total int
		}
	}
	for last.JobProgress.JobState != "COMPLETE" {
		r, done, err := progress.Next(30 * time.Second)
		if err != nil || done {
			t.Fatalf("jobProgress ended: %v", err)
		}
		if err := r.Decode(&last); err != nil {
			t.Fatal(err)
		}
	}
	if p := last.JobProgress; p.Done != p.Total || p.Total != job.Job.Counts.Total || p.Failed != 0 {
		t.Errorf("final progress %+v, want all %d done", p, job.Job.Counts.Total)
	}

	// Refusals: another user's cluster, no token.
	for _, tok := range []string{w.bob, ""} {
		s2, err := w.s.Subscribe(tok, clusterEventsQuery, map[string]any{"id": id})
		if err != nil {
			continue // refused at connection time is a refusal too
		}
		r, _, err := s2.Next(10 * time.Second)
		s2.Close()
		if err != nil || r == nil || len(r.Errors) == 0 {
			t.Errorf("token %q subscribed to alice's cluster: %v %+v", tok, err, r)
		} else if c := r.Code(); c != "NOT_FOUND" && c != "UNAUTHENTICATED" {
			t.Errorf("token %q: code %s", tok, c)
		}
	}
}

// Two servers on one database and Redis: a subscriber on one sees a
// cluster built through the other, and tasks claimed and finished through
// the server that is not running the scheduler still move the job.
func TestTwoServers(t *testing.T) {
	w := newWorld(t)
	b := servertest.StartWith(t, w.s.Config)
	id := w.create(t, w.alice, 3)
	sub, err := b.Subscribe(w.alice, clusterEventsQuery, map[string]any{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	snapshot := first(t, sub)
	// The agent talks to b; the first server holds the scheduler lock.
	done := make(chan error, 1)
	go func() { done <- w.agent(w.alice, b, id, "ACTIVE") }()
	start := time.Now()
	evs := collect(t, sub, "ACTIVE", snapshot)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var job struct {
		Job struct{ Counts struct{ Total int } }
	}
	w.s.Must(w.alice, `query($id: ID!) { job(id: $id) { counts { total } } }`, map[string]any{"id": id + "-001"}, &job)
	checkCreateEvents(t, evs, job.Job.Counts.Total)
	t.Logf("%d tasks through the second server in %s", job.Job.Counts.Total, time.Since(start).Round(time.Millisecond))
}

// A change committed before a late subscriber's snapshot but relayed only
// after it subscribed (the relay waits for older transactions) is not
// delivered after the snapshot, which already holds it: no old status
// arrives after the current one. Later changes still come.
func TestLateSubscriberSkipsWhatItsSnapshotHolds(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.alice, 3)
	db := w.s.Srv.Store().DB()
	var tenant string
	if err := db.Get(&tenant, `SELECT tenant_id FROM clusters WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	insert := `INSERT INTO events (tenant_id, cluster_id, kind, state, message) VALUES ($1, $2, 'cluster', $3, '')`
	// An open transaction holds the relay back: what commits after it
	// waits for it to end.
	hold, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback()
	if _, err := hold.Exec(`SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(insert, tenant, id, "OLD"); err != nil {
		t.Fatal(err)
	}
	sub, err := w.s.Subscribe(w.alice, clusterEventsQuery, map[string]any{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if e := first(t, sub); e.Kind != "SNAPSHOT" {
		t.Fatalf("first %+v, want the SNAPSHOT", e)
	}
	if err := hold.Commit(); err != nil { // OLD is relayed now
		t.Fatal(err)
	}
	if _, err := db.Exec(insert, tenant, id, "NEW"); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "NEW")
	for _, e := range evs {
		if e.State == "OLD" {
			t.Fatalf("a change the snapshot held came after it: %+v", evs)
		}
	}
}

// Subscribers of the same operation share each change's rendering (see
// fanout), and still each get every change, in order; one asking for
// other fields gets its own rendering.
func TestSubscribersShareRenders(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.alice, 3)
	const n = 6
	rendered0, shared0, encoded0 := w.s.Srv.Fanout().Rendered.Load(), w.s.Srv.Fanout().Shared.Load(), w.s.Srv.Fanout().Encoded.Load()
	hub0 := w.s.Srv.Hub().Subscribers() // the server's own
	subs := make([]*servertest.Subscription, n)
	for i := range subs {
		sub, err := w.s.Subscribe(w.alice, clusterEventsQuery, map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		first(t, sub)
		subs[i] = sub
	}
	other, err := w.s.Subscribe(w.alice, `subscription($id: ID!) { clusterEvents(clusterId: $id) { seq kind } }`, map[string]any{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if r, _, err := other.Next(30 * time.Second); err != nil || !strings.Contains(string(r.Data), `"SNAPSHOT"`) {
		t.Fatalf("first message %v %v", r, err)
	}
	if g := w.s.Srv.Fanout().Len(); g != 2 {
		t.Errorf("%d groups, want 2", g)
	}
	var job struct {
		Job struct{ Counts struct{ Total int } }
	}
	w.s.Must(w.alice, `query($id: ID!) { job(id: $id) { counts { total } } }`, map[string]any{"id": id + "-001"}, &job)

	wait := w.runAsync(t, w.alice, id, "ACTIVE")
	// Changes committed before a subscriber's snapshot are not sent to it
	// again (they are in the snapshot), so those that subscribed later may
	// start later in the sequence: each gets a tail of the longest one.
	got := make([][]clusterEvent, n)
	var want []clusterEvent
	for i, sub := range subs {
		got[i] = collect(t, sub, "ACTIVE", clusterEvent{Kind: "SNAPSHOT", Cluster: &struct{ Status string }{"PENDING"}})
		checkCreateEvents(t, got[i], job.Job.Counts.Total)
		if len(got[i]) > len(want) {
			want = got[i]
		}
	}
	var groupChanges int64
	for i, evs := range got {
		groupChanges += int64(len(evs) - 1)
		if tail := want[len(want)-len(evs)+1:]; !reflect.DeepEqual(evs[1:], tail) {
			t.Errorf("subscriber %d got %d changes, not the last %d of the longest sequence", i, len(evs)-1, len(evs)-1)
		}
	}
	wait()
	// It subscribed last.
	var seqs []string
	for {
		r, _, err := other.Next(30 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			ClusterEvents struct{ Seq, Kind, State string }
		}
		if err := r.Decode(&out); err != nil {
			t.Fatal(err)
		}
		if out.ClusterEvents.State != "" {
			t.Fatalf("fields asked only by others were rendered for this subscriber: %s", r.Data)
		}
		seqs = append(seqs, out.ClusterEvents.Seq)
		if out.ClusterEvents.Seq == want[len(want)-1].Seq {
			break
		}
	}
	tail := want[len(want)-len(seqs):]
	for i, s := range seqs {
		if tail[i].Seq != s {
			t.Fatalf("other subscriber's change %d is seq %s, want %s", i, s, tail[i].Seq)
		}
	}
	changes := int64(len(want) - 1)
	rendered, shared := w.s.Srv.Fanout().Rendered.Load()-rendered0, w.s.Srv.Fanout().Shared.Load()-shared0
	// Each snapshot is rendered for its subscriber, each change once per
	// group; the first group's other subscribers share it.
	others := int64(len(seqs))
	if want := n + 1 + changes + others; rendered != want {
		t.Errorf("%d and %d changes: rendered %d, want %d", changes, others, rendered, want)
	}
	if want := groupChanges - changes; shared != want {
		t.Errorf("%d changes to %d subscribers: shared %d, want %d", changes, n, shared, want)
	}
	// And encoded once: the transport sends every subscriber the same bytes.
	if encoded := w.s.Srv.Fanout().Encoded.Load() - encoded0; encoded != changes+others {
		t.Errorf("%d and %d changes: encoded %d, want %d", changes, others, encoded, changes+others)
	}

	// Leaving frees the groups and the hub's subscriptions.
	for _, sub := range append(subs, other) {
		sub.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.s.Srv.Fanout().Len() > 0 || w.s.Srv.Fanout().Cached() > 0 || w.s.Srv.Hub().Subscribers() > hub0 {
		if time.Now().After(deadline) {
			t.Fatalf("after every subscriber left: %d groups, %d cached responses, %d hub subscriptions",
				w.s.Srv.Fanout().Len(), w.s.Srv.Fanout().Cached(), w.s.Srv.Hub().Subscribers()-hub0)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type changeEvent struct {
	Kind, State, ClusterID string
	JobID                  *string
	Lagged                 bool
}

// nextChange reads one clusterChanges event.
func nextChange(t *testing.T, sub *servertest.Subscription) changeEvent {
	t.Helper()
	r, done, err := sub.Next(30 * time.Second)
	if err != nil || done {
		t.Fatalf("clusterChanges ended (done=%v): %v", done, err)
	}
	var out struct{ ClusterChanges changeEvent }
	if err := r.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.ClusterChanges
}

// clusterChanges follows every cluster a caller may see, at the level of
// statuses and jobs: alice sees her cluster come up, bob sees nothing of
// it (his first change is his own cluster's), the admin sees both.
func TestClusterChangesSubscription(t *testing.T) {
	w := newWorld(t)
	const q = `subscription { clusterChanges { kind state clusterId jobId lagged } }`
	subs := map[string]*servertest.Subscription{}
	for name, token := range map[string]string{"alice": w.alice, "bob": w.bob, "admin": w.admin} {
		sub, err := w.s.Subscribe(token, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if e := nextChange(t, sub); e.Kind != "SNAPSHOT" || e.ClusterID != "" {
			t.Fatalf("%s: first event %+v, want a SNAPSHOT naming no cluster", name, e)
		}
		subs[name] = sub
	}
	aliceID := w.create(t, w.alice, 3)
	wait := w.runAsync(t, w.alice, aliceID, "ACTIVE")
	var jobs, clusters int
	for {
		e := nextChange(t, subs["alice"])
		if e.ClusterID != aliceID || e.Kind == "TASK" || e.Lagged {
			t.Fatalf("alice got %+v", e)
		}
		if e.Kind == "JOB" {
			jobs++
		}
		if e.Kind == "CLUSTER" {
			clusters++
			if e.State == "ACTIVE" {
				break
			}
		}
	}
	wait()
	if jobs == 0 || clusters == 0 {
		t.Errorf("alice saw %d job and %d cluster changes", jobs, clusters)
	}
	bobID := w.create(t, w.bob, 3)
	if e := nextChange(t, subs["bob"]); e.ClusterID != bobID {
		t.Errorf("bob's first change %+v is not of his cluster %s", e, bobID)
	}
	seen := map[string]bool{}
	for !seen[aliceID] || !seen[bobID] {
		e := nextChange(t, subs["admin"])
		seen[e.ClusterID] = true
	}
}
