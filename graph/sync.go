package graph

import (
	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
)

// syncModel renders what a template sync changes (nil for other operations).
func syncModel(s *control.SyncInfo) *model.TemplateSync {
	if s == nil {
		return nil
	}
	out := &model.TemplateSync{FromVersion: s.FromVersion, ToVersion: s.ToVersion, AddServices: []string{},
		KeptServices: []string{}, ConstraintChanges: []*model.TemplateChange{}}
	out.AddServices = append(out.AddServices, s.Add...)
	out.KeptServices = append(out.KeptServices, s.Kept...)
	for _, c := range s.Changes {
		tc := &model.TemplateChange{Path: c.Path}
		if c.Old != "" {
			tc.Old = &c.Old
		}
		if c.New != "" {
			tc.New = &c.New
		}
		out.ConstraintChanges = append(out.ConstraintChanges, tc)
	}
	return out
}
