package agent

import "context"

// ResourceFetches counts the resources fetched from the server.
func (a *Agent) ResourceFetches() int64 { return a.resources.fetches.Load() }

// Reassign applies a tenant's slots as a heartbeat's answer would. Only
// loops that already exist use the contexts of Run, so it is for
// shrinking and regrowing a running tenant's assignment.
func (a *Agent) Reassign(tenant string, slots int) {
	s := setup{}
	if slots > 0 {
		s.Assignments = append(s.Assignments, struct {
			TenantID string
			Slots    int
		}{tenant, slots})
	}
	a.assign(context.Background(), context.Background(), s)
}
