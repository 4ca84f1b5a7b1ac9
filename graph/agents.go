package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/internal/scrub"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/events"
	"github.com/cooprhq/coopr/server/fleet"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// maxClaimWait bounds a claim's long poll (docs/task-protocol.md#queues-and-claims).
const maxClaimWait = 20 * time.Second

// agentCaller is an agent token's principal.
func agentCaller(ctx context.Context) (store.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return p, errUnauthenticated
	}
	if p.Kind != store.TokenAgent {
		return p, forbidden("the agent API needs an agent token (createAPIToken with kind AGENT)")
	}
	return p, nil
}

// agentAs is agentCaller for a request made as agentID: the token must
// serve that id, or any agent token could act as any agent, abandoning
// its claims by registering under its id.
func agentAs(ctx context.Context, agentID string) (store.Principal, error) {
	p, err := agentCaller(ctx)
	if err != nil {
		return p, err
	}
	if !p.MayActAs(agentID) {
		return p, forbidden("this agent token serves agent ids matching %q, not %q: run the agent with a --name it matches, or make it a token of its own (createAPIToken with kind AGENT and agents %q, or `coopr token create --agent --agent-id %s`)",
			p.Agents, agentID, agentID, agentID)
	}
	return p, nil
}

func slotList(m map[string]int) []*model.SlotAssignment {
	out := make([]*model.SlotAssignment, 0, len(m))
	for t, n := range m {
		out = append(out, &model.SlotAssignment{TenantID: t, Slots: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TenantID < out[j].TenantID })
	return out
}

func (r *Resolver) setup(ctx context.Context, agentID string, cancel []string) (*model.AgentSetup, error) {
	all, err := r.Fleet.Assignments(ctx)
	if err != nil {
		return nil, err
	}
	if cancel == nil {
		cancel = []string{}
	}
	return &model.AgentSetup{HeartbeatIntervalSeconds: int(fleet.HeartbeatInterval / time.Second),
		LeaseTTLSeconds: int(r.Engine.LeaseTTL() / time.Second), Assignments: slotList(all[agentID]), Cancel: cancel}, nil
}

func (r *Resolver) registerAgent(ctx context.Context, in model.AgentRegistration) (*model.AgentSetup, error) {
	if _, err := agentAs(ctx, in.AgentID); err != nil {
		return nil, err
	}
	reg := fleet.Registration{AgentID: in.AgentID, Incarnation: in.Incarnation, Capacity: in.Capacity}
	if in.Version != nil {
		reg.Version = *in.Version
	}
	if in.Host != nil {
		reg.Host = *in.Host
	}
	for _, d := range in.Drivers {
		fd := fleet.Driver{Role: d.Role, Name: d.Name}
		if d.Version != nil {
			fd.Version = *d.Version
		}
		reg.Drivers = append(reg.Drivers, fd)
	}
	switch {
	case in.AgentID == "":
		return nil, invalid("input.agentId", "must not be empty")
	case in.Incarnation == "":
		return nil, invalid("input.incarnation", "must not be empty")
	case in.Capacity < 1:
		return nil, invalid("input.capacity", "must be at least 1 (got %d)", in.Capacity)
	}
	if err := r.Fleet.Register(ctx, reg); err != nil {
		return nil, err
	}
	// A new process holds none of the claims of the one before.
	if _, err := r.Engine.Abandon(ctx, in.AgentID, nil, 0); err != nil {
		return nil, err
	}
	r.agentEvent(ctx, events.AgentEvent{Agent: in.AgentID, Kind: "REGISTERED", Capacity: in.Capacity})
	return r.setup(ctx, in.AgentID, nil)
}

func (r *Resolver) agentHeartbeat(ctx context.Context, in model.AgentHeartbeatInput) (*model.AgentSetup, error) {
	received := time.Now()
	if _, err := agentAs(ctx, in.AgentID); err != nil {
		return nil, err
	}
	if err := r.Fleet.Touch(ctx, in.AgentID, in.Incarnation); err != nil {
		return nil, err
	}
	claims := make([]engine.ClaimRef, len(in.Claims))
	for i, c := range in.Claims {
		claims[i] = engine.ClaimRef{TaskID: c.TaskID, Attempt: c.Attempt, Token: c.ClaimToken}
	}
	cancel, err := r.Engine.Heartbeat(ctx, in.AgentID, claims)
	if err != nil {
		return nil, err
	}
	keep := make([]string, len(claims))
	for i, c := range claims {
		keep[i] = c.TaskID
	}
	// A claim is lost when it is older than the heartbeat's view of the
	// agent by more than an interval. Two intervals, counted from when the
	// request arrived: an overloaded server (or agent) must not fail claims
	// made while this heartbeat was on its way; dead agents are found by
	// their sessions and leases.
	if _, err := r.Engine.Abandon(ctx, in.AgentID, keep, 2*fleet.HeartbeatInterval+time.Since(received)); err != nil {
		return nil, err
	}
	r.agentEvent(ctx, events.AgentEvent{Agent: in.AgentID, Kind: "HEARTBEAT", Busy: len(claims)})
	return r.setup(ctx, in.AgentID, cancel)
}

func (r *Resolver) claimTask(ctx context.Context, in model.ClaimInput) (*model.TaskAssignment, error) {
	as, err := r.claim(ctx, in.AgentID, in.Incarnation, in.TenantID, []int{in.Slot}, in.WaitSeconds)
	if len(as) == 0 {
		return nil, err
	}
	return as[0], err
}

// maxClaimSlots bounds the slots of one claimTasks, as the engine bounds
// one round of claims.
const maxClaimSlots = 256

// exchangeFinishers bounds the finishes of one exchangeTasks that run at
// once: each holds a store connection while it commits.
const exchangeFinishers = 16

func (r *Resolver) claimTasks(ctx context.Context, in model.ClaimTasksInput) ([]*model.TaskAssignment, error) {
	if len(in.Slots) == 0 {
		return nil, invalid("input.slots", "must list at least one free slot")
	}
	if len(in.Slots) > maxClaimSlots {
		return nil, invalid("input.slots", "lists %d slots; claim for at most %d at once", len(in.Slots), maxClaimSlots)
	}
	seen := make(map[int]bool, len(in.Slots))
	for _, s := range in.Slots {
		if seen[s] {
			return nil, invalid("input.slots", "lists slot %d twice; a slot runs one task at a time", s)
		}
		seen[s] = true
	}
	as, err := r.claim(ctx, in.AgentID, in.Incarnation, in.TenantID, in.Slots, in.WaitSeconds)
	if as == nil && err == nil {
		as = []*model.TaskAssignment{}
	}
	return as, err
}

// claimed is a claim whose driver the agent carries, with what its
// payload needs from the control plane.
type claimed struct {
	a          *engine.Assignment
	provider   wire.Provider
	secrets    map[string]map[string]any
	role       wire.Role
	driverName string
}

// claim waits up to waitSeconds for tasks of the tenant, one at most for
// each of the agent's slots, and returns them with their payloads. Tasks
// needing a driver the agent lacks are handed on
// (docs/task-protocol.md#queues-and-claims).
func (r *Resolver) claim(ctx context.Context, agentID, incarnation, tenantID string, slots []int, waitSeconds *int) ([]*model.TaskAssignment, error) {
	if _, err := agentAs(ctx, agentID); err != nil {
		return nil, err
	}
	carried, err := r.Fleet.Check(ctx, agentID, incarnation, tenantID, slots)
	if err != nil {
		return nil, err
	}
	wait := maxClaimWait
	if waitSeconds != nil {
		if *waitSeconds < 0 {
			return nil, invalid("input.waitSeconds", "must not be negative")
		}
		wait = min(time.Duration(*waitSeconds)*time.Second, maxClaimWait)
	}
	// A long poll ends when the server starts shutting down, so shutdown
	// does not wait for it.
	if r.Streams != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(r.Streams, cancel)
		defer stop()
	}
	deadline := time.Now().Add(wait)
	var kept []claimed
	for {
		as, err := r.Engine.ClaimTasks(ctx, engine.ClaimRequest{TenantID: tenantID, AgentID: agentID, Slots: slots,
			Wait: max(time.Until(deadline), 0)})
		if err != nil || len(as) == 0 {
			if ctx.Err() != nil && r.Streams != nil && r.Streams.Err() != nil {
				return nil, nil // shutting down: nothing was claimed
			}
			return nil, err
		}
		kept, err = r.sortClaims(ctx, as, carried, agentID)
		if err != nil {
			return nil, err
		}
		if len(kept) > 0 {
			break
		}
		if !time.Now().Before(deadline) {
			return nil, nil
		}
		// Another slot of an agent with the driver takes it; this one waits
		// a moment rather than claim it straight back.
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(min(time.Until(deadline), 200*time.Millisecond)):
		}
	}
	out := make([]*model.TaskAssignment, 0, len(kept))
	keys := authorizedKeys{}
	for _, c := range kept {
		ta, err := r.assignment(ctx, c, keys)
		if err != nil {
			// The answer is an error, so the agent gets none of them.
			r.releaseClaims(ctx, kept, "the server could not build the payload")
			return nil, err
		}
		out = append(out, ta)
	}
	if ctx.Err() != nil {
		// The agent hung up while the tasks were being claimed for it: hand
		// them back rather than leave them to leases nobody renews.
		r.releaseClaims(ctx, kept, "the claiming agent hung up")
		return nil, nil
	}
	return out, nil
}

