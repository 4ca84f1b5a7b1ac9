package engine

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/wire"
)

// ClaimRequest asks for the next task of a tenant for one agent slot.
type ClaimRequest struct {
	TenantID string
	AgentID  string
	Slot     int
	// Slots, when set, asks for up to one task per slot listed in the one
	// claim (an agent claiming for all its free slots of a tenant at once);
	// Slot is then unused.
	Slots []int
	Wait  time.Duration // long poll; at most 20 s is sensible
}

func (r ClaimRequest) slots() []int {
	if len(r.Slots) > 0 {
		return r.Slots
	}
	return []int{r.Slot}
}

// Assignment is a claimed task: the agent runs it and finishes it with the
// claim token before the lease (renewed by heartbeats) or the timeout ends.
type Assignment struct {
	TaskID         string          `json:"taskId"`
	JobID          string          `json:"jobId"`
	ClusterID      string          `json:"clusterId"`
	TenantID       string          `json:"tenantId"`
	Attempt        int             `json:"attempt"`
	ClaimToken     string          `json:"claimToken"`
	Slot           int             `json:"-"` // the requesting slot it is for
	LeaseExpiresAt time.Time       `json:"leaseExpiresAt"`
	TimeoutAt      time.Time       `json:"timeoutAt"`
	TaskName       string          `json:"taskName"` // the action, upper case
	Action         planner.Action  `json:"-"`
	Service        *ServicePayload `json:"service"` // nil for node-level tasks
	Node           *NodePayload    `json:"node"`    // nil for cluster-scoped tasks
	TimeoutSeconds int             `json:"timeoutSeconds"`
	// Cluster carries the config, expanded for this node in service tasks
	// and as written in node-level ones.
	Cluster ClusterPayload `json:"cluster"`
	// Nodes is every node of the cluster by id, as the records stand at
	// claim time, for the tasks that need them: service tasks and
	// NETWORK_CONFIGURE (needsView); nil for the others.
	Nodes map[string]*NodePayload `json:"nodes"`
	// ResourceGeneration is the tenant's plugin resource generation the
	// job pinned (docs/task-protocol.md#plugin-resources); the API lists the
	// resources in the payload.
	ResourceGeneration int `json:"-"`
	// ContextKey is the cluster's ContextKey as the claim read it.
	ContextKey string `json:"-"`
}

// ClusterPayload is the cluster a task belongs to.
type ClusterPayload struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Owner  string `json:"owner"`
	Config any    `json:"config"`
}

// ServicePayload and NodePayload are the payload's service and node
// (docs/task-protocol.md#payload) as the wire package defines them for the
// agent; the API encodes them as they are.
type (
	ServicePayload = wire.Service
	NodePayload    = wire.Node
)

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}
