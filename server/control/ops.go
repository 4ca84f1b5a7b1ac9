package control

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
)

// Operation names the operations on a live cluster.
type Operation string

// Operations (docs/planner.md#cluster-operations).
const (
	OpConfigure            Operation = "CONFIGURE"
	OpConfigureWithRestart Operation = "CONFIGURE_WITH_RESTART"
	OpStartServices        Operation = "START_SERVICES"
	OpStopServices         Operation = "STOP_SERVICES"
	OpRestartServices      Operation = "RESTART_SERVICES"
	OpAddServices          Operation = "ADD_SERVICES"
	OpScale                Operation = "SCALE"
	OpCheck                Operation = "CHECK"
	OpRepair               Operation = "REPAIR"
	OpReplaceNode          Operation = "REPLACE_NODE"
	OpRebootNode           Operation = "REBOOT_NODE"
	OpSyncTemplate         Operation = "SYNC_TEMPLATE"
)

// OpRequest is an operation on a live cluster.
type OpRequest struct {
	Op               Operation
	Services         []string       // the service filter; for ADD_SERVICES the services to add
	Config           map[string]any // CONFIGURE: merged into the config (mergeConfig), or with Replace replacing it
	Replace          bool           // CONFIGURE: Config is the whole new config
	Size             int            // SCALE: the new node count
	ExpectedPlanHash string
	ProviderFields   map[string]any // as on create: docs/operations.md#provider-fields
	// Nodes (ids, numbers or host names): for SCALE, nodes a scale-in
	// must remove; for REPLACE_NODE, the nodes to replace.
	Nodes []string
}

// OpPlan is what an operation will do.
type OpPlan struct {
	Action   planner.ClusterAction
	Plan     *planner.Plan
	PlanHash string
	Added    []solver.Node
	Removed  []solver.ExistingNode
	Changed  []solver.NodeChange
	// Config is the config the cluster gets (CONFIGURE; else nil), and
	// ConfigChanges what differs from the one it has.
	Config        map[string]any
	ConfigChanges []ConfigChange
	// Capacity is the provider's room a scale-out takes (nil for other
	// operations, or when the provider's driver declares none).
	Capacity *CapacityUse
	// Sync is what SYNC_TEMPLATE changes besides nodes and config (nil
	// for other operations).
	Sync      *SyncInfo
	hosts     map[string]int // node id -> nodenum, for previews
	snap      *snapshot
	sensitive map[string]any // provider fields to seal, replacing the stored ones
	services  []string       // cluster services afterwards
	size      int
}

// NodeNum is the number of a node the plan names.
func (o *OpPlan) NodeNum(id string) int { return o.hosts[id] }

// from lists the cluster statuses each operation starts from.
var from = map[Operation][]engine.ClusterState{
	OpConfigure:            {engine.ClusterActive, engine.ClusterInconsistent},
	OpConfigureWithRestart: {engine.ClusterActive, engine.ClusterInconsistent},
	OpStartServices:        {engine.ClusterActive}, OpStopServices: {engine.ClusterActive}, OpRestartServices: {engine.ClusterActive},
	OpAddServices: {engine.ClusterActive}, OpScale: {engine.ClusterActive},
	OpCheck: {engine.ClusterActive, engine.ClusterInconsistent}, OpRepair: {engine.ClusterActive, engine.ClusterInconsistent},
	OpReplaceNode: {engine.ClusterActive, engine.ClusterInconsistent}, OpRebootNode: {engine.ClusterActive, engine.ClusterInconsistent},
	OpSyncTemplate: {engine.ClusterActive},
}

