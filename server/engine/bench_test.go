package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/queue"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
)

// BenchmarkEndToEnd runs no-op tasks through Postgres, Redis and
// claim/finish with 1, 10 and 100 concurrent claimers: a START_SERVICES job
// over 2,000 nodes is 2,000 independent tasks. A claimer is a claim loop as
// an agent runs one per tenant: slots=1 claims one task and finishes it
// before claiming again; slots=N asks in each claim for up to one task per
// free slot of its N, and each task's finish frees its slot. It reports
// tasks/s and the enqueue-to-claim latency (p50, p99) measured in Postgres.
func BenchmarkEndToEnd(b *testing.B) {
	const nodes = 2000
	for _, c := range []struct{ claimers, slots int }{{1, 1}, {10, 1}, {100, 1}, {1, 16}, {10, 16}, {100, 16}} {
		b.Run(fmt.Sprintf("claimers=%d/slots=%d", c.claimers, c.slots), func(b *testing.B) {
			st := storetest.New(b)
			rdb, prefix := queuetest.New(b)
			q := queue.New(rdb, queue.Options{Prefix: prefix})
			db := st.DB()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ten, err := st.EnsureTenant(ctx, "bench")
			must(b, err)
			eng := New(db, q, Config{})
			go func() { _ = eng.Run(ctx) }()
			svc := &catalog.Service{Base: catalog.Base{Name: "s"}}
			svc.Provisioner.Actions = map[string]catalog.Action{"start": {Type: "shell"}}
			services := map[string]*catalog.Service{"s": svc}
			ns := make([]planner.Node, nodes)
			for i := range ns {
				ns[i] = planner.Node{ID: fmt.Sprintf("n%d", i), NodeNum: 1000 + i, Services: []string{"s"}}
			}
			p, err := planner.Build(&planner.Request{Action: planner.StartServices, Services: services, Nodes: ns})
			must(b, err)

			var total atomic.Int64
			var elapsed time.Duration
			b.ResetTimer()
			for range b.N {
				var cluster string
				must(b, db.GetContext(ctx, &cluster, `INSERT INTO clusters (tenant_id, name, status) VALUES ($1, 'c', 'ACTIVE') RETURNING id`, ten.ID))
				start := time.Now()
				if _, err := eng.Submit(ctx, JobSpec{TenantID: ten.ID, ClusterID: cluster, Action: planner.StartServices, Plan: p, Services: services}); err != nil {
					b.Fatal(err)
				}
				var done atomic.Int64
				var wg sync.WaitGroup
				for range c.claimers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := benchClaimer(ctx, eng, ten.ID, c.slots, &done, nodes); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
				total.Add(nodes)
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Load())/elapsed.Seconds(), "tasks/s")
			p50, p99 := queuedToClaimed(b, db)
			// In a backlog this is mostly the wait for a free claimer.
			b.ReportMetric(p50, "backlog-p50-ms")
			b.ReportMetric(p99, "backlog-p99-ms")
		})
	}
}

// benchClaimer is one claim loop with n slots until done reaches total:
// each claim asks for a task for every free slot, and each claimed task is
// finished (a no-op run) on its own, freeing its slot, while the loop
// claims again for whatever is free.
func benchClaimer(ctx context.Context, eng *Engine, tenant string, n int, done *atomic.Int64, total int64) error {
	free := make(chan int, n)
	for i := range n {
		free <- i
	}
	errs := make(chan error, n)
	var running sync.WaitGroup
	defer running.Wait()
	for done.Load() < total {
		var slots []int
		select {
		case s := <-free:
			slots = append(slots, s)
		case err := <-errs:
			return err
		}
	more:
		for {
			select {
			case s := <-free:
				slots = append(slots, s)
			default:
				break more
			}
		}
		as, err := eng.ClaimTasks(ctx, ClaimRequest{TenantID: tenant, AgentID: "bench", Slots: slots, Wait: 100 * time.Millisecond})
		if err != nil {
			return err
		}
		used := map[int]bool{}
		for _, a := range as {
			used[a.Slot] = true
			running.Add(1)
			go func() {
				defer running.Done()
				if err := eng.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, Result{}); err != nil {
					errs <- err
					return
				}
				done.Add(1)
				free <- a.Slot
			}()
		}
		for _, s := range slots {
			if !used[s] {
				free <- s
			}
		}
	}
	return nil
}

