package graph

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/cooprhq/coopr/graph/fanout"
	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/events"
	"github.com/cooprhq/coopr/server/gqlws"
	"github.com/cooprhq/coopr/store"
)

// subscriberBuffer is how many changes one subscriber may fall behind by
// before it loses some and is told it lagged.
const subscriberBuffer = 256

// recent remembers the sequence numbers a subscriber saw lately, so that an
// event relayed twice (after a relay crash) is delivered once. Changes
// mostly arrive in order: one above every number seen is new without a
// search, and only one at or below the highest is looked for among the
// last len(ring). (A map per subscriber, growing with every change, cost a
// thousand subscribers more than anything else in this resolver.)
type recent struct {
	max  int64
	ring [512]int64
	n    int
}

func (r *recent) first(seq int64) bool {
	if seq <= r.max {
		for _, s := range r.ring[:min(r.n, len(r.ring))] {
			if s == seq {
				return false
			}
		}
	} else {
		r.max = seq
	}
	r.ring[r.n%len(r.ring)] = seq
	r.n++
	return true
}

func kindOfEvent(k string) model.EventKind {
	switch k {
	case "cluster":
		return model.EventKindCluster
	case "job":
		return model.EventKindJob
	}
	return model.EventKindTask
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// sender sends to out unless ctx ends first.
func sender[T any](ctx context.Context, out chan<- T) func(T) bool {
	return func(v T) bool {
		select {
		case out <- v:
			return true
		case <-ctx.Done():
			return false
		}
	}
}

// snapshot is the database's snapshot before a subscription's first read.
// Changes that read already holds may still be on their way through the
// relay: those committed before this snapshot are dropped (taken before the
// read, it may let a few through twice, never lose one), so that no old
// state arrives after the current one.
func (r *Resolver) snapshot(ctx context.Context) (events.Snapshot, error) {
	seen, err := r.Control.Snapshot(ctx)
	if err != nil {
		return events.Snapshot{}, err
	}
	return events.ParseSnapshot(seen)
}

func (r *Resolver) clusterEvents(ctx context.Context, p store.Principal, id string) (<-chan *model.ClusterEvent, error) {
	// Subscribe before reading the snapshot (which also checks that the
	// caller may see the cluster): a change in between is then delivered
	// after it (perhaps again), never lost.
	sub := r.Hub.SubscribeCluster(id, subscriberBuffer)
	before, err := r.snapshot(ctx)
	if err != nil {
		r.Hub.Unsubscribe(sub)
		return nil, err
	}
	snapshot, err := r.Control.Get(ctx, p, id)
	if err != nil {
		r.Hub.Unsubscribe(sub)
		return nil, err
	}
	sentSnapshot := false
	var pullCtx context.Context // the context of the pull under way
	cs := &clusterStream{id: id, before: before, reread: func() (*control.Cluster, events.Snapshot, error) {
		gqlws.Idle(pullCtx) // not holding writes through a database read
		seen, err := r.snapshot(pullCtx)
		if err != nil {
			return nil, events.Snapshot{}, err
		}
		c, err := r.Control.Get(pullCtx, p, id)
		return c, seen, err
	}}
	pull := func(ctx context.Context) (*model.ClusterEvent, bool) {
		pullCtx = ctx
		if !sentSnapshot {
			sentSnapshot = true
			return &model.ClusterEvent{Kind: model.EventKindSnapshot, Seq: "0", ClusterID: id, State: string(snapshot.Status),
				Message: snapshot.Message, At: snapshot.UpdatedAt, Cluster: snapshot}, true
		}
		for {
			var ev events.Event
			select {
			case ev = <-sub.C:
			default:
				// Nothing waiting: what the transport holds goes out
				// before this waits (see gqlws.MoreReady).
				gqlws.Idle(ctx)
				select {
				case <-ctx.Done():
					return nil, false
				case ev = <-sub.C:
				case <-sub.Lost():
					// Events were dropped and none follows: the state is
					// sent again, as a lagged snapshot. With events still
					// waiting, the next one carries the lag instead.
					if len(sub.C) > 0 || !sub.Lagged() {
						continue
					}
					return cs.lagSnapshot(time.Now()), true
				}
			}
			m := cs.event(ev, sub.Lagged())
			if m == nil {
				continue
			}
			if len(sub.C) > 0 {
				gqlws.MoreReady(ctx)
			}
			return m, true
		}
	}
	return fanout.Stream(ctx, pull, func() { r.Hub.Unsubscribe(sub) }, sharedClusterEvent), nil
}

// clusterChanges follows the cluster-level changes (statuses, jobs
// starting and ending) of every cluster p may see, for live lists. It reads
// the tenant's whole stream and keeps the changes of its clusters that p
// may see, asking the store once per cluster; task changes, the bulk of
// the stream, are dropped unread. A subscriber that falls behind is told
// to re-read its list (a lagged SNAPSHOT naming no cluster).
func (r *Resolver) clusterChanges(ctx context.Context, p store.Principal) (<-chan *model.ClusterEvent, error) {
	sub := r.Hub.SubscribeAll(subscriberBuffer)
	before, err := r.snapshot(ctx)
	if err != nil {
		r.Hub.Unsubscribe(sub)
		return nil, err
	}
	visible := map[string]bool{}
	sentSnapshot := false
	var dedup recent
	pull := func(ctx context.Context) (*model.ClusterEvent, bool) {
		if !sentSnapshot {
			sentSnapshot = true
			return &model.ClusterEvent{Kind: model.EventKindSnapshot, Seq: "0", At: time.Now()}, true
		}
		for {
			var ev events.Event
			select {
			case ev = <-sub.C:
			default:
				gqlws.Idle(ctx)
				select {
				case <-ctx.Done():
					return nil, false
				case ev = <-sub.C:
				case <-sub.Lost():
					// Dropped events and nothing after them: re-read.
					if len(sub.C) == 0 && sub.Lagged() {
						return &model.ClusterEvent{Kind: model.EventKindSnapshot, Seq: "0", At: time.Now(), Lagged: true}, true
					}
					continue
				}
			}
			if sub.Lagged() {
				return &model.ClusterEvent{Kind: model.EventKindSnapshot, Seq: "0", At: time.Now(), Lagged: true}, true
			}
			if ev.Tenant != p.TenantID || ev.Cluster == "" || (ev.Kind != "cluster" && ev.Kind != "job") ||
				!dedup.first(ev.Seq) || before.Saw(ev) {
				continue
			}
			ok, known := visible[ev.Cluster]
			if !known {
				gqlws.Idle(ctx) // not holding writes through a database read
				_, err := r.Control.Get(ctx, p, ev.Cluster)
				ok = err == nil
				// Only an answer is remembered: a failed read (a cancelled
				// context) says nothing of who may see the cluster.
				if ok || errors.Is(err, store.ErrNotFound) {
					visible[ev.Cluster] = ok
				}
			}
			if !ok {
				continue
			}
			if len(sub.C) > 0 {
				gqlws.MoreReady(ctx)
			}
			return &model.ClusterEvent{Kind: kindOfEvent(ev.Kind), Seq: strconv.FormatInt(ev.Seq, 10), ClusterID: ev.Cluster,
				JobID: opt(ev.Job), State: ev.State, Message: ev.Message, At: ev.At}, true
		}
	}
	// Rendered per subscriber: which changes one may see depends on who it is.
	return fanout.Stream(ctx, pull, func() { r.Hub.Unsubscribe(sub) }, func(*model.ClusterEvent) string { return "" }), nil
}

// sharedClusterEvent keys the changes every subscriber of the same
// operation renders the same (see fanout): a relayed change, by its
// sequence number. A snapshot or a lagged change carries the cluster as
// this caller may see it and is rendered for the caller alone.
func sharedClusterEvent(m *model.ClusterEvent) string {
	if m.Seq == "0" || m.Lagged || m.Cluster != nil {
		return ""
	}
	return m.Seq
}

// progress tracks a job's task states to count them.
type progress struct {
	job   string
	state string
	tasks map[string]string
}

func (r *Resolver) readProgress(ctx context.Context, p store.Principal, id string) (*progress, time.Time, error) {
	j, err := r.Control.Job(ctx, p, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	ts, err := r.Control.Tasks(ctx, id)
	if err != nil {
		return nil, time.Time{}, err
	}
	pr := &progress{job: id, state: string(j.State), tasks: make(map[string]string, len(ts))}
	for _, t := range ts {
		pr.tasks[t.ID] = t.State
	}
	return pr, j.UpdatedAt, nil
}

func (pr *progress) model(kind model.EventKind) *model.JobProgress {
	m := &model.JobProgress{Kind: kind, JobID: pr.job, JobState: model.JobState(pr.state), Total: len(pr.tasks)}
	for _, st := range pr.tasks {
		switch engine.TaskState(st) {
		case engine.Complete, engine.Skipped:
			m.Done++
		case engine.Failed, engine.Dropped:
			m.Failed++
		}
	}
	return m
}

func (r *Resolver) jobProgress(ctx context.Context, p store.Principal, id string) (<-chan *model.JobProgress, error) {
	sub := r.Hub.SubscribeJob(id, subscriberBuffer) // before the snapshot, as in clusterEvents
	before, err := r.snapshot(ctx)
	if err != nil {
		r.Hub.Unsubscribe(sub)
		return nil, err
	}
	pr, at, err := r.readProgress(ctx, p, id)
	if err != nil {
		r.Hub.Unsubscribe(sub)
		return nil, err
	}
	out := make(chan *model.JobProgress)
	go func() {
		defer close(out)
		defer r.Hub.Unsubscribe(sub)
		send := sender(ctx, out)
		first := pr.model(model.EventKindSnapshot)
		first.Seq, first.State, first.At = "0", pr.state, at
		if !send(first) {
			return
		}
		js := &jobStream{pr: pr, before: before, reread: func() (*progress, events.Snapshot, error) {
			seen, err := r.snapshot(ctx)
			if err != nil {
				return nil, events.Snapshot{}, err
			}
			re, _, err := r.readProgress(ctx, p, id)
			return re, seen, err
		}}
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.Lost():
				// Dropped events and none after them (a burst that
				// ended): the progress is read again and sent.
				if len(sub.C) > 0 || !sub.Lagged() {
					continue // the next event carries the lag
				}
				// Events already waiting that the re-read saw are dropped
				// from here on, as after the first snapshot: a stale one
				// must not undo the fresh state.
				seen, err := r.snapshot(ctx)
				if err != nil {
					continue
				}
				fresh, at, err := r.readProgress(ctx, p, id)
				if err != nil {
					continue
				}
				js.pr, js.before = fresh, seen
				m := js.pr.model(model.EventKindSnapshot)
				m.Seq, m.State, m.At, m.Lagged = "0", js.pr.state, at, true
				if !send(m) {
					return
				}
			case ev := <-sub.C:
				// The lag is taken with every event, sent or not (see
				// jobStream.event).
				m := js.event(ev, sub.Lagged())
				if m != nil && !send(m) {
					return
				}
			}
		}
	}()
	return out, nil
}