// sortClaims keeps the claims whose driver the agent carries and hands the
// others on. On an error every claim not yet handed on is released.
func (r *Resolver) sortClaims(ctx context.Context, as []*engine.Assignment, carried map[string]bool, agentID string) ([]claimed, error) {
	type clusterContext struct {
		provider wire.Provider
		secrets  map[string]map[string]any
	}
	contexts := map[string]clusterContext{}
	var kept []claimed
	// giveUp releases the claims kept and those from as[i] on.
	giveUp := func(i int, reason string) {
		r.releaseClaims(ctx, kept, reason)
		r.releaseAssignments(ctx, as[i:], reason)
	}
	for i, a := range as {
		cc, ok := contexts[a.ClusterID]
		if !ok {
			var err error
			cc.provider, cc.secrets, err = r.Control.ClaimContext(ctx, a.ClusterID, a.ContextKey)
			if err != nil {
				giveUp(i, "the server could not read the cluster")
				return nil, err
			}
			contexts[a.ClusterID] = cc
		}
		role, name := driverOf(a, cc.provider)
		if carried[string(role)+"/"+name] {
			kept = append(kept, claimed{a: a, provider: cc.provider, secrets: cc.secrets, role: role, driverName: name})
			continue
		}
		// Not for this agent: hand it to one that has the driver
		// (docs/task-protocol.md#queues-and-claims), and give up on the task
		// when no live agent has had it for a while.
		if err := r.noDriver(ctx, a, agentID, string(role), name); err != nil {
			// This one too: the hand-on may have failed before releasing it
			// (a release of a claim already handed on is stale, and ignored).
			giveUp(i, "the server could not hand on a task")
			return nil, err
		}
	}
	return kept, nil
}

