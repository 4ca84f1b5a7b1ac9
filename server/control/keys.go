package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/server/engine"
)

// KeyPush is what a change of keys started: one UPDATE_SSH_KEYS job per
// ACTIVE or INCONSISTENT cluster, and the clusters left for their next
// BOOTSTRAP.
type KeyPush struct {
	Jobs []string
	// Skipped are the clusters neither ACTIVE nor INCONSISTENT: a PENDING
	// one gets its job once its own settles, the others with their next
	// BOOTSTRAP.
	Skipped []string
}

// PushSSHKeys brings the keys of a changed profile or setting to live
// nodes (docs/operations.md#keys-on-live-clusters): it starts an
// UPDATE_SSH_KEYS job, one AUTHORIZE_KEYS task per node, on each ACTIVE or
// INCONSISTENT cluster of the tenant owned by owner, or on every one when
// owner is "" (an admin's keys with the tenant's AdminSSHKeys on, or the
// setting changed). A cluster in any other status is skipped: a job in
// flight would make it a conflict, and an INCOMPLETE one may have nodes
// never bootstrapped. A PENDING one is marked, and the janitor brings it
// the keys once its job settles (PushPendingKeys); the others get them
// with their next BOOTSTRAP. Each cluster is its own transaction, so one
// failing leaves the others' jobs.
func (s *Service) PushSSHKeys(ctx context.Context, tenantID, owner string) (KeyPush, error) {
	var out KeyPush
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, `SELECT id FROM clusters WHERE tenant_id = $1 AND ($2 = '' OR owner = $2)
		AND status NOT IN ('TERMINATED') ORDER BY id`, tenantID, owner); err != nil {
		return out, fmt.Errorf("clusters to update keys on: %w", err)
	}
	var errs []error
	for _, id := range ids {
		jobID, err := s.pushKeys(ctx, tenantID, id)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster %s: %w", id, err))
		case jobID == "":
			out.Skipped = append(out.Skipped, id)
		default:
			out.Jobs = append(out.Jobs, jobID)
			s.engine.Submitted(jobID)
		}
	}
	return out, errors.Join(errs...)
}

// pushKeys submits one cluster's UPDATE_SSH_KEYS job; "" when the
// cluster is neither ACTIVE nor INCONSISTENT.
func (s *Service) pushKeys(ctx context.Context, tenantID, id string) (string, error) {
	var jobID string
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var raw []byte
		var status engine.ClusterState
		if err := tx.QueryRowxContext(ctx, `SELECT snapshot, status FROM clusters WHERE id = $1 FOR UPDATE`, id).
			Scan(&raw, &status); err != nil {
			return err
		}
		switch status {
		case engine.ClusterActive, engine.ClusterInconsistent:
		case engine.ClusterPending:
			// A job of its own is in flight, and may not bootstrap the
			// nodes: the janitor brings the keys once it settles.
			_, err := tx.ExecContext(ctx, `UPDATE clusters SET keys_pending = true WHERE id = $1`, id)
			return err
		default:
			return nil
		}
		snap := &snapshot{}
		if err := json.Unmarshal(raw, snap); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		nodes, err := s.Nodes(ctx, id)
		if err != nil {
			return err
		}
		req := &planner.Request{Action: planner.UpdateSSHKeys, Services: snap.Services}
		for _, n := range nodes {
			req.Nodes = append(req.Nodes, planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services})
		}
		plan, err := planner.Build(req)
		if err != nil {
			return err
		}
		jobID, err = s.engine.SubmitTx(ctx, tx, engine.JobSpec{TenantID: tenantID, ClusterID: id, Action: planner.UpdateSSHKeys,
			Plan: plan, Services: snap.Services})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE clusters SET keys_pending = false WHERE id = $1`, id)
		return err
	})
	return jobID, err
}

// PushPendingKeys starts the key updates that waited for a cluster's own
// job to settle (docs/operations.md#keys-on-live-clusters). It returns
// the jobs it started; a cluster still busy waits for the next pass.
func (s *Service) PushPendingKeys(ctx context.Context) ([]string, error) {
	var due []struct {
		ID     string `db:"id"`
		Tenant string `db:"tenant_id"`
	}
	if err := s.db.SelectContext(ctx, &due, `SELECT id, tenant_id FROM clusters
		WHERE keys_pending AND status IN ('ACTIVE', 'INCONSISTENT') ORDER BY id`); err != nil {
		return nil, fmt.Errorf("clusters waiting for keys: %w", err)
	}
	var jobs []string
	var errs []error
	for _, c := range due {
		jobID, err := s.pushKeys(ctx, c.Tenant, c.ID)
		switch {
		case errors.Is(err, engine.ErrConflict):
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster %s: %w", c.ID, err))
		case jobID != "":
			jobs = append(jobs, jobID)
			s.engine.Submitted(jobID)
		}
	}
	return jobs, errors.Join(errs...)
}
