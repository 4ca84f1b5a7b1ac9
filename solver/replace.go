package solver

// Replacement is the node that takes the place of old in a cluster whose
// nodes are nodes: the same services and types, the number num (never one
// used before) and a host name of the cluster's scheme.
func Replacement(cl Cluster, nodes []ExistingNode, old Node, num int) Node {
	n := old
	n.NodeNum, n.ID, n.Hostname = num, NodeID(cl.ID, num), hostnamerFor(cl, nodes).name(num)
	n.Services = append([]string(nil), old.Services...)
	return n
}
