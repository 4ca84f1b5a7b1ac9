package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/cooprhq/coopr/client"
)

// One output line through reportProgress, over HTTP, from an agent to the
// server (scrubbed there and published): go test -run '^$' -bench
// ReportProgress ./server/
func BenchmarkReportProgress(b *testing.B) {
	w := newWorld(b)
	s := w.s
	s.Must(s.Super, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERTYPES, entity: $e) { entity { version } } }`,
		map[string]any{"e": keyedType}, &struct{}{})
	s.Must(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://a.example", sshKey(markerA))}, &struct{}{})
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "k", "clusterTemplate": "lamp", "numMachines": 2}}, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": lampDrivers("keyed")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	var got struct {
		ClaimTask *struct {
			TaskID, ClaimToken string
			Attempt            int
		}
	}
	for deadline := time.Now().Add(10 * time.Second); got.ClaimTask == nil && time.Now().Before(deadline); {
		s.Must(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": "a", "incarnation": "1",
			"tenantId": w.tenantID, "slot": 0, "waitSeconds": 2}}, &got)
	}
	if got.ClaimTask == nil {
		b.Fatal("no task claimed")
	}
	c := &client.Client{URL: s.URL, Token: agent}
	ctx := context.Background()
	seq := 0
	b.ReportAllocs()
	for b.Loop() {
		seq++
		r, err := c.Do(ctx, `mutation($in: ProgressInput!) { reportProgress(input: $in) }`, map[string]any{"in": map[string]any{
			"taskId": got.ClaimTask.TaskID, "attempt": got.ClaimTask.Attempt, "claimToken": got.ClaimTask.ClaimToken,
			"seq": seq, "stream": "STDOUT", "chunk": "TASK [web : install packages] ok: [node-1] changed=1 unreachable=0 failed=0"}})
		if err != nil || len(r.Errors) > 0 {
			b.Fatal(err, r)
		}
	}
}
