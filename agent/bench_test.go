package agent_test

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkAgentRestart measures tasks through the whole product: the
// agent claiming and finishing over the GraphQL API, the server, Postgres
// and Redis, with a driver that does nothing. Each iteration restarts
// every service of a 40-node lamp cluster (a STOP then a START per service
// per node) and waits for the cluster to be ACTIVE again, as polled every
// 50 ms; it reports the job's tasks per second with the agent's slots all
// on the tenant. The job runs in four stages, one after another (the web
// servers stop, then the database; it starts, then the web servers).
func BenchmarkAgentRestart(b *testing.B) {
	for _, slots := range []int{1, 16} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			e := setup(b)
			e.s.Must(e.s.Super, `mutation($n: Int!) { updateTenant(name: "acme", input: {name: "acme", workers: $n}) { id } }`,
				map[string]any{"n": slots}, &struct{}{})
			e.startAgentWith(b, &scripted{runs: map[string]int{}}, time.Second, slots)
			var cr struct{ CreateCluster struct{ ID string } }
			e.s.Must(e.admin, `mutation { createCluster(input: {name: "bench", clusterTemplate: "lamp", numMachines: 40}) { id } }`, nil, &cr)
			id := cr.CreateCluster.ID
			waitStatus(b, e, id, "ACTIVE")
			var tasks int
			var elapsed time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				var op struct{ RunOperation struct{ ID string } }
				e.s.Must(e.admin, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: RESTART_SERVICES}) { id } }`,
					map[string]any{"id": id}, &op)
				waitStatus(b, e, id, "ACTIVE")
				elapsed += time.Since(start)
				var n int
				if err := e.s.Srv.Store().DB().Get(&n, `SELECT count(*) FROM tasks WHERE job_id = $1`, op.RunOperation.ID); err != nil {
					b.Fatal(err)
				}
				tasks += n
			}
			b.StopTimer()
			b.ReportMetric(float64(tasks)/elapsed.Seconds(), "tasks/s")
			b.ReportMetric(float64(tasks)/float64(b.N), "tasks/job")
		})
	}
}
