package solver

import (
	"fmt"
	"slices"
	"strings"
)

// Replacement is the node that takes the place of old in a cluster whose
// nodes are nodes: the same services and types, the number num (never one
// used before) and a host name of the cluster's scheme.
func Replacement(cl Cluster, nodes []ExistingNode, old Node, num int) Node {
	n := old
	n.NodeNum, n.ID, n.Hostname = num, NodeID(cl.ID, num), hostnamerFor(cl, nodes).name(num)
	n.Services = append([]string(nil), old.Services...)
	return n
}

// chosenNodes checks ScaleRequest.Remove against the nodes and the new
// size.
func chosenNodes(r ScaleRequest, nodes []ExistingNode, grow bool) (map[string]bool, error) {
	if len(r.Remove) == 0 {
		return nil, nil
	}
	if grow {
		return nil, errorf(KindInvalidInput, "nodes to remove are for shrinking: %d nodes grow to %d", len(nodes), r.Size)
	}
	chosen := map[string]bool{}
	for _, id := range r.Remove {
		if !slices.ContainsFunc(nodes, func(n ExistingNode) bool { return n.ID == id }) {
			return nil, errorf(KindInvalidInput, "node %s is not a node of the cluster", id)
		}
		chosen[id] = true
	}
	if shrink := len(nodes) - r.Size; len(chosen) > shrink {
		return nil, errorf(KindInvalidInput, "%d nodes to remove, but going from %d to %d nodes removes %d", len(chosen), len(nodes), r.Size, shrink)
	}
	return chosen, nil
}

// nodeNames names nodes given by id as their users know them: "node 1001
// (shop-412-1001.local)", the id only for a node not among nodes.
func nodeNames(nodes []ExistingNode, ids []string) string {
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = id
		if j := slices.IndexFunc(nodes, func(n ExistingNode) bool { return n.ID == id }); j >= 0 {
			n := nodes[j]
			names[i] = fmt.Sprintf("node %d", n.NodeNum)
			if n.Hostname != "" {
				names[i] += " (" + n.Hostname + ")"
			}
		}
	}
	return strings.Join(names, ", ")
}
