package control

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/solver"
	"github.com/cooprhq/coopr/store"
)

// Check is what a cluster's latest check found
// (docs/operations.md#checking-a-cluster).
type Check struct {
	At     time.Time
	Report planner.CheckReport
}

// LastCheck reads what the cluster's latest check found; nil when it was
// never checked.
func (s *Service) LastCheck(ctx context.Context, clusterID string) (*Check, error) {
	var row struct {
		Raw []byte     `db:"last_check"`
		At  *time.Time `db:"last_check_at"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT last_check, last_check_at FROM clusters WHERE id = $1`, clusterID)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (row.Raw == nil || row.At == nil)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := &Check{At: *row.At}
	if err := json.Unmarshal(row.Raw, &c.Report); err != nil {
		return nil, fmt.Errorf("cluster %s last check: %w", clusterID, err)
	}
	return c, nil
}

// CheckUnits are the systemd units a CHECK of job asks about on a node
// with services, by service: the units of those of its services that have
// no status action (docs/catalog.md#systemd-units). Services with none are
// left out; nil when no service has any.
func (s *Service) CheckUnits(ctx context.Context, job string, services []string) (map[string][]string, error) {
	var rows []struct {
		Name string `db:"key"`
		Raw  []byte `db:"value"`
	}
	if err := s.db.SelectContext(ctx, &rows, `SELECT s.key, s.value FROM jobs j, jsonb_each(j.services) s
		WHERE j.id = $1 AND s.key = ANY($2) AND s.value ? 'units'`, job, pq.Array(services)); err != nil {
		return nil, fmt.Errorf("job %s services: %w", job, err)
	}
	var out map[string][]string
	for _, r := range rows {
		var svc catalog.Service
		if err := json.Unmarshal(r.Raw, &svc); err != nil {
			return nil, fmt.Errorf("job %s service %s: %w", job, r.Name, err)
		}
		if units := svc.CheckUnits(); len(units) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[r.Name] = units
		}
	}
	return out, nil
}

// planCheckRepair plans CHECK, which looks at every node and service, and
// REPAIR, which acts on what the latest check found
// (docs/operations.md#repairing-a-cluster): dead nodes replaced by new
// ones with their services and types, missing services installed again,
// stopped ones started.
func (s *Service) planCheckRepair(ctx context.Context, tx *sqlx.Tx, c *Cluster, req OpRequest, nodes []Node, maxNodeNum int,
	preq *planner.Request, out *OpPlan) error {
	if len(req.Services) > 0 {
		return invalid("services", "%s acts on every service; name none", req.Op)
	}
	preq.PlannedServices = nil
	switch req.Op {
	case OpCheck:
		preq.Action = planner.ClusterCheck
		return nil
	case OpRebootNode:
		preq.Action = planner.RebootNodes
		if len(req.Nodes) == 0 {
			return invalid("nodes", "name the nodes to reboot")
		}
		ids, err := resolveNodes("nodes", nodes, req.Nodes)
		if err != nil {
			return err
		}
		preq.PlannedNodes = ids
		return nil
	case OpReplaceNode:
		preq.Action = planner.Repair
		if len(req.Nodes) == 0 {
			return invalid("nodes", "name the nodes to replace")
		}
		ids, err := resolveNodes("nodes", nodes, req.Nodes)
		if err != nil {
			return err
		}
		replaceNodes(c, nodes, ids, maxNodeNum, preq, out)
		return nil
	}
	preq.Action = planner.Repair
	var raw []byte
	if err := tx.GetContext(ctx, &raw, `SELECT coalesce(last_check, 'null') FROM clusters WHERE id = $1`, c.ID); err != nil {
		return err
	}
	var report *planner.CheckReport
	if err := json.Unmarshal(raw, &report); err != nil {
		return fmt.Errorf("cluster %s last check: %w", c.ID, err)
	}
	if report == nil {
		return fmt.Errorf("%w: cluster %s was never checked: check it first (runOperation CHECK, or coopr cluster check %s)", ErrConflict, c.ID, c.ID)
	}
	// The findings are news only until something else changes the
	// cluster: a node found dead and rebooted since must not be replaced.
	var since []string
	if err := tx.SelectContext(ctx, &since, `SELECT action FROM jobs
		WHERE cluster_id = $1 AND action NOT IN ('CLUSTER_CHECK', 'UPDATE_SSH_KEYS')
			AND created_at > (SELECT created_at FROM jobs WHERE id = $2)
		ORDER BY created_at`, c.ID, report.Job); err != nil {
		return err
	}
	if len(since) > 0 {
		return fmt.Errorf("%w: cluster %s changed since its last check (%s ran after it): check it again first (runOperation CHECK, or coopr cluster check %s)",
			ErrConflict, c.ID, strings.Join(since, ", "), c.ID)
	}
	replace, missing, stopped := planner.RepairOf(*report)
	// Findings of nodes gone since the check (a scale-in) no longer apply.
	gone := func(id string) bool {
		i := slices.IndexFunc(nodes, func(n Node) bool { return n.ID == id })
		return i < 0 || nodes[i].Leaving
	}
	replace = slices.DeleteFunc(replace, gone)
	for id := range missing {
		if gone(id) {
			delete(missing, id)
		}
	}
	for id := range stopped {
		if gone(id) {
			delete(stopped, id)
		}
	}
	preq.Missing, preq.Stopped = missing, stopped
	replaceNodes(c, nodes, replace, maxNodeNum, preq, out)
	return nil
}

