package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/server/servertest"
)

const secret = "s3cr3t-v4lue-never-shown"

func TestSensitiveProviderFields(t *testing.T) {
	w := newWorld(t)
	s := w.s
	vaultCloud(t, w)
	create := `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`
	r := s.Do(w.alice, create, map[string]any{"in": map[string]any{"name": "v", "clusterTemplate": "lamp", "numMachines": 2}})
	if r.Code() != "MISSING_FIELDS" || !strings.Contains(string(mustJSON(r.Errors[0].Extensions)), `"token"`) {
		t.Fatalf("create without the token: %+v, want MISSING_FIELDS naming token", r.Errors)
	}
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, create, map[string]any{"in": map[string]any{"name": "v", "clusterTemplate": "lamp", "numMachines": 2,
		"providerFields": map[string]any{"token": secret, "region": "eu", "bogus": 1}}}, &cr)
	id := cr.CreateCluster.ID

	// No query shows it.
	for _, q := range []string{
		`query($id: ID!) { cluster(id: $id) { id name provider config services nodes { id hostname ipaddresses } jobs { id message tasks { id message } } } }`,
		`{ clusters { nodes { id provider config } } }`,
		`{ catalog { export } }`,
	} {
		resp, err := s.Request(w.admin, q, map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		if b := mustJSON(resp); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s returns the secret", q)
		}
	}
	// Not in any row in the clear.
	var leaks int
	if err := s.Srv.Store().DB().Get(&leaks, `SELECT count(*) FROM clusters WHERE snapshot::text LIKE '%'||$1||'%' OR config::text LIKE '%'||$1||'%'`, secret); err != nil || leaks != 0 {
		t.Errorf("cluster rows hold the secret (%d, %v)", leaks, err)
	}
	var sealed [][]byte
	if err := s.Srv.Store().DB().Select(&sealed, `SELECT sealed FROM credentials WHERE cluster_id = $1 AND namespace = 'provider'`, id); err != nil || len(sealed) != 1 {
		t.Fatalf("credentials rows %d, %v", len(sealed), err)
	}
	if bytes.Contains(sealed[0], []byte(secret)) {
		t.Error("the credential row holds the secret in the clear")
	}

	// A claimed task carries it.
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": lampDrivers("vault-cloud")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	var got struct {
		ClaimTask *struct {
			TaskID, ClaimToken string
			Attempt            int
			Payload            struct {
				Provider struct {
					Name        string
					Provisioner map[string]any
				}
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for got.ClaimTask == nil && time.Now().Before(deadline) {
		s.Must(agent, `mutation($in: ClaimInput!) { claimTask(input: $in) { taskId attempt claimToken payload } }`,
			map[string]any{"in": map[string]any{"agentId": "a", "incarnation": "1", "tenantId": w.tenantID,
				"slot": 0, "waitSeconds": 2}}, &got)
	}
	if got.ClaimTask == nil {
		t.Fatal("no task claimed")
	}
	pv := got.ClaimTask.Payload.Provider
	if pv.Name != "rackspace" || pv.Provisioner["token"] != secret || pv.Provisioner["region"] != "eu" ||
		pv.Provisioner["endpoint"] != "https://vc.example" || pv.Provisioner["bogus"] != nil {
		t.Errorf("payload provider %+v", pv)
	}

	// Task output reaches watchers with the secret scrubbed.
	task := got.ClaimTask
	logs, err := s.Subscribe(w.alice, `subscription($id: ID!) { taskLog(taskId: $id) { seq stream chunk } }`, map[string]any{"id": task.TaskID})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var line struct {
		TaskLog struct {
			Seq           int
			Stream, Chunk string
		}
	}
	// Nothing acknowledges a subscription: report until a line arrives.
	// (A read that times out closes the websocket, so one read waits.)
	arrived := make(chan error, 1)
	go func() {
		r, _, err := logs.Next(15 * time.Second)
		if err == nil {
			err = r.Decode(&line)
		}
		arrived <- err
	}()
	for seq := 1; ; seq++ {
		s.Must(agent, `mutation($in: ProgressInput!) { reportProgress(input: $in) }`, map[string]any{"in": map[string]any{
			"taskId": task.TaskID, "attempt": task.Attempt, "claimToken": task.ClaimToken, "seq": seq, "stream": "STDOUT",
			"chunk": "logging in with " + secret + " ... ok"}}, &struct{}{})
		select {
		case err := <-arrived:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(100 * time.Millisecond):
			continue
		}
		break
	}
	if line.TaskLog.Chunk != "logging in with [redacted] ... ok" || line.TaskLog.Stream != "STDOUT" {
		t.Errorf("log line %+v", line.TaskLog)
	}
	if r := s.Do(agent, `mutation($in: ProgressInput!) { reportProgress(input: $in) }`, map[string]any{"in": map[string]any{
		"taskId": task.TaskID, "attempt": task.Attempt, "claimToken": "00", "seq": 99, "stream": "STDOUT", "chunk": "x"}}); r.Code() != "STALE_CLAIM" {
		t.Errorf("progress under a wrong token: %+v", r.Errors)
	}

	// Entering TERMINATED wipes it.
	if _, err := s.Srv.Store().DB().Exec(`UPDATE clusters SET status = 'TERMINATED' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var left int
	_ = s.Srv.Store().DB().Get(&left, `SELECT count(*) FROM credentials WHERE cluster_id = $1`, id)
	if left != 0 {
		t.Errorf("%d credential rows left after TERMINATED", left)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// vaultCloud makes the tenant's rackspace provider one of a type with a
// required sensitive user field, token.
func vaultCloud(t *testing.T, w *world) {
	t.Helper()
	s := w.s
	s.Must(s.Super, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERTYPES, entity: $e) { entity { version } } }`, map[string]any{"e": map[string]any{
		"name": "vault-cloud",
		"parameters": map[string]any{
			"admin": map[string]any{"fields": map[string]any{"endpoint": map[string]any{"label": "Endpoint", "type": "text"}},
				"required": [][]string{{"endpoint"}}},
			"user": map[string]any{"fields": map[string]any{
				"token":  map[string]any{"label": "API token", "type": "password", "sensitive": true},
				"region": map[string]any{"label": "Region", "type": "text"}},
				"required": [][]string{{"token"}}},
		}}}, &struct{}{})
	s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`, map[string]any{"e": map[string]any{
		// A new version of the provider the templates use, now of a type
		// with a sensitive user field.
		"name": "rackspace", "providertype": "vault-cloud", "provisioner": map[string]any{"endpoint": "https://vc.example"}}}, &struct{}{})

}

// Operations take provider fields too: none given, the stored ones count;
// given, the sensitive ones replace the stored; lost, MISSING_FIELDS.
func TestOperationProviderFields(t *testing.T) {
	w := newWorld(t)
	s := w.s
	vaultCloud(t, w)
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "v", "clusterTemplate": "lamp", "numMachines": 2, "providerFields": map[string]any{"token": secret}}}, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")
	op := func(fields map[string]any) *servertest.Response {
		in := map[string]any{"operation": "RESTART_SERVICES"}
		if fields != nil {
			in["providerFields"] = fields
		}
		return s.Do(w.alice, `mutation($id: ID!, $in: OperationInput!) { runOperation(clusterId: $id, input: $in) { id } }`,
			map[string]any{"id": id, "in": in})
	}
	if r := op(nil); r.Code() != "" {
		t.Fatalf("operation with the stored token: %+v", r.Errors)
	}
	w.run(t, w.alice, id, "ACTIVE")
	if r := op(map[string]any{"token": "rotated-token-value"}); r.Code() != "" {
		t.Fatalf("operation with a new token: %+v", r.Errors)
	}
	w.run(t, w.alice, id, "ACTIVE")
	creds, err := credentials.New(s.Config.CredentialKey)
	if err != nil {
		t.Fatal(err)
	}
	got, err := creds.Get(context.Background(), s.Srv.Store().DB(), id)
	if err != nil || got["provider"]["token"] != "rotated-token-value" {
		t.Errorf("stored provider fields %v (%v), want the rotated token", got["provider"], err)
	}
	if _, err := s.Srv.Store().DB().Exec(`DELETE FROM credentials WHERE cluster_id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if r := op(nil); r.Code() != "MISSING_FIELDS" {
		t.Errorf("operation after the stored token was lost: %+v, want MISSING_FIELDS", r.Errors)
	}
	// A delete takes provider fields too: given, they are checked and
	// stored for its tasks.
	del := `mutation($id: ID!, $f: JSON) { deleteCluster(id: $id, providerFields: $f) { id } }`
	if r := s.Do(w.alice, del, map[string]any{"id": id, "f": map[string]any{"region": "eu"}}); r.Code() != "MISSING_FIELDS" {
		t.Errorf("delete with fields lacking the token: %+v, want MISSING_FIELDS", r.Errors)
	}
	if r := s.Do(w.alice, del, map[string]any{"id": id, "f": map[string]any{"token": "token-for-delete"}}); r.Code() != "" {
		t.Fatalf("delete with a token: %+v", r.Errors)
	}
	got, err = creds.Get(context.Background(), s.Srv.Store().DB(), id)
	if err != nil || got["provider"]["token"] != "token-for-delete" {
		t.Errorf("stored provider fields after the delete %v (%v), want its token", got["provider"], err)
	}
}

// A cluster gets its own SSH key at create, and a driver's secrets reach
// the cluster's later tasks, never a query.
func TestClusterKeyAndDriverSecrets(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "k", "clusterTemplate": "lamp", "numMachines": 2}}, &cr)
	id := cr.CreateCluster.ID
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": lampDrivers("rackspace")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	type claim struct {
		TaskID, ClaimToken string
		Attempt            int
		Payload            struct {
			TaskName string
			Node     struct {
				ID, Sshuser, Hardwaretype, Imagetype, Flavor, Image string
				Automators                                          []string
			}
			Secrets map[string]map[string]string
		}
	}
	next := func() *claim {
		t.Helper()
		var got struct{ ClaimTask *claim }
		deadline := time.Now().Add(10 * time.Second)
		for got.ClaimTask == nil && time.Now().Before(deadline) {
			s.Must(agent, `mutation($in: ClaimInput!) { claimTask(input: $in) { taskId attempt claimToken payload } }`,
				map[string]any{"in": map[string]any{"agentId": "a", "incarnation": "1", "tenantId": w.tenantID,
					"slot": 0, "waitSeconds": 2}}, &got)
		}
		if got.ClaimTask == nil {
			t.Fatal("no task claimed")
		}
		return got.ClaimTask
	}
	first := next()
	if first.Payload.TaskName != "CREATE" {
		t.Fatalf("first task %s, want CREATE", first.Payload.TaskName)
	}
	key := first.Payload.Secrets["ssh"]
	signer, err := ssh.ParsePrivateKey([]byte(key["privateKey"]))
	if err != nil {
		t.Fatalf("the cluster key does not parse: %v", err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(key["publicKey"]))
	if err != nil || !bytes.Equal(pub.Marshal(), signer.PublicKey().Marshal()) || pub.Type() != ssh.KeyAlgoED25519 {
		t.Errorf("public key %q does not match the private one (%v)", key["publicKey"], err)
	}
	n := first.Payload.Node
	if n.Sshuser == "" || n.Hardwaretype == "" || n.Imagetype == "" || n.Flavor == "" || n.Image == "" || len(n.Automators) == 0 {
		t.Errorf("payload node lacks catalog terms: %+v", n)
	}
	const vmKey = "vm-private-key-never-shown"
	s.Must(agent, `mutation($in: FinishInput!) { finishTask(input: $in) }`, map[string]any{"in": map[string]any{
		"taskId": first.TaskID, "attempt": first.Attempt, "claimToken": first.ClaimToken,
		"result": map[string]any{"status": 0, "secrets": map[string]any{"privateKey": vmKey}}}}, &struct{}{})
	second := next()
	if got := second.Payload.Secrets["vm"]["privateKey"]; got != vmKey {
		t.Errorf("the next task's vm secret is %q, want the CREATE's", got)
	}
	if second.Payload.Secrets["ssh"]["privateKey"] != key["privateKey"] {
		t.Error("the cluster key changed between tasks")
	}
	for _, q := range []string{
		`query($id: ID!) { cluster(id: $id) { id config nodes { id ipaddresses } jobs { id message tasks { id message attempts { stdoutTail stderrTail } } } } }`,
	} {
		resp, err := s.Request(w.admin, q, map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		if b := mustJSON(resp); bytes.Contains(b, []byte(vmKey)) || bytes.Contains(b, []byte("PRIVATE KEY")) {
			t.Errorf("%s returns a secret", q)
		}
	}
	var leaks int
	if err := s.Srv.Store().DB().Get(&leaks, `SELECT (SELECT count(*) FROM tasks WHERE row_to_json(tasks)::text LIKE '%'||$1||'%')
		+ (SELECT count(*) FROM events WHERE row_to_json(events)::text LIKE '%'||$1||'%')
		+ (SELECT count(*) FROM nodes WHERE row_to_json(nodes)::text LIKE '%'||$1||'%')`, vmKey); err != nil || leaks != 0 {
		t.Errorf("rows hold the driver secret in the clear (%d, %v)", leaks, err)
	}
}
