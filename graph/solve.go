package graph

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
)

// draftFile names the draft in catalog issues, so that the cross-reference
// issues about it can be told from those about the stored catalog.
const draftFile = "(draft)"

// solveDraft solves a template document that is not stored: the web UI's
// template builder asks as the admin edits (docs/ui.md#template-builder).
// It reads the catalog the way a create does, with the draft in place of
// any stored template of its name, and stores nothing.
func (r *Resolver) solveDraft(ctx context.Context, p store.Principal, doc any, size int) (*model.TemplateSolve, error) {
	maxSize := control.DefaultMaxClusterSize
	if r.Control != nil && r.Control.MaxClusterSize > 0 {
		maxSize = r.Control.MaxClusterSize
	}
	if size < 1 || size > maxSize {
		return nil, invalid("size", "must be from 1 to %d (got %d)", maxSize, size)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, invalid("template", "not JSON: %v", err)
	}
	v, is := catalog.ParseEntity(catalog.KindClusterTemplate, "", data)
	if err := is.Err(); err != nil {
		return nil, err
	}
	t := v.(*catalog.Template)
	c, err := r.Store.ExportCatalog(ctx, p.TenantName)
	if err != nil {
		return nil, err
	}
	c.Put(&catalog.Entity{Kind: catalog.KindClusterTemplate, Name: t.Name, File: draftFile, Raw: data, Value: t})
	// Only the draft's own issues count: the stored catalog was checked
	// when it was written.
	var mine catalog.Issues
	for _, i := range c.Check() {
		if i.File == draftFile {
			i.File = "" // messages name the field, not a file the admin never saw
			mine = append(mine, i)
		}
	}
	if err := mine.Err(); err != nil {
		return nil, err
	}
	out := &model.TemplateSolve{Layout: []*model.LayoutGroup{}, Warnings: issues(append(is.Warnings(), mine.Warnings()...))}
	merged, err := catalog.Merge(t.Name, c.ClusterTemplates(), c.PartialTemplates())
	if err != nil {
		out.Failure = &model.SolveFailure{Code: solver.KindInvalidCatalog.Code(), Message: err.Error(), Reasons: []string{}}
		return out, nil
	}
	// The cluster's name and number only make host names, which the
	// builder does not show.
	sol, err := solver.Solve(solver.Request{Template: merged, Catalog: solver.FromCatalog(c), Size: size},
		solver.Cluster{ID: "0", Name: "draft", DNSSuffix: "local"})
	var se *solver.Error
	switch {
	case errors.As(err, &se):
		reasons := se.Reasons
		if reasons == nil {
			reasons = []string{}
		}
		out.Failure = &model.SolveFailure{Code: se.Kind.Code(), Message: se.Message, Reasons: reasons}
		return out, nil
	case err != nil:
		return nil, err
	}
	for _, e := range sol.Layout {
		out.Layout = append(out.Layout, &model.LayoutGroup{Count: e.Count, Hardwaretype: e.HardwareType,
			Imagetype: e.ImageType, Services: e.Services})
	}
	return out, nil
}
