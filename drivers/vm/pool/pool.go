// Package pool is the vm driver named "pool": machines that already exist
// (bare metal, pre-made VMs), listed in the provider and handed out one
// per node.
//
// Agents share no memory or database and may run on different machines,
// so a host's allocation is kept on the host itself: a lease, the symbolic
// link /var/lib/coopr/pool/lease whose target is the owner, "<clusterId>
// <nodeId>". symlink(2) creates the link together with its owner or fails
// because a lease exists, in one step: two agents never both take a host,
// and no crash can leave a lease that names nobody.
//
// CREATE first looks for a host already leased to the node (a retried CREATE
// adopts it, docs/operations.md#idempotency), else leases a free one, trying
// hosts in an order spread by node id so that concurrent CREATEs start on
// different hosts; within one agent, a host another CREATE is leasing is
// tried last. The CREATEs of one agent share their scans of the pool, and
// a scan's look at a free host leases it to the CREATE that would try it
// first, in the same command. It pins the host key at first contact and hands the
// provider's ssh_key back as the vm secret privateKey: the node, network and
// automator drivers log in with it (drivers.TargetOf). With no free host it
// ends with status 200 (nothing created).
//
// CONFIRM verifies the pinned host key and the lease (re-taking a lease
// that vanished; failing when another node holds it, which makes the
// server's CONFIRM rollback pick another host) and reports addresses.
// Right after this agent's CREATE of the node, over the connection that
// CREATE's lease command ran on, it runs no command: that command showed
// the lease held by the node (confirmByProof).
//
// DELETE, when the node holds the host's lease, runs wipe_script and then
// removes the lease. The wipe script runs as root through /bin/sh -c with
// COOPR_CLUSTER_ID, COOPR_NODE_ID, COOPR_HOSTNAME and COOPR_HOST
// (host:port) set, its output streaming to the task's; a failure keeps the
// lease and fails the DELETE retryably. It runs again on every retry until
// the lease is gone, so it must converge. A host no longer listed in the
// provider is gone and its DELETE succeeds; a listed host that does not
// answer fails the DELETE (retryably), so that no host returns to the pool
// unwiped: remove a dead machine from the provider's hosts to let its
// DELETE pass.
//
// Every command runs as root, through sudo -n when ssh_user is not root.
package pool

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// Descriptor is the driver's identity and the provider fields it reads,
// as examples/catalog/providertypes/pool.json declares them.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{
		Role:    drivers.RoleVM,
		Name:    "pool",
		Version: "1",
		Params: []drivers.Param{
			{Name: "hosts", Type: "text", Required: true},
			{Name: "ssh_user", Type: "text"},
			{Name: "ssh_key", Type: "password", Required: true, Sensitive: true},
			{Name: "wipe_script", Type: "text"},
			{Name: "reboot_script", Type: "text"},
		},
		Capabilities: []string{"ssh"},
	}
}

// New returns the driver; pool is shared with the agent's other SSH
// drivers.
func New(pool *remote.Pool, log *slog.Logger) drivers.Driver {
	if log == nil {
		log = slog.Default()
	}
	return &driver{
		pool:         pool,
		log:          log,
		probeTimeout: 30 * time.Second,
		scanGather:   50 * time.Millisecond,
		confirmWait:  2 * time.Minute,
		confirmFresh: 15 * time.Second,
		rebootWait:   10 * time.Minute,
		minWait:      250 * time.Millisecond,
		maxWait:      5 * time.Second,
		resolve:      net.DefaultResolver.LookupNetIP,
		scans:        map[string]*scanGroup{},
	}
}