// authorizedKeys are the keys read for one claim's answer, by tenant and
// cluster owner: the BOOTSTRAPs of a cluster claimed together (a
// bring-up's) read them once, at one moment, rather than once each.
type authorizedKeys map[[2]string][]string

// assignment is a claim as the agent receives it: the payload with the
// provider, the secrets and the plugin resources joined in, encoded once
// from the wire types (the API passes the bytes through as they are).
func (r *Resolver) assignment(ctx context.Context, c claimed, keys authorizedKeys) (*model.TaskAssignment, error) {
	a := c.a
	// The plugin resources of the driver at the job's pinned generation
	// (docs/task-protocol.md#plugin-resources).
	refs, err := r.payloadResources(ctx, a, c.role, c.driverName)
	if err != nil {
		return nil, err
	}
	t := payloadOf(a, c.provider, c.secrets, refs)
	if a.Action == planner.Bootstrap || a.Action == planner.AuthorizeKeys {
		// The owner's keys as they are now: a key added or removed since
		// the cluster was made reaches the node with its next BOOTSTRAP
		// (docs/operations.md#host-keys-and-logging-in).
		k := [2]string{a.TenantID, a.Cluster.Owner}
		ks, ok := keys[k]
		if !ok {
			if ks, err = r.Store.AuthorizedKeys(ctx, a.TenantID, a.Cluster.Owner); err != nil {
				return nil, fmt.Errorf("task %s payload: %w", a.TaskID, err)
			}
			keys[k] = ks
		}
		t.AuthorizedKeys = ks
	}
	if a.Action == planner.Check && a.Node != nil {
		// The systemd units of the node's services without a status
		// action, which CHECK asks about (docs/catalog.md#systemd-units).
		if t.Units, err = r.Control.CheckUnits(ctx, a.JobID, a.Node.Services); err != nil {
			return nil, fmt.Errorf("task %s payload: %w", a.TaskID, err)
		}
	}
	payload, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("task %s payload: %w", a.TaskID, err)
	}
	return &model.TaskAssignment{TaskID: a.TaskID, Slot: a.Slot, Attempt: a.Attempt, ClaimToken: a.ClaimToken,
		LeaseExpiresAt: a.LeaseExpiresAt, TimeoutAt: a.TimeoutAt, Payload: model.Encoded(payload)}, nil
}

