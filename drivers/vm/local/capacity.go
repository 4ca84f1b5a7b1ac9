package local

import (
	"fmt"

	"github.com/cooprhq/coopr/drivers"
)

// Capacity is the driver's capacity rule (drivers.CapacityFunc): each
// cluster gets a subnet of its own, a /clusterPrefix of the provider's
// subnet range (DefaultSubnet and DefaultClusterPrefix when the provider
// names none), and each of its nodes takes an address of that subnet
// other than the network's, the broadcast and the host's. So a cluster
// holds at most that many nodes, and the range holds so many clusters at
// once; providers naming the same range share its clusters' subnets,
// whatever their state dir. The server cannot see an agent's own Config,
// so a provider without these fields counts as the defaults.
func Capacity(fields map[string]any) (drivers.Capacity, error) {
	s, err := resolve(Config{}.withDefaults(), fields)
	if err != nil {
		return drivers.Capacity{}, err
	}
	r := s.rng
	return drivers.Capacity{
		Name:       fmt.Sprintf("a /%d of %s for each cluster", r.bits, r.prefix),
		PerCluster: true,
		Groups:     []drivers.CapacityGroup{{Key: fmt.Sprintf("cluster subnet /%d", r.bits), Size: nodesPerSubnet(r.bits)}},
		ClusterKey: "subnets of " + r.prefix.String(),
		Clusters:   r.clusters(),
	}, nil
}

// nodesPerSubnet is len(subnet.nodeAddrs()) of a /bits, without listing
// them.
func nodesPerSubnet(bits int) int { return 1<<(32-bits) - 3 }
