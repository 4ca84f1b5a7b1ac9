// Package wire is what the server and the agent say to each other about
// tasks (docs/task-protocol.md): the payload of a claimed task, the result
// an agent finishes it with, the role and driver that run it, and the
// error codes of the agent API. The server encodes a payload once, from
// these types; the agent decodes it once, into them.
package wire

import (
	"context"
	"encoding/json"
	"fmt"
)

// Error codes of the agent API (extensions.code of a GraphQL error).
const (
	// CodeStaleClaim: the claim is no longer the attempt's current one.
	CodeStaleClaim = "STALE_CLAIM"
	// CodeSlotNotAssigned: the agent claimed for a slot it does not hold.
	CodeSlotNotAssigned = "SLOT_NOT_ASSIGNED"
	// CodeAgentUnknown: the agent is not the registered incarnation.
	CodeAgentUnknown = "AGENT_UNKNOWN"
	// CodeRateLimited and CodeInternal are worth a retry; every other
	// code is the server refusing for good.
	CodeRateLimited = "RATE_LIMITED"
	CodeInternal    = "INTERNAL"
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

// RoleOf is the role of the driver that runs an action, by its upper-case
// name (docs/planner.md#actions): the one place this rule is written.
func RoleOf(taskName string) Role {
	switch taskName {
	case "CREATE", "CONFIRM", "DELETE", "REBOOT":
		return RoleVM
	case "NETWORK_ALLOCATE", "NETWORK_RELEASE", "NETWORK_CONFIGURE", "NETWORK_UNCONFIGURE":
		return RoleNetwork
	case "BOOTSTRAP", "CHECK", "AUTHORIZE_KEYS":
		return RoleNode
	}
	return RoleAutomator
}

// DriverOf names the role and driver of a task: vm drivers by the
// provider's type, network drivers by the provider's network type, node
// drivers are ssh, automators go by the service action's type.
func DriverOf(taskName, providerType string, network map[string]any, actionType string) (Role, string) {
	switch role := RoleOf(taskName); role {
	case RoleVM:
		return role, providerType
	case RoleNetwork:
		typ, _ := network["type"].(string)
		return role, typ
	case RoleNode:
		return role, "ssh"
	default:
		return role, actionType
	}
}

// NeedsPeers says whether a task's payload lists the cluster's other
// nodes in Nodes. Only configuring a node's network does (the hosts
// driver writes every node into /etc/hosts); everything else a task needs
// of its peers reaches it through the config's macros, expanded on the
// server. Leaving them out keeps a payload's size, and so a task's cost,
// independent of the cluster's size.
func NeedsPeers(taskName string) bool { return taskName == "NETWORK_CONFIGURE" }

// Task is a claimed task's payload (docs/task-protocol.md#payload), as
// drivers see it.
type Task struct {
	TaskID    string `json:"taskId"`
	JobID     string `json:"jobId"`
	ClusterID string `json:"clusterId"`
	TenantID  string `json:"tenantId"`
	Attempt   int    `json:"attempt"`
	TaskName  string `json:"taskName"` // the action, upper case
	// Service is nil for node-level tasks.
	Service *Service `json:"service"`
	// Node is nil for cluster-scoped tasks.
	Node *Node `json:"node"`
	// Nodes are the cluster's nodes by id, without their facts, for the
	// tasks that NeedsPeers; nil for the others.
	Nodes    map[string]Node           `json:"nodes,omitempty"`
	Cluster  Cluster                   `json:"cluster"`
	Provider Provider                  `json:"provider"`
	Secrets  map[string]map[string]any `json:"secrets"`
	// TimeoutSeconds bounds the run; 0 is none.
	TimeoutSeconds int `json:"timeoutSeconds"`
	// AuthorizedKeys are the SSH public keys of the cluster's owner, one
	// authorized_keys line each, that BOOTSTRAP installs for the node's SSH
	// user (docs/operations.md#host-keys-and-logging-in); only BOOTSTRAP
	// carries them.
	AuthorizedKeys []string `json:"authorizedKeys,omitempty"`
	// Units are the systemd units CHECK asks about, by service: those of
	// the node's services that have no status action
	// (docs/catalog.md#systemd-units); only CHECK carries them.
	Units map[string][]string `json:"units,omitempty"`
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

// Driver names the role and driver that run t.
func (t *Task) Driver() (Role, string) {
	var typ string
	if t.Service != nil {
		typ = t.Service.Action.Type
	}
	return DriverOf(t.TaskName, t.Provider.ProviderType, t.Provider.Network, typ)
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

// Decode reads a payload.
func Decode(payload []byte) (*Task, error) {
	if t, ok := decodeTask(payload); ok {
		return t, nil
	}
	var t Task
	if err := json.Unmarshal(payload, &t); err != nil {
		return nil, fmt.Errorf("task payload: %w", err)
	}
	return &t, nil
}

// Cluster is the cluster a task belongs to. Its config is expanded for
// the task's node in service tasks and as written in node-level ones.
type Cluster struct {
	ID     string         `json:"id"`
	Name   string         `json:"name"`
	Owner  string         `json:"owner"`
	Config map[string]any `json:"config"`
}

// Provider is the cluster's copy of its provider, with the admin values,
// the user's accepted fields and the sensitive values of both.
type Provider struct {
	Name         string         `json:"name"`
	ProviderType string         `json:"providertype"`
	Provisioner  map[string]any `json:"provisioner"`
	Network      map[string]any `json:"network"`
}

// Service is the service action a task runs.
type Service struct {
	Name   string `json:"name"`
	Action Action `json:"action"`
}

// Action is a service action as the catalog defines it.
type Action struct {
	Type        string            `json:"type"`
	Fields      map[string]string `json:"fields,omitempty"`
	Timeout     json.RawMessage   `json:"timeout,omitempty"`
	MaxAttempts int               `json:"maxAttempts,omitempty"`
}

// Node is a node of the cluster.
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
	// Facts by namespace (vm, network, node, service:<name>): the task's
	// own node's only.
	Facts map[string]any `json:"facts,omitempty"`
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

// Result is how an attempt ended, as an agent finishes it
// (docs/task-protocol.md#results).
type Result struct {
	Status      int               `json:"status"` // 0 success; 200–299 failed and nothing created
	Message     string            `json:"message"`
	Retryable   *bool             `json:"retryable"` // nil: true
	Hostname    string            `json:"hostname,omitempty"`
	IPAddresses map[string]string `json:"ipaddresses,omitempty"`
	Facts       map[string]any    `json:"facts,omitempty"`
	Secrets     map[string]any    `json:"secrets,omitempty"`
	Unreachable bool              `json:"unreachable,omitempty"`
	// The attempt's last output (redacted), kept with the attempt so that
	// a failure can be read after the live stream is gone.
	StdoutTail string `json:"stdoutTail,omitempty"`
	StderrTail string `json:"stderrTail,omitempty"`
}

// Claim is the identity of a claimed attempt that the agent quotes back
// when it reports on it.
type Claim struct {
	TaskID     string `json:"taskId"`
	Attempt    int    `json:"attempt"`
	ClaimToken string `json:"claimToken"`
}

// Finish is the input of finishTask.
type Finish struct {
	Claim
	Result Result `json:"result"`
	// Output is the attempt's last lines, carried by the finish instead of
	// a reportProgress request of their own just before it.
	Output []OutputLine `json:"output,omitempty"`
}

// OutputLine is one line of output a finish carries, as Progress without
// the claim.
type OutputLine struct {
	Seq     int     `json:"seq"`
	Stream  string  `json:"stream"` // STDOUT, STDERR or STATUS
	Chunk   string  `json:"chunk"`
	Percent float64 `json:"percent,omitempty"`
}

// Release is the input of releaseTask: a claim handed back unrun.
type Release struct {
	Claim
	Reason string `json:"reason"`
}

// Progress is the input of reportProgress: one line of a task's output.
type Progress struct {
	Claim
	Seq     int     `json:"seq"`
	Stream  string  `json:"stream"` // STDOUT, STDERR or STATUS
	Chunk   string  `json:"chunk"`
	Percent float64 `json:"percent,omitempty"`
}

// ClaimTasks is the input of claimTasks.
type ClaimTasks struct {
	AgentID     string `json:"agentId"`
	Incarnation string `json:"incarnation"`
	TenantID    string `json:"tenantId"`
	Slots       []int  `json:"slots"`
	WaitSeconds int    `json:"waitSeconds"`
}

// Assignment is a claimed task as claimTasks answers it; Payload decodes
// into a Task.
type Assignment struct {
	TaskID     string          `json:"taskId"`
	Slot       int             `json:"slot"`
	Attempt    int             `json:"attempt"`
	ClaimToken string          `json:"claimToken"`
	Payload    json.RawMessage `json:"payload"`
}

// Exchange is the input of exchangeTasks: attempts that ended, then a
// claim for free slots, in one round trip (docs/task-protocol.md#exchange).
type Exchange struct {
	AgentID     string   `json:"agentId"`
	Incarnation string   `json:"incarnation"`
	TenantID    string   `json:"tenantId"`
	Finishes    []Finish `json:"finishes"`
	Slots       []int    `json:"slots"`
	WaitSeconds int      `json:"waitSeconds"`
}

// Exchanged is the answer of exchangeTasks.
type Exchanged struct {
	// Finished has one outcome for each finish, in order.
	Finished    []FinishOutcome `json:"finished"`
	Assignments []Assignment    `json:"assignments"`
	// ClaimRefused is the code of a claim refused (CodeSlotNotAssigned,
	// CodeAgentUnknown); "" when it was not. The finishes stand.
	ClaimRefused string `json:"claimRefused"`
}

// FinishOutcome is how the server took one finish of an exchange: Code ""
// is recorded (now, or by an earlier try whose answer was lost); anything
// else a refusal that changed nothing, e.g. CodeStaleClaim.
type FinishOutcome struct {
	TaskID  string `json:"taskId"`
	Attempt int    `json:"attempt"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ExchangeQuery is the agent's exchangeTasks request.
const ExchangeQuery = `mutation($in: ExchangeInput!) { exchangeTasks(input: $in) {
	finished { taskId attempt code message } assignments { taskId slot attempt claimToken payload } claimRefused } }`

// Heartbeat is the input of agentHeartbeat: the claims the agent holds.
type Heartbeat struct {
	AgentID     string  `json:"agentId"`
	Incarnation string  `json:"incarnation"`
	Claims      []Claim `json:"claims"`
}

// Registration is the input of registerAgent.
type Registration struct {
	AgentID     string      `json:"agentId"`
	Incarnation string      `json:"incarnation"`
	Version     string      `json:"version"`
	Host        string      `json:"host"`
	Capacity    int         `json:"capacity"`
	Drivers     []DriverRef `json:"drivers"`
}

// DriverRef is a driver an agent carries.
type DriverRef struct {
	Role    Role   `json:"role"`
	Name    string `json:"name"`
	Version string `json:"version"`
}
