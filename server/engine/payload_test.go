package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/planner"
)

// A create whose CONFIRMs report hostnames and addresses: every service
// task sees the config expanded for its own node over those results, and
// node-level tasks see it as written.
func TestPayloadMacrosSeeEarlierResults(t *testing.T) {
	h := newHarness(t, fast)
	config := `{"db": "%host.service.db[0]%", "peers": "%join(map(ip.service.app,'$:80'),' ')%",
		"me": {"host": "%host.self%", "rank": "%instance.self.service.app%"}, "owner": "%cluster.owner%", "count": 3}`
	_, err := h.db.Exec(`UPDATE clusters SET config = $2, owner = 'alice' WHERE id = $1`, h.cluster, config)
	must(t, err)

	var mu sync.Mutex
	seen := map[string]map[string]any{} // node/action/service -> config
	ag := h.agent("a1", 4, func(a *Assignment, _ int) (Result, time.Duration) {
		cfg, _ := a.Cluster.Config.(map[string]any)
		mu.Lock()
		seen[key(a)] = cfg
		mu.Unlock()
		if a.Action == planner.Confirm {
			num := a.Node.NodeNum
			return Result{Hostname: fmt.Sprintf("h%d.example", num),
				IPAddresses: map[string]string{"bind_v4": fmt.Sprintf("10.0.0.%d", num-999)}}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	nodes := h.nodes(3) // n0: base+db; n1, n2: base+app
	_, p := h.submit(planner.ClusterCreate, nodes, testServices())
	h.waitStatus("ACTIVE", 20*time.Second)
	checkOrder(t, h, ag, p)

	mu.Lock()
	defer mu.Unlock()
	n1 := nodes[1].ID
	got := seen[n1+"/CONFIGURE/app"]
	want := map[string]any{"db": "h1000.example", "peers": "10.0.0.2:80 10.0.0.3:80",
		"me": map[string]any{"host": "h1001.example", "rank": "1"}, "owner": "alice", "count": float64(3)}
	if g, w := js(got), js(want); g != w {
		t.Errorf("app CONFIGURE on %s saw config\n%s\nwant\n%s", n1, g, w)
	}
	if rank := seen[nodes[2].ID+"/CONFIGURE/app"]["me"].(map[string]any)["rank"]; rank != "2" {
		t.Errorf("second app node rank %v, want 2", rank)
	}
	// The db node has no app: its own rank stays as written.
	if rank := seen[nodes[0].ID+"/CONFIGURE/db"]["me"].(map[string]any)["rank"]; rank != "%instance.self.service.app%" {
		t.Errorf("db node rank %v, want the macro unexpanded", rank)
	}
	var kinds []string
	must(t, h.db.Select(&kinds, `SELECT DISTINCT jsonb_typeof(facts) FROM nodes WHERE cluster_id = $1`, h.cluster))
	if len(kinds) != 1 || kinds[0] != "object" {
		t.Errorf("node facts are %v after results without facts, want objects", kinds)
	}
	raw := seen[n1+"/BOOTSTRAP/"]
	if raw["db"] != "%host.service.db[0]%" {
		t.Errorf("BOOTSTRAP saw %v, want the config as written", raw)
	}
}

// A macro that cannot expand fails its task without retry, and the job
// with it; the message names the key path and the macro.
func TestPayloadMacroErrorFailsTask(t *testing.T) {
	h := newHarness(t, fast)
	_, err := h.db.Exec(`UPDATE clusters SET config = $2 WHERE id = $1`, h.cluster, `{"zk": {"hosts": ["%host.service.app[7]%"]}}`)
	must(t, err)
	ag := h.agent("a1", 4, func(a *Assignment, _ int) (Result, time.Duration) {
		if a.Action == planner.Confirm {
			return Result{Hostname: "h" + a.Node.ID, IPAddresses: map[string]string{"bind_v4": "10.1.1.1"}}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	job, _ := h.submit(planner.ClusterCreate, h.nodes(2), testServices())
	h.waitStatus("INCOMPLETE", 20*time.Second)
	var r struct {
		Failures int    `db:"failures"`
		Message  string `db:"message"`
	}
	must(t, h.db.Get(&r, `SELECT failures, message FROM tasks WHERE job_id = $1 AND state = 'FAILED'`, job))
	if r.Failures != 1 || !strings.Contains(r.Message, "zk.hosts[0]: macro %host.service.app[7]%: index 7 out of range") {
		t.Errorf("failed task: %d failures, message %q", r.Failures, r.Message)
	}
	for _, run := range ag.snapshot() {
		if run.service != "" {
			t.Errorf("service task %s %s ran; the macro error should have stopped it at claim", run.action, run.service)
		}
	}
}

func js(v any) string {
	b, _ := json.MarshalIndent(v, "", " ")
	return string(b)
}

// Nodes a scale-in removes leave the macro view when the job starts and
// the cluster when their DELETE completes; the others stay.
func TestScaleInRemovesNodes(t *testing.T) {
	h := newHarness(t, fast)
	_, err := h.db.Exec(`UPDATE clusters SET config = '{"apps": "%host.service.app%"}' WHERE id = $1`, h.cluster)
	must(t, err)
	nodes := h.nodes(4) // n0 db, n1..n3 app
	for _, n := range nodes {
		_, err := h.db.Exec(`UPDATE nodes SET hostname = $2 WHERE id = $1`, n.ID, fmt.Sprintf("h%d", n.NodeNum))
		must(t, err)
	}
	var mu sync.Mutex
	seen := map[string]string{}
	h.agent("a1", 4, func(a *Assignment, _ int) (Result, time.Duration) {
		if a.Action == planner.Configure {
			mu.Lock()
			seen[key(a)] = a.Cluster.Config.(map[string]any)["apps"].(string)
			mu.Unlock()
		}
		return Result{}, time.Millisecond
	})
	removed := []string{nodes[2].ID, nodes[3].ID}
	p, err := planner.Build(&planner.Request{Action: planner.ScaleIn, Services: testServices(), Nodes: nodes, RemovedNodes: removed})
	must(t, err)
	_, err = h.engine().Submit(context.Background(), JobSpec{TenantID: h.tenant, ClusterID: h.cluster, Action: planner.ScaleIn, Plan: p, Services: testServices()})
	must(t, err)
	h.waitStatus("ACTIVE", 20*time.Second)
	var left []string
	must(t, h.db.Select(&left, `SELECT id FROM nodes WHERE cluster_id = $1 ORDER BY nodenum`, h.cluster))
	if want := []string{nodes[0].ID, nodes[1].ID}; strings.Join(left, " ") != strings.Join(want, " ") {
		t.Errorf("nodes after scale-in %v, want %v", left, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := seen[nodes[1].ID+"/CONFIGURE/app"]; got != "h1001" {
		t.Errorf("remaining app node configured with apps=%q, want only itself (h1001)", got)
	}
}

// A payload carries its own node's facts; the other nodes come without
// theirs, so that a payload grows with the cluster, not its square.
func TestPayloadFactsOnlyForOwnNode(t *testing.T) {
	h := newHarness(t, fast)
	var mu sync.Mutex
	var leaks []string
	var ownSeen bool
	h.agent("a1", 4, func(a *Assignment, _ int) (Result, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		for id, n := range a.Nodes {
			if len(n.Facts) > 0 {
				leaks = append(leaks, fmt.Sprintf("%s carries facts of %s", a.TaskID, id))
			}
		}
		if a.Action == planner.Bootstrap && a.Node != nil && a.Node.Facts["vm"] != nil {
			ownSeen = true
		}
		if a.Action == planner.Create {
			return Result{Facts: map[string]any{"providerId": "m-" + a.Node.ID}}, time.Millisecond
		}
		if a.Action == planner.Confirm {
			return Result{IPAddresses: map[string]string{"bind_v4": "10.0.0.1"}}, time.Millisecond
		}
		return Result{}, time.Millisecond
	})
	h.submit(planner.ClusterCreate, h.nodes(3), testServices())
	h.waitStatus("ACTIVE", 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if len(leaks) > 0 {
		t.Errorf("payloads carry other nodes' facts: %v", leaks[:min(3, len(leaks))])
	}
	if !ownSeen {
		t.Error("BOOTSTRAP did not see its own node's vm facts")
	}
}

// Claims keep a cluster's view between them: a change to a node or to the
// cluster made anywhere (here straight in the database, as another server
// would) reaches the next payload, and a node's facts are always its own
// and current.
func TestPayloadSeesChangesBetweenClaims(t *testing.T) {
	h := newHarness(t, leased)
	nodes := independent(h.nodes(3))
	h.submit(planner.StartServices, nodes, startOnly())
	first := h.claim()
	if n := len(first.Nodes); n != 3 {
		t.Fatalf("payload has %d nodes, want 3", n)
	}
	other := nodes[0].ID
	if other == first.Node.ID {
		other = nodes[1].ID
	}
	_, err := h.db.Exec(`UPDATE nodes SET hostname = 'renamed.example' WHERE id = $1`, other)
	must(t, err)
	_, err = h.db.Exec(`UPDATE nodes SET facts = '{"node": {"os": "debian"}}' WHERE cluster_id = $1`, h.cluster)
	must(t, err)
	_, err = h.db.Exec(`UPDATE clusters SET config = '{"v": 2}' WHERE id = $1`, h.cluster)
	must(t, err)
	second := h.claim()
	if got := second.Nodes[other].Hostname; got != "renamed.example" {
		t.Errorf("peer %s hostname %q after the change, want renamed.example", other, got)
	}
	compact := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if got := compact(second.Cluster.Config); got != `{"v":2}` {
		t.Errorf("config %s after the change, want {\"v\":2}", got)
	}
	if got := compact(second.Node.Facts); got != `{"node":{"os":"debian"}}` {
		t.Errorf("own node facts %s, want the node's", got)
	}
	for id, n := range second.Nodes {
		if n.Facts != nil {
			t.Errorf("peer %s carries facts %v; payloads carry only their own node's", id, n.Facts)
		}
	}
	_, err = h.db.Exec(`DELETE FROM nodes WHERE id = $1`, other)
	must(t, err)
	third := h.claim()
	if _, ok := third.Nodes[other]; ok || len(third.Nodes) != 2 {
		t.Errorf("after deleting %s the payload has nodes %v", other, third.Nodes)
	}
}

// A change to a node reaches the next payload through a read of the nodes
// changed since the view, not of the whole cluster: a change made before
// the view was read but committed after, and a node that went, too.
func TestPayloadViewRefresh(t *testing.T) {
	// fast's short leases: its six claims of four tasks take the last two
	// again after their leases lapse.
	h := newHarness(t, fast)
	nodes := independent(h.nodes(4))
	h.submit(planner.StartServices, nodes, startOnly())
	first := h.claim()
	vs := h.engine().views
	reads, refreshes := vs.reads.Load(), vs.refreshes.Load()
	if reads == 0 {
		t.Fatal("the first claim read no view")
	}
	var others []string
	for _, n := range nodes {
		if n.ID != first.Node.ID {
			others = append(others, n.ID)
		}
	}
	// Facts are not in the view: writing them reads nothing again.
	_, err := h.db.Exec(`UPDATE nodes SET facts = '{"vm": {"id": 1}}' WHERE cluster_id = $1`, h.cluster)
	must(t, err)
	h.claim()
	if r, f := vs.reads.Load()-reads, vs.refreshes.Load()-refreshes; r != 0 || f != 0 {
		t.Errorf("after a facts change: %d whole reads, %d refreshes; want none", r, f)
	}
	_, err = h.db.Exec(`UPDATE nodes SET hostname = 'renamed.example' WHERE id = $1`, others[0])
	must(t, err)
	second := h.claim()
	if got := second.Nodes[others[0]].Hostname; got != "renamed.example" {
		t.Errorf("peer hostname %q after the change, want renamed.example", got)
	}
	if r, f := vs.reads.Load()-reads, vs.refreshes.Load()-refreshes; r != 0 || f != 1 {
		t.Errorf("after a node change: %d whole reads, %d refreshes; want 0 and 1", r, f)
	}

	// A transaction numbers its change first and commits last.
	tx, err := h.db.Beginx()
	must(t, err)
	defer tx.Rollback()
	_, err = tx.Exec(`UPDATE nodes SET hostname = 'late.example' WHERE id = $1`, others[1])
	must(t, err)
	_, err = h.db.Exec(`UPDATE nodes SET hostname = 'early.example' WHERE id = $1`, others[2])
	must(t, err)
	third := h.claim()
	if got := third.Nodes[others[2]].Hostname; got != "early.example" {
		t.Errorf("peer hostname %q, want early.example", got)
	}
	must(t, tx.Commit())
	fourth := h.claim()
	if got := fourth.Nodes[others[1]].Hostname; got != "late.example" {
		t.Errorf("peer hostname %q after the late commit, want late.example", got)
	}
	_, err = h.db.Exec(`DELETE FROM nodes WHERE id = $1`, others[0])
	must(t, err)
	fifth := h.claim()
	if _, ok := fifth.Nodes[others[0]]; ok || len(fifth.Nodes) != 3 {
		t.Errorf("after deleting %s the payload has %d nodes", others[0], len(fifth.Nodes))
	}
	if r := vs.reads.Load() - reads; r != 0 {
		t.Errorf("%d whole reads of the view after the first; want none", r)
	}
}

// A bring-up reads its cluster's view about once, not once per node: a
// node-level task's payload carries its own node, read by the claim, and
// only the tasks that need every node (service tasks, NETWORK_CONFIGURE)
// have the view kept current. Each CONFIRM changes a node, and rebuilding
// the view after each one made a claim's cost grow with the cluster.
func TestBringUpReadsTheViewOnce(t *testing.T) {
	h := newHarness(t, fast)
	const n = 30
	nodes := h.nodes(n)
	ip := func(id string) string { return "10.9.0." + strings.TrimPrefix(id[strings.LastIndex(id, "-n"):], "-n") }
	var mu sync.Mutex
	var problems []string
	var nodeLevel, service int
	h.agent("a1", 8, func(a *Assignment, _ int) (Result, time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Sprintf("%s %s: ", a.TaskName, a.TaskID)+fmt.Sprintf(format, args...))
		}
		if a.Node == nil || a.Cluster.Name != "c1" {
			bad("node %v, cluster %q", a.Node, a.Cluster.Name)
			return Result{}, 0
		}
		switch {
		case a.Service != nil:
			service++
			if len(a.Nodes) != n || a.Nodes[a.Node.ID] == nil {
				bad("lists %d nodes, want all %d", len(a.Nodes), n)
			}
		case a.Action != planner.NetworkConfigure:
			nodeLevel++
			if a.Nodes != nil {
				bad("lists %d nodes, want none", len(a.Nodes))
			}
		}
		if a.Action == planner.Bootstrap || a.Service != nil {
			// The own node as its CONFIRM left it, with its automators.
			if got := a.Node.IPAddresses["access_v4"]; got != ip(a.Node.ID) {
				bad("own node's address %q, want %q", got, ip(a.Node.ID))
			}
			if len(a.Node.Automators) != 1 || a.Node.Automators[0] != "shell" {
				bad("own node's automators %v, want [shell]", a.Node.Automators)
			}
		}
		if a.Action == planner.Confirm {
			return Result{IPAddresses: map[string]string{"access_v4": ip(a.Node.ID)}}, 0
		}
		return Result{}, 0
	})
	// Automator types come from the cluster's catalog snapshot.
	_, err := h.db.Exec(`UPDATE clusters SET snapshot = '{"services": {"base": {"provisioner": {"actions": {"install": {"type": "shell"}}}}}}'
		WHERE id = $1`, h.cluster)
	must(t, err)
	reads, refreshes := h.engine().views.reads.Load(), h.engine().views.refreshes.Load()
	h.submit(planner.ClusterCreate, nodes, testServices())
	h.waitStatus("ACTIVE", 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	if nodeLevel < 3*n || service < 2*n {
		t.Fatalf("%d node-level and %d service tasks ran, want at least %d and %d", nodeLevel, service, 3*n, 2*n)
	}
	// The view is read at the first claim, and brought up to date when
	// the first service task finds the nodes changed; a claim racing a
	// change may take one more.
	if got := h.engine().views.reads.Load() - reads + h.engine().views.refreshes.Load() - refreshes; got > 4 {
		t.Errorf("the view was read or refreshed %d times for %d nodes, want at most 4", got, n)
	}
}

// A claim finds the view it keeps current from the nodes changed since
// the view was read, without counting the cluster's nodes; a change made
// anywhere still reaches the next payload.
func TestClaimFindsTheViewCurrent(t *testing.T) {
	h := newHarness(t, leased)
	nodes := independent(h.nodes(6))
	h.submit(planner.StartServices, nodes, startOnly())
	vs := h.engine().views
	first := h.claim()
	if n := len(first.Nodes); n != 6 {
		t.Fatalf("payload has %d nodes, want 6", n)
	}
	reads, current := vs.reads.Load(), vs.current.Load()
	snapshot := func() string {
		vs.mu.Lock()
		defer vs.mu.Unlock()
		return vs.m[h.cluster].snapshot
	}
	before := snapshot()
	// A transaction that changes nothing the view shows moves the
	// snapshots' horizon on.
	_, err := h.db.Exec(`UPDATE nodes SET facts = '{"node": {"a": 1}}' WHERE id = $1`, nodes[1].ID)
	must(t, err)
	for range 2 {
		h.claim()
	}
	if got := vs.current.Load() - current; got != 2 {
		t.Errorf("%d of 2 claims found the kept view current", got)
	}
	// The view is as current as the last claim that found it so: the next
	// looks at the changes after that one.
	if after := snapshot(); after == before {
		t.Errorf("the view kept is still under its first snapshot %s", before)
	}
	if got := vs.reads.Load() - reads + vs.refreshes.Load(); got != 0 {
		t.Errorf("the view was read %d times more with nothing changed", got)
	}
	other := nodes[0].ID
	_, err = h.db.Exec(`UPDATE nodes SET hostname = 'moved.example' WHERE id = $1`, other)
	must(t, err)
	current = vs.current.Load()
	next := h.claim()
	if got := next.Nodes[other].Hostname; got != "moved.example" {
		t.Errorf("after a change the payload shows %s as %q, want moved.example", other, got)
	}
	if vs.current.Load() != current {
		t.Error("a claim after a change found the old view current")
	}
	_, err = h.db.Exec(`DELETE FROM nodes WHERE id = $1`, other)
	must(t, err)
	last := h.claim()
	if _, ok := last.Nodes[other]; ok || len(last.Nodes) != 5 {
		t.Errorf("after deleting %s the payload has %d nodes (it among them: %v)", other, len(last.Nodes), ok)
	}
}

// The removals a claim looks at are kept while their cluster lives and
// pruned once it has ended.
func TestPruneNodeRemovals(t *testing.T) {
	h := newHarness(t, fast)
	nodes := independent(h.nodes(3))
	h.submit(planner.StartServices, nodes, startOnly())
	_, err := h.db.Exec(`DELETE FROM nodes WHERE id = $1`, nodes[0].ID)
	must(t, err)
	count := func() (n int) {
		must(t, h.db.Get(&n, `SELECT count(*) FROM node_removals WHERE cluster_id = $1`, h.cluster))
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d removals recorded, want 1", n)
	}
	if _, err := h.engine().PruneNodeRemovals(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("a live cluster's removals pruned: %d left, want 1", n)
	}
	_, err = h.db.Exec(`UPDATE clusters SET status = 'TERMINATED' WHERE id = $1`, h.cluster)
	must(t, err)
	if _, err := h.engine().PruneNodeRemovals(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("an ended cluster's removals kept: %d, want 0", n)
	}
}
