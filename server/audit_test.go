package server_test

import (
	"encoding/json"
	"os"
	"regexp"
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

// Every user mutation of the schema leaves an entry, whether it succeeds
// or is refused; a mutation added to the schema without a case here fails
// the test, so none goes unaudited unnoticed.
func TestAuditEveryMutationKind(t *testing.T) {
	w := newWorld(t)
	s := w.s
	const bogus = "00000000-0000-0000-0000-000000000000"
	const pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDOv5RJk+H7txT4Dy+60F8/OVqd8/V/JUBUSFg+WHEFR audit"
	res := `{pluginType: AUTOMATORTYPES, plugin: "shell", resourceType: "scripts", name: "x", version: 1}`
	calls := []struct{ op, token, doc string }{
		{"createTenant", s.Super, `mutation { createTenant(input: {name: "audit-t"}) { id } }`},
		{"updateTenant", s.Super, `mutation { updateTenant(name: "audit-t", input: {name: "audit-t", workers: 3}) { id } }`},
		{"deleteTenant", s.Super, `mutation { deleteTenant(name: "audit-t") }`},
		{"createUser", w.admin, `mutation { createUser(name: "dave") { name } }`},
		{"createAPIToken", w.admin, `mutation { createAPIToken(input: {name: "t", user: "dave"}) { secret } }`},
		{"revokeAPIToken", w.admin, `mutation { revokeAPIToken(id: "` + bogus + `") }`},
		{"addSSHKey", w.alice, `mutation { addSSHKey(publicKey: "` + pub + `") { id } }`},
		{"removeSSHKey", w.alice, `mutation { removeSSHKey(id: "` + bogus + `") }`},
		{"setTenantAdminSSHKeys", w.admin, `mutation { setTenantAdminSSHKeys(enabled: true) { adminSSHKeys } }`},
		{"createWebhook", w.admin, `mutation { createWebhook(input: {url: "https://h.example/x", events: [JOB_FAILED]}) { secret } }`},
		{"deleteWebhook", w.admin, `mutation { deleteWebhook(id: "` + bogus + `") }`},
		{"importCatalog", w.alice, `mutation { importCatalog(document: {}) { created } }`},
		{"putCatalogEntity", w.admin, `mutation { putCatalogEntity(kind: SERVICES, entity: {name: "extra", description: "x"}) { entity { version } } }`},
		{"deleteCatalogEntity", w.admin, `mutation { deleteCatalogEntity(kind: SERVICES, name: "extra") }`},
		{"createCluster", w.alice, `mutation { createCluster(input: {name: "au", clusterTemplate: "lamp", numMachines: 2}) { id } }`},
		{"setClusterExpireTime", w.alice, `mutation { setClusterExpireTime(id: "99999999", expireTime: "2030-01-01T00:00:00Z") { id } }`},
		{"runOperation", w.alice, `mutation { runOperation(clusterId: "99999999", input: {operation: SCALE, numMachines: 3}) { id } }`},
		{"deleteCluster", w.alice, `mutation { deleteCluster(id: "99999999") { id } }`},
		{"checkCluster", w.alice, `mutation { checkCluster(id: "99999999") { id } }`},
		{"repairCluster", w.alice, `mutation { repairCluster(id: "99999999") { id } }`},
		{"pauseJob", w.alice, `mutation { pauseJob(id: "99999999-001") { id } }`},
		{"resumeJob", w.alice, `mutation { resumeJob(id: "99999999-001") { id } }`},
		{"abortJob", w.alice, `mutation { abortJob(id: "99999999-001") { id } }`},
		{"retryJob", w.alice, `mutation { retryJob(id: "99999999-001") { id } }`},
		{"uploadResource", w.admin, `mutation { uploadResource(input: {pluginType: AUTOMATORTYPES, plugin: "shell", resourceType: "scripts", name: "x", content: "ZWNobw=="}) { version } }`},
		{"stageResource", w.admin, `mutation { stageResource(input: ` + res + `) { version } }`},
		{"recallResource", w.admin, `mutation { recallResource(input: ` + res + `) { version } }`},
		{"deleteResource", w.admin, `mutation { deleteResource(input: ` + res + `) }`},
	}
	called := map[string]bool{}
	for _, c := range calls {
		if r := s.Do(c.token, c.doc, nil); len(r.Errors) > 0 && r.Code() == "GRAPHQL_VALIDATION_FAILED" {
			t.Fatalf("%s: the case's document is not valid: %v", c.op, r.Errors)
		}
		called[c.op] = true
	}

	var out struct {
		AuditLog []struct{ Operation, Outcome string }
	}
	s.Must(s.Super, `{ auditLog(first: 1000) { operation outcome } }`, nil, &out)
	logged := map[string]bool{}
	for _, e := range out.AuditLog {
		logged[e.Operation] = true
	}
	schema, err := os.ReadFile("../schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	body := string(schema)
	body = body[strings.Index(body, "type Mutation {"):]
	body = body[:strings.Index(body, "\n}")]
	notAudited := map[string]bool{"previewCluster": true, "previewOperation": true, "registerAgent": true, "agentHeartbeat": true,
		"claimTask": true, "claimTasks": true, "finishTask": true, "exchangeTasks": true, "releaseTask": true, "reportProgress": true}
	for _, m := range regexp.MustCompile(`(?m)^  ([a-zA-Z]+)\(`).FindAllStringSubmatch(body, -1) {
		op := m[1]
		switch {
		case notAudited[op]:
		case !called[op]:
			t.Errorf("mutation %s has no case here: add one, so that its audit entry is checked", op)
		case !logged[op]:
			t.Errorf("mutation %s left no audit entry", op)
		}
	}
}
