package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/cooprhq/coopr/remote/sshdtest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/engine"
)

// settleWith plays an agent that finishes every task of the tenant with
// result(action) until the cluster's latest job settles, and returns the
// cluster's status.
func (w *world) settleWith(t *testing.T, cluster string, result func(action string) engine.Result) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		var c struct {
			Cluster struct {
				Status    string
				LatestJob struct{ State string }
			}
		}
		w.s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status latestJob { state } } }`, map[string]any{"id": cluster}, &c)
		if c.Cluster.Status != "PENDING" {
			return c.Cluster.Status
		}
		a, err := w.s.Srv.Engine().Claim(ctx, engine.ClaimRequest{TenantID: w.tenantID, AgentID: "test-agent", Wait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if a == nil {
			continue
		}
		if err := w.s.Srv.Engine().Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, result(a.TaskName)); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("cluster %s did not settle", cluster)
	return ""
}

// A key job ends with the cluster's status as it was, whether its tasks
// succeed or fail; an INCONSISTENT cluster gets one too, an INCOMPLETE one
// does not.
func TestKeyJobKeepsClusterStatus(t *testing.T) {
	w := newWorld(t)
	s := w.s
	never := false
	ok := func(action string) engine.Result {
		if action == "CONFIRM" {
			return engine.Result{IPAddresses: map[string]string{"access_v4": "10.0.0.1", "bind_v4": "10.0.0.1"}}
		}
		return engine.Result{}
	}
	failing := func(fail string) func(string) engine.Result {
		return func(action string) engine.Result {
			if action == fail {
				return engine.Result{Status: 1, Message: action + " broke", Retryable: &never}
			}
			return ok(action)
		}
	}
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "k", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	if st := w.settleWith(t, id, ok); st != "ACTIVE" {
		t.Fatalf("create: %s", st)
	}
	latest := func() (action, state string) {
		var c struct {
			Cluster struct {
				LatestJob struct{ Action, State string }
			}
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { latestJob { action state } } }`, map[string]any{"id": id}, &c)
		return c.Cluster.LatestJob.Action, c.Cluster.LatestJob.State
	}
	addKey := func() {
		t.Helper()
		s.Must(w.alice, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": sshdtest.NewKey(t).AuthorizedKey}, &struct{}{})
	}

	// A failed key job leaves an ACTIVE cluster ACTIVE.
	addKey()
	if st := w.settleWith(t, id, failing("AUTHORIZE_KEYS")); st != "ACTIVE" {
		t.Errorf("after a failed key job: %s, want ACTIVE", st)
	}
	if a, st := latest(); a != "UPDATE_SSH_KEYS" || st != "FAILED" {
		t.Errorf("latest job %s %s, want a FAILED UPDATE_SSH_KEYS", a, st)
	}
	// An INCONSISTENT cluster gets the keys and stays INCONSISTENT.
	s.Must(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: RESTART_SERVICES}) { id } }`, map[string]any{"id": id}, &struct{}{})
	if st := w.settleWith(t, id, failing("START")); st != "INCONSISTENT" {
		t.Fatalf("after a failed restart: %s", st)
	}
	addKey()
	if a, _ := latest(); a != "UPDATE_SSH_KEYS" {
		t.Fatalf("an INCONSISTENT cluster got no key job (latest %s)", a)
	}
	if st := w.settleWith(t, id, ok); st != "INCONSISTENT" {
		t.Errorf("after a key job: %s, want INCONSISTENT still", st)
	}
	if a, st := latest(); a != "UPDATE_SSH_KEYS" || st != "COMPLETE" {
		t.Errorf("latest job %s %s", a, st)
	}

	// An INCOMPLETE cluster (its create failed half way) gets none.
	s.Must(w.alice, `mutation { createCluster(input: {name: "half", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	half := cr.CreateCluster.ID
	if st := w.settleWith(t, half, failing("BOOTSTRAP")); st != "INCOMPLETE" {
		t.Fatalf("half create: %s", st)
	}
	addKey()
	var c struct {
		Cluster struct{ LatestJob struct{ Action string } }
	}
	s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { latestJob { action } } }`, map[string]any{"id": half}, &c)
	if c.Cluster.LatestJob.Action != "CLUSTER_CREATE" {
		t.Errorf("an INCOMPLETE cluster got a %s job", c.Cluster.LatestJob.Action)
	}
	w.settleWith(t, id, ok)
}

// A key removed while the cluster's own job runs (which may not bootstrap
// its nodes) reaches the nodes once that job settles: the janitor starts
// the key job then, rather than leaving the key in until some later
// BOOTSTRAP.
func TestKeysWaitForAJobInFlight(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) { c.JanitorInterval = 200 * time.Millisecond })
	s := w.s
	ok := func(action string) engine.Result {
		if action == "CONFIRM" {
			return engine.Result{IPAddresses: map[string]string{"access_v4": "10.0.0.1", "bind_v4": "10.0.0.1"}}
		}
		return engine.Result{}
	}
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "busy", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	if st := w.settleWith(t, id, ok); st != "ACTIVE" {
		t.Fatalf("create: %s", st)
	}
	latest := func() string {
		var c struct {
			Cluster struct{ LatestJob struct{ Action string } }
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { latestJob { action } } }`, map[string]any{"id": id}, &c)
		return c.Cluster.LatestJob.Action
	}
	s.Must(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: RESTART_SERVICES}) { id } }`, map[string]any{"id": id}, &struct{}{})
	s.Must(w.alice, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": sshdtest.NewKey(t).AuthorizedKey}, &struct{}{})
	if a := latest(); a != "RESTART_SERVICES" {
		t.Fatalf("latest job %s while the restart runs, want RESTART_SERVICES", a)
	}
	if st := w.settleWith(t, id, ok); st != "ACTIVE" {
		t.Fatalf("restart: %s", st)
	}
	deadline := time.Now().Add(20 * time.Second)
	for latest() != "UPDATE_SSH_KEYS" {
		if time.Now().After(deadline) {
			t.Fatal("no key job after the restart settled")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st := w.settleWith(t, id, ok); st != "ACTIVE" {
		t.Errorf("after the key job: %s", st)
	}
	var pending bool
	if err := s.Srv.Store().DB().Get(&pending, `SELECT keys_pending FROM clusters WHERE id = $1`, id); err != nil || pending {
		t.Errorf("keys_pending %v (%v) after the key job, want false", pending, err)
	}
}
