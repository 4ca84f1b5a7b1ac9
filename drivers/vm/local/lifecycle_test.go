package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/sys/unix"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
)

// sshRun runs cmd on the node as root with the cluster key, accepting only
// the host keys the driver reported.
func sshRun(addr string, hostKeys []string, signer ssh.Signer, cmd string) (string, error) {
	pinned := map[string]bool{}
	for _, l := range hostKeys {
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l))
		if err != nil {
			return "", err
		}
		pinned[string(k.Marshal())] = true
	}
	c, err := ssh.Dial("tcp", net.JoinHostPort(addr, "22"), &ssh.ClientConfig{
		User:    "root",
		Auth:    []ssh.AuthMethod{ssh.PublicKeys(signer)},
		Timeout: 10 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if !pinned[string(key.Marshal())] {
				return fmt.Errorf("unexpected host key %s", ssh.FingerprintSHA256(key))
			}
			return nil
		},
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	return strings.TrimSpace(string(out)), err
}

func hostKeysFact(t *testing.T, r drivers.Result) []string {
	t.Helper()
	keys, ok := r.Facts["hostKeys"].([]string)
	if !ok || len(keys) == 0 {
		t.Fatalf("facts.hostKeys = %#v", r.Facts["hostKeys"])
	}
	return keys
}

// containerProcs snapshots the processes in the node's network namespace
// (nspawn's container: init, sshd, ...) with the namespace's inode, to
// check later that none of them survived.
func containerProcs(t *testing.T, name string) map[int]uint64 {
	t.Helper()
	var ns syscall.Stat_t
	if err := syscall.Stat(netnsPath(name), &ns); err != nil {
		t.Fatalf("netns of %s: %v", name, err)
	}
	procs := map[int]uint64{}
	for _, pid := range netnsProcesses(netnsPath(name)) {
		procs[pid] = ns.Ino
	}
	if len(procs) == 0 {
		t.Fatalf("%s runs no process, not even init", name)
	}
	return procs
}

// assertGone checks that nothing of the node is left on the host: no
// mount, veth, namespace, file, address, nspawn or container process.
func assertGone(t *testing.T, cfg Config, name string, procs map[int]uint64) {
	t.Helper()
	for pid, ino := range procs {
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == ino {
			t.Errorf("process %d of %s survives", pid, name)
		}
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mountinfo), "\n") {
		if strings.Contains(line, name) {
			t.Errorf("mount left: %s", line)
		}
	}
	links, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(links, []byte(vethOf(name))) {
		t.Errorf("veth %s left: %s", vethOf(name), links)
	}
	for _, p := range []string{
		filepath.Join(cfg.StateDir, "nodes", name), lockOf(cfg.StateDir, name), netnsPath(name), propagateDir(name),
	} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s left", p)
		}
	}
	if addressOwned(cfg.StateDir, name) {
		t.Errorf("address of %s not released", name)
	}
	if pids := machineProcesses(name); len(pids) > 0 {
		t.Errorf("processes of %s left: %v", name, pids)
	}
}

// machineProcesses lists live processes whose command line names machine.
func machineProcesses(name string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmdline, []byte("--machine="+name+"\x00")) && processAlive(pid, name) {
			out = append(out, pid)
		}
	}
	return out
}

