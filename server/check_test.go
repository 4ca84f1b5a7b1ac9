package server_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/engine"
)

// A template with administration.checkinterval has the leading server
// check its clusters: at once when never checked, again once the interval
// has passed since the last check; a cluster of a template without it is
// never checked. A check leaves an INCONSISTENT cluster INCONSISTENT with
// its message.
func TestPeriodicChecks(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) { c.JanitorInterval = 200 * time.Millisecond })
	s := w.s
	raw, err := os.ReadFile(templatesDir + "/clustertemplates/lamp.json")
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	tmpl["name"] = "checked-lamp"
	tmpl["administration"] = map[string]any{"checkinterval": "10s"}
	if r := s.Do(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
		map[string]any{"e": tmpl}); r.Code() != "INVALID_INPUT" {
		t.Fatalf("a check interval of 10s: %+v, want INVALID_INPUT", r.Errors)
	}
	tmpl["administration"] = map[string]any{"checkinterval": "1h"}
	s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
		map[string]any{"e": tmpl}, &struct{}{})

	create := func(template string) string {
		var cr struct{ CreateCluster struct{ ID string } }
		s.Must(w.alice, `mutation($t: String!) { createCluster(input: {name: "x", clusterTemplate: $t, numMachines: 2}) { id } }`,
			map[string]any{"t": template}, &cr)
		return cr.CreateCluster.ID
	}
	checked, plain := create("checked-lamp"), create("lamp")

	// jobs plays the agent until the cluster has n jobs, the last one
	// settled, and returns their actions, newest first.
	jobs := func(id string, n int) []string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			var c struct {
				Cluster struct {
					Status string
					Jobs   []struct{ Action string }
				}
			}
			s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status jobs { action } } }`, map[string]any{"id": id}, &c)
			if len(c.Cluster.Jobs) >= n && c.Cluster.Status != "PENDING" {
				out := make([]string, len(c.Cluster.Jobs))
				for i, j := range c.Cluster.Jobs {
					out[i] = j.Action
				}
				return out
			}
			if ctx.Err() != nil {
				t.Fatalf("cluster %s: %s with %d jobs, want %d", id, c.Cluster.Status, len(c.Cluster.Jobs), n)
			}
			a, err := s.Srv.Engine().Claim(ctx, engine.ClaimRequest{TenantID: w.tenantID, AgentID: "test-agent", Wait: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if a == nil {
				continue
			}
			res := engine.Result{}
			switch a.TaskName {
			case "CONFIRM":
				res.IPAddresses = map[string]string{"access_v4": "10.0.0.1", "bind_v4": "10.0.0.1"}
			case "CHECK":
				res.Facts = map[string]any{"check": map[string]any{"job": a.JobID, "reachable": true}}
			}
			if err := s.Srv.Engine().Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := jobs(checked, 2); got[0] != "CLUSTER_CHECK" || got[1] != "CLUSTER_CREATE" {
		t.Fatalf("jobs of the checked cluster %v, want a check after the create", got)
	}
	jobs(plain, 1)
	lastCheck := func(id string) *struct{ JobID string } {
		var c struct {
			Cluster struct{ LastCheck *struct{ JobID string } }
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { lastCheck { jobId } } }`, map[string]any{"id": id}, &c)
		return c.Cluster.LastCheck
	}
	if lastCheck(checked) == nil {
		t.Fatal("the periodic check left no lastCheck")
	}
	// Not again within the interval.
	time.Sleep(time.Second)
	if got := jobs(checked, 2); len(got) != 2 {
		t.Fatalf("checked again within the interval: %v", got)
	}
	// An hour later (the last check moved back), again.
	if _, err := s.Srv.Store().DB().Exec(`UPDATE clusters SET last_check_at = now() - interval '61 minutes' WHERE id = $1`, checked); err != nil {
		t.Fatal(err)
	}
	if got := jobs(checked, 3); got[0] != "CLUSTER_CHECK" {
		t.Fatalf("jobs after the interval %v, want another check", got)
	}
	if got := jobs(plain, 1); len(got) != 1 || lastCheck(plain) != nil {
		t.Errorf("a cluster without periodic checks was checked: %v", got)
	}

	// An INCONSISTENT cluster stays so, with its message, after a check.
	if _, err := s.Srv.Store().DB().Exec(`UPDATE clusters SET status = 'INCONSISTENT', message = 'it broke' WHERE id = $1`, plain); err != nil {
		t.Fatal(err)
	}
	s.Must(w.alice, `mutation($id: ID!) { checkCluster(id: $id) { id } }`, map[string]any{"id": plain}, &struct{}{})
	jobs(plain, 2)
	var c struct {
		Cluster struct{ Status, Message string }
	}
	s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status message } }`, map[string]any{"id": plain}, &c)
	if c.Cluster.Status != "INCONSISTENT" || c.Cluster.Message != "it broke" {
		t.Errorf("after a check: %s %q, want INCONSISTENT %q", c.Cluster.Status, c.Cluster.Message, "it broke")
	}
}

// Refusals of the check and node operations name the field and the fix.
func TestNodeOperationRefusals(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "x", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")
	var pv struct {
		PreviewOperation struct {
			Action string
			Tasks  []struct{ Action string }
		}
	}
	s.Must(w.alice, `mutation($id: ID!) { previewOperation(clusterId: $id, input: {operation: CHECK}) { action tasks { action } } }`,
		map[string]any{"id": id}, &pv)
	if p := pv.PreviewOperation; p.Action != "CLUSTER_CHECK" || len(p.Tasks) != 2 || p.Tasks[0].Action != "CHECK" {
		t.Errorf("preview of a check: %+v, want CLUSTER_CHECK with a CHECK per node (lamp's services have no status)", p)
	}
	cases := []struct {
		name, input, code, field, says string
	}{
		{"repair before any check", `{operation: REPAIR}`, "CONFLICT", "", "never checked"},
		{"replace without nodes", `{operation: REPLACE_NODE}`, "INVALID_INPUT", "nodes", "name the nodes"},
		{"reboot without nodes", `{operation: REBOOT_NODE}`, "INVALID_INPUT", "nodes", "name the nodes"},
		{"a node that is not there", `{operation: REPLACE_NODE, nodes: ["9999"]}`, "INVALID_INPUT", "nodes", `no node "9999"`},
		{"nodes on an operation that takes none", `{operation: RESTART_SERVICES, nodes: ["1000"]}`, "INVALID_INPUT", "nodes", "only SCALE"},
		{"services on a check", `{operation: CHECK, services: ["lamp"]}`, "INVALID_INPUT", "services", "name none"},
	}
	{
		// A replacement does not grow the cluster: a tenant at its node
		// quota can still replace a dead node.
		if _, err := s.Srv.Store().DB().Exec(`UPDATE tenants SET max_nodes = 2 WHERE id = (SELECT tenant_id FROM clusters WHERE id = $1)`, id); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_, _ = s.Srv.Store().DB().Exec(`UPDATE tenants SET max_nodes = NULL WHERE id = (SELECT tenant_id FROM clusters WHERE id = $1)`, id)
		}()
		var c struct {
			Cluster struct{ Nodes []struct{ Nodenum int } }
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { nodes { nodenum } } }`, map[string]any{"id": id}, &c)
		node := strconv.Itoa(c.Cluster.Nodes[0].Nodenum)
		var pv struct{ PreviewOperation struct{ Action string } }
		s.Must(w.alice, `mutation($id: ID!, $n: [String!]) { previewOperation(clusterId: $id, input: {operation: REPLACE_NODE, nodes: $n}) { action } }`,
			map[string]any{"id": id, "n": []string{node}}, &pv)
		r := s.Do(w.alice, `mutation($id: ID!) { previewOperation(clusterId: $id, input: {operation: SCALE, numMachines: 3}) { action } }`, map[string]any{"id": id})
		if r.Code() != "QUOTA_EXCEEDED" {
			t.Errorf("a scale-out past the quota: %+v, want QUOTA_EXCEEDED", r.Errors)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range []string{"previewOperation", "runOperation"} {
				r := s.Do(w.alice, `mutation($id: ID!) { `+m+`(clusterId: $id, input: `+c.input+`) { __typename } }`, map[string]any{"id": id})
				if r.Code() != c.code || len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, c.says) {
					t.Fatalf("%s: %+v, want %s saying %q", m, r.Errors, c.code, c.says)
				}
				if c.field != "" {
					if f, _ := r.Errors[0].Extensions["field"].(string); f != c.field {
						t.Errorf("%s: field %q, want %q", m, f, c.field)
					}
				}
			}
		})
	}
	// A repair acts on its check's findings only while nothing else has
	// changed the cluster since: a node found dead and rebooted since must
	// not be replaced on old news.
	s.Must(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: CHECK}) { id } }`, map[string]any{"id": id}, &struct{}{})
	w.run(t, w.alice, id, "ACTIVE")
	if r := s.Do(w.alice, `mutation($id: ID!) { previewOperation(clusterId: $id, input: {operation: REPAIR}) { action } }`, map[string]any{"id": id}); len(r.Errors) > 0 {
		t.Fatalf("a repair right after a check: %+v", r.Errors)
	}
	s.Must(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: RESTART_SERVICES}) { id } }`, map[string]any{"id": id}, &struct{}{})
	w.run(t, w.alice, id, "ACTIVE")
	for _, m := range []string{"previewOperation", "runOperation"} {
		r := s.Do(w.alice, `mutation($id: ID!) { `+m+`(clusterId: $id, input: {operation: REPAIR}) { __typename } }`, map[string]any{"id": id})
		if r.Code() != "CONFLICT" || !strings.Contains(r.Errors[0].Message, "check it again") {
			t.Errorf("%s of a repair after a restart since the check: %+v, want CONFLICT saying to check again", m, r.Errors)
		}
	}
}

