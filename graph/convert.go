package graph

import (
	"encoding/json"
	"strings"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/store"
)

func kindOf(k model.CatalogKind) catalog.Kind { return catalog.Kind(strings.ToLower(string(k))) }

func kindName(k catalog.Kind) model.CatalogKind { return model.CatalogKind(strings.ToUpper(string(k))) }

func entityModel(tenant string, e *catalog.Entity, version int) (*model.CatalogEntity, error) {
	var doc any
	if err := json.Unmarshal(e.Raw, &doc); err != nil {
		return nil, err
	}
	return &model.CatalogEntity{Tenant: tenant, Kind: kindName(e.Kind), Name: e.Name, Version: version, Document: doc}, nil
}

func issues(is catalog.Issues) []*model.Issue {
	out := make([]*model.Issue, len(is))
	for i, x := range is {
		out[i] = &model.Issue{Path: x.Path, Message: x.Message, Severity: severity(x)}
	}
	return out
}

func roleOf(r string) model.Role {
	if r == store.RoleAdmin {
		return model.RoleAdmin
	}
	return model.RoleUser
}

func userModel(u store.User) *model.User {
	return &model.User{Name: u.Name, Role: roleOf(u.Role), CreatedAt: u.CreatedAt}
}

func tokenModel(t store.Token) *model.APIToken {
	kind := model.APITokenKindUser
	if t.Kind == store.TokenAgent {
		kind = model.APITokenKindAgent
	}
	return &model.APIToken{ID: t.ID, Name: t.Name, Kind: kind, User: t.User, Agents: t.Agents, CreatedAt: t.CreatedAt,
		LastUsedAt: t.LastUsedAt, RevokedAt: t.RevokedAt}
}

func settings(in model.TenantInput) (store.TenantSettings, error) {
	if in.Workers != nil && *in.Workers < 0 {
		return store.TenantSettings{}, invalid("input.workers", "must be ≥ 0 (got %d)", *in.Workers)
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"maxClusters", in.MaxClusters}, {"maxNodes", in.MaxNodes}} {
		if f.v != nil && *f.v < -1 {
			return store.TenantSettings{}, invalid("input."+f.name, "must be ≥ 0, or -1 for unlimited (got %d)", *f.v)
		}
	}
	return store.TenantSettings{Description: in.Description, Workers: in.Workers, MaxClusters: in.MaxClusters, MaxNodes: in.MaxNodes}, nil
}

// isCursor reports whether s can be a clusters page's endCursor: a
// cluster id, decimal digits.
func isCursor(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
