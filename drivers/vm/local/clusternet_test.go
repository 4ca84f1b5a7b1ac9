package local

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/drivers/network/hosts"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in     string
		bits   int
		first  string
		last   string
		count  int
		errHas string
	}{
		{in: "10.232.0.0/16", bits: 24, first: "10.232.0.0/24", last: "10.232.255.0/24", count: 256},
		{in: "10.231.7.9/24", bits: 27, first: "10.231.7.0/27", last: "10.231.7.224/27", count: 8},
		{in: "10.231.7.8/29", bits: 29, first: "10.231.7.8/29", last: "10.231.7.8/29", count: 1},
		{in: "10.0.0.0/8", bits: 16, first: "10.0.0.0/16", last: "10.255.0.0/16", count: 256},
		{in: "10.0.0.0/24", bits: 23, errHas: "clusterPrefix 23"},
		{in: "10.0.0.0/16", bits: 30, errHas: "clusterPrefix 30"},
		{in: "10.0.0.0/8", bits: 12, errHas: "at least /16"},
		{in: "fd00::/64", bits: 24, errHas: "IPv4"},
	} {
		r, err := parseRange(c.in, c.bits)
		if c.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Errorf("%s /%d: err %v, want %q", c.in, c.bits, err, c.errHas)
			}
			continue
		}
		if err != nil || r.clusters() != c.count || r.nth(0).String() != c.first || r.nth(r.clusters()-1).String() != c.last {
			t.Errorf("%s /%d: %v clusters %d, first %s, last %s", c.in, c.bits, err, r.clusters(), r.nth(0), r.nth(r.clusters()-1))
		}
	}
}