// jobStream is what jobProgress keeps between a job's events.
type jobStream struct {
	pr *progress
	// before is the snapshot of the last read: events it saw are not sent.
	before events.Snapshot
	dedup  recent
	// reread reads the job's progress again, with the snapshot before.
	reread func() (*progress, events.Snapshot, error)
}

// event is what ev sends (nil for nothing), lagged saying events were
// dropped before it. A lag is acted on whether or not ev itself goes out:
// a burst can end with the buffer full of events the last re-read holds
// and the dropped ones after them; skipping those and leaving the lag for
// an event that never comes lost the drop for good (Lost had fired
// already, with events still waiting).
func (js *jobStream) event(ev events.Event, lagged bool) *model.JobProgress {
	fresh := js.dedup.first(ev.Seq) && ev.Kind != "cluster" && !js.before.Saw(ev)
	if !fresh && !lagged {
		return nil
	}
	if lagged {
		if pr, seen, err := js.reread(); err == nil {
			js.pr, js.before = pr, seen
		}
	}
	if !fresh || js.before.Saw(ev) {
		// The re-read holds this change already (or it is not one to
		// send): the counts go out as a lagged snapshot, so the client
		// re-reads too, and no stale task state follows the fresh one.
		m := js.pr.model(model.EventKindSnapshot)
		m.Seq, m.State, m.At, m.Lagged = "0", js.pr.state, ev.At, true
		return m
	}
	switch ev.Kind {
	case "job":
		js.pr.state = ev.State
	case "task":
		js.pr.tasks[ev.Task] = ev.State
	}
	m := js.pr.model(kindOfEvent(ev.Kind))
	m.Seq, m.TaskID, m.State, m.Attempt = strconv.FormatInt(ev.Seq, 10), opt(ev.Task), ev.State, optInt(ev.Attempt)
	m.Message, m.At, m.Lagged = ev.Message, ev.At, lagged
	return m
}

