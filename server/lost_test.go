package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// A delete whose agent reports a node unreachable through finishTask ends
// TERMINATED: the API shows the node's NETWORK_UNCONFIGURE SKIPPED with the
// reason, the job's skipped count, and the node UNREACHABLE since then.
func TestDeleteOfUnreachableNodeThroughAPI(t *testing.T) {
	s := servertest.Start(t)
	doc := loadBundle(t, "../examples/catalog")
	shared := map[string]any{"providertypes": doc["providertypes"], "automatortypes": doc["automatortypes"]}
	delete(doc, "providertypes")
	delete(doc, "automatortypes")
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, &struct{}{})
	admin, _ := tenantTokens(t, s, "acme")
	s.Must(admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc}, &struct{}{})
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(admin, `{ me { tenant { id } } }`, nil, &me)
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agentTok := tok.CreateAPIToken.Secret

	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(admin, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "lost", "clusterTemplate": "web-cluster", "numMachines": 3}}, &cr)
	id := cr.CreateCluster.ID
	eng := s.Srv.Engine()
	var lost, reason string
	// run plays the agent until the cluster is status: every task
	// succeeds but the lost node's NETWORK_UNCONFIGURE, which reports the
	// node unreachable through the API.
	run := func(status string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			var c struct{ Cluster struct{ Status string } }
			s.Must(admin, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
			if c.Cluster.Status == status {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("cluster %s, want %s", c.Cluster.Status, status)
			}
			a, err := eng.Claim(ctx, engine.ClaimRequest{TenantID: me.Me.Tenant.ID, AgentID: "agent-1", Wait: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if a == nil {
				continue
			}
			result := map[string]any{"status": 0}
			switch {
			case a.TaskName == "CONFIRM":
				result["ipaddresses"] = map[string]any{"access_v4": "10.0.0.1", "bind_v4": "10.0.0.1"}
			case a.TaskName == "NETWORK_UNCONFIGURE" && (lost == "" || lost == a.Node.ID):
				lost = a.Node.ID
				reason = "hosts: read /etc/hosts: ssh root@10.0.0.1:22: dial: dial tcp 10.0.0.1:22: connect: no route to host"
				result = map[string]any{"status": 1, "message": reason, "unreachable": true}
			}
			s.Must(agentTok, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
				"claimToken": a.ClaimToken, "result": result}}, &struct{}{})
		}
	}
	run("ACTIVE")
	s.Must(admin, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": id}, &struct{}{})
	run("TERMINATED")

	var out struct {
		Cluster struct {
			Nodes []struct {
				ID, State, StateReason string
				StateSince             *time.Time
			}
			LatestJob struct {
				State  string
				Counts struct{ Skipped, Complete, Total int }
				Tasks  []struct {
					NodeID, Action, State, Message string
					BestEffort                     bool
				}
			}
		}
	}
	s.Must(admin, `query($id: ID!) { cluster(id: $id) { nodes { id state stateReason stateSince }
		latestJob { state counts { skipped complete total } tasks { nodeId action state message bestEffort } } } }`,
		map[string]any{"id": id}, &out)
	j := out.Cluster.LatestJob
	if j.State != "COMPLETE" || j.Counts.Skipped != 1 || j.Counts.Complete != j.Counts.Total-1 {
		t.Errorf("job %s, counts %+v", j.State, j.Counts)
	}
	for _, tk := range j.Tasks {
		wantBestEffort := tk.Action == "NETWORK_UNCONFIGURE"
		if tk.BestEffort != wantBestEffort {
			t.Errorf("%s %s: bestEffort %v", tk.NodeID, tk.Action, tk.BestEffort)
		}
		skipped := tk.NodeID == lost && tk.Action == "NETWORK_UNCONFIGURE"
		switch {
		case skipped && (tk.State != "SKIPPED" || !strings.Contains(tk.Message, "node unreachable") || !strings.Contains(tk.Message, reason)):
			t.Errorf("unconfigure of the lost node: %s %q", tk.State, tk.Message)
		case !skipped && tk.State != "COMPLETE":
			t.Errorf("%s %s: %s %q", tk.NodeID, tk.Action, tk.State, tk.Message)
		}
	}
	if len(out.Cluster.Nodes) != 3 {
		t.Fatalf("nodes %+v", out.Cluster.Nodes)
	}
	for _, n := range out.Cluster.Nodes {
		// TERMINATED: every node DELETED; the lost one keeps why and
		// since when it was found unreachable.
		if n.ID == lost {
			if n.State != "DELETED" || n.StateSince == nil || !strings.Contains(n.StateReason, reason) {
				t.Errorf("lost node: %+v", n)
			}
		} else if n.State != "DELETED" || n.StateSince != nil || n.StateReason != "" {
			t.Errorf("node %s: %+v", n.ID, n)
		}
	}
}
