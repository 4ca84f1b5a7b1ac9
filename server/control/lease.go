package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/store"
)

// SetExpireTime moves a cluster's lease end (docs/operations.md#cluster-leases).
func (s *Service) SetExpireTime(ctx context.Context, p store.Principal, id string, t time.Time) (*Cluster, error) {
	if _, err := s.Get(ctx, p, id); err != nil {
		return nil, err
	}
	err := s.tx(ctx, func(tx *sqlx.Tx) error {
		var c struct {
			Status   engine.ClusterState `db:"status"`
			Created  time.Time           `db:"created_at"`
			ExpireAt *time.Time          `db:"expire_at"`
			Snapshot []byte              `db:"snapshot"`
		}
		if err := tx.GetContext(ctx, &c, `SELECT status, created_at, expire_at, snapshot FROM clusters WHERE id = $1 FOR UPDATE`, id); err != nil {
			return err
		}
		if c.Status == engine.ClusterPending || c.Status == engine.ClusterTerminated {
			return fmt.Errorf("%w: cluster %s is %s; its lease can change when it is not PENDING or TERMINATED", ErrConflict, id, c.Status)
		}
		if t.Before(c.Created) {
			return invalid("expireTime", "must not be before the cluster's creation (%s)", c.Created.UTC().Format(time.RFC3339))
		}
		var snap snapshot
		if err := json.Unmarshal(c.Snapshot, &snap); err != nil {
			return err
		}
		if a := snap.Template.Administration; a != nil && a.LeaseDuration.Max != 0 {
			maxAt := c.Created.Add(time.Duration(a.LeaseDuration.Max) * time.Millisecond)
			if t.After(maxAt) {
				return invalid("expireTime", "the template allows a lease up to %s after creation: at most %s",
					time.Duration(a.LeaseDuration.Max)*time.Millisecond, maxAt.UTC().Format(time.RFC3339))
			}
			if step := time.Duration(a.LeaseDuration.Step) * time.Millisecond; step > 0 && c.ExpireAt != nil && t.Sub(*c.ExpireAt) > step {
				return invalid("expireTime", "the template extends a lease by at most %s at a time: at most %s",
					step, c.ExpireAt.Add(step).UTC().Format(time.RFC3339))
			}
		}
		_, err := tx.ExecContext(ctx, `UPDATE clusters SET expire_at = $2, updated_at = now() WHERE id = $1`, id, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.Get(ctx, p, id)
}

// ExpireDue requests the deletion of every cluster whose lease has ended, as
// its owner would (docs/operations.md#cluster-leases), and returns how many it
// started. PENDING clusters wait for their job; a cluster another server is
// deleting at the same moment is skipped.
func (s *Service) ExpireDue(ctx context.Context, log *slog.Logger) (int, error) {
	var due []struct {
		ID     string `db:"id"`
		Tenant string `db:"tenant_id"`
		Name   string `db:"tenant_name"`
		Owner  string `db:"owner"`
	}
	if err := s.db.SelectContext(ctx, &due, `SELECT c.id, c.tenant_id, t.name AS tenant_name, c.owner
		FROM clusters c JOIN tenants t ON t.id = c.tenant_id
		WHERE c.expire_at < now() AND c.status IN ('ACTIVE', 'INCOMPLETE', 'INCONSISTENT') ORDER BY c.expire_at`); err != nil {
		return 0, err
	}
	started := 0
	for _, c := range due {
		p := store.Principal{TenantID: c.Tenant, TenantName: c.Name, User: c.Owner, Role: store.RoleAdmin, Kind: store.TokenUser}
		job, err := s.Delete(ctx, p, c.ID, "", nil)
		switch {
		case errors.Is(err, ErrConflict), errors.Is(err, engine.ErrConflict):
			continue
		case err != nil:
			log.Warn("lease janitor: delete", "cluster", c.ID, "err", err)
			continue
		case job != nil:
			started++
			log.Info("lease ended: deleting cluster", "cluster", c.ID, "job", job.ID)
		}
	}
	return started, nil
}
