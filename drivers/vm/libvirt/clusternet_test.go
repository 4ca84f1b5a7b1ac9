package libvirt

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"golang.org/x/sys/unix"

	"github.com/cooprhq/coopr/drivers"
)

func TestClusterRange(t *testing.T) {
	for _, tc := range []struct {
		fields map[string]any
		rng    string
		bits   int
		err    string
	}{
		{map[string]any{}, DefaultClusterRange, DefaultClusterPrefix, ""},
		{map[string]any{"clusterRange": "10.9.0.0/20", "clusterPrefix": "28"}, "10.9.0.0/20", 28, ""},
		{map[string]any{"clusterPrefix": 26.0}, DefaultClusterRange, 26, ""},
		{map[string]any{"clusterRange": "10.9.0.0/24", "clusterPrefix": "20"}, "", 0, "clusterPrefix"},
		{map[string]any{"clusterRange": "fd00::/48"}, "", 0, "clusterRange"},
		{map[string]any{"clusterPrefix": "/30"}, "", 0, "clusterPrefix"},
	} {
		r, bits, err := clusterRange(tc.fields)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want an error naming %s", tc.fields, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.rng || bits != tc.bits {
			t.Errorf("%v: %s /%d %v, want %s /%d", tc.fields, r, bits, err, tc.rng, tc.bits)
		}
	}
}

