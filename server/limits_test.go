package server_test

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/store/storetest"
)

func limited(t *testing.T, set func(*server.Config)) *servertest.Server {
	dsn, _ := storetest.NewDSN(t)
	_, prefix := queuetest.New(t)
	cfg := server.Defaults()
	cfg.DatabaseURL, cfg.RedisURL, cfg.RedisPrefix = dsn, queuetest.URL(), prefix
	set(&cfg)
	return servertest.StartWith(t, cfg)
}

func TestRequestLimits(t *testing.T) {
	s := limited(t, func(c *server.Config) {
		c.MaxDepth, c.MaxComplexity, c.MaxRequestBytes = 3, 20, 4096
		c.RateLimit, c.RateBurst = 0.5, 2
	})
	cases := []struct {
		name, query, code string
	}{
		{"depth 4 over 3", `{ me { tenant { id } } catalog { entity(kind: SERVICES, name: "x") { document } } clusters { nodes { latestJob { tasks { id } } } } }`, "LIMIT_EXCEEDED"},
		{"complexity over 20", `{ me { user role superadmin tenant { id name description workers maxClusters maxNodes createdAt } } a: me { user } b: me { user } c: me { user } d: me { user } e: me { user } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
	}
	for _, c := range cases {
		if r := s.Do(s.Super, c.query, nil); r.Code() != c.code {
			t.Errorf("%s: %+v, want %s", c.name, r.Errors, c.code)
		}
	}
	// Body size: refused before it is read.
	big := `{"query": "{ me { user } }", "variables": {"pad": "` + strings.Repeat("x", 5000) + `"}}`
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/graphql", bytes.NewBufferString(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Super)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("5 kB body over a 4 kB limit: HTTP %d", resp.StatusCode)
	}
	// The two cases above spent the burst of 2 (the oversized body was refused before the rate counted it); the next request waits.
	r, err := s.Request(s.Super, `{ me { user } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code() != "RATE_LIMITED" {
		t.Errorf("request over the rate: %+v, want RATE_LIMITED", r.Errors)
	}
}

// The cost limit (docs/api.md, Limits): lists weigh their first or their
// estimated size times what one item asks for, nested lists multiply, and
// lists longer than estimated are charged what they hold as they resolve.
func TestCostLimit(t *testing.T) {
	// A mutation costs 1,001: the limit lets one through (with a little more).
	w := newAttackWorld(t, 1, func(c *server.Config) { c.RateLimit = 0; c.MaxComplexity = 1200 })
	var cr struct {
		CreateCluster struct {
			LatestJob struct {
				ID     string
				Counts struct{ Total int }
			}
		}
	}
	w.s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { latestJob { id counts { total } } } }`,
		map[string]any{"in": map[string]any{"name": "big", "clusterTemplate": "web-cluster", "numMachines": 12}}, &cr)
	if n := cr.CreateCluster.LatestJob.Counts.Total; n <= 92 {
		t.Fatalf("the create has %d tasks; the case below needs more than 92", n)
	}
	t.Logf("the create has %d tasks", cr.CreateCluster.LatestJob.Counts.Total)
	const task = "id nodeId hostname action service stage state attempt failures maxAttempts message"
	cases := []struct {
		name, query, code string
	}{
		// 51 + 2 × (1 + 1 + 1) = 57: first is what a page costs.
		{"a page of 2 clusters", `{ clusters(first: 2) { nodes { id } } }`, ""},
		// 51 + 500 × (1 + 1 + 2) = 2,051.
		{"a page of 500 clusters", `{ clusters(first: 500) { nodes { id name } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		// 51 + 2 × (1 + 1 + 51 + 5 × (1 + 1)) = 177: jobs are estimated at 5.
		{"2 clusters' jobs", `{ clusters(first: 2) { nodes { jobs { id } } } }`, ""},
		// 51 + 2 × (1 + 1 + 51 + 5 × (1 + 51 + 50 × 2)) = 1,677: nested lists multiply.
		{"2 clusters' jobs' tasks", `{ clusters(first: 2) { nodes { jobs { tasks { id } } } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		// Estimated at 51 + 51 + 50 × (1 + 11) = 702, but the job has over
		// 92 tasks, charged 12 each as they resolve.
		{"a job's tasks, more than estimated", `query($id: ID!) { job(id: $id) { tasks { ` + task + ` } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
		{"a selection set of 201 fields", aliases(201, "__typename"), "LIMIT_EXCEEDED"},
		{"200 fields", aliases(200, "__typename"), ""},
	}
	for _, c := range cases {
		var vars map[string]any
		if strings.Contains(c.query, "$id") {
			vars = map[string]any{"id": cr.CreateCluster.LatestJob.ID}
		}
		if r := w.s.Do(w.alice, c.query, vars); r.Code() != c.code {
			t.Errorf("%s: %+v, want %q", c.name, r.Errors, c.code)
		}
	}
}

// At the defaults, the query of issue 17's attack (each alias of which
// weighed 5 before) is refused before any work, while the CLI's listing
// passes.
func TestCostLimitDefaults(t *testing.T) {
	w := newAttackWorld(t, 1, func(c *server.Config) { c.RateLimit = 0 })
	if r := w.s.Do(w.alice, `{ clusters(first: 500) { nodes { jobs { tasks { id } } } } }`, nil); r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("500 clusters' jobs' tasks: %+v, want COMPLEXITY_LIMIT_EXCEEDED", r.Errors)
	}
	var list struct {
		Clusters struct{ Nodes []struct{ ID string } }
	}
	w.s.Must(w.alice, `{ clusters(first: 100) { nodes { id name status template owner size } } }`, nil, &list)
	if len(list.Clusters.Nodes) != 1 {
		t.Errorf("listing: %+v", list)
	}
}

// The standard introspection query, which GraphiQL (the playground) sends
// on load, fits the default depth limit: its chain of ofType does not
// count. Lists of fields nested as deep are still refused (by gqlparser's
// introspection depth rule before ours).
func TestIntrospectionWithinDepthLimit(t *testing.T) {
	s := servertest.Start(t)
	q, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Schema struct{ Types []struct{ Name string } } `json:"__schema"`
	}
	s.Must(s.Super, string(q), nil, &out)
	if len(out.Schema.Types) < 20 {
		t.Errorf("introspection lists %d types", len(out.Schema.Types))
	}
	// __schema, types, then fields and type five times, then name: 13.
	deep := "{ __schema { types { " + strings.Repeat("fields { type { ", 5) + "name" + strings.Repeat(" }", 13)
	if r := s.Do(s.Super, deep, nil); r.Code() == "" {
		t.Errorf("fields nested 13 deep: %+v, want it refused", r.Errors)
	}
}