type driver struct {
	pool *remote.Pool
	log  *slog.Logger
	// probeTimeout bounds the look at one host while CREATE scans the
	// pool, so that one hung machine does not hold up the others.
	probeTimeout time.Duration
	// confirmWait is how long CONFIRM waits for a host that does not
	// answer (it may be rebooting), backing off from minWait to maxWait.
	confirmWait time.Duration
	// confirmFresh is how long a lease this driver saw held by a node
	// stands for CONFIRM's check of it (confirmByProof); within the pool's
	// ProbeAfter, so the connection is not probed either.
	confirmFresh time.Duration
	// scanGather is how long a scan waits for more tasks to share it
	// before its first probe (scanGroup).
	scanGather time.Duration
	// rebootWait is how long REBOOT waits for a host to come back.
	rebootWait       time.Duration
	minWait, maxWait time.Duration
	resolve          func(ctx context.Context, network, host string) ([]netip.Addr, error)

	scanMu sync.Mutex
	scans  map[string]*scanGroup // by settings.scanKey
	// tries are the CREATEs' latest tries at leasing each host, by host
	// id (pickHost).
	tryMu sync.Mutex
	tries map[string]attempt
	// proofs are the leases this driver's commands found held by their
	// node, by owner and host:port, for CONFIRM (confirmByProof).
	proofMu sync.Mutex
	proofs  map[string]leaseProof
	// probes counts lease probes (a scan's claims among them), claims the
	// scans' claims, acquires lease acquisitions apart from them, byProof
	// CONFIRMs answered by a proof, for tests.
	probes, claims, acquires, byProof atomic.Int64
}

// Result statuses: 200–299 tell the server nothing was created.
const (
	statusFailed         = 1
	statusNothingCreated = 200
)

// host is one entry of the provider's hosts.
type host struct {
	name string // as listed: a DNS name or an IPv4 address
	port int
}

// id is the host's provider id, host:port.
func (h host) id() string { return net.JoinHostPort(h.name, strconv.Itoa(h.port)) }

// settings are a task's provider fields, checked.
type settings struct {
	provider string
	hosts    []host
	user     string
	keyPEM   string
	signer   ssh.Signer
	wipe     string
	reboot   string
}

// fieldError is a provider field that cannot work: a retry with the same
// provider cannot fix it.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func fieldErr(format string, args ...any) error {
	return &fieldError{msg: fmt.Sprintf(format, args...)}
}

