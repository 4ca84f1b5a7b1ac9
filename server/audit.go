package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cooprhq/coopr/audit"
	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/store"
)

// withClientAddress notes the request's client address for the audit log.
func withClientAddress(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(audit.WithAddress(r.Context(), clientAddress(r))))
	})
}

// auditMutations gives every mutation field of a user (not an agent's
// task protocol) an audit entry (docs/audit.md): written by the
// transaction that commits its change, or afterwards with its error code
// when it failed.
func (s *Server) auditMutations(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	oc := graphql.GetOperationContext(ctx)
	if oc == nil || oc.Operation == nil || oc.Operation.Operation != ast.Mutation {
		return next(ctx)
	}
	p, ok := auth.FromContext(ctx)
	if !ok || p.Kind != store.TokenUser {
		return next(ctx)
	}
	fc := graphql.GetRootFieldContext(ctx)
	// A preview is a mutation only to keep it off GET: it changes nothing.
	if fc == nil || strings.HasPrefix(fc.Field.Name, "preview") {
		return next(ctx)
	}
	ctx = audit.Begin(ctx, audit.Entry{TenantID: p.TenantID, Tenant: p.TenantName, User: p.User, TokenID: p.TokenID,
		Address: audit.Address(ctx), Operation: fc.Field.Name, Args: audit.Pick(fc.Field.ArgumentMap(oc.Variables))})
	before := len(graphql.GetErrors(ctx))
	res := next(ctx)
	var code, message string
	failed := false
	for _, e := range graphql.GetErrors(ctx)[before:] {
		if len(e.Path) == 1 && e.Path[0] == ast.PathName(fc.Field.Alias) {
			failed = true
			code, _ = e.Extensions["code"].(string)
			message = e.Message
			break
		}
	}
	if err := audit.Finish(ctx, s.store.DB(), code, message, failed); err != nil {
		s.log.ErrorContext(ctx, "audit: record mutation", "operation", fc.Field.Name, "err", err)
	}
	return res
}
