package server_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/remote/sshdtest"
)

// Issue 19: the BOOTSTRAP payload carries the SSH keys on the cluster
// owner's profile, as they are when it is claimed; no other task's does,
// and no other user's keys are in it.
func TestBootstrapCarriesOwnerKeys(t *testing.T) {
	w := newWorld(t)
	s := w.s
	k1, k2, bobs := sshdtest.NewKey(t), sshdtest.NewKey(t), sshdtest.NewKey(t)
	for _, k := range []struct {
		token string
		key   *sshdtest.Key
	}{{w.alice, k1}, {w.alice, k2}, {w.bob, bobs}} {
		s.Must(k.token, `mutation($k: String!) { addSSHKey(publicKey: $k, name: "laptop") { id } }`,
			map[string]any{"k": k.key.AuthorizedKey + " someone@host"}, &struct{}{})
	}
	var me struct {
		Me struct {
			SSHKeys []struct{ ID, Name, Type, Fingerprint, PublicKey string }
		}
	}
	s.Must(w.alice, `{ me { sshKeys { id name type fingerprint publicKey } } }`, nil, &me)
	if ks := me.Me.SSHKeys; len(ks) != 2 || ks[0].PublicKey != k1.AuthorizedKey || ks[0].Name != "laptop" || ks[0].Type != "ssh-ed25519" {
		t.Fatalf("alice's keys: %+v", ks)
	}
	if r := s.Do(w.alice, `mutation { addSSHKey(publicKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----") { id } }`, nil); r.Code() != "INVALID_INPUT" ||
		!strings.Contains(r.Errors[0].Message, "publicKey") || !strings.Contains(r.Errors[0].Message, "private key") || strings.Contains(r.Errors[0].Message, "AAAA") {
		t.Errorf("a private key: %+v", r.Errors)
	}
	// bob cannot remove alice's key.
	if r := s.Do(w.bob, `mutation($id: ID!) { removeSSHKey(id: $id) }`, map[string]any{"id": me.Me.SSHKeys[0].ID}); r.Code() != "NOT_FOUND" {
		t.Errorf("bob removing alice's key: %+v", r.Errors)
	}

	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-k", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
		map[string]any{"in": map[string]any{"agentId": "agent-k", "incarnation": "inc-1", "capacity": 2, "version": "test",
			"drivers": lampDrivers("rackspace")}}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "agent-k", incarnation: "inc-1"}) { assignments { slots } } }`, nil, &struct{}{})
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "keys", "clusterTemplate": "lamp", "numMachines": 1}}, &cr)
	claim := map[string]any{"agentId": "agent-k", "incarnation": "inc-1", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 1}
	// runJob plays the agent until the cluster is ACTIVE and returns what
	// each BOOTSTRAP or AUTHORIZE_KEYS payload carried.
	runJob := func() (bootstraps [][]string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			var c struct{ Cluster struct{ Status string } }
			s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": cr.CreateCluster.ID}, &c)
			if c.Cluster.Status == "ACTIVE" {
				return bootstraps
			}
			var got struct {
				ClaimTask *struct {
					TaskID, ClaimToken string
					Attempt            int
					Payload            struct {
						TaskName       string
						AuthorizedKeys []string
					}
				}
			}
			s.Must(agent, claimQuery, map[string]any{"in": claim}, &got)
			a := got.ClaimTask
			if a == nil {
				continue
			}
			if a.Payload.TaskName == "BOOTSTRAP" || a.Payload.TaskName == "AUTHORIZE_KEYS" {
				bootstraps = append(bootstraps, a.Payload.AuthorizedKeys)
			} else if a.Payload.AuthorizedKeys != nil {
				t.Errorf("%s carries keys %q", a.Payload.TaskName, a.Payload.AuthorizedKeys)
			}
			result := map[string]any{"status": 0}
			if a.Payload.TaskName == "CONFIRM" {
				result["ipaddresses"] = map[string]any{"access_v4": "10.9.0.1", "bind_v4": "10.9.0.1"}
			}
			s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
				"claimToken": a.ClaimToken, "result": result}}, &struct{}{})
		}
		t.Fatal("the job did not end within 60 s")
		return nil
	}
	want := []string{k1.AuthorizedKey, k2.AuthorizedKey}
	slices.Sort(want)
	if got := runJob(); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Errorf("create's BOOTSTRAP carries %q, want alice's keys %q", got, want)
	}

	// A key removed reaches the live cluster by itself: an UPDATE_SSH_KEYS
	// job, one AUTHORIZE_KEYS per node, carrying the keys left.
	latest := func() (action string) {
		var c struct {
			Cluster struct{ LatestJob struct{ Action string } }
		}
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { latestJob { action } } }`, map[string]any{"id": cr.CreateCluster.ID}, &c)
		return c.Cluster.LatestJob.Action
	}
	s.Must(w.alice, `mutation($id: ID!) { removeSSHKey(id: $id) }`, map[string]any{"id": me.Me.SSHKeys[0].ID}, &struct{}{})
	if a := latest(); a != "UPDATE_SSH_KEYS" {
		t.Fatalf("after removing a key the latest job is %s, want UPDATE_SSH_KEYS", a)
	}
	if got := runJob(); len(got) != 1 || !slices.Equal(got[0], []string{k2.AuthorizedKey}) {
		t.Errorf("the key update carries %q, want %q", got, k2.AuthorizedKey)
	}
	// A CONFIGURE's BOOTSTRAP carries them too.
	s.Must(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: CONFIGURE, config: {}}) { id } }`,
		map[string]any{"id": cr.CreateCluster.ID}, &struct{}{})
	if got := runJob(); len(got) != 1 || !slices.Equal(got[0], []string{k2.AuthorizedKey}) {
		t.Errorf("configure's BOOTSTRAP carries %q, want %q", got, k2.AuthorizedKey)
	}
	// bob's key changes start nothing on alice's cluster.
	s.Must(w.bob, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": sshdtest.NewKey(t).AuthorizedKey}, &struct{}{})
	if a := latest(); a != "CLUSTER_CONFIGURE" {
		t.Errorf("bob's key started %s on alice's cluster", a)
	}

	// The tenant lets its admins' keys in: turning it on brings the admin's
	// key to alice's cluster, an admin's new key follows, and turning it
	// off takes them out. A plain user may not change it.
	adminKey, adminKey2 := sshdtest.NewKey(t), sshdtest.NewKey(t)
	s.Must(w.admin, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": adminKey.AuthorizedKey}, &struct{}{})
	if a := latest(); a != "CLUSTER_CONFIGURE" {
		t.Errorf("with the setting off, an admin's key started %s on alice's cluster", a)
	}
	if r := s.Do(w.alice, `mutation { setTenantAdminSSHKeys(enabled: true) { adminSSHKeys } }`, nil); r.Code() != "FORBIDDEN" {
		t.Errorf("a plain user changes the setting: %+v", r.Errors)
	}
	var set struct{ SetTenantAdminSSHKeys struct{ AdminSSHKeys bool } }
	s.Must(w.admin, `mutation { setTenantAdminSSHKeys(enabled: true) { adminSSHKeys } }`, nil, &set)
	if !set.SetTenantAdminSSHKeys.AdminSSHKeys || latest() != "UPDATE_SSH_KEYS" {
		t.Fatalf("setting on: %+v, latest job %s", set, latest())
	}
	withAdmin := []string{k2.AuthorizedKey, adminKey.AuthorizedKey}
	slices.Sort(withAdmin)
	if got := runJob(); len(got) != 1 || !slices.Equal(got[0], withAdmin) {
		t.Errorf("with admins' keys on, the update carries %q, want %q", got, withAdmin)
	}
	s.Must(w.admin, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": adminKey2.AuthorizedKey}, &struct{}{})
	if got := runJob(); len(got) != 1 || len(got[0]) != 3 || !slices.Contains(got[0], adminKey2.AuthorizedKey) {
		t.Errorf("an admin's new key: the update carries %q", got)
	}
	s.Must(w.admin, `mutation { setTenantAdminSSHKeys(enabled: false) { adminSSHKeys } }`, nil, &struct{}{})
	if got := runJob(); len(got) != 1 || !slices.Equal(got[0], []string{k2.AuthorizedKey}) {
		t.Errorf("setting off: the update carries %q, want only alice's %q", got, k2.AuthorizedKey)
	}
}
