package control

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cooprhq/coopr/server/engine"
)

// Service states: what the last task of a service that finished on a node
// left it in.
const (
	ServiceUnknown     = "UNKNOWN" // no task of it has finished there yet
	ServiceInstalled   = "INSTALLED"
	ServiceConfigured  = "CONFIGURED"
	ServiceInitialized = "INITIALIZED"
	ServiceRunning     = "RUNNING"
	ServiceStopped     = "STOPPED"
	ServiceRemoved     = "REMOVED"
	ServiceFailed      = "FAILED"
)

// ServiceState is a service's last known state on one node.
type ServiceState struct {
	Service string
	State   string
	// Action, JobID and At are the task the state comes from; empty for
	// UNKNOWN.
	Action  string
	JobID   string
	At      *time.Time
	Message string // why, when FAILED
}

// stateOf maps the last finished task of a service on a node to the
// state it left the service in. lifecycle is the action of the last of
// its INSTALL, START, STOP and REMOVE tasks that completed: a CONFIGURE
// (or INITIALIZE) of a running service leaves it running, of a stopped
// one stopped.
//
// A check's STATUS that completed reports what it observed (observed:
// running, stopped or missing, from the node's facts): a service found
// not installed shows REMOVED. Without an observation it changes nothing.
func stateOf(action, taskState, lifecycle, observed string) string {
	if engine.TaskState(taskState) == engine.Failed {
		return ServiceFailed
	}
	if action == "STATUS" {
		switch observed {
		case "running":
			return ServiceRunning
		case "stopped":
			return ServiceStopped
		case "missing":
			return ServiceRemoved
		}
		action = ""
	}
	switch action {
	case "INSTALL":
		return ServiceInstalled
	case "START":
		return ServiceRunning
	case "STOP":
		return ServiceStopped
	case "REMOVE":
		return ServiceRemoved
	}
	switch lifecycle {
	case "START":
		return ServiceRunning
	case "STOP":
		return ServiceStopped
	}
	if action == "INITIALIZE" {
		return ServiceInitialized
	}
	return ServiceConfigured
}

// serviceStates reads, for every node of the cluster, the last known
// state of each service that has had a task finish on it. The states come
// from the tasks themselves (each attempt's end is recorded anyway), so
// finishing a task, the engine's hottest write, does no more work for
// them.
func (s *Service) serviceStates(ctx context.Context, clusterID string) (map[string]map[string]ServiceState, error) {
	var rows []struct {
		Node      string    `db:"node_id"`
		Service   string    `db:"service"`
		Action    string    `db:"action"`
		State     string    `db:"state"`
		Job       string    `db:"job_id"`
		Message   string    `db:"message"`
		At        time.Time `db:"finished_at"`
		Lifecycle string    `db:"lifecycle"`
		Observed  string    `db:"observed"`
	}
	err := s.db.SelectContext(ctx, &rows, `WITH f AS (
			SELECT t.node_id, t.service, t.action, t.state, t.job_id, t.message, a.finished_at,
				CASE WHEN t.action = 'STATUS' AND n.facts -> ('service:' || t.service) -> 'check' ->> 'job' = t.job_id
					THEN n.facts -> ('service:' || t.service) -> 'check' ->> 'state' ELSE '' END AS observed
			FROM jobs j JOIN tasks t ON t.job_id = j.id JOIN task_attempts a ON a.task_id = t.id AND a.attempt = t.attempt
				JOIN nodes n ON n.id = t.node_id
			WHERE j.cluster_id = $1 AND t.service <> '' AND t.state IN ('COMPLETE', 'FAILED') AND a.finished_at IS NOT NULL),
		last AS (SELECT DISTINCT ON (node_id, service) * FROM f ORDER BY node_id, service, finished_at DESC),
		life AS (SELECT DISTINCT ON (node_id, service) node_id, service, action FROM f
			WHERE state = 'COMPLETE' AND action IN ('INSTALL', 'START', 'STOP', 'REMOVE')
			ORDER BY node_id, service, finished_at DESC)
		SELECT last.node_id, last.service, last.action, last.state, last.job_id, last.message, last.finished_at,
			coalesce(life.action, '') AS lifecycle, coalesce(last.observed, '') AS observed
		FROM last LEFT JOIN life USING (node_id, service)`, clusterID)
	if err != nil {
		return nil, fmt.Errorf("service states of cluster %s: %w", clusterID, err)
	}
	out := map[string]map[string]ServiceState{}
	for _, r := range rows {
		st := ServiceState{Service: r.Service, State: stateOf(r.Action, r.State, r.Lifecycle, r.Observed), Action: r.Action, JobID: r.Job, At: &r.At}
		if st.State == ServiceFailed {
			st.Message = r.Message
		}
		if out[r.Node] == nil {
			out[r.Node] = map[string]ServiceState{}
		}
		out[r.Node][r.Service] = st
	}
	return out, nil
}

