package libvirt

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/drivers/network/hosts"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// TestNetworkConformance runs the network role's suite against the libvirt
// network driver on sshd hosts (the /etc/hosts half is the hosts
// driver's): NETWORK_ALLOCATE makes the cluster's libvirt network, again
// without a second one, and NETWORK_RELEASE removes it, twice. No VM is
// booted.
func TestNetworkConformance(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the libvirt network driver's tests need root (networks on qemu:///system)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c, err := connect(ctx, DefaultURI, nil)
	cancel()
	if err != nil {
		t.Skipf("libvirt is not usable here (%v): scripts/test-prereqs installs and starts it", err)
	}
	t.Cleanup(c.close)
	cfg := Config{StateDir: t.TempDir()}
	cl := drivertest.NewCluster(t, 2, sshdtest.Options{})
	name := clusterNetName(cfg.StateDir, cl.ID)
	t.Cleanup(func() {
		// Whatever a failed run left.
		if _, err := c.releaseClusterNetwork(name); err != nil {
			t.Errorf("release %s: %v", name, err)
		}
	})
	p := remote.NewPool(remote.Options{})
	t.Cleanup(func() { _ = p.Close() })
	drivertest.Network(t, NewNetwork(cfg, hosts.New(p, nil), nil), drivertest.NetworkEnv{Cluster: cl,
		Exists: func(t testing.TB) bool {
			_, ok, err := c.lookupNetwork(name)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}})
}