// TestNodeLifecycle is the driver's whole story on real containers: three
// nodes created at once (one by a process that then exits), confirmed,
// reached by SSH with the cluster key, talking to each other over the
// bridge, adopted by a second CREATE, deleted twice, and leaving nothing.
func TestNodeLifecycle(t *testing.T) {
	cfg := testConfig(t)
	key := newClusterKey(t)
	drv := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const cluster = "00000412"
	ids := []string{"3f6c1a52-0001-4c1e-9d1a-000000000001", "3f6c1a52-0002-4c1e-9d1a-000000000002", "3f6c1a52-0003-4c1e-9d1a-000000000003"}
	hostnames := []string{"web-shop412-1000.local", "web-shop412-1001.local", "web-shop412-1002.local"}
	created := make([]drivers.Result, 3)
	var wg sync.WaitGroup
	start := time.Now()
	// Node 0 is created by a child process that exits right after: its
	// container must keep running.
	wg.Go(func() {
		h := runHelper(t, cfg, newTask(key, cluster, ids[0], hostnames[0], "CREATE"), nil)
		keys, _ := h.Facts["hostKeys"].([]any)
		var ks []string
		for _, k := range keys {
			ks = append(ks, k.(string))
		}
		h.Facts["hostKeys"] = ks
		created[0] = drivers.Result{Status: h.Status, Message: h.Message, IPAddresses: h.IPAddresses, Facts: h.Facts}
	})
	for i := 1; i < 3; i++ {
		wg.Go(func() {
			created[i] = drv.Run(ctx, newTask(key, cluster, ids[i], hostnames[i], "CREATE"), &recOutput{})
		})
	}
	wg.Wait()
	t.Logf("3 CREATEs in %s", time.Since(start).Round(time.Millisecond))
	names := make([]string, 3)
	addrs := map[string]bool{}
	for i, r := range created {
		if r.Status != 0 {
			t.Fatalf("CREATE %d: status %d: %s", i, r.Status, r.Message)
		}
		names[i], _ = r.Facts["providerId"].(string)
		if names[i] != NodeName(cfg.StateDir, cluster, ids[i]) || r.Facts["sshUser"] != "root" {
			t.Errorf("CREATE %d: facts %v", i, r.Facts)
		}
		a := r.IPAddresses["access_v4"]
		if a == "" || a != r.IPAddresses["bind_v4"] || addrs[a] {
			t.Errorf("CREATE %d: addresses %v (taken: %v)", i, r.IPAddresses, addrs)
		}
		addrs[a] = true
	}
	t.Run("container outlives its creator", func(t *testing.T) {
		pid := readPid(filepath.Join(cfg.StateDir, "nodes", names[0], "nspawn.pid"))
		if !processAlive(pid, names[0]) {
			t.Fatalf("nspawn %d of %s is not running after its creator exited", pid, names[0])
		}
		sid, err := unix.Getsid(pid)
		if err != nil || sid != pid {
			t.Errorf("nspawn %d: session %d (%v), want its own session", pid, sid, err)
		}
		// The ones this process started are in their own sessions too.
		for _, n := range names[1:] {
			p := readPid(filepath.Join(cfg.StateDir, "nodes", n, "nspawn.pid"))
			if sid, err := unix.Getsid(p); err != nil || sid != p || sid == unix.Getpid() {
				t.Errorf("nspawn %d of %s: session %d (%v)", p, n, sid, err)
			}
		}
	})

	confirmed := make([]drivers.Result, 3)
	start = time.Now()
	for i := range 3 {
		wg.Go(func() {
			confirmed[i] = drv.Run(ctx, withFacts(newTask(key, cluster, ids[i], hostnames[i], "CONFIRM"), created[i]), &recOutput{})
		})
	}
	wg.Wait()
	t.Logf("3 CONFIRMs (boot to SSH ready) in %s", time.Since(start).Round(time.Millisecond))
	for i, r := range confirmed {
		if r.Status != 0 {
			t.Fatalf("CONFIRM %d: status %d: %s", i, r.Status, r.Message)
		}
		if r.IPAddresses["access_v4"] != created[i].IPAddresses["access_v4"] || r.Facts["providerId"] != names[i] {
			t.Errorf("CONFIRM %d: %v %v, CREATE said %v %v", i, r.IPAddresses, r.Facts, created[i].IPAddresses, created[i].Facts)
		}
	}

	t.Run("confirm again", func(t *testing.T) {
		r := drv.Run(ctx, withFacts(newTask(key, cluster, ids[1], hostnames[1], "CONFIRM"), confirmed[1]), nil)
		if r.Status != 0 || r.IPAddresses["access_v4"] != confirmed[1].IPAddresses["access_v4"] {
			t.Fatalf("CONFIRM again: %+v", r)
		}
	})

	t.Run("nodes", func(t *testing.T) {
		seenKeys := map[string]int{}
		machineIDs := map[string]int{}
		for i, r := range confirmed {
			addr := r.IPAddresses["access_v4"]
			keys := hostKeysFact(t, r)
			for _, k := range keys {
				if j, dup := seenKeys[k]; dup {
					t.Errorf("nodes %d and %d share host key %s", j, i, k)
				}
				seenKeys[k] = i
			}
			out, err := sshRun(addr, keys, key.signer, "hostname; cat /etc/machine-id; systemctl is-system-running --wait; ip -4 -o addr show dev eth0; ip route")
			if err != nil && !strings.Contains(out, "degraded") {
				t.Fatalf("node %d: ssh: %v: %s", i, err, out)
			}
			lines := strings.Split(out, "\n")
			if len(lines) < 4 {
				t.Fatalf("node %d: %q", i, out)
			}
			if lines[0] != hostnames[i] {
				t.Errorf("node %d: hostname %q, want %q", i, lines[0], hostnames[i])
			}
			if j, dup := machineIDs[lines[1]]; dup || len(lines[1]) != 32 {
				t.Errorf("node %d: machine id %q (also node %d)", i, lines[1], j)
			}
			machineIDs[lines[1]] = i
			if lines[2] != "running" && lines[2] != "degraded" {
				t.Errorf("node %d: systemd is %q", i, lines[2])
			}
			t.Logf("node %d: %s at %s, systemd %s", i, lines[0], addr, lines[2])
			if lines[2] == "degraded" {
				failed, _ := sshRun(addr, keys, key.signer, "systemctl --failed --no-legend")
				t.Logf("node %d degraded: %s", i, failed)
			}
			if !strings.Contains(out, fmt.Sprintf(" %s/%d ", addr, cfg.ClusterPrefix)) {
				t.Errorf("node %d: eth0 lacks %s: %s", i, addr, out)
			}
			if strings.Contains(out, "default") {
				t.Errorf("node %d has a default route: %s", i, out)
			}
		}
	})

	t.Run("services and the bridge", func(t *testing.T) {
		// A systemd service on each node serving its hostname, fetched by
		// the next node over the bridge: units, networking and names work.
		for i, r := range confirmed {
			out, err := sshRun(r.IPAddresses["access_v4"], hostKeysFact(t, r), key.signer,
				"mkdir -p /srv/www && hostname > /srv/www/index.html && "+
					"systemd-run --quiet --unit=coopr-web --property=WorkingDirectory=/srv/www python3 -m http.server 8080 && "+
					"for i in $(seq 50); do systemctl is-active --quiet coopr-web && curl -sf http://127.0.0.1:8080/ >/dev/null && break; sleep 0.1; done; systemctl is-active coopr-web")
			if err != nil || out != "active" {
				t.Fatalf("node %d: web service: %v: %s", i, err, out)
			}
		}
		for i, r := range confirmed {
			next := confirmed[(i+1)%3].IPAddresses["access_v4"]
			out, err := sshRun(r.IPAddresses["access_v4"], hostKeysFact(t, r), key.signer,
				"ping -c1 -W2 "+next+" >/dev/null && curl -sf --max-time 5 http://"+next+":8080/")
			if err != nil || out != hostnames[(i+1)%3] {
				t.Errorf("node %d → %s: %v: %q", i, next, err, out)
			}
		}
	})

	t.Run("create again adopts", func(t *testing.T) {
		for _, withPrev := range []bool{true, false} {
			task := newTask(key, cluster, ids[2], hostnames[2], "CREATE")
			if withPrev {
				task = withFacts(task, confirmed[2])
			}
			r := drv.Run(ctx, task, nil)
			if r.Status != 0 || r.Facts["providerId"] != names[2] ||
				r.IPAddresses["access_v4"] != confirmed[2].IPAddresses["access_v4"] ||
				strings.Join(hostKeysFact(t, r), ",") != strings.Join(hostKeysFact(t, confirmed[2]), ",") ||
				!strings.HasPrefix(r.Message, "adopted") {
				t.Errorf("CREATE again (facts: %v): %+v", withPrev, r)
			}
		}
		// The CREATE before was killed between starting nspawn and
		// writing its pid: the container runs, unrecorded.
		pidFile := filepath.Join(cfg.StateDir, "nodes", names[2], "nspawn.pid")
		if _, err := os.Stat(pidFile); err != nil {
			t.Fatalf("no pid file where expected: %v", err)
		}
		if err := os.Remove(pidFile); err != nil {
			t.Fatal(err)
		}
		r := drv.Run(ctx, withFacts(newTask(key, cluster, ids[2], hostnames[2], "CREATE"), confirmed[2]), nil)
		if r.Status != 0 || !strings.HasPrefix(r.Message, "adopted") {
			t.Errorf("CREATE again after a lost pid file: %+v", r)
		}
	})

	if t.Failed() {
		for _, n := range names {
			t.Logf("console of %s: %s", n, tail(filepath.Join(cfg.StateDir, "nodes", n, "console.log"), 2000))
		}
	}

	t.Run("delete", func(t *testing.T) {
		results := make([]drivers.Result, 3)
		procs := make([]map[int]uint64, 3)
		for i, n := range names {
			procs[i] = containerProcs(t, n)
		}
		start := time.Now()
		for i := range 3 {
			wg.Go(func() {
				results[i] = drv.Run(ctx, withFacts(newTask(key, cluster, ids[i], hostnames[i], "DELETE"), confirmed[i]), nil)
			})
		}
		wg.Wait()
		t.Logf("3 DELETEs in %s", time.Since(start).Round(time.Millisecond))
		for i, r := range results {
			if r.Status != 0 {
				t.Errorf("DELETE %d: %+v", i, r)
			}
			if again := drv.Run(ctx, withFacts(newTask(key, cluster, ids[i], hostnames[i], "DELETE"), confirmed[i]), nil); again.Status != 0 {
				t.Errorf("DELETE %d again: %+v", i, again)
			}
			assertGone(t, cfg, names[i], procs[i])
		}
	})
}