// stateLoader reads a cluster's service states once for all its nodes,
// on the first node that asks (resolvers ask concurrently).
type stateLoader struct {
	s       *Service
	cluster string
	mu      sync.Mutex
	done    bool
	states  map[string]map[string]ServiceState
}

func (l *stateLoader) load(ctx context.Context) (map[string]map[string]ServiceState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		states, err := l.s.serviceStates(ctx, l.cluster)
		if err != nil {
			return nil, err // the next node tries again
		}
		l.states, l.done = states, true
	}
	return l.states, nil
}

// ServiceStates is the last known state of each of the node's services,
// in the order of Services.
func (n *Node) ServiceStates(ctx context.Context) ([]ServiceState, error) {
	if n.Deleted {
		return nil, nil // the machine is gone, and its services with it
	}
	if n.states == nil {
		return nil, fmt.Errorf("node %s was not read through Nodes", n.ID)
	}
	all, err := n.states.load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ServiceState, len(n.Services))
	for i, svc := range n.Services {
		st, ok := all[n.ID][svc]
		if !ok {
			st = ServiceState{Service: svc, State: ServiceUnknown}
		}
		out[i] = st
	}
	return out, nil
}

// StateCount is how many nodes have a service in one state.
type StateCount struct {
	State string
	Count int
}

// ServiceSummary is one service's states over the nodes that have it.
type ServiceSummary struct {
	Service string
	Nodes   int
	States  []StateCount // most first
}

// String reads "web: running on 3/3" or "web: running on 2/3, stopped on 1/3".
func (s ServiceSummary) String() string {
	parts := make([]string, len(s.States))
	for i, c := range s.States {
		parts[i] = fmt.Sprintf("%s on %d/%d", strings.ToLower(c.State), c.Count, s.Nodes)
	}
	return s.Service + ": " + strings.Join(parts, ", ")
}

// ServiceSummaries sums up the state of each service of the cluster over
// its nodes, in the order of the cluster's services (then any other a
// node has). A service on a node found unreachable counts as UNKNOWN:
// whatever its last task left it in, nothing says it still is (its
// node's serviceStates keep that record).
func (s *Service) ServiceSummaries(ctx context.Context, c *Cluster) ([]ServiceSummary, error) {
	if c.Status == engine.ClusterTerminated {
		return nil, nil // its machines are gone: nothing runs
	}
	nodes, err := s.Nodes(ctx, c.ID)
	if err != nil {
		return nil, err
	}
	order := slices.Clone([]string(c.Services))
	counts := map[string]map[string]int{}
	for i := range nodes {
		states, err := nodes[i].ServiceStates(ctx)
		if err != nil {
			return nil, err
		}
		for _, st := range states {
			if nodes[i].UnreachableSince != nil {
				st.State = ServiceUnknown
			}
			if counts[st.Service] == nil {
				counts[st.Service] = map[string]int{}
				if !slices.Contains(order, st.Service) {
					order = append(order, st.Service)
				}
			}
			counts[st.Service][st.State]++
		}
	}
	var out []ServiceSummary
	for _, svc := range order {
		byState, ok := counts[svc]
		if !ok {
			continue
		}
		sum := ServiceSummary{Service: svc}
		for state, n := range byState {
			sum.Nodes += n
			sum.States = append(sum.States, StateCount{State: state, Count: n})
		}
		sort.Slice(sum.States, func(i, j int) bool {
			a, b := sum.States[i], sum.States[j]
			return a.Count > b.Count || (a.Count == b.Count && a.State < b.State)
		})
		out = append(out, sum)
	}
	return out, nil
}