// payloadOf is a claim's payload (docs/task-protocol.md#payload). Secrets
// join it here, at claim time, and nowhere else. The cluster's other nodes
// go only to the tasks that need them (wire.NeedsPeers): with them in
// every payload, a task's cost grew with the cluster.
func payloadOf(a *engine.Assignment, provider wire.Provider, secrets map[string]map[string]any, refs []store.ResourceRef) *wire.Task {
	cfg, _ := a.Cluster.Config.(map[string]any)
	t := &wire.Task{TaskID: a.TaskID, JobID: a.JobID, ClusterID: a.ClusterID, TenantID: a.TenantID, Attempt: a.Attempt,
		TaskName: a.TaskName, Service: a.Service, Node: a.Node, TimeoutSeconds: a.TimeoutSeconds,
		Cluster:  wire.Cluster{ID: a.Cluster.ID, Name: a.Cluster.Name, Owner: a.Cluster.Owner, Config: cfg},
		Provider: provider, Secrets: secrets, Resources: make([]wire.Resource, len(refs))}
	for i, ref := range refs {
		t.Resources[i] = wire.Resource{PluginType: ref.PluginType, Plugin: ref.Plugin, ResourceType: ref.ResourceType,
			Name: ref.Name, Version: ref.Version, Format: ref.Format, Permissions: ref.Permissions, Digest: ref.Digest}
	}
	if wire.NeedsPeers(a.TaskName) {
		t.Nodes = make(map[string]wire.Node, len(a.Nodes))
		for id, n := range a.Nodes {
			t.Nodes[id] = *n
		}
	}
	return t
}

func (r *Resolver) releaseClaims(ctx context.Context, cs []claimed, reason string) {
	as := make([]*engine.Assignment, len(cs))
	for i, c := range cs {
		as[i] = c.a
	}
	r.releaseAssignments(ctx, as, reason)
}

// releaseAssignments hands claims back unrun; one that fails is left to
// its lease, after which the task is retried.
func (r *Resolver) releaseAssignments(ctx context.Context, as []*engine.Assignment, reason string) {
	if len(as) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, a := range as {
		if err := r.Engine.Release(rctx, a.TaskID, a.Attempt, a.ClaimToken, reason); err != nil &&
			!errors.Is(err, engine.ErrStaleClaim) {
			r.Log.Warn("release claim", "task", a.TaskID, "reason", reason, "err", err)
		}
	}
}

func (r *Resolver) finishTask(ctx context.Context, in model.FinishInput) (bool, error) {
	if _, err := agentCaller(ctx); err != nil {
		return false, err
	}
	if err := r.finishOne(ctx, in); err != nil {
		return false, err
	}
	return true, nil
}

// maxFinishOutput bounds the output lines one finish carries.
const maxFinishOutput = 256

