// Package graph is the GraphQL API: gqlgen's generated executor
// (generated.go, model/) and the resolvers, which check the caller's rights
// and call the store, the solver, the planner and the engine.
package graph

//go:generate go tool gqlgen generate

import (
	"log/slog"

	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/events"
	"github.com/cooprhq/coopr/store"
)

// Resolver holds what every resolver needs.
type Resolver struct {
	Store   *store.Store
	Control *control.Service
	Hub     *events.Hub
	Log     *slog.Logger
}
