package planner

// syncGroups gives SYNC_TEMPLATE's chains (docs/planner.md#template-sync):
// the services the sync adds (PlannedServices) walk ADD_SERVICES' steps on
// the nodes that get them (PlannedNodes); when the config changed
// (Reconfigure), every node is bootstrapped again and every other service
// configured again.
func syncGroups(req *Request, planned []int) []group {
	var groups []group
	if len(req.PlannedServices) > 0 {
		groups = append(groups, group{nodes: planned, order: []Action{Bootstrap, Install, Configure, Initialize, Start}, filtered: true})
	}
	if req.Reconfigure {
		all := make([]int, len(req.Nodes))
		for i := range all {
			all[i] = i
		}
		groups = append(groups, group{nodes: all, order: []Action{Bootstrap, Configure}, except: true})
	}
	return groups
}
