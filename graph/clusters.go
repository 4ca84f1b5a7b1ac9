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