// finishOne scrubs and checks a result and finishes its attempt. The
// output lines it carries are scrubbed first, as the attempt's next
// chunks (the carries of values cut between chunks end with the attempt
// below), and published once the finish is recorded: a stale claim's
// lines are dropped, as reportProgress refuses them.
func (r *Resolver) finishOne(ctx context.Context, in model.FinishInput) error {
	if len(in.Output) > maxFinishOutput {
		return invalid("input.output", "carries %d output lines; send at most %d with a finish, the earlier ones with reportProgress",
			len(in.Output), maxFinishOutput)
	}
	lines, err := r.finishOutput(ctx, in)
	if err != nil {
		return err
	}
	if err := r.finishResult(ctx, in); err != nil {
		return err
	}
	// Recorded: a retry of this finish is answered as done and publishes
	// nothing, so the lines go out even if this request is given up.
	pctx := context.WithoutCancel(ctx)
	for _, l := range lines {
		if err := r.Hub.PublishLog(pctx, l); err != nil {
			// The result is recorded; output is best effort.
			r.Log.Warn("a finished task's last output not published", "task", in.TaskID, "err", err)
			break
		}
	}
	return nil
}

// finishOutput scrubs the output lines a finish carries, in order.
func (r *Resolver) finishOutput(ctx context.Context, in model.FinishInput) ([]events.LogLine, error) {
	if len(in.Output) == 0 {
		return nil, nil
	}
	load := func() (*scrub.Set, error) { return r.Control.TaskScrubber(ctx, in.TaskID) }
	// The result's own secrets, which no stored value covers yet: a
	// driver may print what it made in its last lines.
	var own *scrub.Set
	if in.Result.Secrets != nil {
		own = scrub.New(in.Result.Secrets)
	}
	lines := make([]events.LogLine, len(in.Output))
	for i, o := range in.Output {
		stream := strings.ToLower(string(o.Stream))
		chunk, err := r.scrubs.Chunk(in.TaskID, in.Attempt, stream, cleanOutput(o.Chunk, maxOutput), load)
		if err != nil {
			return nil, err
		}
		if !own.Empty() {
			chunk = own.String(chunk)
		}
		lines[i] = events.LogLine{Task: in.TaskID, Attempt: in.Attempt, Seq: o.Seq, Stream: stream, Chunk: chunk}
		if o.Percent != nil {
			lines[i].Percent = *o.Percent
		}
	}
	return lines, nil
}

// finishResult scrubs and checks a result and finishes its attempt.
func (r *Resolver) finishResult(ctx context.Context, in model.FinishInput) error {
	res := engine.Result{Status: in.Result.Status, Retryable: in.Result.Retryable,
		Unreachable: in.Result.Unreachable != nil && *in.Result.Unreachable}
	if in.Result.Hostname != nil {
		res.Hostname = cleanOutput(*in.Result.Hostname, 0)
	}
	if hasText(in.Result.Message) || hasText(in.Result.StdoutTail) || hasText(in.Result.StderrTail) {
		set, err := r.endingSecrets(ctx, in.TaskID, in.Attempt)
		if err != nil {
			return err
		}
		if in.Result.Secrets != nil {
			set = set.Add(in.Result.Secrets) // the result's own, sealed below
		}
		for _, f := range []struct {
			dst *string
			src *string
			max int
		}{{&res.Message, in.Result.Message, maxMessage},
			{&res.StdoutTail, in.Result.StdoutTail, 0}, {&res.StderrTail, in.Result.StderrTail, 0}} { // the engine keeps tails' ends
			if f.src != nil {
				*f.dst = scrubText(set, *f.src, f.max)
			}
		}
	} else {
		r.scrubs.Done(in.TaskID, in.Attempt)
	}
	if in.Result.Ipaddresses != nil {
		ips, ok := in.Result.Ipaddresses.(map[string]any)
		if !ok {
			return invalid("input.result.ipaddresses", "must be an object of address type to address")
		}
		res.IPAddresses = map[string]string{}
		for k, v := range ips {
			s, ok := v.(string)
			if !ok {
				return invalid("input.result.ipaddresses."+k, "must be a string")
			}
			// As a hostname: Postgres's jsonb holds no NUL.
			res.IPAddresses[cleanOutput(k, 0)] = cleanOutput(s, 0)
		}
	}
	if in.Result.Facts != nil {
		facts, ok := in.Result.Facts.(map[string]any)
		if !ok {
			return invalid("input.result.facts", "must be an object")
		}
		res.Facts = facts
	}
	if in.Result.Secrets != nil {
		secrets, ok := in.Result.Secrets.(map[string]any)
		if !ok {
			return invalid("input.result.secrets", "must be an object")
		}
		res.Secrets = secrets
	}
	return r.Engine.Finish(ctx, in.TaskID, in.Attempt, in.ClaimToken, res)
}

