package model

import (
	"time"

	"github.com/cooprhq/coopr/server/control"
)

// ClusterEvent is one message of clusterEvents; Cluster is resolved
// through the Cluster type's resolvers.
type ClusterEvent struct {
	Kind      EventKind
	Seq       string
	ClusterID string
	JobID     *string
	TaskID    *string
	State     string
	Attempt   *int
	Message   string
	At        time.Time
	Lagged    bool
	Cluster   *control.Cluster
}