// A service without a status action that names systemd units is checked
// through them: the CHECK payload of each node running it carries them
// (and no other node's does), what CHECK reports of them becomes a
// finding, and the services with neither are listed unchecked.
func TestCheckAsksUnits(t *testing.T) {
	w := newWorld(t)
	s := w.s
	raw, err := os.ReadFile(templatesDir + "/services/mysql-server.json")
	if err != nil {
		t.Fatal(err)
	}
	var svc map[string]any
	if err := json.Unmarshal(raw, &svc); err != nil {
		t.Fatal(err)
	}
	svc["units"] = []string{"mysqld.service"}
	s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: SERVICES, entity: $e) { entity { version } } }`,
		map[string]any{"e": svc}, &struct{}{})
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "units", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")

	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
		map[string]any{"in": map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "capacity": 2, "version": "test",
			"drivers": lampDrivers("rackspace")}}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 2}) { id } }`, nil, &struct{}{})
	s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "agent-1", incarnation: "inc-1"}) { heartbeatIntervalSeconds } }`, nil, &struct{}{})

	var job struct{ CheckCluster struct{ ID string } }
	s.Must(w.alice, `mutation($id: ID!) { checkCluster(id: $id) { id } }`, map[string]any{"id": id}, &job)
	claim := map[string]any{"agentId": "agent-1", "incarnation": "inc-1", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 1}
	units := map[string]map[string][]string{} // by node's services, joined
	deadline := time.Now().Add(time.Minute)
	for checks := 0; checks < 2 && time.Now().Before(deadline); {
		var got struct {
			ClaimTask *struct {
				TaskID, ClaimToken string
				Attempt            int
				Payload            struct {
					TaskName, JobID string
					Node            *struct {
						ID, Hostname string
						Services     []string
					}
					Units map[string][]string
				}
			}
		}
		s.Must(agent, claimQuery, map[string]any{"in": claim}, &got)
		a := got.ClaimTask
		if a == nil {
			continue
		}
		if a.Payload.TaskName != "CHECK" || a.Payload.JobID != job.CheckCluster.ID {
			t.Fatalf("claimed %s of job %s, want the check's CHECK tasks alone (lamp has no status action)", a.Payload.TaskName, a.Payload.JobID)
		}
		checks++
		units[strings.Join(a.Payload.Node.Services, ",")] = a.Payload.Units
		ck := map[string]any{"job": a.Payload.JobID, "reachable": true, "hostname": a.Payload.Node.Hostname}
		if len(a.Payload.Units) > 0 {
			ck["systemd"] = true
			ck["units"] = map[string]any{"mysqld.service": map[string]any{"load": "loaded", "active": "inactive", "sub": "dead"}}
		}
		s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
			"claimToken": a.ClaimToken, "result": map[string]any{"status": 0, "facts": map[string]any{"check": ck}}}}, &struct{}{})
	}
	if len(units) != 2 {
		t.Fatalf("CHECK payloads of %d layouts, want 2: %v", len(units), units)
	}
	for layout, u := range units {
		want := map[string][]string(nil)
		if strings.Contains(layout, "mysql-server") {
			want = map[string][]string{"mysql-server": {"mysqld.service"}}
		}
		if !reflect.DeepEqual(u, want) {
			t.Errorf("the CHECK of a node with %s carries units %v, want %v", layout, u, want)
		}
	}

	var out struct {
		Cluster struct {
			LastCheck *struct {
				JobID string
				Nodes []struct {
					Hostname  string
					Findings  []struct{ Kind, Service, Detail string }
					Unchecked []string
				}
			}
		}
	}
	for time.Now().Before(deadline) {
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { lastCheck { jobId nodes { hostname findings { kind service detail } unchecked } } } }`,
			map[string]any{"id": id}, &out)
		if lc := out.Cluster.LastCheck; lc != nil && lc.JobID == job.CheckCluster.ID {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	lc := out.Cluster.LastCheck
	if lc == nil || lc.JobID != job.CheckCluster.ID {
		t.Fatalf("lastCheck %+v is not the check's", lc)
	}
	var findings []string
	for _, n := range lc.Nodes {
		for _, f := range n.Findings {
			findings = append(findings, f.Kind+" "+f.Service+": "+f.Detail)
		}
		if len(n.Unchecked) == 0 || !slices.Contains(n.Unchecked, "base") || slices.Contains(n.Unchecked, "mysql-server") {
			t.Errorf("node %s unchecked %v, want base and no mysql-server", n.Hostname, n.Unchecked)
		}
	}
	if want := []string{"SERVICE_STOPPED mysql-server: mysql-server is installed and not running: mysqld.service inactive (dead)"}; !slices.Equal(findings, want) {
		t.Errorf("findings %q, want %q", findings, want)
	}
}
