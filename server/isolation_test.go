package server_test

import (
	"testing"
	"time"
)

// TestIsolation tries every cluster query, mutation and subscription on
// alice's cluster as bob (same tenant, plain user) and as the admin of
// another tenant: every attempt must be refused as NOT_FOUND (or an empty
// answer), so that not even the cluster's existence shows.
func TestIsolation(t *testing.T) {
	w := newWorld(t)
	s := w.s
	otherAdmin, _ := tenantTokens(t, s, "globex")
	id := w.create(t, w.alice, 3)
	w.run(t, w.alice, id, "ACTIVE")
	job := id + "-001"
	var tasks struct {
		Job struct{ Tasks []struct{ ID string } }
	}
	s.Must(w.alice, `query($id: ID!) { job(id: $id) { tasks { id } } }`, map[string]any{"id": job}, &tasks)
	task := tasks.Job.Tasks[0].ID
	vars := map[string]any{"c": id, "j": job, "t": task}

	mutations := []struct{ name, query string }{
		{"deleteCluster", `mutation($c: ID!) { deleteCluster(id: $c) { id } }`},
		{"runOperation", `mutation($c: ID!) { runOperation(clusterId: $c, input: {operation: STOP_SERVICES}) { id } }`},
		{"previewOperation", `mutation($c: ID!) { previewOperation(clusterId: $c, input: {operation: SCALE, numMachines: 4}) { planHash } }`},
		{"setClusterExpireTime", `mutation($c: ID!) { setClusterExpireTime(id: $c, expireTime: "2031-01-01T00:00:00Z") { id } }`},
		{"pauseJob", `mutation($j: ID!) { pauseJob(id: $j) { id } }`},
		{"resumeJob", `mutation($j: ID!) { resumeJob(id: $j) { id } }`},
		{"abortJob", `mutation($j: ID!) { abortJob(id: $j) { id } }`},
		{"retryJob", `mutation($j: ID!) { retryJob(id: $j) { id } }`},
	}
	queries := []struct{ name, query, empty string }{
		{"cluster", `query($c: ID!) { cluster(id: $c) { id } }`, `{"cluster":null}`},
		{"job", `query($j: ID!) { job(id: $j) { id } }`, `{"job":null}`},
		{"clusters", `{ clusters { nodes { id } } }`, `{"clusters":{"nodes":[]}}`},
	}
	subscriptions := []struct{ name, query string }{
		{"clusterEvents", `subscription($c: ID!) { clusterEvents(clusterId: $c) { kind } }`},
		{"jobProgress", `subscription($j: ID!) { jobProgress(jobId: $j) { kind } }`},
		{"taskLog", `subscription($t: ID!) { taskLog(taskId: $t) { chunk } }`},
	}
	attempts := 0
	for _, who := range []struct{ name, token string }{{"bob (same tenant)", w.bob}, {"globex admin", otherAdmin}} {
		for _, m := range mutations {
			attempts++
			if r := s.Do(who.token, m.query, vars); r.Code() != "NOT_FOUND" {
				t.Errorf("%s: %s: %+v, want NOT_FOUND", who.name, m.name, r.Errors)
			}
		}
		for _, q := range queries {
			attempts++
			r := s.Do(who.token, q.query, vars)
			if r.Code() != "" || string(r.Data) != q.empty {
				t.Errorf("%s: %s: %s %+v, want %s", who.name, q.name, r.Data, r.Errors, q.empty)
			}
		}
		for _, sq := range subscriptions {
			attempts++
			sub, err := s.Subscribe(who.token, sq.query, vars)
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := sub.Next(10 * time.Second)
			sub.Close()
			if err != nil || r.Code() != "NOT_FOUND" {
				t.Errorf("%s: %s: %v %+v, want NOT_FOUND", who.name, sq.name, err, r)
			}
		}
	}
	// The cluster is untouched.
	var c struct{ Cluster struct{ Status string } }
	s.Must(w.alice, `query($c: ID!) { cluster(id: $c) { status } }`, vars, &c)
	if c.Cluster.Status != "ACTIVE" {
		t.Errorf("after the refused attempts the cluster is %s", c.Cluster.Status)
	}
	t.Logf("%d cross-owner and cross-tenant attempts, all refused", attempts)
}
