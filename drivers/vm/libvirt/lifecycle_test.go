package libvirt

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
)

// VM tests boot real QEMU guests: run them under
// flock /tmp/coopr-nspawn.lock, one run at a time.

func TestConformance(t *testing.T) {
	e := newTestEnv(t)
	key := newClusterKey(t)
	cluster := fmt.Sprintf("lvconf%d", time.Now().UnixNano()%1e6)
	drv := New(e.cfg, nil)
	drivertest.VM(t, drv, func(action string) *drivers.Task {
		return e.task(key, cluster, "node-1", "conf1.example.test", action)
	})
}

// What the suite does not check of a node's life (its facts, flavor,
// seed, a retried CREATE starting a stopped domain, DELETE leaving
// nothing) TestClusterNetworks checks on its VM: one boot for both.

// TestCleanup: cleanup removes the nodes no cluster owns, with their
// volumes and reservations, keeps the owned ones, and with All removes
// everything of the installation and the network it defined.
func TestCleanup(t *testing.T) {
	e := newTestEnv(t)
	key := newClusterKey(t)
	cluster := fmt.Sprintf("lvclean%d", time.Now().UnixNano()%1e6)
	drv := New(e.cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := map[string]string{}
	for _, id := range []string{"owned", "orphan"} {
		r := drv.Run(ctx, e.task(key, cluster, id, id, "CREATE"), nil)
		if r.Status != 0 {
			t.Fatalf("CREATE %s: %d %s", id, r.Status, r.Message)
		}
		names[id] = r.Facts["providerId"].(string)
	}
	// Another installation's node on the same libvirt is not this one's to remove.
	other := e
	other.cfg.StateDir = t.TempDir()
	otherDrv := New(other.cfg, nil)
	ro := otherDrv.Run(ctx, other.task(key, cluster, "orphan", "other", "CREATE"), nil)
	if ro.Status != 0 {
		t.Fatalf("CREATE in another installation: %d %s", ro.Status, ro.Message)
	}
	defer otherDrv.Run(context.Background(), withFacts(other.task(key, cluster, "orphan", "other", "DELETE"), ro), nil)

	if err := Cleanup(ctx, CleanupOptions{URI: e.cfg.URI, StateDir: e.cfg.StateDir, Owned: []NodeKey{{Cluster: cluster, Node: "owned"}}}); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	c, err := connect(ctx, e.cfg.URI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	pool, err := c.lv.StoragePoolLookupByName("coopr-test")
	if err != nil {
		t.Fatal(err)
	}
	present := func(name string) (dom, disk, seed, addr bool) {
		_, err := c.lv.DomainLookupByName(name)
		dom = err == nil
		_, disk, _ = c.volume(pool, diskVol(name))
		_, seed, _ = c.volume(pool, seedVol(name))
		l, _, _ := c.lookupNetwork(e.fields["network"].(string))
		for _, h := range l.hosts {
			addr = addr || h.Name == name
		}
		return
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{names["owned"], true}, {names["orphan"], false}, {ro.Facts["providerId"].(string), true}} {
		dom, disk, seed, addr := present(tc.name)
		if dom != tc.want || disk != tc.want || seed != tc.want || addr != tc.want {
			t.Errorf("after cleanup %s: domain %v disk %v seed %v address %v, want all %v", tc.name, dom, disk, seed, addr, tc.want)
		}
	}
	if err := Cleanup(ctx, CleanupOptions{URI: e.cfg.URI, StateDir: e.cfg.StateDir, All: true}); err != nil {
		t.Fatalf("cleanup all: %v", err)
	}
	if dom, disk, seed, addr := present(names["owned"]); dom || disk || seed || addr {
		t.Errorf("after cleanup --all %s: domain %v disk %v seed %v address %v", names["owned"], dom, disk, seed, addr)
	}
}

// TestAccelerator: with accelerator auto a node gets KVM where a guest
// boots under it and emulation where not (this test machine's KVM is
// offered but hangs its guests); with kvm a host whose KVM does not boot
// guests is refused, without retry, before anything is made.
func TestAccelerator(t *testing.T) {
	e := newTestEnv(t)
	c, err := connect(context.Background(), e.cfg.URI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if dt, _ := c.domainType(AccelAuto); dt != "kvm" {
		t.Skip("libvirt offers no KVM here: auto is tcg, kvm is refused (TestPickDomainType)")
	}
	key := newClusterKey(t)
	cluster := fmt.Sprintf("lvaccel%d", time.Now().UnixNano()%1e6)
	drv := New(e.cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	task := func(accel, action string) *drivers.Task {
		tk := e.task(key, cluster, "node-"+accel, "n-"+accel, action)
		tk.Provider.Provisioner["accelerator"] = accel
		return tk
	}
	r := drv.Run(ctx, task(AccelAuto, "CREATE"), nil)
	if r.Status != 0 {
		t.Fatalf("CREATE with auto: %d %s", r.Status, r.Message)
	}
	defer drv.Run(context.Background(), withFacts(task(AccelAuto, "DELETE"), r), nil)
	base, err := c.ensureBase(ctx, mustPool(t, c, e), settings{Config: e.cfg}, c.log)
	if err != nil {
		t.Fatal(err)
	}
	works, err := c.kvmWorks(ctx, base.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	want := map[bool]string{true: "kvm", false: "tcg"}[works]
	if got := r.Facts["accelerator"]; got != want {
		t.Errorf("CREATE with auto where KVM boots guests is %v: accelerator %v, want %s", works, got, want)
	}
	rk := drv.Run(ctx, task(AccelKVM, "CREATE"), nil)
	if works {
		if rk.Status != 0 || rk.Facts["accelerator"] != "kvm" {
			t.Errorf("CREATE with kvm where KVM works: %d %s %v", rk.Status, rk.Message, rk.Facts)
		}
		drv.Run(context.Background(), withFacts(task(AccelKVM, "DELETE"), rk), nil)
		return
	}
	if rk.Status != statusNothingCreated || rk.Retryable == nil || *rk.Retryable || !strings.Contains(rk.Message, "does not boot under it") {
		t.Errorf("CREATE with kvm where KVM hangs guests: status %d retryable %v %q, want a refusal", rk.Status, rk.Retryable == nil, rk.Message)
	}
}

func mustPool(t *testing.T, c *conn, e testEnv) golibvirt.StoragePool {
	t.Helper()
	p, err := c.lv.StoragePoolLookupByName(e.fields["pool"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCleanupsSideBySide: two cleanups with All at once (two
// installations', or two test packages') both sweep the same unused
// networks; the one that loses a race for a network must not fail on it.
func TestCleanupsSideBySide(t *testing.T) {
	needLibvirt(t, DefaultURI)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := connect(ctx, DefaultURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	base := os.Getpid()%50 + 200
	for round := range 4 {
		var names []string
		for i := range 6 {
			name := fmt.Sprintf("coopr-side%d-%d", base, i)
			if _, err := c.ensureNetwork(name, netip.MustParsePrefix(fmt.Sprintf("10.236.%d.0/24", (base+i*7)%250)), ""); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			names = append(names, name)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() {
				errs[i] = Cleanup(ctx, CleanupOptions{URI: DefaultURI, StateDir: t.TempDir(), All: true})
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: cleanup %d: %v", round, i, err)
			}
		}
		for _, name := range names {
			if _, found, _ := c.lookupNetwork(name); found {
				t.Fatalf("round %d: network %s is left", round, name)
			}
		}
	}
}