func (r *Resolver) reportProgress(ctx context.Context, in model.ProgressInput) (bool, error) {
	if _, err := agentCaller(ctx); err != nil {
		return false, err
	}
	cluster, err := r.Engine.CheckClaim(ctx, in.TaskID, in.Attempt, in.ClaimToken)
	if err != nil {
		return false, err
	}
	stream := strings.ToLower(string(in.Stream))
	chunk, err := r.scrubChunk(ctx, in.TaskID, in.Attempt, cluster, stream, cleanOutput(in.Chunk, maxOutput))
	if err != nil {
		return false, err
	}
	line := events.LogLine{Task: in.TaskID, Attempt: in.Attempt, Seq: in.Seq, Stream: stream, Chunk: chunk}
	if in.Percent != nil {
		line.Percent = *in.Percent
	}
	if err := r.Hub.PublishLog(ctx, line); err != nil {
		return false, err
	}
	return true, nil
}

func (r *Resolver) taskLog(ctx context.Context, p store.Principal, taskID string) (<-chan *model.TaskLogLine, error) {
	if _, err := r.Control.TaskCluster(ctx, p, taskID); err != nil {
		return nil, err
	}
	sub := r.Hub.SubscribeLog(taskID, subscriberBuffer)
	out := make(chan *model.TaskLogLine)
	go func() {
		defer close(out)
		defer r.Hub.UnsubscribeLog(sub)
		send := sender(ctx, out)
		for {
			select {
			case <-ctx.Done():
				return
			case l := <-sub.C:
				m := &model.TaskLogLine{TaskID: l.Task, Attempt: l.Attempt, Seq: l.Seq, Stream: model.LogStream(strings.ToUpper(l.Stream)),
					Chunk: l.Chunk, Lagged: sub.Lagged()}
				if l.Percent != 0 {
					pct := l.Percent
					m.Percent = &pct
				}
				if !send(m) {
					return
				}
			}
		}
	}()
	return out, nil
}

// agentEvent publishes an agent change; watchers missing one is not worth
// failing the agent's call.
func (r *Resolver) agentEvent(ctx context.Context, ev events.AgentEvent) {
	ev.At = time.Now()
	if err := r.Hub.PublishAgent(ctx, ev); err != nil {
		r.Log.Warn("agent event not published", "agent", ev.Agent, "err", err)
	}
}

func (r *Resolver) agentEvents(ctx context.Context) (<-chan *model.AgentEvent, error) {
	if _, err := superadmin(ctx, "watching agents"); err != nil {
		return nil, err
	}
	sub := r.Hub.SubscribeAgents(subscriberBuffer)
	agents, err := r.Fleet.Agents(ctx)
	if err != nil {
		r.Hub.UnsubscribeAgents(sub)
		return nil, err
	}
	out := make(chan *model.AgentEvent)
	go func() {
		defer close(out)
		defer r.Hub.UnsubscribeAgents(sub)
		send := sender(ctx, out)
		for _, a := range agents {
			if !send(&model.AgentEvent{Kind: model.AgentEventKindSnapshot, AgentID: a.ID, Capacity: a.Capacity,
				Live: time.Since(a.LastSeen) < 3*fleet.HeartbeatInterval, At: a.LastSeen}) {
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-sub.C:
				if !send(&model.AgentEvent{Kind: model.AgentEventKind(ev.Kind), AgentID: ev.Agent, Capacity: ev.Capacity,
					Busy: ev.Busy, Live: ev.Kind != "LOST", At: ev.At, Lagged: sub.Lagged()}) {
					return
				}
			}
		}
	}()
	return out, nil
}

