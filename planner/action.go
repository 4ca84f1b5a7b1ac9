// Package planner turns a cluster operation on a solved layout into a DAG of
// tasks and a stage preview, as docs/planner.md describes. It is pure: no I/O,
// no clock, no globals that change.
package planner

import (
	"fmt"
	"strings"

	"github.com/cooprhq/coopr/wire"
)

// Action is a task action (docs/planner.md#actions).
type Action uint8

// The actions. The zero value is not an action.
const (
	_ Action = iota
	NetworkAllocate
	Create
	Confirm
	NetworkConfigure
	Bootstrap
	Install
	Configure
	Initialize
	Start
	Stop
	Remove
	NetworkUnconfigure
	Delete
	NetworkRelease
	// Check and Status look without changing anything: Check reaches a
	// node and reports what it finds, Status asks a service's automator
	// whether the service runs (docs/operations.md#checking-a-cluster).
	Check
	Status
	// Reboot powers a node's machine off and on (the vm driver).
	Reboot
	// AuthorizeKeys rewrites the owner's keys in a live node's
	// authorized_keys, and nothing else (docs/operations.md#keys-on-live-clusters).
	AuthorizeKeys
	numActions
)

var actionNames = [numActions]string{
	NetworkAllocate:    "NETWORK_ALLOCATE",
	Create:             "CREATE",
	Confirm:            "CONFIRM",
	NetworkConfigure:   "NETWORK_CONFIGURE",
	Bootstrap:          "BOOTSTRAP",
	Install:            "INSTALL",
	Configure:          "CONFIGURE",
	Initialize:         "INITIALIZE",
	Start:              "START",
	Stop:               "STOP",
	Remove:             "REMOVE",
	NetworkUnconfigure: "NETWORK_UNCONFIGURE",
	Delete:             "DELETE",
	NetworkRelease:     "NETWORK_RELEASE",
	Check:              "CHECK",
	Status:             "STATUS",
	Reboot:             "REBOOT",
	AuthorizeKeys:      "AUTHORIZE_KEYS",
}

// nameRank orders actions by name, the order stages are sorted in
// (docs/planner.md#stages).
var nameRank = func() [numActions]uint8 {
	var r [numActions]uint8
	for a := Action(1); a < numActions; a++ {
		for b := Action(1); b < numActions; b++ {
			if actionNames[b] < actionNames[a] {
				r[a]++
			}
		}
	}
	return r
}()

func (a Action) String() string {
	if a == 0 || a >= numActions {
		return fmt.Sprintf("Action(%d)", uint8(a))
	}
	return actionNames[a]
}

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) {
	if a == 0 || a >= numActions {
		return nil, fmt.Errorf("planner: invalid action %d", uint8(a))
	}
	return []byte(actionNames[a]), nil
}

// UnmarshalText reads an action name, in any case.
func (a *Action) UnmarshalText(b []byte) error {
	x, ok := ParseAction(string(b))
	if !ok {
		return fmt.Errorf("unknown action %q", b)
	}
	*a = x
	return nil
}

// ParseAction reads an action name, in any case.
func ParseAction(s string) (Action, bool) {
	u := strings.ToUpper(s)
	for a := Action(1); a < numActions; a++ {
		if actionNames[a] == u {
			return a, true
		}
	}
	return 0, false
}

// NodeLevel reports whether the action belongs to a node rather than a
// service: its tasks carry service "".
func (a Action) NodeLevel() bool {
	switch a {
	case NetworkAllocate, Create, Confirm, NetworkConfigure, Bootstrap, NetworkUnconfigure, Delete, NetworkRelease, Check, Reboot,
		AuthorizeKeys:
		return true
	}
	return false
}

// ClusterScoped reports whether the action belongs to the whole cluster: its
// tasks carry node "" as well.
func (a Action) ClusterScoped() bool { return a == NetworkAllocate || a == NetworkRelease }

// BringUp reports whether the action is one the address gate waits for
// (docs/planner.md#address-gate): after it, every node's hostname and
// address are known.
func (a Action) BringUp() bool {
	switch a {
	case NetworkAllocate, Create, Confirm, NetworkConfigure, Bootstrap:
		return true
	}
	return false
}

// Role is the driver role that runs the action (docs/planner.md#actions),
// by the rule the wire package keeps for the server and the agent alike.
func (a Action) Role() string { return string(wire.RoleOf(a.String())) }

// CatalogName is the key of a service action in a service's
// provisioner.actions ("install", "start", ...); "" for node-level actions.
func (a Action) CatalogName() string {
	if a.NodeLevel() || a == 0 || a >= numActions {
		return ""
	}
	return strings.ToLower(actionNames[a])
}

func (a Action) installTime() bool { return a == Install || a == Remove }

// cleanup reports whether the action undoes something inside a node
// without freeing the machine: what a node being removed may go without.
func (a Action) cleanup() bool { return a == NetworkUnconfigure || a == Stop || a == Remove }

// probe reports whether the action only looks: a node that cannot be
// reached is a finding of the check, not a failure of its job.
func (a Action) probe() bool { return a == Check || a == Status }

// ClusterAction is a cluster operation (docs/planner.md#cluster-operations).
type ClusterAction string

// The cluster operations.
const (
	ClusterCreate               ClusterAction = "CLUSTER_CREATE"
	ClusterDelete               ClusterAction = "CLUSTER_DELETE"
	ClusterConfigure            ClusterAction = "CLUSTER_CONFIGURE"
	ClusterConfigureWithRestart ClusterAction = "CLUSTER_CONFIGURE_WITH_RESTART"
	StartServices               ClusterAction = "START_SERVICES"
	StopServices                ClusterAction = "STOP_SERVICES"
	RestartServices             ClusterAction = "RESTART_SERVICES"
	AddServices                 ClusterAction = "ADD_SERVICES"
	ScaleOut                    ClusterAction = "SCALE_OUT"
	ScaleIn                     ClusterAction = "SCALE_IN"
	// ClusterCheck looks at every node and service and changes nothing
	// (docs/operations.md#checking-a-cluster).
	ClusterCheck ClusterAction = "CLUSTER_CHECK"
	// Repair brings a cluster back to its layout: it replaces dead nodes,
	// installs missing services and starts stopped ones
	// (docs/operations.md#repairing-a-cluster).
	Repair ClusterAction = "REPAIR"
	// RebootNodes reboots the planned nodes, bootstraps them again and
	// starts their services (docs/operations.md#rebooting-a-node).
	RebootNodes   ClusterAction = "REBOOT_NODES"
	SyncTemplate  ClusterAction = "SYNC_TEMPLATE"
	UpdateSSHKeys ClusterAction = "UPDATE_SSH_KEYS"
)

// ClusterActions lists every cluster operation.
var ClusterActions = []ClusterAction{
	ClusterCreate, ClusterDelete, ClusterConfigure, ClusterConfigureWithRestart,
	StartServices, StopServices, RestartServices, AddServices, ScaleOut, ScaleIn,
	ClusterCheck, Repair, RebootNodes, SyncTemplate, UpdateSSHKeys,
}

// ParseClusterAction reads a cluster operation name, in any case.
func ParseClusterAction(s string) (ClusterAction, error) {
	u := ClusterAction(strings.ToUpper(strings.TrimSpace(s)))
	for _, a := range ClusterActions {
		if a == u {
			return a, nil
		}
	}
	names := make([]string, len(ClusterActions))
	for i, a := range ClusterActions {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown cluster action %q: use one of %s", s, strings.Join(names, ", "))
}