// replaceNodes adds to preq and out, for each node of ids, its
// replacement: a new node with the same services and types, numbered from
// maxNodeNum+1 (numbers are never reused).
func replaceNodes(c *Cluster, nodes []Node, ids []string, maxNodeNum int, preq *planner.Request, out *OpPlan) {
	byID := map[string]Node{}
	existing := make([]solver.ExistingNode, 0, len(nodes))
	for _, n := range nodes {
		byID[n.ID] = n
		existing = append(existing, solver.ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services,
			HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	cl := solver.Cluster{ID: c.ID, Name: c.Name, DNSSuffix: c.DNSSuffix}
	next := maxNodeNum + 1
	for _, id := range ids {
		old := byID[id]
		n := solver.Replacement(cl, existing, solver.Node{ID: old.ID, NodeNum: old.NodeNum, Hostname: old.Hostname,
			Services: old.Services, HardwareType: old.HardwareType, ImageType: old.ImageType, Flavor: old.Flavor,
			Image: old.Image, SSHUser: old.SSHUser}, next)
		next++
		out.Added = append(out.Added, n)
		out.Removed = append(out.Removed, solver.ExistingNode{ID: old.ID, NodeNum: old.NodeNum, Hostname: old.Hostname,
			Services: old.Services, HardwareType: old.HardwareType, ImageType: old.ImageType})
		preq.Nodes = append(preq.Nodes, planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services})
		preq.NewNodes = append(preq.NewNodes, n.ID)
		preq.RemovedNodes = append(preq.RemovedNodes, old.ID)
		out.hosts[n.ID] = n.NodeNum
	}
}

// resolveNodes turns node references (an id, a number, a host name or
// its first label) into node ids, each once; field names the request's
// field in errors.
func resolveNodes(field string, nodes []Node, refs []string) ([]string, error) {
	var ids []string
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		var found *Node
		for i := range nodes {
			n := &nodes[i]
			short, _, _ := strings.Cut(n.Hostname, ".")
			if !n.Leaving && (n.ID == ref || strconv.Itoa(n.NodeNum) == ref || n.Hostname == ref || short == ref) {
				found = n
				break
			}
		}
		if found == nil {
			names := make([]string, 0, len(nodes))
			for _, n := range nodes {
				if !n.Leaving {
					names = append(names, fmt.Sprintf("%d %s", n.NodeNum, n.Hostname))
				}
			}
			return nil, invalid(field, "no node %q in the cluster (it has %s)", ref, strings.Join(names, ", "))
		}
		if !slices.Contains(ids, found.ID) {
			ids = append(ids, found.ID)
		}
	}
	return ids, nil
}

// CheckDue starts a check of every ACTIVE or INCONSISTENT cluster whose
// template asks for periodic checks (administration.checkinterval) and
// whose latest check is older than that, as its owner would
// (docs/operations.md#periodic-checks). It returns how many it started. A
// cluster with a job in flight waits for the next pass.
func (s *Service) CheckDue(ctx context.Context, log *slog.Logger) (int, error) {
	var due []struct {
		ID     string `db:"id"`
		Tenant string `db:"tenant_id"`
		Name   string `db:"tenant_name"`
		Owner  string `db:"owner"`
	}
	if err := s.db.SelectContext(ctx, &due, `SELECT c.id, c.tenant_id, t.name AS tenant_name, c.owner
		FROM clusters c JOIN tenants t ON t.id = c.tenant_id,
			LATERAL (SELECT (c.snapshot #>> '{template,administration,checkinterval}')::bigint AS ms) i
		WHERE c.status IN ('ACTIVE', 'INCONSISTENT') AND i.ms > 0
			AND (c.last_check_at IS NULL OR now() - c.last_check_at >= LEAST(i.ms, 31536000000) * interval '1 millisecond')
		ORDER BY c.last_check_at NULLS FIRST, c.id`); err != nil {
		return 0, err
	}
	started := 0
	for _, c := range due {
		p := store.Principal{TenantID: c.Tenant, TenantName: c.Name, User: c.Owner, Role: store.RoleAdmin, Kind: store.TokenUser}
		job, err := s.RunOp(ctx, p, c.ID, OpRequest{Op: OpCheck})
		switch {
		case errors.Is(err, ErrConflict), errors.Is(err, engine.ErrConflict):
			continue
		case err != nil:
			log.Warn("periodic check", "cluster", c.ID, "err", err)
			continue
		}
		started++
		log.Info("periodic check", "cluster", c.ID, "job", job.ID)
	}
	return started, nil
}
