package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/planner"
	"github.com/lib/pq"
)

// errorLog keeps what the engine logged at warning level and above.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(_ context.Context, lv slog.Level) bool { return lv >= slog.LevelWarn }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler            { return l }
func (l *errorLog) WithGroup(string) slog.Handler                 { return l }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	l.mu.Lock()
	l.msgs = append(l.msgs, s)
	l.mu.Unlock()
	return nil
}

func isDeadlock(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// deadlocks reads the database's deadlock count. Other tests share the
// database, so the test only reports its change; the verdict comes from
// the errors its own calls got.
func (h *harness) deadlocks() int64 {
	var n int64
	must(h.t, h.db.Get(&n, `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`))
	return n
}

// Hundreds of tasks of several jobs finish at the same moment, some with
// facts (the transactional path), while their agents heartbeat and drop
// the claims they finished: nothing deadlocks, and each job is settled
// (complete, its cluster ACTIVE) by the time its last finish returns. The
// scheduler is stopped before the finishes, so no note, reap or
// reconcile can be what settles them: the finishes must.
func TestConcurrentFinishesSettleAtOnceWithoutDeadlock(t *testing.T) {
	logs := &errorLog{}
	cfg := Config{LeaseTTL: time.Minute, ReapInterval: time.Hour, ReconcileInterval: time.Hour, Logger: slog.New(logs)}
	h := newHarness(t, cfg)
	// Enough sessions for many transactions at once, few enough to leave
	// the shared database's connections to the other tests.
	h.db.SetMaxOpenConns(12)
	const clusters, perJob, agents = 4, 60, 4
	var jobs []string
	for c := range clusters {
		if c > 0 {
			must(t, h.db.Get(&h.cluster, `INSERT INTO clusters (tenant_id, name, status) VALUES ($1, $2, 'ACTIVE') RETURNING id`,
				h.tenant, fmt.Sprintf("c%d", c+1)))
		}
		job, _ := h.submit(planner.StartServices, independent(h.nodes(perJob)), startOnly())
		jobs = append(jobs, job)
	}
	ctx := context.Background()
	type claim struct {
		a     *Assignment
		agent string
	}
	var claims []claim
	slots := make([]int, 64)
	for i := range slots {
		slots[i] = i
	}
	for i := 0; len(claims) < clusters*perJob; i++ {
		agent := fmt.Sprintf("a%d", i%agents)
		as, err := h.engine().ClaimTasks(ctx, ClaimRequest{TenantID: h.tenant, AgentID: agent, Slots: slots, Wait: 2 * time.Second})
		must(t, err)
		if len(as) == 0 {
			t.Fatalf("claimed %d of %d tasks", len(claims), clusters*perJob)
		}
		for _, a := range as {
			claims = append(claims, claim{a, agent})
		}
	}
	h.stop()

	// Each agent's heartbeat lists what it holds, in the reverse of id
	// order, and fails (Abandon) what it no longer lists, as the API's
	// heartbeat does.
	var mu sync.Mutex
	held := map[string]map[string]*Assignment{}
	for _, c := range claims {
		if held[c.agent] == nil {
			held[c.agent] = map[string]*Assignment{}
		}
		held[c.agent][c.a.TaskID] = c.a
	}
	var errs []error
	fail := func(what string, err error) {
		mu.Lock()
		errs = append(errs, fmt.Errorf("%s: %w", what, err))
		mu.Unlock()
	}
	before := h.deadlocks()
	stop := make(chan struct{})
	var beats sync.WaitGroup
	for i := range agents {
		agent := fmt.Sprintf("a%d", i)
		beats.Add(1)
		go func() {
			defer beats.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				var refs []ClaimRef
				var keep []string
				for _, a := range held[agent] {
					refs = append(refs, ClaimRef{TaskID: a.TaskID, Attempt: a.Attempt, Token: a.ClaimToken})
					keep = append(keep, a.TaskID)
				}
				mu.Unlock()
				slices.SortFunc(refs, func(a, b ClaimRef) int { return strings.Compare(b.TaskID, a.TaskID) })
				if _, err := h.engine().Heartbeat(ctx, agent, refs); err != nil {
					fail("heartbeat", err)
				}
				if n, err := h.engine().Abandon(ctx, agent, keep, 0); err != nil {
					fail("abandon", err)
				} else if n > 0 {
					fail("abandon", fmt.Errorf("failed %d claims the agent holds", n))
				}
			}
		}()
	}
	start := make(chan struct{})
	var finishes sync.WaitGroup
	for i, c := range claims {
		finishes.Add(1)
		go func() {
			defer finishes.Done()
			var r Result
			switch i % 3 {
			case 0:
				r.Facts = map[string]any{"n": i}
			case 1:
				r.Hostname = fmt.Sprintf("host%d", i)
			}
			<-start
			if err := h.engine().Finish(ctx, c.a.TaskID, c.a.Attempt, c.a.ClaimToken, r); err != nil {
				fail("finish "+c.a.TaskID, err)
			}
			mu.Lock()
			delete(held[c.agent], c.a.TaskID)
			mu.Unlock()
		}()
	}
	close(start)
	finishes.Wait()
	// Read before the heartbeats stop: settled by the finishes themselves.
	var states []struct {
		ID      string       `db:"id"`
		State   JobState     `db:"state"`
		Settled bool         `db:"settled"`
		Status  ClusterState `db:"status"`
	}
	must(t, h.db.Select(&states, `SELECT j.id, j.state, j.settled, c.status FROM jobs j JOIN clusters c ON c.id = j.cluster_id
		WHERE j.id = ANY($1) ORDER BY j.id`, pq.Array(jobs)))
	close(stop)
	beats.Wait()

	for _, err := range errs {
		if isDeadlock(err) {
			t.Errorf("deadlock: %v", err)
		} else {
			t.Error(err)
		}
	}
	for _, m := range logs.msgs {
		t.Errorf("engine logged: %s", m)
	}
	if len(states) != clusters {
		t.Fatalf("%d jobs, want %d", len(states), clusters)
	}
	for _, s := range states {
		if s.State != JobComplete || !s.Settled || s.Status != ClusterActive {
			t.Errorf("job %s is %s (settled %v, cluster %s) once its last task finished; want COMPLETE, settled, ACTIVE",
				s.ID, s.State, s.Settled, s.Status)
		}
	}
	t.Logf("database deadlock count went up by %d while the test ran (other tests share the database)", h.deadlocks()-before)
}