func (r *Resolver) releaseTask(ctx context.Context, in model.ReleaseInput) (bool, error) {
	if _, err := agentCaller(ctx); err != nil {
		return false, err
	}
	set, err := r.endingSecrets(ctx, in.TaskID, in.Attempt)
	if err != nil {
		return false, err
	}
	if err := r.Engine.Release(ctx, in.TaskID, in.Attempt, in.ClaimToken, scrubText(set, in.Reason, 0)); err != nil {
		return false, err
	}
	return true, nil
}

// driverOf names the driver a claimed task needs, from the engine's
// assignment and the cluster's provider.
func driverOf(a *engine.Assignment, provider wire.Provider) (wire.Role, string) {
	var typ string
	if a.Service != nil {
		typ = a.Service.Action.Type
	}
	return wire.DriverOf(a.TaskName, provider.ProviderType, provider.Network, typ)
}

// DefaultDriverGrace is how long a task may wait for an agent with its
// driver before it fails for good (docs/operations.md#non-retryable-failures).
const DefaultDriverGrace = 5 * time.Minute

// noDriver hands back a task the agent cannot run. When no live agent
// offers the driver and none has since the task was first handed back for
// it at least driverGrace ago, the attempt fails without retry.
func (r *Resolver) noDriver(ctx context.Context, a *engine.Assignment, agentID, role, name string) error {
	offered, err := r.Fleet.Offered(ctx, role, name)
	if err != nil {
		return err
	}
	key := a.TaskID + "/" + role + "/" + name
	if offered {
		r.missing.Delete(key)
	} else {
		grace := r.DriverGrace
		if grace <= 0 {
			grace = DefaultDriverGrace
		}
		first, _ := r.missing.LoadOrStore(key, time.Now())
		if time.Since(first.(time.Time)) >= grace {
			r.missing.Delete(key)
			no := false
			msg := fmt.Sprintf("no live agent offers the %s driver %q (for %s)", role, name, grace)
			return r.Engine.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, engine.Result{Status: 1, Message: msg, Retryable: &no})
		}
	}
	err = r.Engine.Release(ctx, a.TaskID, a.Attempt, a.ClaimToken, fmt.Sprintf("agent %s has no %s driver %q", agentID, role, name))
	if errors.Is(err, engine.ErrStaleClaim) {
		return nil
	}
	return err
}

// DefaultSessionGrace is how long an agent's sessions may all be gone before
// its claims fail: long enough for a reconnect after a blip, short next to a
// lease (30 s, docs/operations.md#lost-agents), so that a killed agent's tasks
// run elsewhere within seconds.
const DefaultSessionGrace = 3 * time.Second

// agentSession counts the agent's session while the subscription lasts.
// When it ends and no other session of the incarnation comes back within
// the grace, the agent is taken for dead and its claims fail.
func (r *Resolver) agentSession(ctx context.Context, agentID, incarnation string) (<-chan *model.AgentSession, error) {
	if _, err := agentAs(ctx, agentID); err != nil {
		return nil, err
	}
	if err := r.Fleet.SessionOpened(ctx, agentID, incarnation); err != nil {
		return nil, err
	}
	grace := r.SessionGrace
	if grace <= 0 {
		grace = DefaultSessionGrace
	}
	out := make(chan *model.AgentSession, 1)
	out <- &model.AgentSession{AgentID: agentID, GraceSeconds: grace.Seconds()}
	go func() {
		select {
		case <-ctx.Done():
		case <-r.Streams.Done():
		}
		if r.Streams.Err() != nil {
			// This server is stopping, not the agent: it reconnects to
			// another, and its leases still guard its claims.
			return
		}
		bg := context.WithoutCancel(ctx)
		if err := r.Fleet.SessionClosed(bg, agentID, incarnation); err != nil {
			r.Log.Warn("agent session close not recorded", "agent", agentID, "err", err)
			return
		}
		select {
		case <-time.After(grace + 100*time.Millisecond):
		case <-r.Streams.Done():
			return
		}
		gone, err := r.Fleet.Gone(bg, agentID, incarnation, grace)
		if err != nil || !gone {
			return
		}
		n, err := r.Engine.Abandon(bg, agentID, nil, 0)
		if err != nil {
			r.Log.Warn("failing a disconnected agent's claims", "agent", agentID, "err", err)
			return
		}
		if n > 0 {
			r.Log.Warn("agent disconnected and did not come back: its claims failed and will be retried", "agent", agentID,
				"claims", n, "grace", grace)
		}
	}()
	return out, nil
}

