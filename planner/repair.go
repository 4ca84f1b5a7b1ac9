package planner

import (
	"fmt"
	"slices"
)

// repairGroups walks REPAIR (docs/planner.md#repair): the replacement
// nodes are built like a create, the dead nodes they replace are deleted
// (their cleanup best-effort, with no STOP: nothing answers there), the
// nodes that stay are reconfigured once the replacements are bootstrapped
// so that configs naming nodes take the new ones in, missing services are
// installed again and stopped ones started. The replacements come first:
// operationEdges makes the staying nodes wait for their BOOTSTRAP.
func (b *builder) repairGroups(planned, newNodes, removed []int, createOrder, unconfigure []Action) ([]group, error) {
	req := b.req
	perNode := func(field string, m map[string][]string) (map[int][]int, error) {
		out := map[int][]int{}
		for i, n := range req.Nodes {
			names, ok := m[n.ID]
			if !ok {
				continue
			}
			if b.removed[i] || slices.Contains(newNodes, i) {
				return nil, &RequestError{Field: field, Message: fmt.Sprintf("node %s is replaced: it cannot also be repaired in place", n.ID)}
			}
			for _, s := range names {
				j, ok := b.g.index[s]
				if !ok || !slices.Contains(b.svcOn[i], j) {
					return nil, &RequestError{Field: field, Message: fmt.Sprintf("node %s has no service %q", n.ID, s)}
				}
				if !slices.Contains(out[i], j) {
					out[i] = append(out[i], j)
				}
			}
			slices.Sort(out[i])
		}
		for id := range m {
			if !slices.ContainsFunc(req.Nodes, func(n Node) bool { return n.ID == id }) {
				return nil, &RequestError{Field: field, Message: fmt.Sprintf("node %q is not a node of the cluster", id)}
			}
		}
		return out, nil
	}
	missing, err := perNode("missing", req.Missing)
	if err != nil {
		return nil, err
	}
	stopped, err := perNode("stopped", req.Stopped)
	if err != nil {
		return nil, err
	}
	for i, svcs := range stopped {
		for _, j := range svcs {
			if slices.Contains(missing[i], j) {
				return nil, &RequestError{Field: "stopped", Message: fmt.Sprintf("service %s of node %s is both missing and stopped", b.g.names[j], req.Nodes[i].ID)}
			}
		}
	}
	if len(newNodes) != len(removed) {
		return nil, &RequestError{Field: "newNodes", Message: fmt.Sprintf("REPAIR replaces nodes one for one: %d new for %d removed", len(newNodes), len(removed))}
	}
	groups := []group{{nodes: newNodes, order: createOrder, lifecycle: true}}
	if len(removed) > 0 {
		groups = append(groups, group{nodes: removed, order: append(slices.Clone(unconfigure), Delete), lifecycle: true})
	}
	stay := without(without(planned, newNodes), removed)
	if len(newNodes) > 0 {
		groups = append(groups, group{nodes: stay, order: []Action{Configure}, existing: true})
	}
	if len(missing) > 0 {
		groups = append(groups, group{nodes: keysOf(missing), order: []Action{Bootstrap, Install, Configure, Initialize, Start}, only: missing})
	}
	if len(stopped) > 0 {
		groups = append(groups, group{nodes: keysOf(stopped), order: []Action{Start}, only: stopped})
	}
	return groups, nil
}

func keysOf(m map[int][]int) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