// Run does CREATE, CONFIRM or DELETE of the task's node.
func (d *driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if out == nil {
		out = nopOutput{}
	}
	fail := statusFailed
	if t.TaskName == "CREATE" {
		fail = statusNothingCreated
	}
	if t.Node == nil || t.Node.ID == "" {
		return terminal(fail, fmt.Errorf("task %s names no node", t.TaskID))
	}
	if err := checkOwner(t); err != nil {
		return terminal(fail, err)
	}
	s, err := parseSettings(t)
	if err != nil {
		if t.TaskName == "DELETE" && providerID(t.Node) == "" {
			// Nothing was ever leased under these fields.
			return drivers.Result{Message: "pool: no host to release (" + err.Error() + ")"}
		}
		return terminal(fail, err)
	}
	log := d.log.With("task", t.TaskID, "cluster", t.ClusterID, "node", t.Node.ID, "provider", s.provider)
	switch t.TaskName {
	case "CREATE":
		return d.create(ctx, s, t, out, log)
	case "CONFIRM":
		return d.confirm(ctx, s, t, out, log)
	case "DELETE":
		return d.delete(ctx, s, t, out, log)
	case "REBOOT":
		return d.rebootHost(ctx, s, t, out, log)
	}
	return terminal(statusFailed, fmt.Errorf("vm drivers do not run %s", t.TaskName))
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9._:@-]{1,128}$`)

// checkOwner makes sure the ids can name a lease: one path component
// with no space (the separator) and nothing a shell or readlink mangles.
func checkOwner(t *drivers.Task) error {
	if !idRE.MatchString(t.ClusterID) {
		return fmt.Errorf("cluster id %q cannot name a lease: want 1 to 128 letters, digits or ._:@-", t.ClusterID)
	}
	if !idRE.MatchString(t.Node.ID) {
		return fmt.Errorf("node id %q cannot name a lease: want 1 to 128 letters, digits or ._:@-", t.Node.ID)
	}
	return nil
}

func owner(t *drivers.Task) string { return t.ClusterID + " " + t.Node.ID }

var userRE = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// parseSettings reads and checks the provider's fields. Messages name the
// field and say how to fix it; they never quote ssh_key.
func parseSettings(t *drivers.Task) (settings, error) {
	s := settings{provider: t.Provider.Name}
	if s.provider == "" {
		s.provider = "(unnamed)"
	}
	field := func(name string) (string, error) {
		v, ok := t.Provider.Provisioner[name]
		if !ok || v == nil {
			return "", nil
		}
		str, ok := v.(string)
		if !ok {
			return "", fieldErr("provider %s: field %s is a %T, want text", s.provider, name, v)
		}
		return str, nil
	}
	hosts, err := field("hosts")
	if err != nil {
		return s, err
	}
	if s.hosts, err = parseHosts(hosts); err != nil {
		return s, fieldErr("provider %s: %v", s.provider, err)
	}

	if s.user, err = field("ssh_user"); err != nil {
		return s, err
	}
	s.user = strings.TrimSpace(s.user)
	if s.user == "" {
		s.user = t.Node.SSHUser
	}
	if s.user == "" {
		s.user = "root"
	}
	if !userRE.MatchString(s.user) {
		return s, fieldErr("provider %s: field ssh_user %q is not a user name: give the login user of the hosts (lower-case letters, digits, _ . -)", s.provider, s.user)
	}

	if s.keyPEM, err = field("ssh_key"); err != nil {
		return s, err
	}
	if strings.TrimSpace(s.keyPEM) == "" {
		return s, fieldErr("provider %s: field ssh_key is missing: give the OpenSSH private key that logs in to every host", s.provider)
	}
	s.signer, err = ssh.ParsePrivateKey([]byte(s.keyPEM))
	var pm *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &pm):
		return s, fieldErr("provider %s: field ssh_key is protected by a passphrase: give an unencrypted OpenSSH private key", s.provider)
	case err != nil:
		// The parser's message is dropped lest it quote the key.
		return s, fieldErr("provider %s: field ssh_key is not a usable private key: give an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----)", s.provider)
	}

	if s.reboot, err = field("reboot_script"); err != nil {
		return s, err
	}
	if s.wipe, err = field("wipe_script"); err != nil {
		return s, err
	}
	return s, nil
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$`)

const hostsHow = "list the machines as host or host:port, separated by spaces or commas"

