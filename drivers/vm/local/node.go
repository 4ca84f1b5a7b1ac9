package local

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/vm/sshready"
	"github.com/cooprhq/coopr/internal/filelock"
)

// nodeState is a node as node.json records it. Its presence means the
// node's upper dir is complete; everything else (mount, network, process)
// is checked against the system each time.
type nodeState struct {
	Name      string    `json:"name"`
	ClusterID string    `json:"clusterId"`
	NodeID    string    `json:"nodeId"`
	Hostname  string    `json:"hostname"`
	Address   string    `json:"address"`
	Bridge    string    `json:"bridge"`
	Veth      string    `json:"veth"`
	Image     string    `json:"image"`    // the overlay's lower dir
	HostKeys  []string  `json:"hostKeys"` // authorized_keys lines
	Created   time.Time `json:"created"`

	dir string
}

func (n *nodeState) vethPeer() string { return "vp" + strings.TrimPrefix(n.Veth, "vc") }
func (n *nodeState) upper() string    { return filepath.Join(n.dir, "upper") }
func (n *nodeState) work() string     { return filepath.Join(n.dir, "work") }
func (n *nodeState) merged() string   { return filepath.Join(n.dir, "merged") }
func (n *nodeState) pidFile() string  { return filepath.Join(n.dir, "nspawn.pid") }
func (n *nodeState) logFile() string  { return filepath.Join(n.dir, "console.log") }

// NodeName is the container's name, from the ids CREATE tags it with: a
// retried CREATE finds the same name and adopts what is there. The cluster
// id is kept readable; the hash tells nodes apart and names the veth. The
// state dir is in the hash too: container names, namespaces and veths are
// global on the host, and two installations (coopr dev and a test run, say)
// both have a cluster 00000001 with the same node ids.
func NodeName(stateDir, clusterID, nodeID string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(stateDir) + "\x00" + clusterID + "\x00" + nodeID))
	var b strings.Builder
	for _, r := range strings.ToLower(clusterID) {
		if b.Len() >= 16 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	c := b.String()
	if c == "" {
		c = "x"
	}
	return "coopr-" + c + "-" + hex.EncodeToString(sum[:])[:10]
}

var nameRE = regexp.MustCompile(`^coopr-[a-z0-9-]{1,16}-[0-9a-f]{10}$`)

// vethOf is the host end of a node's veth pair; interface names are at
// most 15 characters, so it carries the name's hash only.
func vethOf(name string) string { return "vc" + name[len(name)-10:] }

func nodesDir(stateDir string) string { return filepath.Join(stateDir, "nodes") }
func lockOf(stateDir, name string) string {
	return filepath.Join(stateDir, "locks", name+".lock")
}
func propagateDir(name string) string { return filepath.Join("/run/systemd/nspawn/propagate", name) }

func loadNode(dir string) (*nodeState, error) {
	b, err := os.ReadFile(filepath.Join(dir, "node.json"))
	if err != nil {
		return nil, err
	}
	var n nodeState
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("%s/node.json: %w", dir, err)
	}
	n.dir = dir
	return &n, nil
}

func (n *nodeState) save() error {
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(n.dir, "node.json"), b, 0o644)
}

// targetName is the node a task is about: the provider id CREATE reported
// or, without one (a CREATE that died before reporting), the name CREATE
// would have used.
func targetName(stateDir string, t *drivers.Task) (string, error) {
	if v, ok := t.Node.Facts["vm"].(map[string]any); ok {
		if id, ok := v["providerId"].(string); ok && id != "" {
			if !nameRE.MatchString(id) {
				return "", fmt.Errorf("providerId %q is not a local container name", id)
			}
			return id, nil
		}
	}
	return NodeName(stateDir, clusterID(t), t.Node.ID), nil
}

func clusterID(t *drivers.Task) string {
	if t.ClusterID != "" {
		return t.ClusterID
	}
	return t.Cluster.ID
}

// belongs guards against a provider id that names another cluster's node.
func (n *nodeState) belongs(t *drivers.Task) error {
	if n.ClusterID != clusterID(t) || n.NodeID != t.Node.ID {
		return fmt.Errorf("container %s belongs to cluster %s node %s, not to this task's", n.Name, n.ClusterID, n.NodeID)
	}
	return nil
}

