package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every kind of user mutation leaves an audit entry with who, from where,
// what and how it ended, and no secret; agents' task protocol and previews
// leave none; tenant admins read their tenant's log, plain users none.
func TestAuditLog(t *testing.T) {
	w := newWorld(t)
	s := w.s
	const secretish = "coopr-audit-test-secret-value"
	var tok struct {
		CreateAPIToken struct {
			Token  struct{ ID string }
			Secret string
		}
	}
	s.Must(w.admin, `mutation { createAPIToken(input: {name: "ci", user: "bob"}) { token { id } secret } }`, nil, &tok)
	s.Must(w.admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": tok.CreateAPIToken.Token.ID}, &struct{}{})
	s.Must(w.admin, `mutation { createUser(name: "carol") { name } }`, nil, &struct{}{})
	s.Must(w.admin, `mutation($in: WebhookInput!) { createWebhook(input: $in) { webhook { id } } }`,
		map[string]any{"in": map[string]any{"url": "https://hooks.example.com/x?token=" + secretish, "events": []string{"JOB_FAILED"},
			"secret": secretish}}, &struct{}{})
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { previewCluster(input: {name: "a", clusterTemplate: "lamp", numMachines: 2}) { planHash } }`, nil, &struct{}{})
	s.Must(w.alice, `mutation { createCluster(input: {name: "audited", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	w.run(t, w.alice, cr.CreateCluster.ID, "ACTIVE")
	s.Must(w.alice, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": cr.CreateCluster.ID}, &struct{}{})
	// A refusal: nothing changed, the entry says why.
	if r := s.Do(w.alice, `mutation { createCluster(input: {name: "x", clusterTemplate: "no-such", numMachines: 2}) { id } }`, nil); r.Code() == "" {
		t.Fatal("create from a missing template was accepted")
	}

	if r := s.Do(w.alice, `{ auditLog { id } }`, nil); r.Code() != "FORBIDDEN" {
		t.Errorf("plain user reads the audit log: %q", r.Code())
	}
	type entry struct {
		ID, Tenant, User, Address, Operation, Outcome, Message string
		TokenID                                                *string
		Args                                                   map[string]any
	}
	var out struct{ AuditLog []entry }
	s.Must(w.admin, `{ auditLog(first: 100) { id tenant user tokenId address operation args outcome message } }`, nil, &out)
	byOp := map[string][]entry{}
	for _, e := range out.AuditLog {
		byOp[e.Operation] = append(byOp[e.Operation], e)
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), secretish) || strings.Contains(string(b), tok.CreateAPIToken.Secret) {
			t.Errorf("audit entry holds a secret: %s", b)
		}
		if e.Tenant != "acme" || e.Address != "127.0.0.1" || e.TokenID == nil || e.User == "" {
			t.Errorf("entry without its caller: %+v", e)
		}
	}
	for _, op := range []string{"createAPIToken", "revokeAPIToken", "createUser", "createWebhook", "createCluster", "deleteCluster", "importCatalog"} {
		if len(byOp[op]) == 0 {
			t.Errorf("no audit entry for %s (have %v)", op, keysOf(byOp))
		}
	}
	for _, op := range []string{"previewCluster", "claimTask", "claimTasks", "finishTask", "agentHeartbeat"} {
		if len(byOp[op]) != 0 {
			t.Errorf("%s is audited: %+v", op, byOp[op])
		}
	}
	var ok, refused int
	for _, e := range byOp["createCluster"] {
		switch {
		case e.Outcome == "ok" && e.User == "alice" && e.Args["input"].(map[string]any)["name"] == "audited":
			ok++
		case e.Outcome != "ok" && e.Message != "" && e.Args["input"].(map[string]any)["clusterTemplate"] == "no-such":
			refused++
		}
	}
	if ok != 1 || refused != 1 {
		t.Errorf("createCluster entries %+v: want one ok for alice and one refusal with its message", byOp["createCluster"])
	}
	if r := byOp["revokeAPIToken"]; len(r) != 1 || r[0].Args["id"] != tok.CreateAPIToken.Token.ID {
		t.Errorf("revokeAPIToken entry %+v: want the token's id", r)
	}

	var failed struct{ AuditLog []entry }
	s.Must(w.admin, `{ auditLog(failed: true) { operation outcome } }`, nil, &failed)
	if len(failed.AuditLog) != 1 || failed.AuditLog[0].Operation != "createCluster" {
		t.Errorf("failed: true lists %+v, want the one refused create", failed.AuditLog)
	}
	if r := s.Do(w.admin, `{ auditLog(tenant: "superadmin") { id } }`, nil); r.Code() != "FORBIDDEN" {
		t.Errorf("tenant admin reads another tenant's log: %q", r.Code())
	}
	var all struct{ AuditLog []entry }
	s.Must(s.Super, `{ auditLog(first: 1000) { tenant operation } }`, nil, &all)
	tenants := map[string]bool{}
	for _, e := range all.AuditLog {
		tenants[e.Tenant] = true
	}
	if !tenants["acme"] || !tenants["superadmin"] {
		t.Errorf("superadmin's log covers tenants %v, want acme and superadmin", tenants)
	}
}

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