// TestConformance runs the vm suite every vm driver passes.
func TestConformance(t *testing.T) {
	cfg := testConfig(t)
	key := newClusterKey(t)
	drv := New(Config{}, nil)
	drivertest.VM(t, drv, func(action string) *drivers.Task {
		task := newTask(key, "00000077", "9a1d3c55-7777-4e2f-8a3b-000000000077", "conformance77-1000.local", action)
		// The provider's fields place the node, not the driver's config.
		task.Provider.Provisioner = map[string]any{"stateDir": cfg.StateDir, "imageDir": cfg.ImageDir, "subnet": cfg.Subnet, "clusterPrefix": float64(cfg.ClusterPrefix)}
		return task
	})
	assertGone(t, cfg, NodeName(cfg.StateDir, "00000077", "9a1d3c55-7777-4e2f-8a3b-000000000077"), nil)
}

// TestCleanup leaves what crashes leave (a container whose nspawn was
// killed, a veth with no node) and checks Cleanup removes it and nothing
// else, then everything.
func TestCleanup(t *testing.T) {
	cfg := testConfig(t)
	key := newClusterKey(t)
	drv := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var names []string
	for i := range 2 {
		r := drv.Run(ctx, newTask(key, "00000099", fmt.Sprintf("node-%d", i), "", "CREATE"), nil)
		if r.Status != 0 {
			t.Fatalf("CREATE %d: %+v", i, r)
		}
		names = append(names, r.Facts["providerId"].(string))
	}
	dead, alive := names[0], names[1]
	deadProcs, aliveProcs := containerProcs(t, dead), containerProcs(t, alive)
	pid := readPid(filepath.Join(cfg.StateDir, "nodes", dead, "nspawn.pid"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(ctx, 10*time.Second, func() bool { return !processAlive(pid, dead) }) {
		t.Fatalf("nspawn %d survives SIGKILL", pid)
	}
	stray := "vc0123456789"
	if out, err := exec.Command("ip", "link", "add", stray, "type", "veth", "peer", "name", "vp0123456789").CombinedOutput(); err != nil {
		t.Fatalf("stray veth: %v: %s", err, out)
	}
	bridge := clusterBridge(cfg.StateDir, "00000099")
	if out, err := exec.Command("ip", "link", "set", stray, "master", bridge).CombinedOutput(); err != nil {
		t.Fatalf("stray veth: %v: %s", err, out)
	}

	// Another state dir's cleanup, even of everything, keeps its hands
	// off this one's nodes, running or not.
	if err := Cleanup(ctx, t.TempDir(), nil, true); err != nil {
		t.Fatalf("Cleanup of another state dir: %v", err)
	}
	if !processAlive(readPid(filepath.Join(cfg.StateDir, "nodes", alive, "nspawn.pid")), alive) {
		t.Fatalf("cleaning another state dir stopped the live node %s", alive)
	}

	if err := Cleanup(ctx, cfg.StateDir, nil, false); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	assertGone(t, cfg, dead, deadProcs)
	if _, err := os.Stat("/sys/class/net/" + stray); err == nil {
		t.Errorf("stray veth %s survives Cleanup", stray)
	}
	if !processAlive(readPid(filepath.Join(cfg.StateDir, "nodes", alive, "nspawn.pid")), alive) {
		t.Fatalf("Cleanup stopped the live node %s", alive)
	}

	t.Run("host key mismatch is terminal", func(t *testing.T) {
		n, err := loadNode(filepath.Join(cfg.StateDir, "nodes", alive))
		if err != nil {
			t.Fatal(err)
		}
		good := n.HostKeys
		other, err := hostKeys("impostor")
		if err != nil {
			t.Fatal(err)
		}
		n.HostKeys = []string{other[0].public, other[1].public}
		if err := n.save(); err != nil {
			t.Fatal(err)
		}
		r := drv.Run(ctx, newTask(key, "00000099", "node-1", "", "CONFIRM"), nil)
		if r.Status == 0 || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, "host key mismatch") || !strings.Contains(r.Message, "SHA256:") {
			t.Errorf("CONFIRM with the wrong recorded keys: %+v", r)
		}
		n.HostKeys = good
		if err := n.save(); err != nil {
			t.Fatal(err)
		}
		if r := drv.Run(ctx, newTask(key, "00000099", "node-1", "", "CONFIRM"), nil); r.Status != 0 {
			t.Errorf("CONFIRM with the right keys: %+v", r)
		}
	})

	// Given relative, as a user types it, the state dir still names the
	// nodes' mounts (recorded absolute).
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Cleanup(ctx, rel, nil, true); err != nil {
		t.Fatalf("Cleanup all of %s: %v", rel, err)
	}
	assertGone(t, cfg, alive, aliveProcs)
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		t.Errorf("bridge %s survives Cleanup all", bridge)
	}
	if _, err := readNet(cfg.StateDir, bridge); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the network record of %s survives Cleanup all (%v)", bridge, err)
	}
}