func (n *nodeState) facts() map[string]any {
	return map[string]any{
		"providerId": n.Name,
		"hostKeys":   append([]string(nil), n.HostKeys...),
		"sshUser":    "root",
	}
}

func (n *nodeState) addresses() map[string]string {
	return map[string]string{"access_v4": n.Address, "bind_v4": n.Address}
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$`)

func (d *driver) create(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	pub, _ := t.Secrets["ssh"]["publicKey"].(string)
	if strings.TrimSpace(pub) == "" {
		return drivers.Result{Status: statusNothingCreated, Retryable: &no,
			Message: "local: the task carries no secrets.ssh.publicKey (the cluster key to put in authorized_keys)"}
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pub)); err != nil {
		return drivers.Result{Status: statusNothingCreated, Retryable: &no, Message: "local: secrets.ssh.publicKey: " + err.Error()}
	}
	name := NodeName(s.StateDir, clusterID(t), t.Node.ID)
	hostname := t.Node.Hostname
	if hostname == "" {
		hostname = name
	}
	if len(hostname) > 253 || !hostnameRE.MatchString(hostname) {
		return drivers.Result{Status: statusNothingCreated, Retryable: &no, Message: fmt.Sprintf("local: hostname %q is not a valid host name", hostname)}
	}
	if err := preflight(); err != nil {
		return failure(statusNothingCreated, "host not ready", err)
	}
	out.Status("base image", 5)
	image, err := EnsureImage(ctx, s.ImageDir, d.log)
	if err != nil {
		return failure(statusNothingCreated, "base image", err)
	}
	unlock, err := filelock.Lock(ctx, lockOf(s.StateDir, name))
	if err != nil {
		return failure(statusNothingCreated, "lock node", err)
	}
	defer unlock()
	nw, addr, err := ensureClusterAddr(ctx, s.StateDir, s.rng, clusterID(t), name)
	if err != nil {
		return failure(statusNothingCreated, "network", err)
	}
	// From here on something exists: failures name it so DELETE finds it.
	fail := func(step string, err error) drivers.Result {
		r := failure(statusFailed, step, err)
		r.Facts = map[string]any{"providerId": name}
		return r
	}
	dir := filepath.Join(nodesDir(s.StateDir), name)
	n, err := loadNode(dir)
	switch {
	case err == nil:
		if err := n.belongs(t); err != nil {
			r := fail("adopt", err)
			r.Retryable = &no
			return r
		}
		out.Stdout("adopting existing container " + name)
		if n.Address != addr.String() || n.Bridge != nw.bridge {
			n.Address, n.Bridge = addr.String(), nw.bridge
			if err := n.save(); err != nil {
				return fail("node state", err)
			}
		}
	case errors.Is(err, os.ErrNotExist):
		out.Status("preparing node", 20)
		n, err = prepareNode(dir, name, clusterID(t), t.Node.ID, hostname, addr, nw.bridge, image, pub)
		if err != nil {
			return fail("prepare node", err)
		}
	default:
		return fail("node state", err)
	}
	if err := mountRoot(n); err != nil {
		return fail("mount root", err)
	}
	out.Status("network", 40)
	if err := nw.ensureNodeNet(ctx, n); err != nil {
		return fail("network", err)
	}
	out.Status("booting", 60)
	started, err := d.ensureRunning(ctx, n)
	if err != nil {
		return fail("boot", err)
	}
	msg := "created container " + name + " at " + n.Address
	if !started {
		msg = "adopted running container " + name + " at " + n.Address
	}
	d.log.Info(msg, "node", t.Node.ID, "cluster", clusterID(t))
	return drivers.Result{Message: msg, Hostname: n.Hostname, IPAddresses: n.addresses(), Facts: n.facts()}
}

// prepareNode writes the node's identity into a fresh upper dir before the
// overlay is mounted over it; node.json last, as the mark it is complete.
func prepareNode(dir, name, cluster, nodeID, hostname string, addr netip.Addr, bridge, image, pub string) (*nodeState, error) {
	// A dir without node.json is an interrupted prepare: redo it whole.
	if err := removeTree(dir); err != nil {
		return nil, err
	}
	n := &nodeState{Name: name, ClusterID: cluster, NodeID: nodeID, Hostname: hostname, Address: addr.String(),
		Bridge: bridge, Veth: vethOf(name), Image: image, Created: time.Now().UTC(), dir: dir}
	for _, p := range []string{n.upper(), n.work(), n.merged()} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	up := n.upper()
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{"etc", 0o755}, {"etc/ssh", 0o755}, {"root", 0o700}, {"root/.ssh", 0o700}} {
		if err := os.Mkdir(filepath.Join(up, d.path), d.mode); err != nil {
			return nil, err
		}
		// Mkdir's mode is filtered by the umask; the upper dir's mode
		// is what the node sees.
		if err := os.Chmod(filepath.Join(up, d.path), d.mode); err != nil {
			return nil, err
		}
	}
	short, _, _ := strings.Cut(hostname, ".")
	hosts := fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s", n.Address, hostname)
	if short != hostname {
		hosts += " " + short
	}
	var mid [16]byte
	if _, err := rand.Read(mid[:]); err != nil {
		return nil, err
	}
	files := []struct {
		path string
		data string
		mode os.FileMode
	}{
		{"etc/hostname", hostname + "\n", 0o644},
		{"etc/hosts", hosts + "\n", 0o644},
		{"etc/machine-id", hex.EncodeToString(mid[:]) + "\n", 0o444},
		{"root/.ssh/authorized_keys", strings.TrimSpace(pub) + "\n", 0o600},
	}
	keys, err := hostKeys(hostname)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		files = append(files,
			struct {
				path string
				data string
				mode os.FileMode
			}{"etc/ssh/ssh_host_" + k.kind + "_key", k.private, 0o600},
			struct {
				path string
				data string
				mode os.FileMode
			}{"etc/ssh/ssh_host_" + k.kind + "_key.pub", k.public + "\n", 0o644})
		n.HostKeys = append(n.HostKeys, k.public)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(up, f.path), []byte(f.data), f.mode); err != nil {
			return nil, err
		}
		if err := os.Chmod(filepath.Join(up, f.path), f.mode); err != nil {
			return nil, err
		}
	}
	if err := n.save(); err != nil {
		return nil, err
	}
	return n, nil
}

type hostKey struct{ kind, private, public string }

// hostKeys makes the node's own ssh host keys, the kinds the image's sshd
// drop-in names; the image ships none.
func hostKeys(hostname string) ([]hostKey, error) {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	ecPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	var out []hostKey
	for _, k := range []struct {
		kind string
		priv any
	}{{"ed25519", edPriv}, {"ecdsa", ecPriv}} {
		block, err := ssh.MarshalPrivateKey(k.priv, "root@"+hostname)
		if err != nil {
			return nil, fmt.Errorf("host key: %w", err)
		}
		signer, err := ssh.NewSignerFromKey(k.priv)
		if err != nil {
			return nil, fmt.Errorf("host key: %w", err)
		}
		pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
		out = append(out, hostKey{kind: k.kind, private: string(pem.EncodeToMemory(block)), public: pub})
	}
	return out, nil
}

// mountRoot mounts the node's overlay unless it is mounted already.
func mountRoot(n *nodeState) error {
	mps, err := mountsUnder(n.merged())
	if err != nil {
		return err
	}
	for _, mp := range mps {
		if mp == n.merged() {
			return nil
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", n.Image, n.upper(), n.work())
	if err := syscall.Mount("overlay", n.merged(), "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount overlay on %s: %w", n.merged(), err)
	}
	return nil
}

// ensureRunning starts the node's nspawn unless it runs; it says whether
// it started one.
func (d *driver) ensureRunning(ctx context.Context, n *nodeState) (bool, error) {
	if processAlive(readPid(n.pidFile()), n.Name) {
		return false, nil
	}
	// A CREATE whose process died between starting nspawn and writing its
	// pid left the container running: a second nspawn would find its
	// directory busy and fail every retry.
	if pid := findNspawn(n.Name); pid > 0 {
		if err := writeFileAtomic(n.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			return false, err
		}
		d.log.Info("adopted a running container whose pid was not recorded", "name", n.Name, "pid", pid)
		return false, nil
	}
	// A previous nspawn's leftovers would make this one refuse to start.
	_ = unmountAll(propagateDir(n.Name))
	_ = os.RemoveAll(propagateDir(n.Name))
	nspawn, err := exec.LookPath("systemd-nspawn")
	if err != nil {
		return false, &missingToolError{tools: []string{"systemd-nspawn"}, pkgs: []string{"systemd-container"}}
	}
	args := []string{
		"--quiet", "--register=no", "--keep-unit", "--boot", "--console=passive",
		"--machine=" + n.Name, "--hostname=" + n.Hostname, "--directory=" + n.merged(),
		"--network-namespace-path=" + netnsPath(n.Name),
		"--link-journal=no", "--resolv-conf=off", "--timezone=off", "--settings=no",
	}
	argv := append([]string{nspawn}, args...)
	// Under a systemd host the agent's unit would take the container down
	// with it when stopped: give the container a scope of its own.
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		if sr, err := exec.LookPath("systemd-run"); err == nil {
			argv = append([]string{sr, "--scope", "--quiet", "--collect", "--unit=" + n.Name}, argv...)
		}
	}
	logf, err := os.OpenFile(n.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- %s starting %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(argv, " "))
	// Not CommandContext: the container must outlive this task and this
	// process. Its own session keeps the agent's signals away from it; a
	// clean environment keeps the agent's (NOTIFY_SOCKET, tokens) away.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start systemd-nspawn: %w", err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	// Reap it if it ends while this process lives; otherwise init does.
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := writeFileAtomic(n.pidFile(), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return false, err
	}
	// nspawn refuses bad setups at once; past a second it is booting.
	select {
	case <-exited:
		return false, fmt.Errorf("systemd-nspawn exited at start: %s", tail(n.logFile(), 600))
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
	d.log.Info("container started", "name", n.Name, "pid", pid)
	return true, nil
}

// tail is the end of a log file, on one line.
func tail(path string, max int) string {
	b, _ := os.ReadFile(path)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

func (d *driver) confirm(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	name, err := targetName(s.StateDir, t)
	if err != nil {
		return drivers.Result{Status: statusFailed, Message: "local: " + err.Error(), Retryable: &no}
	}
	n, err := loadNode(filepath.Join(nodesDir(s.StateDir), name))
	if errors.Is(err, os.ErrNotExist) {
		return drivers.Result{Status: statusFailed, Message: "local: container " + name + " does not exist", Retryable: &no}
	} else if err != nil {
		return failure(statusFailed, "node state", err)
	}
	if err := n.belongs(t); err != nil {
		return drivers.Result{Status: statusFailed, Message: "local: " + err.Error(), Retryable: &no}
	}
	if !processAlive(readPid(n.pidFile()), n.Name) {
		return drivers.Result{Status: statusFailed, Retryable: &no, Facts: n.facts(),
			Message: "local: container " + name + " is not running; console: " + tail(n.logFile(), 300)}
	}
	out.Status("waiting for ssh on "+n.Address, 10)
	start := time.Now()
	priv, _ := t.Secrets["ssh"]["privateKey"].(string)
	if err := waitSSH(ctx, n, priv); err != nil {
		r := failure(statusFailed, "ssh", err)
		var hk *sshready.HostKeyError
		if errors.As(err, &hk) {
			r.Retryable = &no
		}
		r.Facts = n.facts()
		return r
	}
	msg := fmt.Sprintf("container %s answers ssh on %s", name, n.Address)
	d.log.Info(msg, "waited", time.Since(start).Round(time.Millisecond))
	return drivers.Result{Message: msg, Hostname: n.Hostname, IPAddresses: n.addresses(), Facts: n.facts()}
}

// waitSSH waits until the node's sshd completes a handshake with one of
// the node's own host keys and, given the cluster key, accepts it for root.
func waitSSH(ctx context.Context, n *nodeState, privateKey string) error {
	addr := netip.AddrPortFrom(netip.MustParseAddr(n.Address), 22).String()
	return sshready.Wait(ctx, addr, n.HostKeys, privateKey, sshready.Options{Retry: 200 * time.Millisecond, Attempt: 5 * time.Second})
}
