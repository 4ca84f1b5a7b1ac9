package libvirt

import (
	"fmt"

	"github.com/cooprhq/coopr/drivers"
)

// Capacity is the driver's capacity rule (drivers.NetworkCapacityFunc).
//
// With the network type "libvirt" each cluster has a network of its own,
// a /clusterPrefix of the provider's clusterRange: a cluster holds that
// subnet's addresses less the network's, the broadcast and the host's,
// and the range holds so many clusters at once, shared by the providers
// naming the same libvirt and range. The server cannot see which of the
// range's subnets a host already uses (those the driver skips): it counts
// all of them.
//
// Otherwise each node takes an address of the provider's network, other
// than the subnet's own, its broadcast and the host's. Providers naming
// the same network of the same libvirt share its addresses. An existing
// network counts as the provider's subnet field says (DefaultSubnet when
// it says nothing).
func Capacity(fields map[string]any, networkType string) (drivers.Capacity, error) {
	d := &driver{cfg: Config{}.withDefaults()}
	t := &drivers.Task{}
	t.Provider.Provisioner = fields
	s, err := d.settingsFor(t)
	if err != nil {
		return drivers.Capacity{}, err
	}
	if networkType == NetworkDescriptor().Name {
		rng, bits, err := clusterRange(fields)
		if err != nil {
			return drivers.Capacity{}, err
		}
		return drivers.Capacity{
			Name:       fmt.Sprintf("a /%d of %s on libvirt %s for each cluster", bits, rng, s.URI),
			PerCluster: true,
			Groups:     []drivers.CapacityGroup{{Key: fmt.Sprintf("cluster subnet /%d", bits), Size: 1<<(32-bits) - 3}},
			ClusterKey: fmt.Sprintf("libvirt %s subnets of %s", s.URI, rng),
			Clusters:   1 << (bits - rng.Bits()),
		}, nil
	}
	key := fmt.Sprintf("libvirt %s network %s", s.URI, s.Network)
	size := 1<<(32-s.Subnet.Bits()) - 3
	return drivers.Capacity{Name: fmt.Sprintf("%s (%s)", key, s.Subnet), Groups: []drivers.CapacityGroup{{Key: key, Size: size}}}, nil
}
