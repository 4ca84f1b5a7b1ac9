package drivers

// Capacity is how many nodes a provider can have at once, as its vm
// driver tells from the provider's fields alone: the places its nodes
// take, in groups (the addresses of a subnet, one machine each). The
// server refuses a create or scale-out that asks for more nodes than are
// free, before anything is made; nodes of clusters not TERMINATED hold
// places, whichever tenant they belong to, when their providers name a
// group of the same key.
type Capacity struct {
	// Name says what the places are, for people: "a /24 of
	// 10.232.0.0/16 for each cluster", "3 hosts".
	Name   string
	Groups []CapacityGroup
	// PerCluster says every cluster has Groups of its own (its own
	// network, say): only the cluster's own nodes take their places, and
	// a new cluster starts with all of them free. Group keys then say
	// what the places are, not whose.
	PerCluster bool
	// Clusters, with PerCluster, is how many clusters the provider holds
	// at once (0: no limit); clusters not TERMINATED of every provider
	// whose ClusterKey is the same, any tenant's, hold one each.
	Clusters   int
	ClusterKey string
}

// CapacityGroup is places nodes take. When a provider has several
// groups, a node's vm.providerId fact is the key of the one it took.
type CapacityGroup struct {
	// Key names the places across providers: "cluster subnet /24", a
	// pool host's id.
	Key string
	// Size is how many nodes the group holds.
	Size int
}

// Nodes is how many nodes the provider holds in all.
func (c Capacity) Nodes() int {
	n := 0
	for _, g := range c.Groups {
		n += g.Size
	}
	return n
}

// CapacityFunc is a vm driver's capacity rule: from a provider's public
// fields (its provisioner, with the user's accepted fields) it tells the
// provider's capacity, or why the fields cannot work. A driver without
// one has no capacity the server knows.
type CapacityFunc func(fields map[string]any) (Capacity, error)

// NetworkCapacityFunc is a capacity rule that also reads the type of the
// provider's network block ("" when it has none): a driver whose clusters
// have networks of their own only with a given network driver.
type NetworkCapacityFunc func(fields map[string]any, networkType string) (Capacity, error)

// AnyNetwork is f as a NetworkCapacityFunc, whatever the network.
func (f CapacityFunc) AnyNetwork() NetworkCapacityFunc {
	return func(fields map[string]any, _ string) (Capacity, error) { return f(fields) }
}
