package server_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/server/servertest"
)

// sshKey is a fake OpenSSH private key; its marker line holds no character
// Postgres would escape, so a search of every row's text finds it.
func sshKey(marker string) string {
	return "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU" + marker +
		"\nAAAAC3NzaC1lZDI1NTE5AAAAIFakeFakeFake\n-----END OPENSSH PRIVATE KEY-----\n"
}

const (
	markerA = "MarkerAlphaNeverShown0001"
	markerB = "MarkerBravoNeverShown0002"
	markerC = "MarkerCharlieNeverShown03"
)

// keyedType is a provider type whose admin field ssh_key is sensitive, as
// the pool type's is.
var keyedType = map[string]any{"name": "keyed", "parameters": map[string]any{"admin": map[string]any{
	"fields": map[string]any{
		"endpoint": map[string]any{"label": "Endpoint", "type": "text"},
		"ssh_key":  map[string]any{"label": "SSH private key", "type": "password", "sensitive": true}},
	"required": [][]string{{"endpoint", "ssh_key"}}}}}

const putProvider = `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version document } warnings { path message } } }`

type putResult struct {
	PutCatalogEntity struct {
		Entity struct {
			Version  int
			Document map[string]any
		}
		Warnings []struct{ Path, Message string }
	}
}

func keyedProvider(name, endpoint, key string) map[string]any {
	return map[string]any{"name": name, "providertype": "keyed",
		"provisioner": map[string]any{"endpoint": endpoint, "ssh_key": key}}
}

// noLeak fails the test when a response to any of queries, as token,
// holds one of the secrets.
func noLeak(t *testing.T, s *servertest.Server, token string, queries []string, secrets ...string) {
	t.Helper()
	for _, q := range queries {
		resp, err := s.Request(token, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Errors) > 0 {
			t.Fatalf("%s: %+v", q, resp.Errors)
		}
		b := mustJSON(resp)
		for _, sec := range secrets {
			if bytes.Contains(b, []byte(sec)) {
				t.Errorf("%s returns a sensitive value", q)
			}
		}
		if !bytes.Contains(b, []byte(`"ssh_key":"__redacted__"`)) {
			t.Errorf("%s does not show ssh_key as __redacted__", q)
		}
	}
}

