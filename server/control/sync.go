package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
)

// SyncInfo is what a template sync changes besides the nodes and the config
// (docs/catalog.md#template-sync).
type SyncInfo struct {
	// FromVersion is the template version the cluster records (0: none
	// recorded, a cluster made before versions were), ToVersion the newest.
	FromVersion, ToVersion int
	// Add are the services the new version adds; Kept those it no longer
	// names, which stay on the cluster.
	Add, Kept []string
	// Changes are the constraint and compatibility changes, each one
	// satisfied by the cluster's layout.
	Changes []solver.TemplateChange
}

// planSync plans SYNC_TEMPLATE: the cluster moves to the newest version of
// its template, resolved as a create would resolve it. Services the new
// version's defaults add are placed on the existing nodes, config keys it
// changed take its values, and the constraints must hold for the layout as
// it is; solver.SyncTemplate says why when they do not.
func (s *Service) planSync(ctx context.Context, p store.Principal, c *Cluster, snap *snapshot, rawConfig []byte,
	existing []solver.ExistingNode, preq *planner.Request, out *OpPlan) error {
	cat, err := s.store.ExportCatalog(ctx, p.TenantName)
	if err != nil {
		return err
	}
	named := cat.ClusterTemplates()[c.Template]
	if named == nil {
		return fmt.Errorf("cluster template %q, which cluster %s was made from: %w (it was deleted; nothing to sync to)",
			c.Template, c.ID, ErrNotFound)
	}
	tmpl, err := catalog.Merge(c.Template, cat.ClusterTemplates(), cat.PartialTemplates())
	if err != nil {
		return invalid("clusterTemplate", "%v", err)
	}
	same, err := sameJSON(snap.Template, tmpl)
	if err != nil {
		return err
	}
	if same && named.Version == snap.TemplateVersion {
		return fmt.Errorf("%w: cluster %s is already at template %s version %d: publish a new version to sync to",
			ErrConflict, c.ID, c.Template, named.Version)
	}
	sc := solver.FromCatalog(cat)
	// Services the cluster has keep the definitions it was built with.
	for name, def := range snap.Services {
		sc.Services[name] = def
	}
	sy, err := solver.SyncTemplate(solver.SyncRequest{Old: snap.Template, New: tmpl, Catalog: sc, Nodes: existing})
	if err != nil {
		return err
	}
	var current map[string]any
	if err := json.Unmarshal(rawConfig, &current); err != nil {
		return fmt.Errorf("cluster %s config: %w", c.ID, err)
	}
	cfg, err := normalJSON(syncConfig(current, snap.Template.Defaults.Config, tmpl.Defaults.Config))
	if err != nil {
		return err
	}
	if err := checkMacros("config", cfg); err != nil {
		return err
	}
	if changes := diffConfig(current, cfg); len(changes) > 0 {
		out.Config, out.ConfigChanges = cfg, changes
	}
	out.Sync = &SyncInfo{FromVersion: snap.TemplateVersion, ToVersion: named.Version, Add: sy.Add, Kept: sy.Kept, Changes: sy.Changes}
	preq.Action, preq.PlannedServices, preq.Reconfigure = planner.SyncTemplate, nil, out.Config != nil
	if u := sy.Update; u != nil {
		out.Changed, out.services = u.Changed, u.Services
		svcs := maps.Clone(snap.Services)
		for _, name := range u.Services {
			svcs[name] = sc.Services[name]
		}
		snap.Services, preq.Services = svcs, svcs
		preq.Nodes = preq.Nodes[:0]
		for _, n := range u.Nodes {
			preq.Nodes = append(preq.Nodes, planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services})
		}
		preq.PlannedServices = sy.Add
		for _, ch := range u.Changed {
			preq.PlannedNodes = append(preq.PlannedNodes, ch.NodeID)
		}
	}
	snap.Template, snap.TemplateVersion = tmpl, named.Version
	return nil
}

// syncConfig carries a template's config change into a cluster's config:
// each top-level key whose value differs between the old and the new
// version takes the new version's value (or goes, when the new version
// dropped it); every other key keeps the cluster's value, changed by
// CONFIGURE or not. Top-level keys are the unit, as when templates are
// folded (docs/catalog.md#merge-rules).
func syncConfig(current, oldT, newT map[string]any) map[string]any {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range newT {
		if old, ok := oldT[k]; !ok || !reflect.DeepEqual(old, v) {
			out[k] = v
		}
	}
	for k := range oldT {
		if _, ok := newT[k]; !ok {
			delete(out, k)
		}
	}
	return out
}

func sameJSON(a, b any) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ja, jb), nil
}
