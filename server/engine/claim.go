package engine

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/wire"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// maxClaimBatch bounds how many waiting slots one round of a tenant's
// fetcher serves with one stream read and one claim statement.
const maxClaimBatch = 256

// fetcher serves the slots of one tenant waiting in Claim on this engine.
// One goroutine per tenant reads the stream for all of them as the engine's
// own consumer and claims what it read in one statement, so a hundred
// waiting slots cost one blocked Redis read, not a hundred connections, and
// a burst of work is claimed in a few commits instead of one per task.
type fetcher struct {
	mu      sync.Mutex
	waiting []*waiter
	running bool
	// spare holds entries read for slots that gave up before the claim:
	// they are served first next round instead of waiting in the pending
	// list for another consumer to take them over.
	spare []queue.Entry
	// acking bounds the acknowledgements in flight.
	acking chan struct{}
	// room is how many more tasks the tenant's workers allow, as the last
	// claim left it; -1: unknown or unbounded. At 0 the fetcher reads no
	// entry until a finish (wake) or a look at the rows (roomPoll) finds
	// a worker free.
	room int
	wake chan struct{}
}

// roomPoll is how often a fetcher whose tenant has every worker busy looks
// for one freed where it is not told of it (a finish on another server).
const roomPoll = 100 * time.Millisecond

type waiter struct {
	req   ClaimRequest
	slots []int            // one task at most for each
	ch    chan claimResult // buffered: the fetcher never blocks on a slot
	// gone is set, under the fetcher's lock, by a claim that stopped
	// waiting after the fetcher took it into a round; the round still
	// answers it.
	gone bool
}

type claimResult struct {
	as  []*Assignment
	err error
}

// Claim hands the slot the next task of its tenant, waiting up to req.Wait;
// it returns nil when none came. The stream entry is acknowledged only after
// the claim is committed, so a crash in between re-delivers it.
func (e *Engine) Claim(ctx context.Context, req ClaimRequest) (*Assignment, error) {
	req.Slots = []int{req.Slot}
	as, err := e.ClaimTasks(ctx, req)
	if len(as) == 0 {
		return nil, err
	}
	return as[0], err
}

