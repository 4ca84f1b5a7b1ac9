package graph

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/cooprhq/coopr/audit"
	"github.com/cooprhq/coopr/store"
)

type auditQuery struct {
	first           *int
	before, tenant  *string
	user, operation *string
	failed          *bool
	since, until    *time.Time
}

func (r *Resolver) auditLog(ctx context.Context, q auditQuery) ([]*audit.Record, error) {
	p, err := admin(ctx, "reading the audit log")
	if err != nil {
		return nil, err
	}
	f := audit.Filter{TenantID: p.TenantID, Failed: q.failed, Limit: 50}
	if q.tenant != nil {
		if !p.Superadmin() && *q.tenant != p.TenantName {
			return nil, forbidden("another tenant's audit log is for the superadmin; leave tenant out to read %q's", p.TenantName)
		}
		t, err := r.Store.Tenant(ctx, *q.tenant)
		if errors.Is(err, store.ErrNotFound) {
			return nil, notFound("tenant", "no tenant %q", *q.tenant)
		}
		if err != nil {
			return nil, err
		}
		f.TenantID = t.ID
	} else if p.Superadmin() {
		f.TenantID, f.AllTenants = "", true
	}
	if q.first != nil {
		f.Limit = *q.first
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return nil, invalid("first", "must be 1 to 1000 (got %d)", f.Limit)
	}
	if q.before != nil {
		n, err := strconv.ParseInt(*q.before, 10, 64)
		if err != nil || n < 1 {
			return nil, invalid("before", "%q is not an audit entry id", *q.before)
		}
		f.Before = n
	}
	if q.user != nil {
		f.Actor = *q.user
	}
	if q.operation != nil {
		f.Operation = *q.operation
	}
	if q.since != nil {
		f.Since = *q.since
	}
	if q.until != nil {
		f.Until = *q.until
	}
	rs, err := audit.List(ctx, r.Store.DB(), f)
	if err != nil {
		return nil, err
	}
	out := make([]*audit.Record, len(rs))
	for i := range rs {
		out[i] = &rs[i]
	}
	return out, nil
}

func auditArgs(rec *audit.Record) (any, error) {
	var v any
	return v, json.Unmarshal(rec.Args, &v)
}

func auditID(rec *audit.Record) string { return strconv.FormatInt(rec.ID, 10) }
