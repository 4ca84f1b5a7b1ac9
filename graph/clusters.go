package graph

import (
	"context"
	"strconv"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
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
	if in.Config != nil {
		cfg, ok := in.Config.(map[string]any)
		if !ok {
			return req, invalid("input.config", "must be a JSON object")
		}
		req.Config = cfg
	}
	if in.ProviderFields != nil {
		f, ok := in.ProviderFields.(map[string]any)
		if !ok {
			return req, invalid("input.providerFields", "must be a JSON object of field name to value")
		}
		req.ProviderFields = f
	}
	return req, nil
}

func previewModel(pv *control.Preview) *model.ClusterPreview {
	out := &model.ClusterPreview{Template: pv.Template, Provider: pv.Provider, Services: pv.Services, PlanHash: pv.PlanHash,
		Warnings: pv.Warnings}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	for _, n := range pv.Nodes {
		out.Nodes = append(out.Nodes, &model.PreviewNode{Nodenum: n.NodeNum, Hostname: n.Hostname, Services: n.Services,
			Hardwaretype: n.HardwareType, Imagetype: n.ImageType, Flavor: n.Flavor, Image: n.Image})
	}
	ref := func(i int) string { return "t" + strconv.Itoa(i) }
	for i, t := range pv.Plan.Tasks {
		pt := &model.PlanTask{Ref: ref(i), Action: t.Action.String(), Service: t.Service, Stage: t.Stage}
		if t.Node != "" {
			num := t.NodeNum
			pt.Nodenum = &num
		}
		out.Tasks = append(out.Tasks, pt)
	}
	out.Edges = make([][]string, len(pv.Plan.Edges))
	for i, e := range pv.Plan.Edges {
		out.Edges[i] = []string{ref(int(e[0])), ref(int(e[1]))}
	}
	out.Stages = make([][]string, len(pv.Plan.Stages))
	for i, st := range pv.Plan.Stages {
		out.Stages[i] = make([]string, len(st))
		for j, t := range st {
			out.Stages[i][j] = ref(t)
		}
	}
	return out
}

func (r *mutationResolver) control(ctx context.Context, id string, c control.JobControl) (*control.Job, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	return r.Control.Control(ctx, p, id, c)
}

func opRequest(in model.OperationInput, expectedPlanHash *string) (control.OpRequest, error) {
	req := control.OpRequest{Op: control.Operation(in.Operation), Services: in.Services}
	if in.NumMachines != nil {
		req.Size = *in.NumMachines
	}
	if in.Config != nil {
		cfg, ok := in.Config.(map[string]any)
		if !ok {
			return req, invalid("input.config", "must be a JSON object")
		}
		req.Config = cfg
	}
	if expectedPlanHash != nil {
		req.ExpectedPlanHash = *expectedPlanHash
	}
	if in.ProviderFields != nil {
		f, ok := in.ProviderFields.(map[string]any)
		if !ok {
			return req, invalid("input.providerFields", "must be a JSON object of field name to value")
		}
		req.ProviderFields = f
	}
	return req, nil
}

func opPreviewModel(op *control.OpPlan) *model.OperationPreview {
	out := &model.OperationPreview{Action: string(op.Action), PlanHash: op.PlanHash, Added: []*model.PreviewNode{},
		Removed: []int{}, Changed: []*model.NodeChange{}}
	for _, n := range op.Added {
		out.Added = append(out.Added, &model.PreviewNode{Nodenum: n.NodeNum, Hostname: n.Hostname, Services: n.Services,
			Hardwaretype: n.HardwareType, Imagetype: n.ImageType, Flavor: n.Flavor, Image: n.Image})
	}
	for _, n := range op.Removed {
		out.Removed = append(out.Removed, n.NodeNum)
	}
	for _, c := range op.Changed {
		out.Changed = append(out.Changed, &model.NodeChange{Nodenum: c.NodeNum, Add: c.Add})
	}
	ref := func(i int) string { return "t" + strconv.Itoa(i) }
	for i, t := range op.Plan.Tasks {
		pt := &model.PlanTask{Ref: ref(i), Action: t.Action.String(), Service: t.Service, Stage: t.Stage}
		if t.Node != "" {
			num := op.NodeNum(t.Node)
			pt.Nodenum = &num
		}
		out.Tasks = append(out.Tasks, pt)
	}
	out.Edges = make([][]string, len(op.Plan.Edges))
	for i, e := range op.Plan.Edges {
		out.Edges[i] = []string{ref(int(e[0])), ref(int(e[1]))}
	}
	out.Stages = make([][]string, len(op.Plan.Stages))
	for i, st := range op.Plan.Stages {
		out.Stages[i] = make([]string, len(st))
		for j, t := range st {
			out.Stages[i][j] = ref(t)
		}
	}
	return out
}