// clusterStream is what clusterEvents keeps between a cluster's events.
type clusterStream struct {
	id string
	// before is the snapshot of the last read: events it saw are not sent.
	before events.Snapshot
	dedup  recent
	// reread reads the cluster again, with the snapshot before.
	reread func() (*control.Cluster, events.Snapshot, error)
}

// lagSnapshot reads the cluster again and says events were dropped.
func (cs *clusterStream) lagSnapshot(at time.Time) *model.ClusterEvent {
	m := &model.ClusterEvent{Kind: model.EventKindSnapshot, Seq: "0", ClusterID: cs.id, At: at, Lagged: true}
	if c, seen, err := cs.reread(); err == nil {
		m.Cluster, m.State, m.Message = c, string(c.Status), c.Message
		cs.before = seen
	}
	return m
}

// event is what ev sends (nil for nothing), lagged saying events were
// dropped before it; a lag goes out even when ev does not (as in
// jobStream.event).
func (cs *clusterStream) event(ev events.Event, lagged bool) *model.ClusterEvent {
	if !cs.dedup.first(ev.Seq) || cs.before.Saw(ev) {
		if lagged {
			return cs.lagSnapshot(ev.At)
		}
		return nil
	}
	m := &model.ClusterEvent{Kind: kindOfEvent(ev.Kind), Seq: strconv.FormatInt(ev.Seq, 10), ClusterID: cs.id,
		JobID: opt(ev.Job), TaskID: opt(ev.Task), State: ev.State, Attempt: optInt(ev.Attempt), Message: ev.Message, At: ev.At}
	if lagged {
		m.Lagged = true
		if c, seen, err := cs.reread(); err == nil {
			// Waiting events the read saw are stale now.
			m.Cluster, cs.before = c, seen
		}
	}
	return m
}
