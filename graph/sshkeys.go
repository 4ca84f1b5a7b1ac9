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
	return true, nil
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
