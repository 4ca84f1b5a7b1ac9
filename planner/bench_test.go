package planner

import (
	"fmt"
	"testing"
)

// BenchmarkPlanHadoop plans CLUSTER_CREATE of the test catalog's
// hadoop-distributed template (testdata/catalog), as the solver lays it
// out. Target: ≤ 200 ms at 1,000 nodes.
func BenchmarkPlanHadoop(b *testing.B) {
	c := testCatalog(b)
	services := c.Services()
	for _, n := range []int{10, 100, 1000} {
		nodes, err := solvedNodes(b, c, "hadoop-distributed", n)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			var p *Plan
			for b.Loop() {
				if p, err = Build(&Request{Action: ClusterCreate, Services: services, Nodes: nodes, Network: true}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Tasks)), "tasks")
			b.ReportMetric(float64(len(p.Edges)), "edges")
			b.ReportMetric(float64(len(p.Stages)), "stages")
		})
	}
}
