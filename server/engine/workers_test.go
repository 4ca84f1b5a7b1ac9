package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/store/storetest"
)

// A tenant's workers bound its claims, whatever its agents say they have
// free, counted over every agent and every server: two servers serving
// claims for ten slots each at once hand out four tasks in all when the
// tenant has four workers; further claims get nothing until a finish frees
// a worker, and then one; and every task still runs, once.
func TestWorkersBoundClaims(t *testing.T) {
	cfg := Config{LeaseTTL: time.Minute}
	h := newHarness(t, cfg)
	_, err := h.db.Exec(`UPDATE tenants SET workers = 4 WHERE id = $1`, h.tenant)
	must(t, err)
	job, _ := h.submit(planner.StartServices, independent(h.nodes(10)), startOnly())
	ctx := context.Background()
	other := New(h.db, h.q, cfg) // a second server: claims only
	slots := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	waitFor(t, func() bool {
		var n int
		must(t, h.db.Get(&n, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state = 'QUEUED'`, job))
		return n == 10
	})

	var mu sync.Mutex
	var held []*Assignment
	var wg sync.WaitGroup
	for i, eng := range []*Engine{h.engine(), other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Claim until a claim gets nothing: how the entries split
			// between the servers' readers does not matter.
			for {
				as, err := eng.ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: []string{"a", "b"}[i], Slots: slots,
					Wait: 500 * time.Millisecond})
				if err != nil {
					t.Error(err)
				}
				if len(as) == 0 {
					return
				}
				mu.Lock()
				held = append(held, as...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(held) != 4 {
		t.Fatalf("claims for 20 slots got %d tasks; the tenant has 4 workers", len(held))
	}
	inProgress := func() int {
		var n int
		must(t, h.db.Get(&n, `SELECT count(*) FROM tasks WHERE job_id = $1 AND state = 'IN_PROGRESS'`, job))
		return n
	}
	for _, eng := range []*Engine{h.engine(), other} {
		as, err := eng.ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "c", Slots: []int{0, 1}, Wait: 300 * time.Millisecond})
		must(t, err)
		if len(as) > 0 {
			t.Fatalf("a claim with every worker busy got %d tasks", len(as))
		}
	}
	if n := inProgress(); n != 4 {
		t.Fatalf("%d tasks in progress, want 4", n)
	}

	// A finish frees one worker: the next claim, on either server, gets one.
	must(t, h.engine().Finish(ctx, held[0].TaskID, held[0].Attempt, held[0].ClaimToken, Result{}))
	held = held[1:]
	as, err := other.ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "c", Slots: slots, Wait: 2 * time.Second})
	must(t, err)
	if len(as) != 1 {
		t.Fatalf("after one finish a claim got %d tasks, want 1", len(as))
	}
	held = append(held, as...)

	// The entries left unclaimed were kept: every task runs once.
	ran := map[string]int{}
	for _, a := range held {
		ran[a.TaskID]++
	}
	ran[""] = 0
	delete(ran, "")
	for len(held) > 0 {
		if n := inProgress(); n > 4 {
			t.Fatalf("%d tasks in progress, over the 4 workers", n)
		}
		a := held[0]
		held = held[1:]
		must(t, h.engine().Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, Result{}))
		as, err := h.engine().ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: "a", Slots: slots, Wait: 300 * time.Millisecond})
		must(t, err)
		for _, a := range as {
			ran[a.TaskID]++
		}
		held = append(held, as...)
	}
	for id, n := range ran {
		if n != 1 {
			t.Errorf("task %s claimed %d times", id, n)
		}
	}
	if len(ran) != 9 { // the first finished one is not counted
		t.Errorf("%d tasks ran after the first, want 9", len(ran))
	}
	h.waitStatus("ACTIVE", 5*time.Second)
}

// claimRoom runs prepared: a fetcher whose tenant's workers are busy asks
// it after every finish batch, and a statement sent with arguments but not
// prepared is planned at every call. Its answers: -1 without workers, the
// workers left otherwise.
func TestClaimRoomPrepared(t *testing.T) {
	st := storetest.New(t)
	ctx := t.Context()
	ten, err := st.EnsureTenant(ctx, "acme")
	must(t, err)
	// An engine (not run) on a pool of one connection, whose prepared
	// statements the test can see.
	db := st.DB()
	db.SetMaxOpenConns(1)
	rdb, prefix := queuetest.New(t)
	e := New(db, queue.New(rdb, queue.Options{Prefix: prefix}), Config{LeaseTTL: time.Minute})
	t.Cleanup(e.Stop)
	for _, tc := range []struct{ workers, want int }{{0, -1}, {4, 4}, {0, -1}} {
		_, err := db.ExecContext(ctx, `UPDATE tenants SET workers = $2 WHERE id = $1`, ten.ID, tc.workers)
		must(t, err)
		for range 3 {
			got, err := e.claimRoom(ctx, ten.ID)
			must(t, err)
			if got != tc.want {
				t.Fatalf("claimRoom with %d workers = %d, want %d", tc.workers, got, tc.want)
			}
		}
	}
	var n int
	must(t, db.GetContext(ctx, &n, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`, claimRoomSQL))
	if n != 1 {
		t.Errorf("claimRoom's statement prepared %d times on the engine's connection, want 1", n)
	}
}
