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
	// The two cases above spent the burst of 2 (the oversized body was refused before authentication); the next request waits.
	r, err := s.Request(s.Super, `{ me { user } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code() != "RATE_LIMITED" {
		t.Errorf("request over the rate: %+v, want RATE_LIMITED", r.Errors)
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