// TestClusterNetworks: with the network type libvirt every cluster gets an
// isolated network of its own, made once however often ALLOCATE and
// CREATE ask; a node reaches the host but not what is on another
// cluster's network; RELEASE refuses (retryably) while nodes are on the
// network, then removes it, and succeeds again when it is gone.
//
// One VM boots (two at once take more than twice as long on an emulating
// host): the other cluster's network holds a network namespace plugged
// into its bridge, answering on port 22 as a node would, which the host
// reaches and the VM must not.
func TestClusterNetworks(t *testing.T) {
	e := newTestEnv(t)
	key := newClusterKey(t)
	e.fields["clusterRange"] = "10.237.0.0/20"
	e.fields["clusterPrefix"] = "28"
	nd := NewNetwork(e.cfg, nil, nil)
	drv := New(e.cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	stamp := time.Now().UnixNano() % 1e6
	clusters := []string{fmt.Sprintf("lvneta%d", stamp), fmt.Sprintf("lvnetb%d", stamp)}
	task := func(cluster, action string) *drivers.Task {
		tk := e.task(key, cluster, "node-1", "n1-"+cluster, action)
		tk.Provider.Network = map[string]any{"type": "libvirt", "fields": map[string]any{}}
		if strings.HasPrefix(action, "NETWORK_") {
			tk.Node = nil
		}
		return tk
	}
	subnets := map[string]string{}
	for _, cl := range clusters {
		for i := range 2 {
			r := nd.Run(ctx, task(cl, "NETWORK_ALLOCATE"), nil)
			if r.Status != 0 {
				t.Fatalf("ALLOCATE %s #%d: %d %s", cl, i+1, r.Status, r.Message)
			}
			if i == 1 && r.Message != subnets[cl] {
				t.Errorf("ALLOCATE %s again: %q, first %q", cl, r.Message, subnets[cl])
			}
			subnets[cl] = r.Message
		}
	}
	if subnets[clusters[0]] == subnets[clusters[1]] {
		t.Fatalf("two clusters got one network: %s", subnets[clusters[0]])
	}

	// The node's life, on the first cluster's network: its facts name the
	// accelerator, its domain its flavor's size; a CREATE retried after
	// the domain stopped (the host rebooted) starts it again, same
	// domain, same address.
	c, err := connect(ctx, e.cfg.URI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	r := drv.Run(ctx, task(clusters[0], "CREATE"), nil)
	if r.Status != 0 {
		t.Fatalf("CREATE in %s: %d %s", clusters[0], r.Status, r.Message)
	}
	defer drv.Run(context.Background(), withFacts(task(clusters[0], "DELETE"), r), nil)
	name := r.Facts["providerId"].(string)
	if got, want := r.Facts["accelerator"], map[string]string{AccelTCG: "tcg", AccelKVM: "kvm"}[testAccel()]; want != "" && got != want {
		t.Errorf("facts.accelerator %v, want %s", got, want)
	}
	dom, err := c.lv.DomainLookupByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, maxMem, _, vcpus, _, err := c.lv.DomainGetInfo(dom); err != nil || maxMem != 512*1024 || vcpus != 1 {
		t.Errorf("flavor small: domain has %d KiB and %d vCPUs (%v), want 524288 KiB and 1", maxMem, vcpus, err)
	}
	if err := c.lv.DomainDestroy(dom); err != nil {
		t.Fatal(err)
	}
	r2 := drv.Run(ctx, task(clusters[0], "CREATE"), nil)
	if r2.Status != 0 || r2.Facts["providerId"] != name || r2.IPAddresses["access_v4"] != r.IPAddresses["access_v4"] {
		t.Fatalf("CREATE after the domain stopped: %d %s %v %v", r2.Status, r2.Message, r2.Facts["providerId"], r2.IPAddresses)
	}
	if up, _ := c.running(dom); !up {
		t.Fatalf("CREATE again did not start the stopped domain")
	}
	r = drv.Run(ctx, withFacts(task(clusters[0], "CONFIRM"), r2), nil)
	if r.Status != 0 {
		t.Fatalf("CONFIRM in %s: %d %s", clusters[0], r.Status, r.Message)
	}
	lans := make([]*lan, 2)
	for i, cl := range clusters {
		l, ok, err := c.lookupNetwork(clusterNetName(e.cfg.StateDir, cl))
		if err != nil || !ok {
			t.Fatalf("network of %s: %v %v", cl, ok, err)
		}
		lans[i] = l
		if l.prefix.Bits() != 28 || !netip.MustParsePrefix("10.237.0.0/20").Contains(l.prefix.Addr()) {
			t.Errorf("network of %s is %s: want a /28 of 10.237.0.0/20", cl, l.prefix)
		}
	}
	addr := netip.MustParseAddr(r.IPAddresses["access_v4"])
	if !lans[0].prefix.Contains(addr) {
		t.Errorf("node of %s at %s, outside its network %s", clusters[0], addr, lans[0].prefix)
	}
	other := plugNamespace(t, fmt.Sprintf("cvn%d", stamp), lans[1])
	// The host reaches it: what stops the VM is the isolation alone.
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort(other.String(), "22"), 3*time.Second); err != nil {
		t.Fatalf("the host cannot reach %s on the other cluster's network: %v", other, err)
	} else {
		conn.Close()
	}
	probe := fmt.Sprintf("ping -c1 -W2 %s >/dev/null && echo host-ok || echo host-no; ping -c1 -W2 %s >/dev/null && echo other-ok || echo other-no; timeout 3 bash -c 'echo >/dev/tcp/%s/22' 2>/dev/null && echo ssh-ok || echo ssh-no",
		lans[0].gw, other, other)
	out := sshRun(t, addr.String(), key, probe)
	if !strings.Contains(out, "host-ok") || !strings.Contains(out, "other-no") || !strings.Contains(out, "ssh-no") {
		t.Errorf("from %s's node: %q, want the host reached and the other cluster's network not", clusters[0], out)
	}
	// The guest has its host name, address and the cluster key from the
	// seed; SSH answers before cloud-init's last stage ends, which must
	// not fail.
	hostname := "n1-" + clusters[0]
	out = sshRun(t, addr.String(), key, "hostname; ip -4 -o addr show eth0; cat /root/.ssh/authorized_keys; cat /etc/hosts; cloud-init status; cloud-init schema --system 2>&1 | tail -5")
	for _, want := range []string{hostname + "\n", addr.String() + "/", strings.TrimSpace(key.public),
		"127.0.0.1\tlocalhost\n", addr.String() + "\t" + hostname + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the guest says %q, want it to contain %q", out, want)
		}
	}
	if strings.Contains(out, "status: error") {
		t.Errorf("cloud-init failed: %s", out)
	}

	rr := nd.Run(ctx, task(clusters[0], "NETWORK_RELEASE"), nil)
	if rr.Status == 0 || (rr.Retryable != nil && !*rr.Retryable) || !strings.Contains(rr.Message, "still has nodes") {
		t.Errorf("RELEASE with a node on the network: %d retryable %v %q, want a retryable failure", rr.Status, rr.Retryable == nil, rr.Message)
	}
	if rd := drv.Run(ctx, withFacts(task(clusters[0], "DELETE"), r), nil); rd.Status != 0 {
		t.Fatalf("DELETE in %s: %s", clusters[0], rd.Message)
	}
	// DELETE leaves no domain, volume or reservation.
	if _, err := c.lv.DomainLookupByName(name); !notFound(err, golibvirt.ErrNoDomain) {
		t.Errorf("domain %s is still there after DELETE (%v)", name, err)
	}
	pool := mustPool(t, c, e)
	for _, v := range []string{diskVol(name), seedVol(name)} {
		if _, ok, _ := c.volume(pool, v); ok {
			t.Errorf("volume %s is still there after DELETE", v)
		}
	}
	if l, _, err := c.lookupNetwork(lans[0].name); err != nil {
		t.Fatal(err)
	} else {
		for _, h := range l.hosts {
			if h.Name == name {
				t.Errorf("address reservation %s of %s is still there after DELETE", h.IP, name)
			}
		}
	}
	unplug(t, fmt.Sprintf("cvn%d", stamp))
	for _, cl := range clusters {
		for j, want := range []string{"released", "already gone"} {
			r := nd.Run(ctx, task(cl, "NETWORK_RELEASE"), nil)
			if r.Status != 0 || !strings.Contains(r.Message, want) {
				t.Errorf("RELEASE %s #%d: %d %q, want %q", cl, j+1, r.Status, r.Message, want)
			}
		}
	}
}