// ClaimTasks hands up to one task of the tenant to each slot req.Slots
// lists (or to req.Slot), waiting up to req.Wait for the first: it returns
// what is queued once there is anything, and nothing when none came. One
// request for many slots costs one claim, where a claim per slot would
// cost each slot a round trip, and lets one claimer keep many tasks going.
func (e *Engine) ClaimTasks(ctx context.Context, req ClaimRequest) ([]*Assignment, error) {
	w := &waiter{req: req, slots: req.slots(), ch: make(chan claimResult, 1)}
	f := e.fetcherFor(req.TenantID)
	if e.life.Err() != nil {
		return nil, ErrStopped
	}
	f.mu.Lock()
	f.waiting = append(f.waiting, w)
	if !f.running {
		f.running = true
		e.goOwned(func() { e.fetch(f, req.TenantID) })
	}
	f.mu.Unlock()

	timer := time.NewTimer(req.Wait)
	defer timer.Stop()
	select {
	case r := <-w.ch:
		return r.as, r.err
	case <-timer.C:
	case <-ctx.Done():
	}
	f.mu.Lock()
	for i, o := range f.waiting {
		if o == w {
			f.waiting = append(f.waiting[:i], f.waiting[i+1:]...)
			f.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	w.gone = true
	f.mu.Unlock()
	// A round has taken this claim: its answer is at most one statement away.
	r := <-w.ch
	if len(r.as) > 0 && ctx.Err() != nil {
		// Nobody will run them: hand them back rather than let leases lapse.
		for _, a := range r.as {
			e.release(context.WithoutCancel(ctx), a)
		}
		return nil, ctx.Err()
	}
	return r.as, r.err
}

func (e *Engine) fetcherFor(tenant string) *fetcher {
	e.fetchMu.Lock()
	defer e.fetchMu.Unlock()
	f := e.fetchers[tenant]
	if f == nil {
		f = &fetcher{acking: make(chan struct{}, 4), room: -1, wake: make(chan struct{}, 1)}
		e.fetchers[tenant] = f
	}
	return f
}

// fetch serves the tenant's waiting claims until none is left.
func (e *Engine) fetch(f *fetcher, tenant string) {
	ctx := e.life
	for {
		f.mu.Lock()
		n := 0
		for _, w := range f.waiting {
			n += len(w.slots)
		}
		if n == 0 || ctx.Err() != nil {
			ws := f.waiting
			f.waiting = nil
			f.running = false
			f.mu.Unlock()
			for _, w := range ws { // none, unless the engine stopped
				w.ch <- claimResult{err: ErrStopped}
			}
			return
		}
		room := f.room
		f.mu.Unlock()
		if room == 0 {
			// Every worker of the tenant is busy: claim nothing, whatever
			// the agents say they have free, until one is freed.
			if err := e.waitRoom(ctx, f, tenant); err != nil {
				e.failWaiting(f, fmt.Errorf("engine: claim: %w", err))
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		if room > 0 {
			n = min(n, room)
		}
		f.mu.Lock()
		entries := f.spare
		f.spare = nil
		f.mu.Unlock()

		if len(entries) == 0 {
			var err error
			entries, err = e.q.Next(ctx, tenant, e.consumer, min(n, maxClaimBatch), time.Second)
			if errors.Is(err, queue.ErrEmpty) {
				continue
			}
			if err != nil && ctx.Err() != nil {
				continue // stopped: the loop's head answers ErrStopped
			}
			if err != nil {
				// Answer everyone waiting so agents see the outage, and
				// pause before trying again for whoever comes next.
				e.failWaiting(f, fmt.Errorf("engine: claim: %w", err))
				time.Sleep(200 * time.Millisecond)
				continue
			}
		}
		e.serve(ctx, f, tenant, entries)
	}
}

func (e *Engine) failWaiting(f *fetcher, err error) {
	f.mu.Lock()
	ws := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	for _, w := range ws {
		w.ch <- claimResult{err: err}
	}
}

// pick is one entry's claimant: a waiting claim and the slot it is for.
type pick struct {
	w    *waiter
	slot int
}

// serve claims entries for the claims at the head of the line, each taking
// as many as it has slots; the last one served may get fewer.
func (e *Engine) serve(ctx context.Context, f *fetcher, tenant string, entries []queue.Entry) {
	f.mu.Lock()
	var taken []*waiter
	picks := make([]pick, 0, len(entries))
	for len(f.waiting) > 0 && len(picks) < len(entries) {
		w := f.waiting[0]
		f.waiting = f.waiting[1:]
		taken = append(taken, w)
		for _, sl := range w.slots[:min(len(w.slots), len(entries)-len(picks))] {
			picks = append(picks, pick{w: w, slot: sl})
		}
	}
	k := len(picks)
	f.spare = append(f.spare, entries[k:]...)
	f.mu.Unlock()
	entries = entries[:k]
	if k == 0 {
		return
	}

	got, full, err := e.claimBatch(ctx, tenant, entries, picks)
	if err != nil {
		err = fmt.Errorf("engine: claim: %w", err)
		e.log.Warn("engine: claim failed; the entries will be re-delivered", "tenant", tenant, "err", err)
		for _, w := range taken {
			w.ch <- claimResult{err: err}
		}
		return
	}
	answers := make(map[*waiter][]*Assignment, len(taken))
	acks := make([]string, 0, k)
	var kept []queue.Entry
	for i, en := range entries {
		if a := got[i]; a != nil {
			e.stats.claimed.Add(1)
			answers[picks[i].w] = append(answers[picks[i].w], a)
			acks = append(acks, en.ID)
			continue
		}
		if full {
			// Not claimed for want of a free worker: claimed when one is.
			kept = append(kept, en)
			continue
		}
		if err := e.skip(ctx, tenant, en.Item); err != nil {
			e.log.Warn("engine: unclaimable entry; it will be re-delivered", "task", en.TaskID, "err", err)
		} else {
			acks = append(acks, en.ID)
		}
	}
	if len(kept) > 0 {
		f.mu.Lock()
		f.spare = append(kept, f.spare...)
		f.mu.Unlock()
	}
	// The claims are committed: acknowledging is off the critical path, and
	// one lost is only an entry re-delivered and skipped.
	f.acking <- struct{}{}
	e.goOwned(func() {
		defer func() { <-f.acking }()
		// Claims made are acknowledged even while the engine stops.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := e.q.Ack(actx, tenant, acks...); err != nil {
			e.log.Warn("engine: ack failed; the entries will be re-delivered and skipped", "tenant", tenant, "err", err)
		}
	})
	// Claims that got a task are answered; those whose entries were all
	// stale keep their place at the head of the line.
	var again []*waiter
	for _, w := range taken {
		if as := answers[w]; len(as) > 0 {
			w.ch <- claimResult{as: as}
		} else {
			again = append(again, w)
		}
	}
	if len(again) == 0 {
		return
	}
	f.mu.Lock()
	keep := again[:0]
	for _, w := range again {
		if w.gone {
			w.ch <- claimResult{}
		} else {
			keep = append(keep, w)
		}
	}
	f.waiting = append(keep, f.waiting...)
	f.mu.Unlock()
}

// claimBatch claims each entry for the pick beside it in one statement that
// also records the attempts and their events and reads the payloads. The
// result holds nil where the task was not claimed; full reports that the
// tenant's workers are all busy, so that those may yet be claimable.
func (e *Engine) claimBatch(ctx context.Context, tenant string, entries []queue.Entry, picks []pick) (_ []*Assignment, full bool, err error) {
	n := len(entries)
	ids, attempts, tokens, agents, notes := make([]string, n), make([]int64, n), make([][]byte, n), make([]string, n), make([]string, n)
	for i, en := range entries {
		ids[i], attempts[i], agents[i] = en.TaskID, int64(en.Attempt), picks[i].w.req.AgentID
		tokens[i] = make([]byte, 16)
		_, _ = rand.Read(tokens[i])
		notes[i] = fmt.Sprintf("claimed by %s (slot %d)", picks[i].w.req.AgentID, picks[i].slot)
	}
	var rows []struct {
		ID        string    `db:"id"`
		Token     []byte    `db:"claim_token"`
		Job       string    `db:"job_id"`
		Cluster   string    `db:"cluster_id"`
		Node      string    `db:"node_id"`
		Action    string    `db:"action"`
		Service   string    `db:"service"`
		Timeout   int       `db:"timeout_seconds"`
		Lease     time.Time `db:"lease_expires_at"`
		Deadline  time.Time `db:"timeout_at"`
		SvcAction []byte    `db:"svc_action"`
		ResGen    int       `db:"resource_generation"`
		Facts     []byte    `db:"node_facts"`
		ViewKey   *string   `db:"view_key"`     // on one row per cluster, when a task of it needs the view
		Xmin      *string   `db:"cluster_xmin"` // on one row per cluster
		NodeView  []byte    `db:"node_view"`    // the own node, for a task that does not need the view
		CtxKey    *string   `db:"context_key"`  // on one row per cluster
		Room      *int      `db:"room"`         // before this claim; nil: no bound
	}
	// The views kept, for the statement to tell which are still current.
	kept, vClusters, vXmins, vSnaps := e.views.kept()
	// A task listed twice (a re-published entry) is updated once; the
	// token tells which slot won it.
	err = e.claimSessions.selectContext(ctx, &rows,
		pq.Array(ids), pq.Array(attempts), pq.ByteaArray(tokens), pq.Array(agents), pq.Array(notes),
		e.cfg.LeaseTTL.Milliseconds(), tenant, pq.Array(vClusters), pq.Array(vXmins), pq.Array(vSnaps))
	if err != nil {
		return nil, false, err
	}
	// The room the claim left tells the fetcher how much to read next.
	room := -1
	if len(rows) > 0 {
		if r := rows[0].Room; r != nil {
			room = max(*r-len(rows), 0)
		}
	} else if room, err = e.claimRoom(ctx, tenant); err != nil {
		// No telling whether nothing was claimed for want of a worker:
		// the entries are settled as stale, as before workers counted.
		e.log.Warn("engine: read the tenant's free workers", "tenant", tenant, "err", err)
		room = -1
	}
	full = room == 0 && len(rows) < n
	f := e.fetcherFor(tenant)
	f.mu.Lock()
	f.room = room
	f.mu.Unlock()
	if len(rows) > 0 {
		e.eventsCommitted()
	}
	clusters := make(map[string]*clusterView, 1)
	contexts := make(map[string]string, 1)
	for _, r := range rows {
		if r.CtxKey != nil {
			contexts[r.Cluster] = *r.CtxKey
		}
		var cv *clusterView
		var err error
		switch {
		case r.ViewKey != nil && strings.HasPrefix(*r.ViewKey, viewCurrent) && kept[r.Cluster] != nil:
			cv = e.views.advance(r.Cluster, kept[r.Cluster], strings.TrimPrefix(*r.ViewKey, viewCurrent))
		case r.ViewKey != nil:
			cv, err = e.views.get(ctx, r.Cluster, *r.ViewKey)
		case r.Xmin != nil:
			// No task of the cluster here needs its nodes: a view as old as
			// the cluster's row gives its name, owner, config and automators.
			cv, err = e.views.base(ctx, r.Cluster, *r.Xmin)
		default:
			continue
		}
		if err != nil {
			// The claims stand; their leases lapse and the reaper retries them.
			return nil, false, fmt.Errorf("cluster %s: %w", r.Cluster, err)
		}
		clusters[r.Cluster] = cv
	}
	out := make([]*Assignment, n)
	for _, r := range rows {
		i := -1
		for j := range entries {
			if entries[j].TaskID == r.ID && string(tokens[j]) == string(r.Token) {
				i = j
				break
			}
		}
		if i < 0 {
			return nil, false, fmt.Errorf("claimed task %s under a token no slot holds", r.ID)
		}
		action, _ := planner.ParseAction(r.Action)
		a := &Assignment{TaskID: r.ID, JobID: r.Job, ClusterID: r.Cluster, TenantID: tenant, Attempt: entries[i].Attempt,
			ClaimToken: hex.EncodeToString(r.Token), Slot: picks[i].slot, LeaseExpiresAt: r.Lease, TimeoutAt: r.Deadline, TaskName: r.Action,
			Action: action, TimeoutSeconds: r.Timeout, ResourceGeneration: r.ResGen, ContextKey: contexts[r.Cluster]}
		cv := clusters[r.Cluster]
		if cv == nil {
			return nil, false, fmt.Errorf("task %s: cluster %s not found", r.ID, r.Cluster)
		}
		a.Cluster = ClusterPayload{ID: r.Cluster, Name: cv.name, Owner: cv.owner, Config: cv.config}
		whole := needsView(r.Action, r.Service)
		if whole {
			a.Nodes = cv.peers
		}
		if r.Node != "" {
			var peer *NodePayload
			if whole {
				peer = cv.peers[r.Node]
			} else if len(r.NodeView) > 0 {
				var n viewNode
				if err := json.Unmarshal(r.NodeView, &n); err != nil {
					return nil, false, fmt.Errorf("node %s: %w", r.Node, err)
				}
				peer = cv.peer(n)
			}
			if peer != nil {
				own := *peer
				a.Node = &own
			} else {
				// A node-level task may run before its record has more
				// than an id (a CREATE of a node the control plane has not
				// written): it still names the node.
				a.Node = &NodePayload{ID: r.Node}
			}
			if len(r.Facts) > 0 {
				if err := json.Unmarshal(r.Facts, &a.Node.Facts); err != nil {
					return nil, false, fmt.Errorf("node %s facts: %w", r.Node, err)
				}
			}
		}
		if r.Service != "" {
			a.Service = &ServicePayload{Name: r.Service}
			if len(r.SvcAction) > 0 {
				if err := json.Unmarshal(r.SvcAction, &a.Service.Action); err != nil {
					return nil, false, fmt.Errorf("service %s action %s: %w", r.Service, r.Action, err)
				}
			}
			// Service tasks see the config expanded for their node, over the
			// node records as they are now (docs/macros.md#when-macros-expand).
			cfg, err := cv.env(r.Node).ExpandJSON(cv.config)
			if err != nil {
				e.failClaimed(ctx, a, fmt.Sprintf("cluster config: %v", err))
				continue
			}
			a.Cluster.Config = cfg
		}
		out[i] = a
	}
	return out, full, nil
}

// claimRoom is how many more tasks the tenant's workers allow at the moment,
// -1 when it has none set (no bound). It looks without the claims' lock:
// the fetcher asks it whether to read the stream, and the claim statement
// decides.
func (e *Engine) claimRoom(ctx context.Context, tenant string) (int, error) {
	var rooms []sql.NullInt64
	if err := e.roomQuery.selectContext(ctx, &rooms, tenant); err != nil {
		return 0, fmt.Errorf("workers of tenant %s: %w", tenant, err)
	}
	if len(rooms) == 0 || !rooms[0].Valid {
		return -1, nil
	}
	return int(rooms[0].Int64), nil
}

// claimRoomSQL is claimRoom's statement, prepared: a fetcher whose tenant's
// workers are all busy asks it after every finish batch that freed one,
// and planning it cost more than running it.
const claimRoomSQL = `SELECT CASE WHEN w.workers > 0 THEN greatest(w.workers -
		(SELECT count(*) FROM tasks t WHERE t.tenant_id = w.id AND t.running), 0) END
	FROM tenants w WHERE w.id = $1`

// waitRoom waits for a worker of the tenant to be freed: a wake from a
// finish on this engine, or roomPoll for those elsewhere; then it looks.
func (e *Engine) waitRoom(ctx context.Context, f *fetcher, tenant string) error {
	t := time.NewTimer(roomPoll)
	defer t.Stop()
	select {
	case <-f.wake:
	case <-t.C:
	}
	room, err := e.claimRoom(ctx, tenant)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.room = room
	f.mu.Unlock()
	return nil
}

// roomFreed wakes the fetchers waiting for a free worker: an attempt
// ended. Which tenant's is not worth a lookup; the others look and wait
// again.
func (e *Engine) roomFreed() {
	e.fetchMu.Lock()
	defer e.fetchMu.Unlock()
	for _, f := range e.fetchers {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// failClaimed fails a claimed attempt that cannot run, without retry; the
// slot that claimed it waits for another task.
func (e *Engine) failClaimed(ctx context.Context, a *Assignment, msg string) {
	no := false
	if err := e.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, Result{Status: 1, Message: msg, Retryable: &no}); err != nil {
		// Left IN_PROGRESS: the lease lapses and the reaper fails it.
		e.log.Warn("engine: fail task at claim", "task", a.TaskID, "err", err)
	}
}

// claimSQL claims, records the attempts and their events, and reads the
// payloads, in one round trip: each task's own node's facts, and on the
// first row of each cluster the key of the cluster's view, which is read
// again only when it changed. It claims no more tasks than the tenant's
// workers leave room for (coopr_claim_room, migration 00024; every row
// carries the room there was), and locks the tasks in id order, as every
// statement locking many tasks does (docs/engine.md#lock-order).
const claimSQL = `WITH i AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::bytea[], $4::text[], $5::text[]) AS i(id, attempt, token, agent, note)),
		r AS MATERIALIZED (SELECT coopr_claim_room($7::uuid) AS room),
		l AS MATERIALIZED (
			SELECT t.id FROM tasks t
			WHERE t.id = ANY($1::text[]) AND t.state = 'QUEUED' AND t.tenant_id = $7
				AND EXISTS (SELECT 1 FROM i WHERE i.id = t.id AND i.attempt = t.attempt)
				AND (SELECT j.state FROM jobs j WHERE j.id = t.job_id) = 'RUNNING'
			ORDER BY t.id LIMIT (SELECT room FROM r) FOR UPDATE OF t),
		c AS (
			UPDATE tasks t SET state = 'IN_PROGRESS', claim_token = i.token, agent_id = i.agent,
				lease_expires_at = now() + $6 * interval '1 millisecond',
				timeout_at = now() + t.timeout_seconds * interval '1 second'
			FROM i, l
			WHERE t.id = l.id AND t.id = i.id AND t.id = ANY($1::text[]) AND t.attempt = i.attempt AND t.state = 'QUEUED'
			RETURNING t.id, t.attempt, t.claim_token, t.agent_id, i.note, t.job_id, t.node_id, t.action,
				t.service, t.timeout_seconds, t.lease_expires_at, t.timeout_at),
		cj AS (
			SELECT c.*, j.cluster_id, j.services -> c.service -> 'provisioner' -> 'actions' -> lower(c.action) AS svc_action,
				j.resource_generation
			FROM c JOIN jobs j ON j.id = c.job_id),
		a AS (INSERT INTO task_attempts (task_id, attempt, agent_id, claimed_at)
			SELECT id, attempt, agent_id, now() FROM c
			ON CONFLICT (task_id, attempt) DO UPDATE SET agent_id = excluded.agent_id, claimed_at = now()),
		ev AS (INSERT INTO events (tenant_id, cluster_id, job_id, task_id, kind, state, attempt, message)
			SELECT $7, cluster_id, job_id, id, 'task', 'IN_PROGRESS', attempt, note FROM cj)
		SELECT id, claim_token, job_id, cluster_id, node_id, action, service, timeout_seconds,
			lease_expires_at, timeout_at, svc_action, resource_generation,
			(SELECT n.facts FROM nodes n WHERE n.id = cj.node_id) AS node_facts,
			CASE WHEN NOT ` + needsViewSQL + ` THEN (SELECT ` + viewNodeJSON + ` FROM nodes n WHERE n.id = cj.node_id) END AS node_view,
			CASE WHEN row_number() OVER w = 1 AND bool_or(` + needsViewSQL + `) OVER w THEN (
				SELECT CASE WHEN v.snap IS NOT NULL AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.cluster_id = cl.id
						AND n.view_xid >= pg_snapshot_xmin(v.snap::pg_snapshot) AND NOT pg_visible_in_snapshot(n.view_xid, v.snap::pg_snapshot))
					AND NOT EXISTS (SELECT 1 FROM node_removals r WHERE r.cluster_id = cl.id
						AND r.xid >= pg_snapshot_xmin(v.snap::pg_snapshot) AND NOT pg_visible_in_snapshot(r.xid, v.snap::pg_snapshot))
					THEN '` + viewCurrent + `' || pg_current_snapshot()::text ELSE ` + viewKey + ` END
				FROM clusters cl LEFT JOIN unnest($8::text[], $9::text[], $10::text[]) AS v(cluster, xmin, snap)
					ON v.cluster = cl.id AND v.xmin = cl.xmin::text
				WHERE cl.id = cj.cluster_id) END AS view_key,
			CASE WHEN row_number() OVER w = 1 THEN (SELECT cl.xmin::text FROM clusters cl WHERE cl.id = cj.cluster_id) END AS cluster_xmin,
			CASE WHEN row_number() OVER w = 1 THEN (
				SELECT ` + ContextKey + ` FROM clusters cl WHERE cl.id = cj.cluster_id) END AS context_key,
			(SELECT room FROM r) AS room
		FROM cj WINDOW w AS (PARTITION BY cluster_id)`

// viewCurrent is the view key that says the view the claim passed for the
// cluster ($8–$10: cluster, the cluster row's xmin and the snapshot the
// view was read in) is current: no node of the cluster was added, changed
// or removed by a transaction the view's snapshot did not see, which the
// indexes on nodes (cluster_id, view_xid) and node_removals (cluster_id,
// xid) tell from the changes since, where the key counts every node of
// the cluster (3 ms at 5,000 nodes, at every claim of a service task).
// The claim's own snapshot follows it: the view is as current as that,
// and the next claim looks only at changes after it (a view's snapshot
// whose xmin an old transaction held back would have it look at every
// node changed since).
const viewCurrent = "="

// needsViewSQL is needsView over a claimed row cj.
const needsViewSQL = `(cj.service <> '' OR cj.action = 'NETWORK_CONFIGURE')`

// needsView says whether a task's payload needs its cluster's view, every
// node of it: a service task's config expands over the nodes
// (docs/macros.md), and a NETWORK_CONFIGURE lists them (wire.NeedsPeers).
// Any other task carries its own node, read by the claim itself: the view's
// key counts every node of the cluster, and keeping a view current
// rebuilds its macro index, both as costly as the cluster is large, which
// a bring-up, changing a node at every CONFIRM, paid at nearly every claim.
func needsView(action, service string) bool { return service != "" || wire.NeedsPeers(action) }

// The jobs check is a subquery rather than a join so that no plan drives
// the update from a job's tasks: with a generic plan and a young table's
// statistics, Postgres chose to scan every task of the job per claim.

// The claim sessions run with synchronous_commit off: a claim does not wait
// for the disk. Postgres crashing in the moment after can lose a claim, never
// a finish: the task is QUEUED again, the reconciler re-publishes it, the
// agent's finish is refused as stale, and the task runs again, which every
// task must tolerate (docs/operations.md#idempotency). A finish always commits
// synchronously, which flushes every claim before it.
var claimSetup = []string{`SET synchronous_commit = off`, `SET plan_cache_mode = force_generic_plan`, `SET coopr.quiet_events = on`}

// skip settles an entry whose task could not be claimed.
func (e *Engine) skip(ctx context.Context, tenant string, it queue.Item) error {
	var change *taskChange
	var jobID string
	err := e.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		change, jobID, err = e.unclaimable(ctx, tx, tenant, it)
		return err
	})
	if err == nil && change != nil {
		// Dropping the last queued task of a failed job ends it.
		e.settleDone(ctx, []string{jobID})
		e.notify(note{job: jobID, task: change})
	}
	return err
}

// release hands back a claim whose slot went away before receiving it: the
// task is queued again under the same attempt, as if never claimed.
func (e *Engine) release(ctx context.Context, a *Assignment) {
	_, err := e.requeue(ctx, a.TenantID, a.ClusterID, a.JobID, a.TaskID, a.Attempt, a.ClaimToken,
		"returned to the queue: the claiming slot left before receiving it")
	if err != nil {
		// The lease will lapse and the reaper will retry the task.
		e.log.Warn("engine: release claim", "task", a.TaskID, "err", err)
	}
}

// Release hands a claim back unrun (an agent stopping): the task is queued
// again at once under the same attempt, which does not count as a failure.
// A claim no longer current is ErrStaleClaim.
func (e *Engine) Release(ctx context.Context, taskID string, attempt int, token, reason string) error {
	var r struct {
		Tenant  string `db:"tenant_id"`
		Cluster string `db:"cluster_id"`
		Job     string `db:"job_id"`
	}
	err := e.db.GetContext(ctx, &r, `SELECT t.tenant_id, j.cluster_id, t.job_id FROM tasks t JOIN jobs j ON j.id = t.job_id
		WHERE t.id = $1`, taskID)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrStaleClaim
	}
	if err != nil {
		return fmt.Errorf("engine: release %s: %w", taskID, err)
	}
	ok, err := e.requeue(ctx, r.Tenant, r.Cluster, r.Job, taskID, attempt, token, "handed back: "+reason)
	if err != nil {
		return fmt.Errorf("engine: release %s: %w", taskID, err)
	}
	if !ok {
		return ErrStaleClaim
	}
	return nil
}

// requeue moves a current claim back to QUEUED and re-publishes it.
func (e *Engine) requeue(ctx context.Context, tenant, cluster, job, task string, attempt int, token, msg string) (bool, error) {
	tok, err := hex.DecodeString(token)
	if err != nil || len(tok) == 0 {
		return false, nil
	}
	var ok bool
	err = e.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET state = 'QUEUED', claim_token = NULL, agent_id = NULL,
			lease_expires_at = NULL, timeout_at = NULL WHERE id = $1 AND attempt = $2 AND claim_token = $3 AND state = 'IN_PROGRESS'`,
			task, attempt, tok)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		ok = true
		if _, err := tx.ExecContext(ctx, `DELETE FROM task_attempts WHERE task_id = $1 AND attempt = $2`, task, attempt); err != nil {
			return err
		}
		return insertEvents(ctx, tx, event{tenant: tenant, cluster: cluster, job: job, task: task,
			kind: "task", state: string(Queued), attempt: attempt, message: msg})
	})
	if err != nil || !ok {
		return ok, err
	}
	e.roomFreed()
	if err := e.q.PublishMany(ctx, tenant, []queue.Item{{TaskID: task, Attempt: attempt}}); err != nil {
		e.log.Warn("engine: publish released task; the reconciler will retry", "task", task, "err", err)
	}
	return true, nil
}

// unclaimable handles an entry whose task cannot be claimed
// (docs/task-protocol.md#queues-and-claims): a task of a paused job goes back
// to NOT_SUBMITTED, one of a failed job is DROPPED, and a stale entry
// (finished task, older attempt) is skipped.
func (e *Engine) unclaimable(ctx context.Context, tx *sqlx.Tx, tenant string, it queue.Item) (*taskChange, string, error) {
	var r struct {
		State    TaskState `db:"state"`
		Attempt  int       `db:"attempt"`
		Job      string    `db:"job_id"`
		JobState JobState  `db:"job_state"`
		Cluster  string    `db:"cluster_id"`
	}
	err := tx.GetContext(ctx, &r, `SELECT t.state, t.attempt, t.job_id, j.state AS job_state, j.cluster_id
		FROM tasks t JOIN jobs j ON j.id = t.job_id WHERE t.id = $1 AND t.tenant_id = $2 FOR UPDATE OF t`, it.TaskID, tenant)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil || r.State != Queued || r.Attempt != it.Attempt {
		return nil, "", err
	}
	var next TaskState
	switch r.JobState {
	case JobPaused:
		next = NotSubmitted
	case JobFailed, JobComplete:
		next = Dropped
	default:
		return nil, "", nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state = $2 WHERE id = $1`, it.TaskID, next); err != nil {
		return nil, "", err
	}
	return &taskChange{id: it.TaskID, state: next}, r.Job, insertEvents(ctx, tx,
		event{tenant: tenant, cluster: r.Cluster, job: r.Job, task: it.TaskID, kind: "task", state: string(next), attempt: it.Attempt})
}

// PruneNodeRemovals forgets the removals of clusters that ended: only a
// claim of a live cluster's task looks at them (a terminated cluster has no
// tasks left), and every node deleted leaves one behind.
func (e *Engine) PruneNodeRemovals(ctx context.Context) (int64, error) {
	res, err := e.db.ExecContext(ctx, `DELETE FROM node_removals r
		WHERE NOT EXISTS (SELECT 1 FROM clusters c WHERE c.id = r.cluster_id AND c.status <> 'TERMINATED')`)
	if err != nil {
		return 0, fmt.Errorf("prune node removals: %w", err)
	}
	return res.RowsAffected()
}