// planOp checks and plans an operation inside tx, which holds the
// cluster's row lock.
func (s *Service) planOp(ctx context.Context, tx *sqlx.Tx, p store.Principal, id string, req OpRequest) (*OpPlan, error) {
	c, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, err
	}
	allowed, ok := from[req.Op]
	if !ok {
		return nil, invalid("operation", "unknown operation %q", req.Op)
	}
	if len(req.Nodes) > 0 && req.Op != OpScale && req.Op != OpReplaceNode && req.Op != OpRebootNode {
		return nil, invalid("nodes", "only SCALE, REPLACE_NODE and REBOOT_NODE take nodes (%s was asked)", req.Op)
	}
	if req.Replace && req.Op != OpConfigure && req.Op != OpConfigureWithRestart {
		return nil, invalid("replace", "only CONFIGURE and CONFIGURE_WITH_RESTART take replace (%s was asked)", req.Op)
	}
	var raw, rawConfig []byte
	var status engine.ClusterState
	var maxNodeNum int
	var busy string // the running job and its action, while PENDING
	if err := tx.QueryRowxContext(ctx, `SELECT c.snapshot, c.status, c.config, c.max_nodenum,
			coalesce((SELECT j.id::text || ' (' || j.action || ')' FROM jobs j WHERE j.id = c.latest_job_id), '')
		FROM clusters c WHERE c.id = $1 FOR UPDATE`, id).
		Scan(&raw, &status, &rawConfig, &maxNodeNum, &busy); err != nil {
		return nil, err
	}
	if !slices.Contains(allowed, status) {
		if status == engine.ClusterPending && busy != "" {
			return nil, fmt.Errorf("%w: cluster %s is busy with job %s; %s needs it %v: wait for that job to end", ErrConflict, id, busy, req.Op, allowed)
		}
		return nil, fmt.Errorf("%w: cluster %s is %s; %s needs it %v", ErrConflict, id, status, req.Op, allowed)
	}
	snap := &snapshot{}
	if err := json.Unmarshal(raw, snap); err != nil {
		return nil, fmt.Errorf("cluster %s snapshot: %w", id, err)
	}
	nodes, err := s.Nodes(ctx, id)
	if err != nil {
		return nil, err
	}
	existing := make([]solver.ExistingNode, len(nodes))
	pnodes := make([]planner.Node, len(nodes))
	out := &OpPlan{snap: snap, hosts: map[string]int{}, services: c.Services, size: c.Size}
	for i, n := range nodes {
		existing[i] = solver.ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services,
			HardwareType: n.HardwareType, ImageType: n.ImageType}
		pnodes[i] = planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services}
		out.hosts[n.ID] = n.NodeNum
	}
	if err := s.opFields(ctx, tx, p, id, snap, req.ProviderFields, out); err != nil {
		return nil, err
	}
	network := snap.Provider != nil && snap.Provider.Network != nil
	preq := &planner.Request{Services: snap.Services, Nodes: pnodes, Network: network, PlannedServices: req.Services}
	switch req.Op {
	case OpCheck, OpRepair, OpReplaceNode, OpRebootNode:
		if err := s.planCheckRepair(ctx, tx, c, req, nodes, maxNodeNum, preq, out); err != nil {
			return nil, err
		}
	case OpConfigure, OpConfigureWithRestart:
		if req.Config == nil {
			return nil, invalid("config", "CONFIGURE needs a config: the changes to merge into the cluster's (a null removes a key), or with replace the whole new config")
		}
		var current map[string]any
		if err := json.Unmarshal(rawConfig, &current); err != nil {
			return nil, fmt.Errorf("cluster %s config: %w", id, err)
		}
		cfg := req.Config
		if !req.Replace {
			cfg = mergeConfig(current, req.Config)
		}
		if cfg, err = normalJSON(cfg); err != nil {
			return nil, err
		}
		// The macros checked are those of the config the cluster will have.
		if err := checkMacros("config", cfg); err != nil {
			return nil, err
		}
		out.Config, out.ConfigChanges = cfg, diffConfig(current, cfg)
		preq.Action, preq.PlannedServices = planner.ClusterConfigure, nil
		if req.Op == OpConfigureWithRestart {
			preq.Action = planner.ClusterConfigureWithRestart
		}
	case OpSyncTemplate:
		if err := s.planSync(ctx, p, c, snap, rawConfig, existing, preq, out); err != nil {
			return nil, err
		}
	case OpStartServices, OpStopServices, OpRestartServices:
		for _, sv := range req.Services {
			if !slices.Contains(c.Services, sv) {
				return nil, invalid("services", "the cluster has no service %q (it has %v)", sv, []string(c.Services))
			}
		}
		preq.Action = map[Operation]planner.ClusterAction{OpStartServices: planner.StartServices,
			OpStopServices: planner.StopServices, OpRestartServices: planner.RestartServices}[req.Op]
	case OpAddServices, OpScale:
		cat, err := s.store.ExportCatalog(ctx, p.TenantName)
		if err != nil {
			return nil, err
		}
		sc := solver.FromCatalog(cat)
		// Services the cluster has keep the definitions it was built with.
		for name, def := range snap.Services {
			sc.Services[name] = def
		}
		var u *solver.Update
		if req.Op == OpAddServices {
			if len(req.Services) == 0 {
				return nil, invalid("services", "name the services to add")
			}
			u, err = solver.AddServices(solver.AddRequest{Template: snap.Template, Catalog: sc, Nodes: existing, Add: req.Services})
		} else {
			if req.Size < 1 {
				return nil, invalid("numMachines", "must be at least 1 (got %d)", req.Size)
			}
			if req.Size > s.MaxClusterSize {
				return nil, fmt.Errorf("%w: numMachines %d is over this server's cap of %d", ErrQuota, req.Size, s.MaxClusterSize)
			}
			if req.Size == len(nodes) {
				return nil, invalid("numMachines", "the cluster already has %d nodes", req.Size)
			}
			if grow := req.Size - len(nodes); grow > 0 {
				// Refused before solving and planning; checked again under
				// the locks once planned.
				if _, err := s.checkQuota(ctx, s.db, p, grow, false); err != nil {
					return nil, err
				}
				if _, err := s.checkCapacity(ctx, s.db, snap.Provider, id, grow); err != nil {
					return nil, err
				}
			}
			var remove []string
			if remove, err = resolveNodes("nodes", nodes, req.Nodes); err != nil {
				return nil, err
			}
			u, err = solver.Scale(solver.ScaleRequest{Template: snap.Template, Catalog: sc, Provider: c.Provider,
				Cluster: solver.Cluster{ID: id, Name: c.Name, DNSSuffix: c.DNSSuffix}, Nodes: existing, Size: req.Size,
				NextNodeNum: maxNodeNum + 1, Remove: remove})
		}
		if err != nil {
			return nil, err
		}
		out.Added, out.Removed, out.Changed, out.services = u.Added, u.Removed, u.Changed, u.Services
		if len(u.Added) > 0 {
			// A scale-out reserves its new size when accepted; a scale-in
			// lowers it when its job completes (docs/operations.md#quotas).
			out.size = req.Size
		}
		svcs := map[string]*catalog.Service{}
		for _, name := range u.Services {
			svcs[name] = sc.Services[name]
		}
		for _, n := range u.Removed {
			for _, name := range n.Services {
				svcs[name] = sc.Services[name]
			}
		}
		snap.Services = svcs
		preq.Services = svcs
		preq.Nodes = preq.Nodes[:0]
		for _, n := range u.Nodes {
			preq.Nodes = append(preq.Nodes, planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services})
			out.hosts[n.ID] = n.NodeNum
		}
		switch {
		case req.Op == OpAddServices:
			preq.Action = planner.AddServices
			for _, ch := range u.Changed {
				preq.PlannedNodes = append(preq.PlannedNodes, ch.NodeID)
			}
		case len(u.Added) > 0:
			preq.Action, preq.PlannedServices = planner.ScaleOut, nil
			for _, n := range u.Added {
				preq.NewNodes = append(preq.NewNodes, n.ID)
			}
		default:
			preq.Action, preq.PlannedServices = planner.ScaleIn, nil
			for _, n := range u.Removed {
				preq.RemovedNodes = append(preq.RemovedNodes, n.ID)
				preq.Nodes = append(preq.Nodes, planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services})
				out.hosts[n.ID] = n.NodeNum
			}
		}
	}
	plan, err := planner.Build(preq)
	if err != nil {
		return nil, err
	}
	out.Action, out.Plan, out.PlanHash = preq.Action, plan, plan.Hash()
	if req.ExpectedPlanHash != "" && req.ExpectedPlanHash != out.PlanHash {
		return nil, fmt.Errorf("%w: the plan differs from the one expected (plan hash %s, expected %s): preview again",
			ErrConflict, out.PlanHash, req.ExpectedPlanHash)
	}
	return out, nil
}

