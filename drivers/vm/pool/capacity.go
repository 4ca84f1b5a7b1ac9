package pool

import (
	"fmt"

	"github.com/cooprhq/coopr/drivers"
)

// Capacity is the driver's capacity rule (drivers.CapacityFunc): each node
// takes one of the provider's hosts. A host is one group, keyed by its id
// (host:port, the node's vm.providerId), so that providers listing some of
// the same hosts share those, and a cluster made before hosts were added
// to its provider still holds the ones it took.
func Capacity(fields map[string]any) (drivers.Capacity, error) {
	v := fields["hosts"]
	s, ok := v.(string)
	if !ok && v != nil {
		return drivers.Capacity{}, fmt.Errorf("provider field hosts is a %T, want text", v)
	}
	hosts, err := parseHosts(s)
	if err != nil {
		return drivers.Capacity{}, err
	}
	c := drivers.Capacity{Name: fmt.Sprintf("%d hosts", len(hosts))}
	if len(hosts) == 1 {
		c.Name = "1 host"
	}
	for _, h := range hosts {
		c.Groups = append(c.Groups, drivers.CapacityGroup{Key: h.id(), Size: 1})
	}
	return c, nil
}