// noRowHolds fails the test when any row of any table holds the marker in
// its text form, or a sealed column holds it in its bytes.
func noRowHolds(t *testing.T, s *servertest.Server, markers ...string) {
	t.Helper()
	db := s.Srv.Store().DB()
	var tables []string
	if err := db.Select(&tables, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`); err != nil {
		t.Fatal(err)
	}
	for _, m := range markers {
		for _, tb := range tables {
			var n int
			if err := db.Get(&n, fmt.Sprintf(`SELECT count(*) FROM %q x WHERE x::text LIKE '%%'||$1||'%%'`, tb), m); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%d rows of %s hold a sensitive value in the clear", n, tb)
			}
		}
		var sealed [][]byte
		if err := db.Select(&sealed, `SELECT sealed FROM provider_secrets UNION ALL SELECT sealed FROM credentials`); err != nil {
			t.Fatal(err)
		}
		for _, b := range sealed {
			if bytes.Contains(b, []byte(m)) {
				t.Error("a sealed column holds a sensitive value in the clear")
			}
		}
	}
}

func TestSensitiveAdminValues(t *testing.T) {
	w := newWorld(t)
	s := w.s
	ctx := context.Background()
	keyA, keyB, keyC := sshKey(markerA), sshKey(markerB), sshKey(markerC)
	s.Must(s.Super, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERTYPES, entity: $e) { entity { version } } }`,
		map[string]any{"e": keyedType}, &struct{}{})

	// Written: the answer shows the placeholder.
	var put putResult
	s.Must(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://a.example", keyA)}, &put)
	if got := put.PutCatalogEntity.Entity.Document["provisioner"].(map[string]any); got["ssh_key"] != "__redacted__" || got["endpoint"] != "https://a.example" {
		t.Errorf("put answers provisioner %v", got)
	}
	v1 := put.PutCatalogEntity.Entity.Version

	// Read: no query or export shows it, to admins or users.
	reads := []string{
		`{ catalog { entities(kind: PROVIDERS) { name version versions document } } }`,
		`{ catalog { entity(kind: PROVIDERS, name: "rackspace") { version versions document } } }`,
		fmt.Sprintf(`{ catalog { entity(kind: PROVIDERS, name: "rackspace", version: %d) { document } } }`, v1),
		`{ catalog { export } }`,
	}
	noLeak(t, s, w.admin, reads, keyA, markerA)
	noLeak(t, s, w.alice, reads, keyA, markerA)
	noRowHolds(t, s, markerA)
	if got, err := s.Srv.Store().ProviderSecrets(ctx, "acme", "rackspace", 0); err != nil || got["ssh_key"] != keyA {
		t.Fatalf("sealed values %v (%v), want the key", got, err)
	}

	// Export → import round-trips: nothing changes, the value is kept.
	var exp struct {
		Catalog struct{ Export map[string]any }
	}
	s.Must(w.admin, `{ catalog { export } }`, nil, &exp)
	doc := exp.Catalog.Export
	delete(doc, "providertypes")
	delete(doc, "automatortypes")
	var imp struct {
		ImportCatalog struct {
			Created, Updated, Unchanged int
			Warnings                    []struct{ Path string }
		}
	}
	s.Must(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created updated unchanged warnings { path } } }`,
		map[string]any{"d": doc}, &imp)
	if imp.ImportCatalog.Created+imp.ImportCatalog.Updated != 0 {
		t.Errorf("re-importing the export wrote %+v", imp.ImportCatalog)
	}
	// The placeholder written back with another change keeps the value.
	s.Must(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://b.example", "__redacted__")}, &put)
	if put.PutCatalogEntity.Entity.Version != v1+1 || len(put.PutCatalogEntity.Warnings) != 0 {
		t.Errorf("put with the placeholder: version %d, warnings %+v", put.PutCatalogEntity.Entity.Version, put.PutCatalogEntity.Warnings)
	}
	if got, err := s.Srv.Store().ProviderSecrets(ctx, "acme", "rackspace", 0); err != nil || got["ssh_key"] != keyA {
		t.Fatalf("after writing the placeholder back: %v (%v), want the key kept", got, err)
	}

	// A cluster made from it: the claimed payload carries the real key.
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "k", "clusterTemplate": "lamp", "numMachines": 2}}, &cr)
	id := cr.CreateCluster.ID
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($d: [DriverInput!]) { registerAgent(input: {agentId: "a", incarnation: "1", capacity: 1, drivers: $d}) { cancel } }`,
		map[string]any{"d": lampDrivers("keyed")}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	type claim struct {
		TaskID, ClaimToken string
		Attempt            int
		Payload            struct {
			Cluster  struct{ ID string }
			Provider struct {
				Name        string
				Provisioner map[string]any
			}
			Secrets map[string]any
		}
	}
	next := func() *claim {
		t.Helper()
		var got struct{ ClaimTask *claim }
		for deadline := time.Now().Add(10 * time.Second); got.ClaimTask == nil && time.Now().Before(deadline); {
			s.Must(agent, claimQuery, map[string]any{"in": map[string]any{"agentId": "a", "incarnation": "1",
				"tenantId": w.tenantID, "slot": 0, "waitSeconds": 2}}, &got)
		}
		if got.ClaimTask == nil {
			t.Fatal("no task claimed")
		}
		return got.ClaimTask
	}
	check := func(c *claim) {
		t.Helper()
		pv := c.Payload.Provider
		if c.Payload.Cluster.ID != id || pv.Provisioner["ssh_key"] != keyA || pv.Provisioner["endpoint"] != "https://b.example" {
			t.Errorf("payload provider %+v, want the key the cluster was made with", pv)
		}
		if _, ok := c.Payload.Secrets["provider-admin"]; ok {
			t.Error("the payload's secrets repeat the provider's admin values")
		}
	}
	first := next()
	check(first)
	noRowHolds(t, s, markerA)
	creds, err := credentials.New(s.Config.CredentialKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := creds.Get(ctx, s.Srv.Store().DB(), id); err != nil || got["provider-admin"]["ssh_key"] != keyA {
		t.Errorf("cluster credentials %v (%v), want the key under provider-admin", got, err)
	}

	// The provider changes; the cluster keeps the key it was made with.
	s.Must(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://b.example", keyB)}, &put)
	if got, err := s.Srv.Store().ProviderSecrets(ctx, "acme", "rackspace", 0); err != nil || got["ssh_key"] != keyB {
		t.Fatalf("after the change: %v (%v), want the new key", got, err)
	}
	s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": first.TaskID, "attempt": first.Attempt,
		"claimToken": first.ClaimToken, "result": map[string]any{"status": 0}}}, &struct{}{})
	check(next())
	noLeak(t, s, w.admin, reads, keyA, markerA, keyB, markerB)
	noRowHolds(t, s, markerA, markerB)

	// TERMINATED wipes the cluster's copy.
	if _, err := s.Srv.Store().DB().Exec(`UPDATE clusters SET status = 'TERMINATED' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.Srv.Store().DB().Get(&left, `SELECT count(*) FROM credentials WHERE cluster_id = $1`, id); err != nil || left != 0 {
		t.Errorf("%d credential rows left after TERMINATED (%v)", left, err)
	}

	// The superadmin reads no value either; a bootstrapped tenant's copy of
	// the superadmin catalog keeps the sealed value.
	s.Must(s.Super, putProvider, map[string]any{"e": keyedProvider("shared-pool", "https://c.example", keyC)}, &put)
	noLeak(t, s, s.Super, []string{
		`{ catalog { entities(kind: PROVIDERS) { document } } }`,
		`{ catalog { entity(kind: PROVIDERS, name: "shared-pool") { document } } }`,
		`{ catalog { export } }`,
	}, keyC, markerC)
	s.Must(s.Super, `mutation { createTenant(input: {name: "globex"}, bootstrap: true) { id } }`, nil, &struct{}{})
	if got, err := s.Srv.Store().ProviderSecrets(ctx, "globex", "shared-pool", 0); err != nil || got["ssh_key"] != keyC {
		t.Errorf("bootstrapped tenant's provider: %v (%v), want the superadmin's key", got, err)
	}
	noRowHolds(t, s, markerC)
}

// Without a credential key a sensitive admin value is refused, naming the
// field and the setting; empty values and placeholders are accepted.
func TestSensitiveAdminValuesNeedKey(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) { c.CredentialKey = "" })
	s := w.s
	s.Must(s.Super, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERTYPES, entity: $e) { entity { version } } }`,
		map[string]any{"e": keyedType}, &struct{}{})
	refused := func(what string, r *servertest.Response) {
		t.Helper()
		if r.Code() != "INVALID_INPUT" || !strings.Contains(r.Errors[0].Message, "provisioner.ssh_key") ||
			!strings.Contains(r.Errors[0].Message, "COOPR_CREDENTIAL_KEY") {
			t.Errorf("%s: %+v, want INVALID_INPUT naming provisioner.ssh_key and COOPR_CREDENTIAL_KEY", what, r.Errors)
		}
		if b := mustJSON(r); bytes.Contains(b, []byte(markerA)) {
			t.Errorf("%s: the refusal repeats the value", what)
		}
	}
	refused("put", s.Do(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://a.example", sshKey(markerA))}))
	refused("import", s.Do(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": map[string]any{
		"providers": []any{keyedProvider("rackspace", "https://a.example", sshKey(markerA))}}}))
	noRowHolds(t, s, markerA)

	var put putResult
	s.Must(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://a.example", "")}, &put)
	s.Must(w.admin, putProvider, map[string]any{"e": keyedProvider("rackspace", "https://a.example", "__redacted__")}, &put)
	if ws := put.PutCatalogEntity.Warnings; len(ws) != 1 || ws[0].Path != "provisioner.ssh_key" {
		t.Errorf("placeholder with no stored value: warnings %+v, want one on provisioner.ssh_key", ws)
	}
	if _, ok := put.PutCatalogEntity.Entity.Document["provisioner"].(map[string]any)["ssh_key"]; ok {
		t.Error("a placeholder with no stored value is kept in the document")
	}
}