// maxExchangeFinishes bounds the finishes of one exchangeTasks.
const maxExchangeFinishes = 256

// exchangeTasks finishes attempts and then claims for the agent's free
// slots, in one round trip (docs/task-protocol.md#exchange). The finishes
// run at once, so that the successful ones share the engine's finish
// statement and commit; every one is committed (or refused) before the
// claim starts, so no task that waited for one of them can be claimed
// before it is durable. A finish retried after its answer was lost is
// answered as recorded.
func (r *Resolver) exchangeTasks(ctx context.Context, in model.ExchangeInput) (*model.Exchange, error) {
	if _, err := agentAs(ctx, in.AgentID); err != nil {
		return nil, err
	}
	if len(in.Finishes) > maxExchangeFinishes {
		return nil, invalid("input.finishes", "lists %d finishes; send at most %d at once", len(in.Finishes), maxExchangeFinishes)
	}
	seen := make(map[string]bool, len(in.Finishes))
	for _, f := range in.Finishes {
		if seen[f.TaskID] {
			return nil, invalid("input.finishes", "finishes task %s twice; an attempt ends once", f.TaskID)
		}
		seen[f.TaskID] = true
	}
	if len(in.Slots) > maxClaimSlots {
		return nil, invalid("input.slots", "lists %d slots; claim for at most %d at once", len(in.Slots), maxClaimSlots)
	}
	slotSeen := make(map[int]bool, len(in.Slots))
	for _, s := range in.Slots {
		if slotSeen[s] {
			return nil, invalid("input.slots", "lists slot %d twice; a slot runs one task at a time", s)
		}
		slotSeen[s] = true
	}
	out := &model.Exchange{Finished: make([]*model.FinishOutcome, len(in.Finishes)), Assignments: []*model.TaskAssignment{}}
	errs := make([]error, len(in.Finishes))
	var wg sync.WaitGroup
	// Finishes run side by side so the engine commits them together, but
	// no more at once than leaves the store's connections to heartbeats
	// and claims.
	sem := make(chan struct{}, exchangeFinishers)
	for i, f := range in.Finishes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = r.finishOne(ctx, *f)
			if errors.Is(errs[i], engine.ErrStaleClaim) {
				// The same finish tried again after its answer was lost.
				done, err := r.Engine.Finished(ctx, f.TaskID, f.Attempt, in.AgentID, f.Result.Status)
				if err != nil {
					errs[i] = err
				} else if done {
					errs[i] = nil
				}
			}
		}()
	}
	wg.Wait()
	for i, f := range in.Finishes {
		o := &model.FinishOutcome{TaskID: f.TaskID, Attempt: f.Attempt}
		if err := errs[i]; err != nil {
			code, _ := classify(err)
			if code == "" {
				// Not the agent's doing: the answer is an error, and the
				// agent sends the finishes again (those done are answered
				// as recorded).
				return nil, err
			}
			msg := err.Error()
			o.Code, o.Message = &code, &msg
		}
		out.Finished[i] = o
	}
	if len(in.Slots) == 0 {
		return out, nil
	}
	as, err := r.claim(ctx, in.AgentID, in.Incarnation, in.TenantID, in.Slots, in.WaitSeconds)
	if code, _ := classify(err); code == wire.CodeSlotNotAssigned || code == wire.CodeAgentUnknown {
		out.ClaimRefused = &code
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if as != nil {
		out.Assignments = as
	}
	return out, nil
}