// parseHosts reads the hosts field: host[:port] entries separated by
// whitespace or commas, port 22 by default. Nodes get IPv4 addresses, so
// IPv6 literals are refused; names are resolved when a host is taken.
func parseHosts(field string) ([]host, error) {
	entries := strings.FieldsFunc(field, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(entries) == 0 {
		return nil, fmt.Errorf("field hosts is empty: %s", hostsHow)
	}
	var out []host
	seen := map[string]bool{}
	for _, e := range entries {
		h := host{name: e, port: 22}
		if strings.HasPrefix(e, "[") || strings.Count(e, ":") > 1 {
			return nil, fmt.Errorf("field hosts: %q is an IPv6 address: coopr nodes need IPv4 addresses; %s", e, hostsHow)
		}
		if name, port, ok := strings.Cut(e, ":"); ok {
			p, err := strconv.Atoi(port)
			if err != nil || p < 1 || p > 65535 {
				return nil, fmt.Errorf("field hosts: %q: port %q is not a number from 1 to 65535; %s", e, port, hostsHow)
			}
			h.name, h.port = name, p
		}
		if ip, err := netip.ParseAddr(h.name); err == nil {
			if !ip.Is4() {
				return nil, fmt.Errorf("field hosts: %q is not an IPv4 address: coopr nodes need IPv4 addresses; %s", e, hostsHow)
			}
		} else if len(h.name) > 253 || !hostnameRE.MatchString(h.name) {
			return nil, fmt.Errorf("field hosts: %q is neither a host name nor an IPv4 address; %s", e, hostsHow)
		}
		if !seen[h.id()] {
			seen[h.id()] = true
			out = append(out, h)
		}
	}
	return out, nil
}

// byID finds the listed host with provider id id.
func (s settings) byID(id string) (host, bool) {
	for _, h := range s.hosts {
		if h.id() == id {
			return h, true
		}
	}
	return host{}, false
}

// scanKey tells which tasks may share a scan: those that reach the same
// hosts as the same user with the same key.
func (s settings) scanKey() string {
	ids := make([]string, len(s.hosts))
	for i, h := range s.hosts {
		ids[i] = h.id()
	}
	return s.provider + "\x00" + s.user + "\x00" + ssh.FingerprintSHA256(s.signer.PublicKey()) + "\x00" + strings.Join(ids, " ")
}

// target is how the driver reaches h, verifying pins when given.
func (s settings) target(h host, pins []string) remote.Target {
	return remote.Target{Host: h.name, Port: h.port, User: s.user, Signer: s.signer, HostKeys: pins}
}

// spread orders the hosts starting at one picked by the node's ids, so
// that concurrent CREATEs of a cluster's nodes begin on different hosts.
func spread(hosts []host, clusterID, nodeID string) []host {
	f := fnv.New32a()
	_, _ = f.Write([]byte(clusterID + "\x00" + nodeID))
	start := int(f.Sum32() % uint32(len(hosts)))
	return append(append([]host(nil), hosts[start:]...), hosts[:start]...)
}

// providerID is the node's facts.vm.providerId.
func providerID(n *drivers.Node) string {
	vm, _ := n.Facts["vm"].(map[string]any)
	id, _ := vm["providerId"].(string)
	return strings.TrimSpace(id)
}

// pinsOf are the node's pinned host keys, by drivers.TargetOf's rule:
// node.hostKeys (BOOTSTRAP's) before vm.hostKeys (CREATE's).
func pinsOf(n *drivers.Node) []string {
	for _, ns := range []string{"node", "vm"} {
		m, _ := n.Facts[ns].(map[string]any)
		if keys := strs(m["hostKeys"]); len(keys) > 0 {
			return keys
		}
	}
	return nil
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		if strings.TrimSpace(v) != "" {
			return []string{v}
		}
	case []string:
		return v
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// ipv4 resolves h to the IPv4 address the node gets.
func (d *driver) ipv4(ctx context.Context, h host) (string, error) {
	if ip, err := netip.ParseAddr(h.name); err == nil {
		return ip.String(), nil
	}
	ips, err := d.resolve(ctx, "ip4", h.name)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", h.name, err)
	}
	for _, ip := range ips {
		if ip = ip.Unmap(); ip.Is4() {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("resolve %s: no IPv4 address", h.name)
}

// machine is what CREATE and CONFIRM report about the node's host.
func (s settings) machine(h host, ip string, hostKeys []string) drivers.Result {
	return drivers.Result{
		IPAddresses: map[string]string{"access_v4": ip, "bind_v4": ip},
		Facts: map[string]any{
			"providerId": h.id(),
			"sshHost":    h.name,
			"sshPort":    h.port,
			"sshUser":    s.user,
			"hostKeys":   hostKeys,
		},
		// Later tasks log in with the pool's key (secrets.vm.privateKey).
		Secrets: map[string]any{"privateKey": s.keyPEM},
	}
}

var no = false

// terminal is a failure a retry cannot fix.
func terminal(status int, err error) drivers.Result {
	return drivers.Result{Status: status, Message: "pool: " + err.Error(), Retryable: &no}
}

// failure is a failure, terminal when err is (a host key mismatch).
func failure(status int, err error, facts map[string]any) drivers.Result {
	r := drivers.Result{Status: status, Message: "pool: " + err.Error(), Facts: facts, Unreachable: remote.Unreachable(err)}
	var fe *fieldError
	if remote.Terminal(err) || errors.As(err, &fe) {
		r.Retryable = &no
	}
	return r
}

// describe adds a failed command's last stderr line to its error.
func describe(err error) error {
	var ee *remote.ExitError
	if errors.As(err, &ee) && ee.Stderr != "" {
		return fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return err
}

type nopOutput struct{}

func (nopOutput) Stdout(string)          {}
func (nopOutput) Stderr(string)          {}
func (nopOutput) Status(string, float64) {}
