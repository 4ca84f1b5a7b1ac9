package graph

import (
	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
)

func checkModel(c *control.Check) *model.ClusterCheck {
	out := &model.ClusterCheck{At: c.At, JobID: c.Report.Job, Healthy: c.Report.Healthy, Nodes: []*model.NodeCheck{}}
	for _, n := range c.Report.Nodes {
		nc := &model.NodeCheck{NodeID: n.ID, Nodenum: n.NodeNum, Hostname: n.Hostname, Reachable: n.Reachable,
			Findings: []*model.CheckFinding{}, Unchecked: append([]string{}, n.Unchecked...)}
		for _, f := range n.Findings {
			nc.Findings = append(nc.Findings, &model.CheckFinding{Kind: model.CheckFindingKind(f.Kind), Service: f.Service, Detail: f.Detail})
		}
		out.Nodes = append(out.Nodes, nc)
	}
	return out
}
