package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/internal/filelock"
)

// How long a container gets to power off after SIGTERM before it is
// killed; a booted one takes about a second.
const (
	stopGrace = 15 * time.Second
	killWait  = 5 * time.Second
)

func (d *driver) delete(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	name, err := targetName(s.StateDir, t)
	if err != nil {
		return drivers.Result{Status: statusFailed, Message: "local: " + err.Error(), Retryable: &no}
	}
	dir := filepath.Join(nodesDir(s.StateDir), name)
	if !nodeTraces(s.StateDir, name) {
		msg := "container " + name + " is already gone"
		if r := d.releaseUnmanaged(ctx, s, t); r != "" {
			msg += "; " + r
		}
		return drivers.Result{Message: msg}
	}
	if n, err := loadNode(dir); err == nil {
		if err := n.belongs(t); err != nil {
			return drivers.Result{Status: statusFailed, Message: "local: " + err.Error(), Retryable: &no}
		}
	}
	if err := preflight(); err != nil {
		return failure(statusFailed, "host not ready", err)
	}
	unlock, err := filelock.Lock(ctx, lockOf(s.StateDir, name))
	if err != nil {
		return failure(statusFailed, "lock node", err)
	}
	defer unlock()
	out.Status("stopping "+name, 20)
	start := time.Now()
	if err := removeNode(ctx, s.StateDir, name, d.log); err != nil {
		return failure(statusFailed, "delete", err)
	}
	filelock.Remove(lockOf(s.StateDir, name))
	msg := "deleted container " + name
	if r := d.releaseUnmanaged(ctx, s, t); r != "" {
		msg += "; " + r
	}
	d.log.Info(msg, "took", time.Since(start).Round(time.Millisecond))
	return drivers.Result{Message: msg}
}

// releaseUnmanaged frees the cluster's network with its last node when no
// network driver of this package manages it (the provider's network type
// is not "local", so no NETWORK_RELEASE will come); it says what it did.
// A network that still has nodes stays.
func (d *driver) releaseUnmanaged(ctx context.Context, s settings, t *drivers.Task) string {
	if typ, _ := t.Provider.Network["type"].(string); typ == NetworkDescriptor().Name {
		return ""
	}
	bridge := clusterBridge(s.StateDir, clusterID(t))
	if netInUse(s.StateDir, bridge) {
		return ""
	}
	released, err := releaseClusterNet(ctx, s.StateDir, clusterID(t))
	if err != nil {
		// The node is gone, which is what DELETE is for; cleanup
		// removes a network nobody uses.
		d.log.Warn("releasing the cluster network after its last node", "bridge", bridge, "err", err)
		return ""
	}
	if released {
		return "released the cluster's network " + bridge
	}
	return ""
}

