package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers/vm/libvirt"
)

// A web cluster of virtual machines from the example catalog's libvirt
// template, the services unchanged: one balancer and one web node, each a
// QEMU guest on a network of the cluster's own (network driver libvirt);
// served through the balancer, then deleted with no domain or network
// left. The accelerator is COOPR_TEST_LIBVIRT_ACCEL's (default tcg: this
// kind of machine may offer KVM that hangs its guests). Run under
// flock /tmp/coopr-nspawn.lock.
func TestWebClusterOnLibvirt(t *testing.T) {
	accel := os.Getenv("COOPR_TEST_LIBVIRT_ACCEL")
	if accel == "" {
		accel = libvirt.AccelTCG
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err := libvirt.Usable(ctx, libvirt.DefaultURI, accel)
	cancel()
	if err != nil {
		t.Skipf("libvirt is not usable here (%v): scripts/test-prereqs installs and starts it", err)
	}
	w := newWorld(t, 4)
	t.Cleanup(func() {
		if err := libvirt.Cleanup(context.Background(), libvirt.CleanupOptions{StateDir: w.libvirtCfg.StateDir, All: true, Log: w.log}); err != nil {
			t.Errorf("libvirt cleanup: %v", err)
		}
	})
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "libvirt", "providertype": "libvirt",
			"provisioner": map[string]any{"accelerator": accel, "pool": "coopr-test", "poolPath": "/var/lib/libvirt/coopr-test",
				"clusterRange": fmt.Sprintf("10.238.%d.0/24", netIndex), "clusterPrefix": "28"},
			"network": map[string]any{"type": "libvirt", "fields": map[string]any{}}}}, &struct{}{})
	w.startAgent(t, "agent-1", 4)

	id := w.create(t, "libvirt-web-cluster", "", 2)
	w.follow(t, id, "ACTIVE", 12*time.Minute)
	c := w.cluster(t, id)
	lbs, webs := withService(c, "lb"), withService(c, "web")
	if len(lbs) != 1 || len(webs) != 1 {
		t.Fatalf("layout: %d lb, %d web nodes, want 1 and 1: %+v", len(lbs), len(webs), c.Nodes)
	}
	for host, body := range answers(t, "http://"+lbs[0].Ipaddresses["access_v4"]+"/", hostnames(webs), time.Minute) {
		if body != host+" hello from coopr" {
			t.Errorf("web node %s answers %q", host, body)
		}
	}

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 5*time.Minute)
	left, err := libvirt.Leftovers(context.Background(), libvirt.DefaultURI, w.libvirtCfg.StateDir, id)
	if err != nil || len(left) > 0 {
		t.Errorf("after delete: %v left (%v)", left, err)
	}
}
