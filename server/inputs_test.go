package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/server"
)

// Issue 17, point 8: every argument has a cap, nothing holds a NUL, and
// each refusal is INVALID_INPUT naming the argument without repeating it.
// A NUL in a description or config was a Postgres error (INTERNAL), a
// 1 MB tenant name an INTERNAL error logged whole, and descriptions and
// token names took 1 MB.
func TestInputCaps(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) { c.RateLimit = 0 })
	mb := strings.Repeat("x", 1<<20)
	cluster := func(set map[string]any) map[string]any {
		in := map[string]any{"name": "c", "clusterTemplate": "web-cluster", "numMachines": 2}
		for k, v := range set {
			in[k] = v
		}
		return map[string]any{"in": in}
	}
	const create = `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`
	cases := []struct {
		name, token, query string
		vars               map[string]any
		field              string
	}{
		{"a NUL in a description", w.alice, create, cluster(map[string]any{"description": "a\x00b"}), "input.description"},
		{"a NUL in a config", w.alice, create, cluster(map[string]any{"config": map[string]any{"web": map[string]any{"greeting": "hi\x00"}}}), "input.config.web.greeting"},
		{"a NUL in a config's key", w.alice, create, cluster(map[string]any{"config": map[string]any{"we\x00b": 1}}), "input.config"},
		{"a 1 MB description", w.alice, create, cluster(map[string]any{"description": mb}), "input.description"},
		{"a 100 kB config", w.alice, create, cluster(map[string]any{"config": map[string]any{"web": strings.Repeat("x", 100<<10)}}), "input.config"},
		{"a 256-character name", w.alice, create, cluster(map[string]any{"name": strings.Repeat("é", 256)}), "input.name"},
		{"a NUL in a service", w.alice, create, cluster(map[string]any{"services": []string{"base", "w\x00eb"}}), "input.services[1]"},
		{"a 1 MB token name", w.alice, `mutation($n: String!) { createAPIToken(input: {name: $n}) { secret } }`, map[string]any{"n": mb}, "input.name"},
		{"a 1 MB tenant name", w.s.Super, `mutation($n: String!) { createTenant(input: {name: $n}) { id } }`, map[string]any{"n": mb}, "input.name"},
		{"a NUL in an id", w.alice, `query($id: ID!) { cluster(id: $id) { id } }`, map[string]any{"id": "1\x00"}, "id"},
		{"a NUL in a catalog entity", w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: SERVICES, entity: $e) { entity { version } } }`,
			map[string]any{"e": map[string]any{"name": "s", "description": "\x00"}}, "entity.description"},
		{"a garbage cursor", w.alice, `{ clusters(after: "garbage") { nodes { id } } }`, nil, "after"},
	}
	for _, c := range cases {
		r := w.s.Do(c.token, c.query, c.vars)
		if len(r.Errors) == 0 || r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["field"] != c.field {
			t.Errorf("%s: %+v, want INVALID_INPUT on %s", c.name, r.Errors, c.field)
			continue
		}
		if len(r.Errors[0].Message) > 200 {
			t.Errorf("%s: a message of %d bytes: %.100s…", c.name, len(r.Errors[0].Message), r.Errors[0].Message)
		}
	}
	// A real cursor pages on.
	for range 3 {
		w.s.Must(w.alice, create, cluster(nil), &struct{}{})
	}
	var first, second struct {
		Clusters struct {
			Nodes     []struct{ ID string }
			EndCursor string
		}
	}
	w.s.Must(w.alice, `{ clusters(first: 2) { nodes { id } endCursor } }`, nil, &first)
	w.s.Must(w.alice, `query($a: String) { clusters(first: 2, after: $a) { nodes { id } } }`, map[string]any{"a": first.Clusters.EndCursor}, &second)
	if len(first.Clusters.Nodes) != 2 || len(second.Clusters.Nodes) == 0 || second.Clusters.Nodes[0].ID >= first.Clusters.EndCursor {
		t.Errorf("pages %+v then %+v", first, second)
	}
}

// An empty string is no value: it meets no requirement of a provider
// type. The example pool provider leaves its required ssh_key empty.
func TestEmptyRequiredProviderField(t *testing.T) {
	w := newAttackWorld(t, 0, func(c *server.Config) { c.RateLimit = 0 })
	r := w.s.Do(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "c", "clusterTemplate": "web-cluster", "numMachines": 2, "provider": "pool"}})
	if r.Code() != "MISSING_FIELDS" || !strings.Contains(r.Errors[0].Message, "ssh_key") {
		t.Errorf("pool with an empty ssh_key: %+v, want MISSING_FIELDS naming ssh_key", r.Errors)
	}
}

// A body of unknown length (chunked) over the limit is refused with 413,
// as one that declares its length is.
func TestChunkedBodyOverLimit(t *testing.T) {
	s := limited(t, func(c *server.Config) { c.MaxRequestBytes = 4096 })
	body := `{"query": "{ __typename }", "variables": {"pad": "` + strings.Repeat("x", 5000) + `"}}`
	// A reader of unknown length: the client sends it chunked.
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", io.MultiReader(strings.NewReader(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Super)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a chunked 5 kB body over a 4 kB limit: HTTP %d", resp.StatusCode)
	}
	if req.ContentLength != 0 {
		t.Fatalf("the request declared its length (%d): not the case under test", req.ContentLength)
	}
}
