package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cooprhq/coopr/planner"
	"github.com/lib/pq"
)

// A small job of a tenant does not wait for the whole of a big job of the
// same tenant queued before it: the big job has at most its share in
// flight, so the small job's tasks queue behind that share, not behind
// every task of the big one.
func TestSmallJobIsNotStarvedByBigJob(t *testing.T) {
	h := newHarness(t, fast)
	ctx := context.Background()
	_, err := h.db.Exec(`UPDATE tenants SET workers = 2 WHERE id = $1`, h.tenant)
	must(t, err)
	const big = 400
	bigJob, _ := h.submit(planner.StartServices, independent(h.nodes(big)), startOnly())
	h.agent("a", 2, func(*Assignment, int) (Result, time.Duration) { return Result{}, 2 * time.Millisecond })

	completed := func(job string) int {
		var n int
		must(t, h.db.Get(&n, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state = 'COMPLETE'`, job))
		return n
	}
	waitFor(t, func() bool { return completed(bigJob) >= 10 })

	var small string
	must(t, h.db.GetContext(ctx, &small, `INSERT INTO clusters (tenant_id, name, status) VALUES ($1, 'c2', 'ACTIVE') RETURNING id`, h.tenant))
	var nodes []planner.Node
	for i := range 2 {
		id := fmt.Sprintf("%s-s%d", small[:8], i)
		_, err := h.db.Exec(`INSERT INTO nodes (id, cluster_id, nodenum, services) VALUES ($1, $2, $3, $4)`, id, small, 1000+i, pq.Array([]string{"s"}))
		must(t, err)
		nodes = append(nodes, planner.Node{ID: id, NodeNum: 1000 + i, Services: []string{"s"}})
	}
	p, err := planner.Build(&planner.Request{Action: planner.StartServices, Services: startOnly(), Nodes: nodes})
	must(t, err)
	// Counted at the submit, not at the wait's 10: a loaded machine runs
	// the agent on while this goroutine writes the nodes and plans.
	before := completed(bigJob)
	smallJob, err := h.engine().Submit(ctx, JobSpec{TenantID: h.tenant, ClusterID: small, Action: planner.StartServices, Plan: p, Services: startOnly()})
	must(t, err)

	var bigDone int
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state JobState
		must(t, h.db.Get(&state, `SELECT state FROM jobs WHERE id = $1`, smallJob))
		if state == JobComplete {
			bigDone = completed(bigJob)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("small job is %s after 30 s\n%s", state, h.dump())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The share is 32 tasks (2 workers, at least minJobShare): the small
	// job's two tasks queue behind at most that many of the big job's.
	if limit := before + 2*minJobShare; bigDone > limit {
		t.Errorf("the small job completed only after %d of the big job's %d tasks, %d of them before its submit (want at most %d)",
			bigDone, big, before, limit)
	}
	t.Logf("the small job completed after %d of the big job's %d tasks, %d of them before its submit", bigDone, big, before)
}