// TestClusterNetworks: NETWORK_ALLOCATE gives each cluster its own bridge
// and subnet, again the same on a retry; a node of one cluster cannot
// reach a node of another even when it routes through the host and the
// host forwards; NETWORK_RELEASE refuses while nodes are on the network,
// then removes it, and succeeds again when it is gone.
func TestClusterNetworks(t *testing.T) {
	cfg := testConfig(t)
	key := newClusterKey(t)
	vm := New(cfg, nil)
	nd := NewNetwork(cfg, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	netTask := func(cluster, action string) *drivers.Task {
		task := newTask(key, cluster, "", "", action)
		task.Node = nil
		task.Provider.Network = map[string]any{"type": "local"}
		return task
	}
	do := func(t *testing.T, drv drivers.Driver, task *drivers.Task) drivers.Result {
		t.Helper()
		r := drv.Run(ctx, task, nil)
		if r.Status != 0 {
			t.Fatalf("%s of cluster %s: status %d: %s", task.TaskName, task.ClusterID, r.Status, r.Message)
		}
		return r
	}
	const a, b = "00000501", "00000502"
	first := do(t, nd, netTask(a, "NETWORK_ALLOCATE"))
	if again := do(t, nd, netTask(a, "NETWORK_ALLOCATE")); again.Message != first.Message {
		t.Errorf("a retried NETWORK_ALLOCATE found another network: %q, then %q", first.Message, again.Message)
	}
	do(t, nd, netTask(b, "NETWORK_ALLOCATE"))
	na, err := readNet(cfg.StateDir, clusterBridge(cfg.StateDir, a))
	if err != nil {
		t.Fatal(err)
	}
	nb, err := readNet(cfg.StateDir, clusterBridge(cfg.StateDir, b))
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := netip.MustParsePrefix(na.Subnet), netip.MustParsePrefix(nb.Subnet)
	rng, _ := parseRange(cfg.Subnet, cfg.ClusterPrefix)
	if na.Bridge == nb.Bridge || pa.Masked().Overlaps(pb.Masked()) || !rng.prefix.Contains(pa.Addr()) || !rng.prefix.Contains(pb.Addr()) ||
		pa.Bits() != cfg.ClusterPrefix {
		t.Fatalf("networks %+v and %+v: want two bridges and two /%d subnets of %s", na, nb, cfg.ClusterPrefix, cfg.Subnet)
	}

	// Two nodes of a, one of b.
	type made struct {
		r    drivers.Result
		task func(string) *drivers.Task
	}
	var nodes []made
	for _, n := range []struct{ cluster, id string }{{a, "a0"}, {a, "a1"}, {b, "b0"}} {
		mk := func(action string) *drivers.Task {
			task := newTask(key, n.cluster, n.id, "", action)
			task.Provider.Network = map[string]any{"type": "local"}
			return task
		}
		r := do(t, vm, mk("CREATE"))
		r = do(t, vm, withFacts(mk("CONFIRM"), r)) // the host reaches it by SSH
		nodes = append(nodes, made{r, mk})
	}
	addr := func(i int) string { return nodes[i].r.IPAddresses["access_v4"] }
	for i, want := range []netip.Prefix{pa, pa, pb} {
		if !want.Masked().Contains(netip.MustParseAddr(addr(i))) {
			t.Errorf("node %d at %s, outside its cluster's subnet %s", i, addr(i), want)
		}
	}

	t.Run("isolation", func(t *testing.T) {
		// A host that forwards (as one running other containers does)
		// must still keep clusters apart.
		const fwd = "/proc/sys/net/ipv4/ip_forward"
		old, err := os.ReadFile(fwd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fwd, []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(fwd, old, 0o644)
		connect := func(from int, to string) (string, error) {
			return sshRun(addr(from), hostKeysFact(t, nodes[from].r), key.signer, fmt.Sprintf(
				`python3 -c 'import socket; socket.create_connection(("%s", 22), timeout=3); print("connected")' 2>&1 | tail -1`, to))
		}
		// Each node routes the other cluster's subnet through the host
		// (nodes cannot change their routes, lacking CAP_NET_ADMIN; this
		// stands for a setup that gives them a default route).
		for i, other := range map[int]netip.Prefix{0: pb, 2: pa} {
			via := pa.Addr()
			if i == 2 {
				via = pb.Addr()
			}
			ns := nodes[i].r.Facts["providerId"].(string)
			if out, err := run(ctx, "ip", "-n", ns, "route", "replace", other.Masked().String(), "via", via.String()); err != nil {
				t.Fatalf("route in %s: %v: %s", ns, err, out)
			}
		}
		if out, err := connect(0, addr(1)); err != nil || out != "connected" {
			t.Errorf("a0 cannot reach a1, its own cluster's node: %v: %s", err, out)
		}
		if out, _ := connect(0, addr(2)); out == "connected" {
			t.Errorf("a0 reached b0 at %s, a node of another cluster", addr(2))
		}
		if out, _ := connect(2, addr(0)); out == "connected" {
			t.Errorf("b0 reached a0 at %s, a node of another cluster", addr(0))
		}
	})

	t.Run("release", func(t *testing.T) {
		r := nd.Run(ctx, netTask(a, "NETWORK_RELEASE"), nil)
		if r.Status == 0 || !strings.Contains(r.Message, "still has nodes") {
			t.Errorf("NETWORK_RELEASE with nodes on the network: %+v", r)
		}
		for i := range 2 {
			do(t, vm, withFacts(nodes[i].task("DELETE"), nodes[i].r))
		}
		// The network driver manages it: the last DELETE leaves it.
		if _, err := os.Stat("/sys/class/net/" + na.Bridge); err != nil {
			t.Fatalf("the last DELETE removed a network the network driver manages: %v", err)
		}
		do(t, nd, netTask(a, "NETWORK_RELEASE"))
		if _, err := os.Stat("/sys/class/net/" + na.Bridge); err == nil {
			t.Errorf("bridge %s survives NETWORK_RELEASE", na.Bridge)
		}
		if _, err := readNet(cfg.StateDir, na.Bridge); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("record of %s survives NETWORK_RELEASE: %v", na.Bridge, err)
		}
		if r := do(t, nd, netTask(a, "NETWORK_RELEASE")); !strings.Contains(r.Message, "already gone") {
			t.Errorf("NETWORK_RELEASE again: %q", r.Message)
		}
	})

	t.Run("no network driver: the last DELETE releases", func(t *testing.T) {
		task := nodes[2].task("DELETE")
		task.Provider.Network = nil
		do(t, vm, withFacts(task, nodes[2].r))
		if _, err := os.Stat("/sys/class/net/" + nb.Bridge); err == nil {
			t.Errorf("bridge %s survives its last node's DELETE without a network driver", nb.Bridge)
		}
	})

	t.Run("cleanup spares live clusters' networks", func(t *testing.T) {
		const live, dead = "00000503", "00000504"
		do(t, nd, netTask(live, "NETWORK_ALLOCATE"))
		do(t, nd, netTask(dead, "NETWORK_ALLOCATE"))
		// Without all, a network made in the last minute may be a
		// NETWORK_ALLOCATE whose CREATEs have not come: it stays.
		if err := Cleanup(ctx, cfg.StateDir, nil, false); err != nil {
			t.Fatal(err)
		}
		if _, err := readNet(cfg.StateDir, clusterBridge(cfg.StateDir, dead)); err != nil {
			t.Errorf("Cleanup removed a network just made: %v", err)
		}
		if err := CleanupOrphans(ctx, cfg.StateDir, nil, []NodeKey{{Cluster: live, Node: "x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/sys/class/net/" + clusterBridge(cfg.StateDir, live)); err != nil {
			t.Errorf("a restart's cleanup removed the network of a live cluster: %v", err)
		}
		if _, err := os.Stat("/sys/class/net/" + clusterBridge(cfg.StateDir, dead)); err == nil {
			t.Errorf("a restart's cleanup left the network of a cluster nobody owns")
		}
	})
}

// TestNetworkConformance runs the network suite against the local network
// driver, on sshd hosts (the /etc/hosts half is the hosts driver's); the
// cluster's network is made by NETWORK_ALLOCATE and gone after
// NETWORK_RELEASE.
func TestNetworkConformance(t *testing.T) {
	cfg := testConfig(t)
	c := drivertest.NewCluster(t, 2, sshdtest.Options{})
	p := remote.NewPool(remote.Options{})
	t.Cleanup(func() { _ = p.Close() })
	drivertest.Network(t, NewNetwork(cfg, hosts.New(p, nil), nil), drivertest.NetworkEnv{Cluster: c,
		Exists: func(t testing.TB) bool {
			_, errRec := readNet(cfg.StateDir, clusterBridge(cfg.StateDir, c.ID))
			_, errDev := os.Stat("/sys/class/net/" + clusterBridge(cfg.StateDir, c.ID))
			return errRec == nil && errDev == nil
		}})
}

// BenchmarkClusterNetwork is one cluster's NETWORK_ALLOCATE and
// NETWORK_RELEASE on this host: the record, the bridge with the host's
// address, the isolation rules, and their removal.
func BenchmarkClusterNetwork(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the local network driver needs root")
	}
	cfg := Config{StateDir: b.TempDir(), Subnet: fmt.Sprintf("10.231.%d.0/24", os.Getpid()%150+100), ClusterPrefix: 27}
	b.Cleanup(func() { _ = Cleanup(context.Background(), cfg.StateDir, nil, true) })
	nd := NewNetwork(cfg, nil, nil)
	ctx := context.Background()
	task := func(action string) *drivers.Task {
		t := newTask(clusterKey{}, "00000601", "", "", action)
		t.Node = nil
		return t
	}
	for b.Loop() {
		for _, action := range []string{"NETWORK_ALLOCATE", "NETWORK_RELEASE"} {
			if r := nd.Run(ctx, task(action), nil); r.Status != 0 {
				b.Fatalf("%s: %s", action, r.Message)
			}
		}
	}
}

// TestSubnetsAcrossInstallations: two installations (state dirs) sharing
// one range, allocating at the same time, never give two clusters the
// same subnet; and the host's isolation table goes with the last cluster
// bridge.
func TestSubnetsAcrossInstallations(t *testing.T) {
	a := testConfig(t)
	b := a
	b.StateDir = t.TempDir()
	t.Cleanup(func() { _ = Cleanup(context.Background(), b.StateDir, nil, true) })
	rng, err := parseRange(a.Subnet, a.ClusterPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type got struct {
		dir, cluster, subnet string
		err                  error
	}
	ch := make(chan got)
	for _, dir := range []string{a.StateDir, b.StateDir} {
		for i := range 4 {
			go func() {
				cluster := fmt.Sprintf("inst%d", i)
				nw, err := ensureClusterNet(ctx, dir, rng, cluster)
				ch <- got{dir, cluster, nw.subnet.prefix.String(), err}
			}()
		}
	}
	seen := map[string]string{}
	var made []got
	for range 8 {
		g := <-ch
		if g.err != nil {
			t.Errorf("%s %s: %v", g.dir, g.cluster, g.err)
			continue
		}
		made = append(made, g)
		if other, dup := seen[g.subnet]; dup {
			t.Errorf("subnet %s given twice: %s and %s %s", g.subnet, other, g.dir, g.cluster)
		}
		seen[g.subnet] = g.dir + " " + g.cluster
	}
	for _, g := range made {
		if _, err := releaseClusterNet(ctx, g.dir, g.cluster); err != nil {
			t.Errorf("release %s %s: %v", g.dir, g.cluster, err)
		}
	}
	// Other tests or a dev setup may hold cluster bridges of their own;
	// the table must stay for them and go only when none is left.
	if left, _ := filepath.Glob("/sys/class/net/" + bridgePrefix + "*"); len(left) == 0 {
		if out, err := run(ctx, "nft", "list", "table", "inet", nftTable); err == nil {
			t.Errorf("table %s still there after the last cluster bridge went:\n%s", nftTable, out)
		}
	} else {
		t.Logf("cluster bridges of others on the host (%d): not checking the isolation table's removal", len(left))
	}
}

// TestRecordedSubnetTakenSince: a cluster network whose bridge went (the
// host rebooted) is not made again on a subnet another interface holds
// by now; the error names that interface.
func TestRecordedSubnetTakenSince(t *testing.T) {
	cfg := testConfig(t)
	rng, err := parseRange(cfg.Subnet, cfg.ClusterPrefix)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nw, err := ensureClusterNet(ctx, cfg.StateDir, rng, "taken")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, "ip", "link", "del", nw.bridge); err != nil {
		t.Fatal(err)
	}
	other := fmt.Sprintf("cpt%d", os.Getpid()%100000)
	if _, err := run(ctx, "ip", "link", "add", other, "type", "bridge"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = run(context.Background(), "ip", "link", "del", other) })
	if _, err := run(ctx, "ip", "addr", "add", nw.subnet.hostCIDR(), "dev", other); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureClusterNet(ctx, cfg.StateDir, rng, "taken"); err == nil || !strings.Contains(err.Error(), other) {
		t.Fatalf("network again on a subnet %s holds: %v, want an error naming %s", other, err, other)
	}
	if _, err := os.Stat("/sys/class/net/" + nw.bridge); err == nil {
		t.Errorf("bridge %s made again on a taken subnet", nw.bridge)
	}
	// Freed there, the network comes back as it was.
	if _, err := run(ctx, "ip", "link", "del", other); err != nil {
		t.Fatal(err)
	}
	again, err := ensureClusterNet(ctx, cfg.StateDir, rng, "taken")
	if err != nil || again.subnet.prefix != nw.subnet.prefix {
		t.Fatalf("after freeing: %v, subnet %v, want %v", err, again.subnet.prefix, nw.subnet.prefix)
	}
	if _, err := releaseClusterNet(ctx, cfg.StateDir, "taken"); err != nil {
		t.Fatal(err)
	}
}
