// Package graph is the GraphQL API: gqlgen's generated executor
// (generated.go, model/) and the resolvers, which check the caller's rights
// and call the store, the solver, the planner and the engine.
package graph

//go:generate go tool gqlgen generate

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/cooprhq/coopr/internal/scrub"
	"github.com/cooprhq/coopr/server/control"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/events"
	"github.com/cooprhq/coopr/server/fleet"
	"github.com/cooprhq/coopr/server/webhook"
	"github.com/cooprhq/coopr/store"
)

// Resolver holds what every resolver needs.
type Resolver struct {
	Store   *store.Store
	Control *control.Service
	Hub     *events.Hub
	Engine  *engine.Engine
	Fleet   *fleet.Fleet
	// Webhooks manages the tenants' webhooks.
	Hooks *webhook.Service
	// Streams ends when the server starts shutting down: long polls stop.
	Streams context.Context
	Log     *slog.Logger
	// DriverGrace: see DefaultDriverGrace.
	DriverGrace time.Duration
	// SessionGrace: see DefaultSessionGrace.
	SessionGrace time.Duration
	// TokenRevoked, if set, hears of each token revoked through this
	// server, so that its cached authentication ends before the
	// database's notification comes round.
	TokenRevoked func(tokenID string)

	// missing remembers since when tasks have waited for a driver no live
	// agent offers (task/role/name -> time.Time).
	missing sync.Map
	// scrubs carries the scrubbing of running attempts' output between
	// chunks (see scrubChunk).
	scrubs scrub.Streams
}
