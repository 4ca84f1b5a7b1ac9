package local

import (
	"fmt"

	"github.com/cooprhq/coopr/drivers"
)

// Capacity is the driver's capacity rule (drivers.CapacityFunc): each node
// takes an address of the provider's subnet (DefaultSubnet when the
// provider names none) other than the network's, the broadcast and the
// host's. Providers naming the same subnet share its addresses, whatever
// their bridge or state dir: the addresses are what runs out. The server
// cannot see an agent's own Config, so a provider without a subnet counts
// as DefaultSubnet.
func Capacity(fields map[string]any) (drivers.Capacity, error) {
	s := DefaultSubnet
	if v, ok := fields["subnet"]; ok && v != nil {
		str, ok := v.(string)
		if !ok {
			return drivers.Capacity{}, fmt.Errorf("provider field subnet: want a string, got %T", v)
		}
		if str != "" {
			s = str
		}
	}
	sn, err := parseSubnet(s)
	if err != nil {
		return drivers.Capacity{}, err
	}
	key := "subnet " + sn.prefix.String()
	return drivers.Capacity{Name: key, Groups: []drivers.CapacityGroup{{Key: key, Size: sn.nodeCount()}}}, nil
}

// nodeCount is len(n.nodeAddrs()), without listing them.
func (n subnet) nodeCount() int { return 1<<(32-n.prefix.Bits()) - 3 }