// TestCleanupOrphans: a restart's cleanup spares the nodes live clusters
// own, running or not, and removes every other node, running or not.
func TestCleanupOrphans(t *testing.T) {
	cfg := testConfig(t)
	key := newClusterKey(t)
	drv := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	nodes := []NodeKey{{"00000098", "node-0"}, {"00000098", "node-1"}, {"00000097", "node-0"}}
	var names []string
	for _, n := range nodes {
		r := drv.Run(ctx, newTask(key, n.Cluster, n.Node, "", "CREATE"), nil)
		if r.Status != 0 {
			t.Fatalf("CREATE %v: %+v", n, r)
		}
		names = append(names, r.Facts["providerId"].(string))
	}
	owned, stopped, orphan := names[0], names[1], names[2]
	orphanProcs := containerProcs(t, orphan)
	pid := readPid(filepath.Join(cfg.StateDir, "nodes", stopped, "nspawn.pid"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !waitGone(ctx, 10*time.Second, func() bool { return !processAlive(pid, stopped) }) {
		t.Fatalf("nspawn %d survives SIGKILL", pid)
	}

	if err := CleanupOrphans(ctx, cfg.StateDir, nil, nodes[:2]); err != nil {
		t.Fatalf("CleanupOrphans: %v", err)
	}
	assertGone(t, cfg, orphan, orphanProcs)
	if !processAlive(readPid(filepath.Join(cfg.StateDir, "nodes", owned, "nspawn.pid")), owned) {
		t.Errorf("the owned node %s was stopped", owned)
	}
	if _, err := os.Stat(filepath.Join(cfg.StateDir, "nodes", stopped, "node.json")); err != nil {
		t.Errorf("the owned stopped node %s was removed: %v", stopped, err)
	}
	// Its cluster's next CONFIRM finds the running one as it was.
	if r := drv.Run(ctx, newTask(key, "00000098", "node-0", "", "CONFIRM"), nil); r.Status != 0 {
		t.Errorf("CONFIRM of the spared node: %+v", r)
	}
}

// TestNoFreeAddress: a CREATE that finds its cluster's subnet full, or no
// subnet left for its cluster, creates nothing and says so with a 2xx
// status.
func TestNoFreeAddress(t *testing.T) {
	cfg := testConfig(t)
	// A range of one /29: one cluster of five nodes.
	cfg.Subnet = strings.TrimSuffix(cfg.Subnet, "0/24") + "8/29"
	cfg.ClusterPrefix = 29
	rng, err := parseRange(cfg.Subnet, cfg.ClusterPrefix)
	if err != nil {
		t.Fatal(err)
	}
	nw, err := ensureClusterNet(context.Background(), cfg.StateDir, rng, "00000098")
	if err != nil {
		t.Fatal(err)
	}
	sn := nw.subnet
	t.Run("no cluster subnet left", func(t *testing.T) {
		r := New(cfg, nil).Run(context.Background(), newTask(newClusterKey(t), "00000097", "n1", "", "CREATE"), nil)
		if r.Status < 200 || r.Status > 299 || !strings.Contains(r.Message, "no free cluster subnet") {
			t.Fatalf("CREATE with the range taken: %+v", r)
		}
		if _, err := os.Stat("/sys/class/net/" + clusterBridge(cfg.StateDir, "00000097")); err == nil {
			t.Error("a CREATE that got no subnet made a bridge")
		}
	})
	dir := filepath.Join(cfg.StateDir, "addrs", nw.bridge)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, a := range sn.nodeAddrs() {
		if err := os.WriteFile(filepath.Join(dir, a.String()), []byte(NodeName(cfg.StateDir, "other", strconv.Itoa(i))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := New(cfg, nil).Run(context.Background(), newTask(newClusterKey(t), "00000098", "n1", "", "CREATE"), nil)
	if r.Status < 200 || r.Status > 299 || !strings.Contains(r.Message, "no free address") {
		t.Fatalf("CREATE on a full subnet: %+v", r)
	}
	if name := NodeName(cfg.StateDir, "00000098", "n1"); nodeTraces(cfg.StateDir, name) {
		t.Errorf("a CREATE that got no address left traces of %s", name)
	}
}

// TestDeleteOfGoneMachine: DELETE of a node that is already partly or
// wholly gone (its container killed, its network namespace removed, its
// overlay and state dir removed by hand, or all of it by a cleanup)
// succeeds and leaves nothing of it behind.
func TestDeleteOfGoneMachine(t *testing.T) {
	cfg := testConfig(t)
	key := newClusterKey(t)
	drv := New(cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kill := func(t *testing.T, name string) {
		t.Helper()
		pid := readPid(filepath.Join(cfg.StateDir, "nodes", name, "nspawn.pid"))
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if !waitGone(ctx, 10*time.Second, func() bool { return !processAlive(pid, name) }) {
			t.Fatalf("nspawn %d survives SIGKILL", pid)
		}
	}
	for i, tc := range []struct {
		name   string
		remove func(t *testing.T, name string)
	}{
		{"container killed", kill},
		{"container orphaned, its namespace removed", func(t *testing.T, name string) {
			kill(t, name)
			if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
				t.Fatalf("ip netns del: %v: %s", err, out)
			}
		}},
		{"overlay and state dir removed", func(t *testing.T, name string) {
			kill(t, name)
			dir := filepath.Join(cfg.StateDir, "nodes", name)
			if err := unmountAll(dir); err != nil {
				t.Fatal(err)
			}
			// The killed container's processes live on (DELETE kills
			// them) and may write into the overlay while it goes: try
			// again, as a person removing it by hand would.
			var err error
			for try := 0; try < 50; try++ {
				if err = os.RemoveAll(dir); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"everything removed by a cleanup", func(t *testing.T, name string) {
			kill(t, name)
			if err := Cleanup(ctx, cfg.StateDir, nil, false); err != nil {
				t.Fatal(err)
			}
			if nodeTraces(cfg.StateDir, name) {
				t.Fatalf("Cleanup left traces of %s", name)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodeID := fmt.Sprintf("gone-%d", i)
			created := drv.Run(ctx, newTask(key, "00000097", nodeID, "", "CREATE"), nil)
			if created.Status != 0 {
				t.Fatalf("CREATE: %+v", created)
			}
			name := created.Facts["providerId"].(string)
			procs := containerProcs(t, name)
			tc.remove(t, name)
			start := time.Now()
			r := drv.Run(ctx, withFacts(newTask(key, "00000097", nodeID, "", "DELETE"), created), nil)
			t.Logf("DELETE in %s: %s", time.Since(start).Round(time.Millisecond), r.Message)
			if r.Status != 0 {
				t.Fatalf("DELETE: %+v", r)
			}
			assertGone(t, cfg, name, procs)
		})
	}
}
