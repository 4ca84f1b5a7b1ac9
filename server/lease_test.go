package server_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

func TestLeaseRules(t *testing.T) {
	w := newWorld(t)
	s := w.s
	// A template like lamp with a lease of 2h, at most 1d, steps of 4h.
	raw, err := os.ReadFile(templatesDir + "/clustertemplates/lamp.json")
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	tmpl["name"] = "leased-lamp"
	tmpl["administration"] = map[string]any{"leaseduration": map[string]any{"initial": "2h", "max": "1d", "step": "4h"}}
	s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
		map[string]any{"e": tmpl}, &struct{}{})
	if r := s.Do(w.alice, `mutation { createCluster(input: {name: "x", clusterTemplate: "leased-lamp", numMachines: 2, initialLeaseDuration: "3h"}) { id } }`, nil); r.Code() != "INVALID_INPUT" {
		t.Errorf("a 3h initial lease over the template's 2h: %+v", r.Errors)
	}
	var cr struct {
		CreateCluster struct {
			ID         string
			ExpireTime time.Time
			CreatedAt  time.Time
		}
	}
	s.Must(w.alice, `mutation { createCluster(input: {name: "x", clusterTemplate: "leased-lamp", numMachines: 2}) { id expireTime createdAt } }`, nil, &cr)
	c := cr.CreateCluster
	if d := c.ExpireTime.Sub(c.CreatedAt); d < 2*time.Hour-time.Minute || d > 2*time.Hour+time.Minute {
		t.Errorf("initial lease %s, want 2h", d)
	}
	set := func(at time.Time) *servertest.Response {
		return s.Do(w.alice, `mutation($id: ID!, $t: Time!) { setClusterExpireTime(id: $id, expireTime: $t) { expireTime } }`,
			map[string]any{"id": c.ID, "t": at.UTC().Format(time.RFC3339Nano)})
	}
	if r := set(c.CreatedAt.Add(6 * time.Hour)); r.Code() != "CONFLICT" {
		t.Errorf("while PENDING: %+v, want CONFLICT", r.Errors)
	}
	w.run(t, w.alice, c.ID, "ACTIVE")
	for _, tc := range []struct {
		name string
		at   time.Duration // after creation
		code string
		want string
	}{
		{"to T+6h", 6 * time.Hour, "", ""},
		{"to T+11h, over the 4h step", 11 * time.Hour, "INVALID_INPUT", "4h"},
		{"to T+10h", 10 * time.Hour, "", ""},
		{"to T+25h, past the 1d max", 25 * time.Hour, "INVALID_INPUT", "24h"},
		{"before creation", -time.Hour, "INVALID_INPUT", "before"},
	} {
		r := set(c.CreatedAt.Add(tc.at))
		if r.Code() != tc.code || (tc.code != "" && !strings.Contains(r.Errors[0].Message, tc.want)) {
			t.Errorf("%s: %+v, want %q mentioning %q", tc.name, r.Errors, tc.code, tc.want)
		}
	}
	if r := s.Do(w.bob, `mutation($id: ID!) { setClusterExpireTime(id: $id, expireTime: "2030-01-01T00:00:00Z") { id } }`,
		map[string]any{"id": c.ID}); r.Code() != "NOT_FOUND" {
		t.Errorf("bob moves alice's lease: %+v", r.Errors)
	}
}

// A cluster whose lease ends is deleted by the janitor once it is ACTIVE.
func TestLeaseExpiry(t *testing.T) {
	w := newWorldWith(t, func(c *server.Config) { c.JanitorInterval = 200 * time.Millisecond })
	var cr struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.alice, `mutation { createCluster(input: {name: "brief", clusterTemplate: "lamp", numMachines: 2, initialLeaseDuration: "1s"}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	// The lease may end before the create does, so the ACTIVE moment can
	// be too brief to observe: run the agent until the end.
	w.run(t, w.alice, id, "TERMINATED")
	var c struct {
		Cluster struct{ Jobs []struct{ Action string } }
	}
	w.s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { jobs { action } } }`, map[string]any{"id": id}, &c)
	if len(c.Cluster.Jobs) != 2 || c.Cluster.Jobs[0].Action != "CLUSTER_DELETE" {
		t.Errorf("jobs %+v, want the janitor's CLUSTER_DELETE after the create", c.Cluster.Jobs)
	}
}
