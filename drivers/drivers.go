// Package drivers is the registry of the drivers an agent carries, keyed by
// role and name (docs/planner.md#actions,
// docs/task-protocol.md#agents-and-slots): vm drivers create, confirm and
// delete machines; network drivers allocate and configure addresses; node
// drivers bootstrap hosts; automators install, configure, start and stop
// services.
package drivers

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/cooprhq/coopr/wire"
)

// Role is what a driver does.
type Role = wire.Role

// Roles.
const (
	RoleVM        = wire.RoleVM
	RoleNetwork   = wire.RoleNetwork
	RoleNode      = wire.RoleNode
	RoleAutomator = wire.RoleAutomator
)

// Param describes one parameter of a driver: what the catalog's provider
// and automator types show and ask for.
type Param struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // text, password, select, checkbox, file, ...
	Required  bool   `json:"required,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// Descriptor is a driver's identity and parameters.
type Descriptor struct {
	Role         Role     `json:"role"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Params       []Param  `json:"params,omitempty"`
	Capabilities []string `json:"capabilities,omitempty"`
}

// The payload of a claimed task (docs/task-protocol.md#payload) and its
// parts, as the wire package defines them.
type (
	Task     = wire.Task
	Node     = wire.Node
	Service  = wire.Service
	Resource = wire.Resource
)

// Decode reads a payload.
func Decode(payload []byte) (*Task, error) { return wire.Decode(payload) }

// Result is how a driver ended a task (docs/task-protocol.md#results).
type Result struct {
	Status      int               // 0 success; 200–299 failed and nothing created
	Message     string            // one line for people
	Retryable   *bool             // nil: true
	Hostname    string            // replaces the node's, on success
	IPAddresses map[string]string // replaces the node's, on success
	Facts       map[string]any    // merged under the driver's namespace
	// Secrets go to the encrypted credential store under the driver's
	// namespace and reach later tasks' Task.Secrets; never the API.
	Secrets map[string]any
	// Unreachable says, on a failure, that the task's node is not there
	// to work on and nothing ran on it: it did not answer, it has no
	// address, or what answers at its address is another machine
	// (remote.Unreachable). Message says which. The server marks the node
	// UNREACHABLE, and skips the task instead of failing it when the plan
	// made it best-effort (cleanup inside a node being removed); a driver
	// never decides that a task may be skipped.
	Unreachable bool
}

// Output receives a running task's output, line by line.
type Output interface {
	Stdout(line string)
	Stderr(line string)
	Status(line string, percent float64)
}

// Driver runs the tasks of its role. Run must be safe to repeat
// (docs/operations.md#idempotency) and return when ctx ends (lease lost,
// cancelled, agent stopping).
type Driver interface {
	Run(ctx context.Context, t *Task, out Output) Result
}

// Registry holds drivers by role and name.
type Registry struct {
	mu      sync.RWMutex
	drivers map[Role]map[string]entry
}

type entry struct {
	desc Descriptor
	d    Driver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{drivers: map[Role]map[string]entry{}} }

// Register adds a driver; registering a role and name twice is a
// programming error.
func (r *Registry) Register(d Descriptor, drv Driver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drivers[d.Role] == nil {
		r.drivers[d.Role] = map[string]entry{}
	}
	if _, dup := r.drivers[d.Role][d.Name]; dup {
		panic(fmt.Sprintf("drivers: %s/%s registered twice", d.Role, d.Name))
	}
	r.drivers[d.Role][d.Name] = entry{desc: d, d: drv}
}

// Descriptors lists the registered drivers by role and name.
func (r *Registry) Descriptors() []Descriptor {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Descriptor
	for _, m := range r.drivers {
		for _, e := range m {
			out = append(out, e.desc)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Role != out[j].Role {
			return out[i].Role < out[j].Role
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ErrNoDriver is a task no registered driver handles.
type ErrNoDriver struct {
	Role Role
	Name string
}

func (e *ErrNoDriver) Error() string {
	return fmt.Sprintf("this agent has no %s driver named %q", e.Role, e.Name)
}

// For picks the driver of a task (docs/planner.md#actions): vm by provider
// type, network by the provider's network type, node is ssh, automators by the
// service action's type.
func (r *Registry) For(t *Task) (Driver, Descriptor, error) {
	role, name := RoleOf(t)
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.drivers[role][name]
	if !ok {
		return nil, Descriptor{}, &ErrNoDriver{Role: role, Name: name}
	}
	return e.d, e.desc, nil
}

// RoleOf names the role and driver a task needs.
func RoleOf(t *Task) (Role, string) { return t.Driver() }