// benchEngine runs an engine over a fresh schema and stream prefix, with
// tenant "bench", until the benchmark ends.
func benchEngine(b *testing.B) (*sqlx.DB, *Engine, string) {
	st := storetest.New(b)
	rdb, prefix := queuetest.New(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	ten, err := st.EnsureTenant(ctx, "bench")
	must(b, err)
	eng := New(st.DB(), queue.New(rdb, queue.Options{Prefix: prefix}), Config{})
	go func() { _ = eng.Run(ctx) }()
	return st.DB(), eng, ten.ID
}

// queuedToClaimed is the time from each task's dispatch (its QUEUED event)
// to its claim, as Postgres recorded them.
func queuedToClaimed(b *testing.B, db *sqlx.DB) (p50, p99 float64) {
	var lat struct {
		P50 float64 `db:"p50"`
		P99 float64 `db:"p99"`
	}
	must(b, db.Get(&lat, `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50,
		percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) AS p99
		FROM (SELECT extract(epoch FROM a.claimed_at - e.created_at) * 1000 AS ms
			FROM task_attempts a JOIN events e ON e.task_id = a.task_id AND e.attempt = a.attempt
			AND e.kind = 'task' AND e.state = 'QUEUED') x`))
	return lat.P50, lat.P99
}

// BenchmarkClaimLatency measures enqueue-to-claim with an idle claimer
// waiting: one node with many services runs their STARTs one at a time, so
// each finish lets the scheduler queue the next task while the claimer
// waits. It reports the dispatch-to-claim time Postgres recorded and the
// finish-to-next-claim time the claimer saw, p50 and p99.
func BenchmarkClaimLatency(b *testing.B) {
	const tasks = 300
	ctx := context.Background()
	db, eng, tenant := benchEngine(b)
	services := map[string]*catalog.Service{}
	names := make([]string, tasks)
	for i := range names {
		names[i] = fmt.Sprintf("s%03d", i)
		svc := &catalog.Service{Base: catalog.Base{Name: names[i]}}
		svc.Provisioner.Actions = map[string]catalog.Action{"start": {Type: "shell"}}
		services[names[i]] = svc
	}
	p, err := planner.Build(&planner.Request{Action: planner.StartServices, Services: services,
		Nodes: []planner.Node{{ID: "n1", NodeNum: 1000, Services: names}}})
	must(b, err)
	var gaps []time.Duration
	b.ResetTimer()
	for range b.N {
		var cluster string
		must(b, db.GetContext(ctx, &cluster, `INSERT INTO clusters (tenant_id, name, status) VALUES ($1, 'c', 'ACTIVE') RETURNING id`, tenant))
		if _, err := eng.Submit(ctx, JobSpec{TenantID: tenant, ClusterID: cluster, Action: planner.StartServices, Plan: p, Services: services}); err != nil {
			b.Fatal(err)
		}
		var finished time.Time
		for n := 0; n < tasks; {
			a, err := eng.Claim(ctx, ClaimRequest{TenantID: tenant, AgentID: "bench", Wait: 5 * time.Second})
			must(b, err)
			if a == nil {
				b.Fatal("no task within 5 s")
			}
			if n > 0 {
				gaps = append(gaps, time.Since(finished))
			}
			must(b, eng.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, Result{}))
			finished = time.Now()
			n++
		}
	}
	b.StopTimer()
	p50, p99 := queuedToClaimed(b, db)
	b.ReportMetric(p50, "queued-claimed-p50-ms")
	b.ReportMetric(p99, "queued-claimed-p99-ms")
	slices.Sort(gaps)
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "finish-claim-p50-ms")
	b.ReportMetric(float64(gaps[len(gaps)*99/100].Microseconds())/1000, "finish-claim-p99-ms")
}

// BenchmarkClaimBigCluster claims and finishes, one at a time, the START
// tasks of a 1,000-node cluster whose nodes carry names, addresses and
// facts, as they do after a create: each claim reads the cluster's view for
// the payload, so this is the cost of a claim as a cluster grows.
func BenchmarkClaimBigCluster(b *testing.B) {
	const nodes = 1000
	ctx := context.Background()
	db, eng, tenant := benchEngine(b)
	services := startOnly()
	var cluster string
	must(b, db.GetContext(ctx, &cluster, `INSERT INTO clusters (tenant_id, name, status, config, snapshot)
		VALUES ($1, 'big', 'ACTIVE', '{"web": {"port": 8080, "peers": "%host.service.s%"}}',
			'{"services": {"s": {"name": "s", "provisioner": {"actions": {"start": {"type": "shell", "fields": {"script": "true"}}}}}}}')
		RETURNING id`, tenant))
	ns := make([]planner.Node, nodes)
	for i := range ns {
		ns[i] = planner.Node{ID: fmt.Sprintf("n%04d", i), NodeNum: 1000 + i, Services: []string{"s"}}
	}
	_, err := db.ExecContext(ctx, `INSERT INTO nodes (id, cluster_id, nodenum, hostname, services, ipaddresses, facts)
		SELECT 'n' || lpad(g::text, 4, '0'), $1, 1000 + g, 'node' || g || '.big.example.com', '{s}',
			jsonb_build_object('access_v4', '10.0.' || (g / 250) || '.' || (g % 250 + 2)),
			jsonb_build_object('node', jsonb_build_object('os', 'debian', 'release', '12', 'kernel', '6.1.0-28-amd64',
				'cpus', 4, 'memory_mb', 16384, 'disks', jsonb_build_array('/dev/vda', '/dev/vdb'),
				'interfaces', jsonb_build_object('eth0', '10.0.' || (g / 250) || '.' || (g % 250 + 2)), 'uptime_seconds', 12345 + g))
		FROM generate_series(0, $2 - 1) g`, cluster, nodes)
	must(b, err)
	p, err := planner.Build(&planner.Request{Action: planner.StartServices, Services: services, Nodes: ns})
	must(b, err)
	b.ResetTimer()
	var done int
	var elapsed time.Duration
	for range b.N {
		start := time.Now()
		job, err := eng.Submit(ctx, JobSpec{TenantID: tenant, ClusterID: cluster, Action: planner.StartServices, Plan: p, Services: services})
		if err != nil {
			b.Fatal(err)
		}
		for n := 0; n < nodes; n++ {
			a, err := eng.Claim(ctx, ClaimRequest{TenantID: tenant, AgentID: "bench", Wait: 5 * time.Second})
			must(b, err)
			if a == nil {
				b.Fatal("no task within 5 s")
			}
			if len(a.Nodes) != nodes || a.Node == nil || a.Node.Facts == nil {
				b.Fatalf("payload has %d nodes and own node %+v, want %d nodes and the own node's facts", len(a.Nodes), a.Node, nodes)
			}
			must(b, eng.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, Result{}))
			done++
		}
		elapsed += time.Since(start)
		// The next job may start once the scheduler has settled this one.
		for state := JobState(""); state != JobComplete; time.Sleep(10 * time.Millisecond) {
			must(b, db.GetContext(ctx, &state, `SELECT state FROM jobs WHERE id = $1`, job))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(done)/elapsed.Seconds(), "tasks/s")
}
