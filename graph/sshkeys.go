package graph

import (
	"context"
	"errors"
	"strings"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/store"
)

// addSSHKey puts a public key on the caller's profile
// (docs/operations.md#host-keys-and-logging-in).
func (r *Resolver) addSSHKey(ctx context.Context, publicKey string, name *string) (*store.SSHKey, error) {
	p, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.User == "" {
		return nil, forbidden("SSH keys belong to users; an agent token has none")
	}
	var n string
	if name != nil {
		n = *name
	}
	if len(n) > 200 {
		return nil, invalid("name", "%d characters; at most 200", len(n))
	}
	k, err := r.Store.AddSSHKey(ctx, p.TenantID, p.User, publicKey, n)
	if errors.Is(err, store.ErrNotPublicKey) {
		return nil, invalid("publicKey", "%s", strings.TrimPrefix(err.Error(), store.ErrNotPublicKey.Error()+": "))
	}
	if errors.Is(err, store.ErrConflict) {
		return nil, invalid("publicKey", "this key is on your profile already (coopr key list shows it)")
	}
	if err != nil {
		return nil, err
	}
	r.pushKeys(ctx, p)
	return &k, nil
}

// removeSSHKey takes one of the caller's keys off the profile.
func (r *Resolver) removeSSHKey(ctx context.Context, id string) (bool, error) {
	p, err := caller(ctx)
	if err != nil {
		return false, err
	}
	if err := r.Store.RemoveSSHKey(ctx, p.TenantID, p.User, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return false, notFound("id", "no SSH key %s on your profile (coopr key list shows them)", id)
		}
		return false, err
	}
	r.pushKeys(ctx, p)
	return true, nil
}

// pushKeys brings p's changed keys to the nodes that let them in: the
// clusters p owns, or every cluster of the tenant when p is an admin and
// the tenant lets admins' keys in. The key change stands whatever happens
// here; a job that could not start is logged, and its cluster gets the
// keys with its next BOOTSTRAP.
func (r *Resolver) pushKeys(ctx context.Context, p store.Principal) {
	owner := p.User
	if p.Admin() {
		t, err := r.Store.Tenant(ctx, p.TenantName)
		if err != nil {
			r.Log.Error("ssh keys: tenant setting", "tenant", p.TenantName, "err", err)
			return
		}
		if t.AdminSSHKeys {
			owner = ""
		}
	}
	r.push(ctx, p.TenantID, owner)
}

func (r *Resolver) push(ctx context.Context, tenantID, owner string) {
	// The key change has committed: a caller gone away must not leave
	// half the clusters without it.
	push, err := r.Control.PushSSHKeys(context.WithoutCancel(ctx), tenantID, owner)
	if err != nil {
		r.Log.Error("ssh keys: update jobs", "tenant", tenantID, "owner", owner, "err", err)
	}
	if len(push.Jobs)+len(push.Skipped) > 0 {
		r.Log.Info("ssh keys: update jobs", "tenant", tenantID, "owner", owner, "jobs", push.Jobs, "skipped", push.Skipped)
	}
}

// setTenantAdminSSHKeys turns the tenant's AdminSSHKeys setting on or off
// and brings the keys it lets in, or takes out, to every ACTIVE or
// INCONSISTENT cluster (a busy one once its job settles).
func (r *Resolver) setTenantAdminSSHKeys(ctx context.Context, enabled bool) (*store.Tenant, error) {
	p, err := admin(ctx, "changing who logs in to the tenant's clusters")
	if err != nil {
		return nil, err
	}
	before, err := r.Store.Tenant(ctx, p.TenantName)
	if err != nil {
		return nil, err
	}
	t, err := r.Store.SetAdminSSHKeys(ctx, p.TenantID, enabled)
	if err != nil {
		return nil, err
	}
	if before.AdminSSHKeys != enabled {
		r.push(ctx, p.TenantID, "")
	}
	return &t, nil
}

// principalSSHKeys are the keys on the principal's profile; none for
// agents.
func (r *Resolver) principalSSHKeys(ctx context.Context, obj *model.Principal) ([]*store.SSHKey, error) {
	if obj.User == "" || obj.Tenant == nil {
		return []*store.SSHKey{}, nil
	}
	ks, err := r.Store.SSHKeys(ctx, obj.Tenant.ID, obj.User)
	if err != nil {
		return nil, err
	}
	out := make([]*store.SSHKey, len(ks))
	for i := range ks {
		out[i] = &ks[i]
	}
	return out, nil
}