// nodeTraces says whether anything of the node is left on this host.
func nodeTraces(stateDir, name string) bool {
	paths := []string{
		filepath.Join(nodesDir(stateDir), name), netnsPath(name), propagateDir(name),
		filepath.Join("/sys/class/net", vethOf(name)),
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return addressOwned(stateDir, name)
}

// addressOwned says whether the node holds an address on any bridge.
func addressOwned(stateDir, name string) bool {
	files, _ := filepath.Glob(filepath.Join(stateDir, "addrs", "*", "*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); string(b) == name {
			return true
		}
	}
	return false
}

// removeNode powers the node off and removes every trace of it: process,
// mounts, network, address, files. Each step tolerates its part being
// gone, so a DELETE interrupted midway is finished by the next.
func removeNode(ctx context.Context, stateDir, name string, log *slog.Logger) error {
	dir := filepath.Join(nodesDir(stateDir), name)
	if err := stopNode(ctx, dir, name, log); err != nil {
		return err
	}
	if err := unmountAll(dir); err != nil {
		return err
	}
	if err := removeNodeNet(ctx, name, vethOf(name)); err != nil {
		return err
	}
	if err := unmountAll(propagateDir(name)); err != nil {
		return err
	}
	if err := os.RemoveAll(propagateDir(name)); err != nil {
		return fmt.Errorf("remove %s: %w", propagateDir(name), err)
	}
	bridges, _ := filepath.Glob(filepath.Join(stateDir, "addrs", "*"))
	for _, b := range bridges {
		nw := network{stateDir: stateDir, bridge: filepath.Base(b)}
		if err := nw.release(ctx, name); err != nil {
			return fmt.Errorf("release address: %w", err)
		}
	}
	if err := removeTree(dir); err != nil {
		return fmt.Errorf("remove node dir: %w", err)
	}
	return nil
}

// stopNode sends the node's nspawn SIGTERM, which powers the container off
// cleanly, and kills it if it is still there after stopGrace. Whatever is
// left in the node's network namespace afterwards (a container whose
// nspawn died first) is killed too.
func stopNode(ctx context.Context, dir, name string, log *slog.Logger) error {
	pidFile := filepath.Join(dir, "nspawn.pid")
	pid := readPid(pidFile)
	if processAlive(pid, name) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(ctx, stopGrace, func() bool { return !processAlive(pid, name) }) {
			log.Warn("container did not power off in time, killing it", "name", name, "pid", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !waitGone(ctx, killWait, func() bool { return !processAlive(pid, name) }) {
				return fmt.Errorf("systemd-nspawn %d of %s survives SIGKILL", pid, name)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	left := func() []int { return containerProcesses(dir, name) }
	if pids := left(); len(pids) > 0 {
		log.Warn("killing processes left in the container", "name", name, "pids", pids)
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if !waitGone(ctx, killWait, func() bool { return len(left()) == 0 }) {
			return fmt.Errorf("processes of %s survive SIGKILL: %v", name, left())
		}
	}
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// containerProcesses lists what runs in the node's container without its
// nspawn: processes in its network namespace, and, should the namespace's
// name be gone already (removed by hand, with the processes keeping the
// namespace alive), processes whose root is the node's root file system.
func containerProcesses(dir, name string) []int {
	pids := netnsProcesses(netnsPath(name))
	for _, p := range rootProcesses(filepath.Join(dir, "merged")) {
		if !slices.Contains(pids, p) {
			pids = append(pids, p)
		}
	}
	return pids
}

func waitGone(ctx context.Context, limit time.Duration, gone func() bool) bool {
	deadline := time.Now().Add(limit)
	for !gone() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return gone()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// Cleanup removes what crashes left behind in stateDir (DefaultStateDir
// when empty): every node whose nspawn is not running (all nodes with
// all), addresses and locks of nodes that are gone, the namespaces, veths
// and nspawn leftovers of coopr containers that have no node, and the
// cluster networks no node uses (without all, not those made in the last
// minute). `coopr local cleanup` calls it.
func Cleanup(ctx context.Context, stateDir string, log *slog.Logger, all bool) error {
	return cleanup(ctx, stateDir, log, all, nil, nil)
}

// NodeKey names a node as the server knows it: its cluster's id and its
// own.
type NodeKey struct {
	Cluster, Node string
}

// CleanupOrphans is Cleanup with all, except for the nodes of owned (those
// of clusters the server still has live) and their clusters' networks:
// they are left as they are, running or not. It is for restarting an installation whose server knows
// which nodes are still in use (a job that was running when everything
// went down goes on with the nodes it had made); every other node of the
// state dir is an orphan, removed with its leftovers.
func CleanupOrphans(ctx context.Context, stateDir string, log *slog.Logger, owned []NodeKey) error {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	// Names, not node.json: a node whose CREATE died before writing it is
	// still its cluster's, found again under the same name by the retry.
	keep := make(map[string]bool, len(owned))
	keepNets := map[string]bool{}
	for _, k := range owned {
		keep[NodeName(abs, k.Cluster, k.Node)] = true
		keepNets[clusterBridge(abs, k.Cluster)] = true
	}
	return cleanup(ctx, abs, log, true, keep, keepNets)
}

func cleanup(ctx context.Context, stateDir string, log *slog.Logger, all bool, keep, keepNets map[string]bool) error {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	// The nodes' mounts are recorded with absolute paths: a relative
	// directory would match none of them and leave them mounted.
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := preflight(); err != nil {
		return err
	}
	var errs []error
	kept := map[string]bool{}
	for name := range keep {
		// Kept whether or not its directory is there yet: a CREATE may be
		// making it.
		kept[name] = true
	}
	entries, err := os.ReadDir(nodesDir(stateDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !nameRE.MatchString(name) {
			continue
		}
		unlock, err := filelock.Lock(ctx, lockOf(stateDir, name))
		if err != nil {
			return err
		}
		dir := filepath.Join(nodesDir(stateDir), name)
		if keep[name] || (!all && processAlive(readPid(filepath.Join(dir, "nspawn.pid")), name)) {
			kept[name] = true
			unlock()
			continue
		}
		log.Info("removing node", "name", name)
		if err := removeNode(ctx, stateDir, name, log); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		} else {
			filelock.Remove(lockOf(stateDir, name))
		}
		unlock()
	}
	// Leftovers of nodes whose state dir is already gone. A container that
	// still runs belongs to a node of some state dir (another agent's,
	// another test's): it is not a leftover, whoever's it is.
	// A namespace made in the last minute may be a CREATE under way in
	// another state dir, whose nspawn has not started yet.
	live := liveMachines()
	settled := func(e os.DirEntry) bool {
		info, err := e.Info()
		return err == nil && time.Since(info.ModTime()) > time.Minute
	}
	var orphans []string
	nsEntries, _ := os.ReadDir("/run/netns")
	for _, e := range nsEntries {
		if nameRE.MatchString(e.Name()) && !kept[e.Name()] && !live[e.Name()] && settled(e) {
			orphans = append(orphans, e.Name())
		}
	}
	prop, _ := os.ReadDir("/run/systemd/nspawn/propagate")
	for _, e := range prop {
		if nameRE.MatchString(e.Name()) && !kept[e.Name()] && !live[e.Name()] && settled(e) {
			orphans = append(orphans, e.Name())
		}
	}
	addrFiles, _ := filepath.Glob(filepath.Join(stateDir, "addrs", "*", "*"))
	for _, f := range addrFiles {
		if b, _ := os.ReadFile(f); nameRE.Match(b) && !kept[string(b)] {
			orphans = append(orphans, string(b))
		}
	}
	done := map[string]bool{}
	for _, name := range orphans {
		if done[name] {
			continue
		}
		done[name] = true
		log.Info("removing leftovers", "name", name)
		if err := removeNode(ctx, stateDir, name, log); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	keptVeths := map[string]bool{}
	for name := range kept {
		keptVeths[vethOf(name)] = true
	}
	bridges, _ := filepath.Glob(filepath.Join(stateDir, "addrs", "*"))
	for _, b := range bridges {
		bridge := filepath.Base(b)
		ports, _ := filepath.Glob(filepath.Join("/sys/class/net", bridge, "brif", "vc*"))
		for _, p := range ports {
			if v := filepath.Base(p); !keptVeths[v] {
				log.Info("removing veth without a node", "veth", v)
				if _, err := run(ctx, "ip", "link", "del", v); err != nil {
					errs = append(errs, err)
				}
			}
		}
		// Bridges of cluster networks go with their records, below; this
		// is a shared bridge of an older version.
		if all && len(kept) == 0 && !strings.HasPrefix(bridge, bridgePrefix) {
			if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
				log.Info("removing bridge", "bridge", bridge)
				if _, err := run(ctx, "ip", "link", "del", bridge); err != nil {
					errs = append(errs, err)
				}
			}
			if err := os.RemoveAll(b); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := cleanupNets(ctx, stateDir, log, all, keepNets); err != nil {
		errs = append(errs, err)
	}
	locks, _ := filepath.Glob(filepath.Join(stateDir, "locks", "*.lock"))
	for _, l := range locks {
		name := strings.TrimSuffix(filepath.Base(l), ".lock")
		if _, err := os.Stat(filepath.Join(nodesDir(stateDir), name)); errors.Is(err, os.ErrNotExist) && !kept[name] {
			unlock, err := filelock.Lock(ctx, l)
			if err == nil {
				filelock.Remove(l)
				unlock()
			}
		}
	}
	return errors.Join(errs...)
}

// cleanupNets removes the state dir's cluster networks that no node uses,
// except those of keepNets (clusters the server still has live), and,
// without all, those made in the last minute (a NETWORK_ALLOCATE whose
// CREATEs have not come yet). With all and nothing kept, the isolation
// table goes too once no cluster bridge of any installation is left.
func cleanupNets(ctx context.Context, stateDir string, log *slog.Logger, all bool, keepNets map[string]bool) error {
	unlock, err := filelock.Lock(ctx, network{stateDir: stateDir}.lockPath())
	if err != nil {
		return err
	}
	defer unlock()
	nets, err := loadNets(stateDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nets {
		if keepNets[n.Bridge] || netInUse(stateDir, n.Bridge) || (!all && time.Since(n.Created) < time.Minute) {
			continue
		}
		log.Info("removing cluster network no cluster uses", "bridge", n.Bridge, "subnet", n.Subnet, "cluster", n.ClusterID)
		if _, err := removeNetLocked(ctx, stateDir, n.Bridge, false); err != nil {
			errs = append(errs, err)
		}
	}
	if all && len(keepNets) == 0 {
		if err := removeIsolation(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
