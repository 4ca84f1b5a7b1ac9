package agent

// ResourceFetches counts the resources fetched from the server.
func (a *Agent) ResourceFetches() int64 { return a.resources.fetches.Load() }