// PreviewOp plans an operation without running it.
func (s *Service) PreviewOp(ctx context.Context, p store.Principal, id string, req OpRequest) (*OpPlan, error) {
	var out *OpPlan
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		out, err = s.planOp(ctx, tx, p, id, req)
		if err != nil {
			return err
		}
		if grow := len(out.Added) - len(out.Removed); grow > 0 {
			_, err = s.checkQuota(ctx, tx, p, grow, false)
		}
		if err == nil && len(out.Added) > 0 {
			// A preview checks, reserving nothing: no capacity lock.
			out.Capacity, err = s.checkCapacity(ctx, s.db, out.snap.Provider, id, len(out.Added))
		}
		return err
	})
	return out, err
}

// RunOp plans and submits an operation.
func (s *Service) RunOp(ctx context.Context, p store.Principal, id string, req OpRequest) (*Job, error) {
	var jobID string
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		op, err := s.planOp(ctx, tx, p, id, req)
		if err != nil {
			return err
		}
		if len(op.Added) > 0 {
			// The quota counts what the cluster grows by: a replacement
			// (REPAIR, REPLACE_NODE) does not, though the new node and the
			// one it replaces live side by side for a while. The
			// provider's room, a real resource, counts both.
			if grow := len(op.Added) - len(op.Removed); grow > 0 {
				if _, err := s.checkQuota(ctx, tx, p, grow, false); err != nil {
					return err
				}
			}
			if _, err := s.checkCapacity(ctx, tx, op.snap.Provider, id, len(op.Added)); err != nil {
				return err
			}
			if err := insertNodes(ctx, tx, id, op.Added); err != nil {
				return err
			}
		}
		for _, ch := range op.Changed {
			if _, err := tx.ExecContext(ctx, `UPDATE nodes SET services = ARRAY(SELECT DISTINCT unnest(services || $2::text[]) ORDER BY 1)
				WHERE id = $1`, ch.NodeID, pq.Array(ch.Add)); err != nil {
				return err
			}
		}
		snap, err := json.Marshal(op.snap)
		if err != nil {
			return err
		}
		var cfg any
		if op.Config != nil {
			b, err := json.Marshal(op.Config)
			if err != nil {
				return err
			}
			cfg = string(b)
		}
		if err := s.creds.Put(ctx, tx, id, nsProviderFields, op.sensitive); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE clusters SET services = $2, size = $3, snapshot = $4,
			config = coalesce($5::jsonb, config), updated_at = now() WHERE id = $1`,
			id, pq.Array(op.services), op.size, snap, cfg); err != nil {
			return err
		}
		jobID, err = s.engine.SubmitTx(ctx, tx, engine.JobSpec{TenantID: p.TenantID, ClusterID: id, Action: op.Action,
			Plan: op.Plan, Services: op.snap.Services})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.engine.Submitted(jobID)
	return s.Job(ctx, p, jobID)
}

// opFields applies an operation's provider fields
// (docs/operations.md#provider-fields): they are filtered and checked like a
// create's, with the stored sensitive fields counting when the request gives
// none; accepted public fields join the cluster's copy of the provider,
// sensitive ones replace the stored ones.
func (s *Service) opFields(ctx context.Context, tx *sqlx.Tx, p store.Principal, id string, snap *snapshot, given map[string]any, out *OpPlan) error {
	if snap.Provider == nil {
		return nil
	}
	e, _, err := s.store.Entity(ctx, p.TenantName, catalog.KindProviderType, snap.Provider.ProviderType, 0)
	if err != nil {
		return fmt.Errorf("provider type of the cluster's provider: %w", err)
	}
	pt, ok := e.Value.(*catalog.PluginType)
	if !ok {
		return fmt.Errorf("provider type %q: stored as %T", snap.Provider.ProviderType, e.Value)
	}
	stored, err := s.creds.Get(ctx, tx, id)
	if err != nil {
		return err
	}
	f, err := applyProviderFields(pt, withoutLost(snap.Provider, stored[nsProviderAdmin]), given, stored[nsProviderFields])
	if err != nil {
		return err
	}
	if len(f.sensitive) > 0 && !s.creds.Enabled() {
		return fmt.Errorf("providerFields: %w", credentials.ErrNoKey)
	}
	snap.Provider = withPublic(snap.Provider, f.public)
	out.sensitive = f.sensitive
	return nil
}
