// Package drivers is the registry of the drivers an agent carries, keyed by
// role and name (docs/planner.md#actions,
// docs/task-protocol.md#agents-and-slots): vm drivers create, confirm and
// delete machines; network drivers allocate and configure addresses; node
// drivers bootstrap hosts; automators install, configure, start and stop
// services.
package drivers

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Role is what a driver does.
type Role string

// Roles.
const (
	RoleVM        Role = "vm"
	RoleNetwork   Role = "network"
	RoleNode      Role = "node"
	RoleAutomator Role = "automator"
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

// Task is a claimed task as a driver sees it: the payload of
// docs/task-protocol.md#payload.
type Task struct {
	TaskID    string          `json:"taskId"`
	JobID     string          `json:"jobId"`
	ClusterID string          `json:"clusterId"`
	TenantID  string          `json:"tenantId"`
	Attempt   int             `json:"attempt"`
	TaskName  string          `json:"taskName"` // the action, upper case
	Service   *Service        `json:"service"`
	Node      *Node           `json:"node"`
	Nodes     map[string]Node `json:"nodes"`
	Cluster   struct {
		ID     string         `json:"id"`
		Name   string         `json:"name"`
		Owner  string         `json:"owner"`
		Config map[string]any `json:"config"`
	} `json:"cluster"`
	Provider struct {
		Name         string         `json:"name"`
		ProviderType string         `json:"providertype"`
		Provisioner  map[string]any `json:"provisioner"`
		Network      map[string]any `json:"network"`
	} `json:"provider"`
	Secrets        map[string]map[string]any `json:"secrets"`
	TimeoutSeconds int                       `json:"timeoutSeconds"`
	// Resources are the plugin resources of this task's driver at the
	// job's pinned generation (docs/task-protocol.md#plugin-resources).
	Resources []Resource `json:"resources"`
	// Fetch, set by the agent, returns the path of a local, digest-verified
	// copy of one of Resources (an archive stays a .tar.gz file). Nil when
	// the runner offers no fetching: drivers then fail tasks that need one.
	Fetch func(ctx context.Context, r Resource) (path string, err error) `json:"-"`
	// LocalResources maps digests to fetched files when the task crosses
	// into an isolated task process (agent/isolation), which cannot fetch:
	// the agent fetches first. Never sent by the server.
	LocalResources map[string]string `json:"localResources,omitempty"`
}

// Resource is one version of a plugin resource, as the payload lists it.
type Resource struct {
	PluginType   string `json:"pluginType"` // providertypes or automatortypes
	Plugin       string `json:"plugin"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	Version      int    `json:"version"`
	Format       string `json:"format"`      // file, or archive: tar.gz with one top directory called Name
	Permissions  string `json:"permissions"` // octal mode for files, "" for the default
	Digest       string `json:"digest"`      // sha256:<hex>
}

// Resource finds the listed resource of a type by name.
func (t *Task) Resource(resourceType, name string) (Resource, bool) {
	for _, r := range t.Resources {
		if r.ResourceType == resourceType && r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

// FetchResource is t.Fetch, or the file the agent fetched before an
// isolated task process started; it fails when there is neither.
func (t *Task) FetchResource(ctx context.Context, r Resource) (string, error) {
	if t.Fetch != nil {
		return t.Fetch(ctx, r)
	}
	if p, ok := t.LocalResources[r.Digest]; ok && r.Digest != "" {
		return p, nil
	}
	return "", fmt.Errorf("resource %s/%s@%d: this runner cannot fetch resources", r.ResourceType, r.Name, r.Version)
}

// Service is the service action a task runs.
type Service struct {
	Name   string `json:"name"`
	Action struct {
		Type   string            `json:"type"`
		Fields map[string]string `json:"fields"`
	} `json:"action"`
}

// Node is a node of the cluster (docs/task-protocol.md#payload).
type Node struct {
	ID           string            `json:"id"`
	NodeNum      int               `json:"nodenum"`
	Hostname     string            `json:"hostname"`
	IPAddresses  map[string]string `json:"ipaddresses"`
	SSHUser      string            `json:"sshuser"`
	HardwareType string            `json:"hardwaretype"`
	ImageType    string            `json:"imagetype"`
	Flavor       string            `json:"flavor"` // the hardware type's term on this provider
	Image        string            `json:"image"`  // the image type's term on this provider
	Services     []string          `json:"services"`
	Automators   []string          `json:"automators"` // automator types of the node's services, by name
	Facts        map[string]any    `json:"facts"`      // by namespace: vm, network, node, service:<name>
}

// Decode reads a payload.
func Decode(payload json.RawMessage) (*Task, error) {
	var t Task
	if err := json.Unmarshal(payload, &t); err != nil {
		return nil, fmt.Errorf("task payload: %w", err)
	}
	return &t, nil
}

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
func RoleOf(t *Task) (Role, string) {
	switch t.TaskName {
	case "CREATE", "CONFIRM", "DELETE":
		return RoleVM, t.Provider.ProviderType
	case "NETWORK_ALLOCATE", "NETWORK_RELEASE", "NETWORK_CONFIGURE", "NETWORK_UNCONFIGURE":
		typ, _ := t.Provider.Network["type"].(string)
		return RoleNetwork, typ
	case "BOOTSTRAP":
		return RoleNode, "ssh"
	}
	if t.Service != nil {
		return RoleAutomator, t.Service.Action.Type
	}
	return RoleAutomator, ""
}
