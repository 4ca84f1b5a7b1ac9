package graph

import (
	"context"

	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/store"
)

// caller is the user behind the request. Agent tokens serve the agent API
// only.
func caller(ctx context.Context) (store.Principal, error) {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return p, errUnauthenticated
	}
	if p.Kind != store.TokenUser {
		return p, forbidden("agent tokens may only call the agent API")
	}
	return p, nil
}

// admin is a caller with the tenant-admin role (or the superadmin).
func admin(ctx context.Context, what string) (store.Principal, error) {
	p, err := caller(ctx)
	if err == nil && !p.Admin() {
		err = forbidden("%s needs the tenant admin role; user %q is a plain user", what, p.User)
	}
	return p, err
}

// superadmin is the superadmin caller.
func superadmin(ctx context.Context, what string) (store.Principal, error) {
	p, err := caller(ctx)
	if err == nil && !p.Superadmin() {
		err = forbidden("%s is for the superadmin (the admin of tenant %q)", what, store.SuperadminTenant)
	}
	return p, err
}
