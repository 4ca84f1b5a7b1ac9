package libvirt

import (
	"fmt"

	"github.com/cooprhq/coopr/drivers"
)

// Capacity is the driver's capacity rule (drivers.CapacityFunc): each node
// takes an address of the provider's network, other than the subnet's
// own, its broadcast and the host's. Providers naming the same network of
// the same libvirt share its addresses. The server cannot see the
// network itself: an existing network counts as the provider's subnet
// field says (DefaultSubnet when it says nothing).
func Capacity(fields map[string]any) (drivers.Capacity, error) {
	d := &driver{cfg: Config{}.withDefaults()}
	t := &drivers.Task{}
	t.Provider.Provisioner = fields
	s, err := d.settingsFor(t)
	if err != nil {
		return drivers.Capacity{}, err
	}
	key := fmt.Sprintf("libvirt %s network %s", s.URI, s.Network)
	size := 1<<(32-s.Subnet.Bits()) - 3
	return drivers.Capacity{Name: fmt.Sprintf("%s (%s)", key, s.Subnet), Groups: []drivers.CapacityGroup{{Key: key, Size: size}}}, nil
}