// plugNamespace makes network namespace name with a veth into l's bridge,
// on l's last address, routed through the host, answering TCP on port 22;
// the test's end removes it. It returns the address.
func plugNamespace(t *testing.T, name string, l *lan) netip.Addr {
	t.Helper()
	last := l.prefix.Addr()
	for range 1<<(32-l.prefix.Bits()) - 2 {
		last = last.Next()
	}
	host, peer := "h"+name, "p"+name
	for _, args := range [][]string{
		{"netns", "add", name},
		{"link", "add", host, "type", "veth", "peer", "name", peer, "netns", name},
		{"link", "set", host, "master", l.bridge, "up"},
		{"-n", name, "addr", "add", netip.PrefixFrom(last, l.prefix.Bits()).String(), "dev", peer},
		{"-n", name, "link", "set", peer, "up"},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "route", "add", "default", "via", l.gw.String()},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			unplug(t, name)
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() { unplug(t, name) })
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result)
	go func() {
		// Never unlocked: the thread ends with this goroutine, in
		// whichever namespace it is.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + name)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(last.String(), "22"))
		ch <- result{ln, err}
	}()
	res := <-ch
	if res.err != nil {
		t.Fatalf("listen in %s: %v", name, res.err)
	}
	t.Cleanup(func() { res.l.Close() })
	go func() {
		for {
			conn, err := res.l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	return last
}

// unplug removes the namespace and with it its veth pair.
func unplug(t *testing.T, name string) {
	if _, err := os.Stat("/run/netns/" + name); err != nil {
		return
	}
	if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
		t.Errorf("ip netns del %s: %v: %s", name, err, out)
	}
}
