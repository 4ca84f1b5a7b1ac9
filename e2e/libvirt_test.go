package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers/vm/libvirt"
)

// A web cluster of virtual machines from the example catalog's libvirt
// template, the services unchanged: one balancer and one web node, each a
// QEMU guest on a network of the cluster's own (network driver libvirt).
// The agent that starts the create is killed with SIGKILL in the middle of
// a CREATE; another agent of the same installation finishes the cluster,
// which serves through the balancer with exactly one domain a node (the
// killed CREATE's domain is found again, not left beside a new one).
// Scaled out by a web node, the balancer answers from both; deleted,
// no domain, volume or network is left. The accelerator is
// COOPR_TEST_LIBVIRT_ACCEL's (default tcg: this kind of machine may offer
// KVM that hangs its guests). The tenant runs two tasks at once: two VMs
// boot at a time at most. Run under flock /tmp/coopr-nspawn.lock.
func TestWebClusterOnLibvirt(t *testing.T) {
	w := newLibvirtWorld(t, 2, fmt.Sprintf("10.238.%d.0/24", netIndex))
	doomed := w.startDoomed(t, 2, "--libvirt-state-dir", w.libvirtCfg.StateDir)

	id := w.create(t, "libvirt-web-cluster", "", 2)
	held, killed := w.killMidCreate(t, doomed, id, 3*time.Minute)
	// Whether the killed CREATEs had defined their domains yet is the
	// race's: say which, for the count checked below.
	if left, err := libvirt.Leftovers(context.Background(), libvirtURI(), w.libvirtCfg.StateDir, id); err == nil {
		t.Logf("at the kill, the cluster had on libvirt: %v", left)
	}
	w.startAgent(t, "survivor", 2)
	w.follow(t, id, "ACTIVE", 12*time.Minute)
	w.checkRerun(t, id, held, killed, "survivor")
	var names []string // the cluster's domains, whose volumes are named after them
	domains := func(want int) {
		t.Helper()
		left, err := libvirt.Leftovers(context.Background(), libvirtURI(), w.libvirtCfg.StateDir, id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range left {
			if name, ok := strings.CutPrefix(l, "domain "); ok {
				n++
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		if n != want {
			t.Errorf("the cluster has %d domains, want one for each of its %d nodes: %v", n, want, left)
		}
	}
	c := w.cluster(t, id)
	lbs, webs := withService(c, "lb"), withService(c, "web")
	if len(lbs) != 1 || len(webs) != 1 {
		t.Fatalf("layout: %d lb, %d web nodes, want 1 and 1: %+v", len(lbs), len(webs), c.Nodes)
	}
	domains(2)
	lbURL := "http://" + lbs[0].Ipaddresses["access_v4"] + "/"
	for host, body := range answers(t, lbURL, hostnames(webs), time.Minute) {
		if body != host+" hello from coopr" {
			t.Errorf("web node %s answers %q", host, body)
		}
	}

	t.Run("add a web node", func(t *testing.T) {
		w.operate(t, id, map[string]any{"operation": "SCALE", "numMachines": 3})
		w.follow(t, id, "ACTIVE", 8*time.Minute)
		c := w.cluster(t, id)
		webs := withService(c, "web")
		if len(c.Nodes) != 3 || len(webs) != 2 {
			t.Fatalf("after scale: %d nodes, %d web, want 3 and 2", len(c.Nodes), len(webs))
		}
		domains(3)
		for host, body := range answers(t, lbURL, hostnames(webs), time.Minute) {
			if body != host+" hello from coopr" {
				t.Errorf("web node %s answers %q", host, body)
			}
		}
	})

	// Long after their boot, sshd was never restarted on any node: it
	// refuses no connection after CONFIRM found it up (cloud-init's later
	// stages leave it alone).
	signer := w.clusterSigner(t, id)
	for _, n := range w.cluster(t, id).Nodes {
		out := sshRun(t, n.Ipaddresses["access_v4"], signer, "cloud-init status --wait | tail -1; journalctl -u ssh.service -o cat --no-pager | grep -c '^Stopping' || true")
		if !strings.Contains(out, "status: done") || strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]) != "0" {
			t.Errorf("node %s: cloud-init status, then how often sshd stopped: %q, want done and 0", n.Hostname, out)
		}
	}

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 5*time.Minute)
	left, err := libvirt.Leftovers(context.Background(), libvirtURI(), w.libvirtCfg.StateDir, id)
	if err != nil || len(left) > 0 {
		t.Errorf("after delete: %v left (%v)", left, err)
	}
	out, err := exec.Command("virsh", "-c", libvirtURI(), "vol-list", "coopr-test").CombinedOutput()
	if err != nil {
		t.Fatalf("virsh vol-list: %v: %s", err, out)
	}
	for _, name := range names {
		if strings.Contains(string(out), name) {
			t.Errorf("after delete, volumes of %s are left:\n%s", name, out)
		}
	}
}

// newLibvirtWorld is a world whose tenant runs workers tasks at once, with
// a libvirt provider on networks of the clusters' own carved from
// clusterRange; it skips when libvirt cannot run VMs here. The accelerator
// is COOPR_TEST_LIBVIRT_ACCEL's (default tcg: this kind of machine may
// offer KVM that hangs its guests).
func newLibvirtWorld(t testing.TB, workers int, clusterRange string) *world {
	t.Helper()
	accel := libvirtAccel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err := libvirt.Usable(ctx, libvirtURI(), accel)
	cancel()
	if err != nil {
		t.Skipf("libvirt is not usable here (%v): scripts/test-prereqs installs and starts it", err)
	}
	// Built once per host (several minutes the first time): say so, as it
	// happens, rather than leave the first CREATE silent that long.
	ictx, icancel := context.WithTimeout(context.Background(), 20*time.Minute)
	_, err = libvirt.EnsureImage(ictx, "", slog.New(slog.NewTextHandler(os.Stderr, nil)))
	icancel()
	if err != nil {
		t.Fatalf("libvirt base image: %v", err)
	}
	w := newWorld(t, workers)
	t.Cleanup(func() {
		if err := libvirt.Cleanup(context.Background(), libvirt.CleanupOptions{URI: libvirtURI(), StateDir: w.libvirtCfg.StateDir, All: true, Log: w.log}); err != nil {
			t.Errorf("libvirt cleanup: %v", err)
		}
	})
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "libvirt", "providertype": "libvirt",
			"provisioner": map[string]any{"uri": libvirtURI(), "accelerator": accel, "pool": "coopr-test", "poolPath": "/var/lib/libvirt/coopr-test",
				"clusterRange": clusterRange, "clusterPrefix": "28"},
			"network": map[string]any{"type": "libvirt", "fields": map[string]any{}}}}, &struct{}{})
	return w
}

// libvirtURI is the libvirt the tests' VMs run on: COOPR_TEST_LIBVIRT_URI
// (qemu+tcp://127.0.0.1/system drives this machine's as a remote one),
// or the local one.
func libvirtURI() string {
	if u := os.Getenv("COOPR_TEST_LIBVIRT_URI"); u != "" {
		return u
	}
	return libvirt.DefaultURI
}

// libvirtAccel is the accelerator the tests' VMs run with:
// COOPR_TEST_LIBVIRT_ACCEL, or emulation.
func libvirtAccel() string {
	if a := os.Getenv("COOPR_TEST_LIBVIRT_ACCEL"); a != "" {
		return a
	}
	return libvirt.AccelTCG
}
