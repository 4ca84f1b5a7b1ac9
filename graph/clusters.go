package graph

import (
	"context"
	"strconv"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/solver"
)

func createRequest(in model.ClusterInput, expectedPlanHash *string) (control.CreateRequest, error) {
	req := control.CreateRequest{Name: in.Name, Template: in.ClusterTemplate, Size: in.NumMachines, Services: in.Services}
	for _, f := range []struct {
		dst *string
		src *string
	}{{&req.Description, in.Description}, {&req.Provider, in.Provider}, {&req.HardwareType, in.Hardwaretype},
		{&req.ImageType, in.Imagetype}, {&req.DNSSuffix, in.DNSSuffix}, {&req.InitialLease, in.InitialLeaseDuration},
		{&req.ExpectedPlanHash, expectedPlanHash}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	if in.MergeConfig != nil {
		req.MergeConfig = *in.MergeConfig
	}
	var err error
	if req.Config, err = object("input.config", in.Config); err != nil {
		return req, err
	}
	req.ProviderFields, err = object("input.providerFields", in.ProviderFields)
	return req, err
}

// configChanges is the API's form of config differences.
func configChanges(changes []control.ConfigChange) []*model.ConfigChange {
	out := []*model.ConfigChange{}
	for _, c := range changes {
		out = append(out, &model.ConfigChange{Path: c.Path, Kind: model.ConfigChangeKind(c.Kind), Old: c.Old, New: c.New})
	}
	return out
}

// object is a JSON argument that must be an object; absent is nil.
func object(field string, v any) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, invalid(field, "must be a JSON object")
	}
	return m, nil
}

func previewModel(pv *control.Preview) *model.ClusterPreview {
	out := &model.ClusterPreview{Template: pv.Template, Provider: pv.Provider, Services: pv.Services, PlanHash: pv.PlanHash,
		Warnings: pv.Warnings, Config: pv.Config, ConfigChanges: configChanges(pv.ConfigChanges)}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, n := range pv.Nodes {
		out.Nodes = append(out.Nodes, previewNode(n))
	}
	out.Tasks, out.Edges, out.Stages = planModel(pv.Plan, func(t planner.Task) int { return t.NodeNum })
	out.Capacity = capacityModel(pv.Capacity)
	q := pv.Quota
	out.Quota = &model.QuotaUse{MaxClusters: q.MaxClusters, MaxNodes: q.MaxNodes, Clusters: q.Clusters, Nodes: q.Nodes,
		AddClusters: q.AddClusters, AddNodes: q.AddNodes}
	return out
}

func capacityModel(u *control.CapacityUse) *model.ProviderCapacity {
	if u == nil {
		return nil
	}
	return &model.ProviderCapacity{Provider: u.Provider, Pool: u.Pool, Nodes: u.Nodes, Used: u.Used, Free: u.Free(),
		Requested: u.Requested}
}

func (r *mutationResolver) control(ctx context.Context, id string, c control.JobControl) (*control.Job, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return r.Control.Control(ctx, p, id, c)
}

func opRequest(in model.OperationInput, expectedPlanHash *string) (control.OpRequest, error) {
	req := control.OpRequest{Op: control.Operation(in.Operation), Services: in.Services, Nodes: in.Nodes}
	if in.Replace != nil {
		req.Replace = *in.Replace
	}
	if in.NumMachines != nil {
		req.Size = *in.NumMachines
	}
	if expectedPlanHash != nil {
		req.ExpectedPlanHash = *expectedPlanHash
	}
	var err error
	if req.Config, err = object("input.config", in.Config); err != nil {
		return req, err
	}
	req.ProviderFields, err = object("input.providerFields", in.ProviderFields)
	return req, err
}

func opPreviewModel(op *control.OpPlan) *model.OperationPreview {
	out := &model.OperationPreview{Action: string(op.Action), PlanHash: op.PlanHash, Added: []*model.PreviewNode{},
		Removed: []int{}, Changed: []*model.NodeChange{}}
	if op.Config != nil {
		out.Config = op.Config
	}
	out.ConfigChanges = configChanges(op.ConfigChanges)
	for _, n := range op.Added {
		out.Added = append(out.Added, previewNode(n))
	}
	for _, n := range op.Removed {
		out.Removed = append(out.Removed, n.NodeNum)
	}
	for _, c := range op.Changed {
		out.Changed = append(out.Changed, &model.NodeChange{Nodenum: c.NodeNum, Add: c.Add})
	}
	out.Tasks, out.Edges, out.Stages = planModel(op.Plan, func(t planner.Task) int { return op.NodeNum(t.Node) })
	out.Capacity = capacityModel(op.Capacity)
	out.Sync = syncModel(op.Sync)
	return out
}

// planModel renders a plan for a preview: tasks are referred to as
// t<index>, nodes by number.
func planModel(p *planner.Plan, nodeNum func(planner.Task) int) (tasks []*model.PlanTask, edges, stages [][]string) {
	ref := func(i int) string { return "t" + strconv.Itoa(i) }
	for i, t := range p.Tasks {
		pt := &model.PlanTask{Ref: ref(i), Action: t.Action.String(), Service: t.Service, Stage: t.Stage}
		if t.Node != "" {
			num := nodeNum(t)
			pt.Nodenum = &num
		}
		tasks = append(tasks, pt)
	}
	edges = make([][]string, len(p.Edges))
	for i, e := range p.Edges {
		edges[i] = []string{ref(int(e[0])), ref(int(e[1]))}
	}
	stages = make([][]string, len(p.Stages))
	for i, st := range p.Stages {
		stages[i] = make([]string, len(st))
		for j, t := range st {
			stages[i][j] = ref(t)
		}
	}
	return tasks, edges, stages
}

func previewNode(n solver.Node) *model.PreviewNode {
	return &model.PreviewNode{Nodenum: n.NodeNum, Hostname: n.Hostname, Services: n.Services,
		Hardwaretype: n.HardwareType, Imagetype: n.ImageType, Flavor: n.Flavor, Image: n.Image}
}
