package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/store/storetest"
)

// world is a server with the test catalog (testdata/catalog) in tenant
// acme, its admin, and two plain users.
type world struct {
	s                 *servertest.Server
	admin, alice, bob string
	tenantID          string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	return worldOn(t, servertest.Start(t))
}

// newWorldWith is newWorld on a server whose configuration set adjusts.
func newWorldWith(t testing.TB, set func(*server.Config)) *world {
	t.Helper()
	dsn, _ := storetest.NewDSN(t)
	_, prefix := queuetest.New(t)
	cfg := server.Defaults()
	cfg.DatabaseURL, cfg.RedisURL, cfg.RedisPrefix = dsn, queuetest.URL(), prefix
	cfg.RateLimit, cfg.AgentRateLimit = 0, 0
	set(&cfg)
	return worldOn(t, servertest.StartWith(t, cfg))
}

func worldOn(t testing.TB, s *servertest.Server) *world {
	t.Helper()
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`,
		map[string]any{"d": loadBundle(t, typesDir)}, &struct{}{})
	w := &world{s: s}
	w.admin, w.alice = tenantTokens(t, s, "acme")
	s.Must(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`,
		map[string]any{"d": loadBundle(t, templatesDir)}, &struct{}{})
	s.Must(w.admin, `mutation { createUser(name: "bob") { name } }`, nil, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(w.admin, `mutation { createAPIToken(input: {name: "bob", user: "bob"}) { secret } }`, nil, &tok)
	w.bob = tok.CreateAPIToken.Secret
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(w.admin, `{ me { tenant { id } } }`, nil, &me)
	w.tenantID = me.Me.Tenant.ID
	return w
}

// run plays an agent that completes every task of the tenant until the
// cluster reaches status.
func (w *world) run(t *testing.T, token, cluster, status string) {
	t.Helper()
	if err := w.agent(token, w.s, cluster, status); err != nil {
		t.Fatal(err)
	}
}

// runAsync is run in the background; wait reports how it ended.
func (w *world) runAsync(t *testing.T, token, cluster, status string) (wait func()) {
	done := make(chan error, 1)
	go func() { done <- w.agent(token, w.s, cluster, status) }()
	return func() {
		t.Helper()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// agent claims and completes tasks through srv's engine until the cluster
// reaches status.
func (w *world) agent(token string, srv *servertest.Server, cluster, status string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	eng := srv.Srv.Engine()
	for ctx.Err() == nil {
		r, err := w.s.Request(token, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": cluster})
		if err != nil {
			return err
		}
		var c struct{ Cluster struct{ Status string } }
		if err := r.Decode(&c); err != nil {
			return err
		}
		if c.Cluster.Status == status {
			return nil
		}
		a, err := eng.Claim(ctx, engine.ClaimRequest{TenantID: w.tenantID, AgentID: "test-agent", Wait: 100 * time.Millisecond})
		if err != nil {
			return err
		}
		if a == nil {
			continue
		}
		res := engine.Result{}
		if a.TaskName == "CONFIRM" {
			res.IPAddresses = map[string]string{"access_v4": "10.0.0.1", "bind_v4": "10.0.0.1"}
		}
		if err := eng.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, res); err != nil {
			return err
		}
	}
	return fmt.Errorf("cluster %s did not reach %s within a minute", cluster, status)
}

const clusterFields = `id name owner status template provider services size dnsSuffix expireTime
	nodes { id nodenum hostname services hardwaretype imagetype flavor image }
	latestJob { id action state counts { total complete } }`

type clusterOut struct {
	ID, Name, Owner, Status, Template, Provider, DNSSuffix string
	Services                                               []string
	Size                                                   int
	ExpireTime                                             *time.Time
	Nodes                                                  []struct {
		ID, Hostname, Hardwaretype, Imagetype, Flavor, Image string
		Nodenum                                              int
		Services                                             []string
	}
	LatestJob struct {
		ID, Action, State string
		Counts            struct{ Total, Complete int }
	}
}

func TestClusterPreviewCreateDelete(t *testing.T) {
	w := newWorld(t)
	s := w.s
	input := map[string]any{"name": "Web_Shop", "clusterTemplate": "hadoop-distributed", "numMachines": 5}
	var pv struct {
		PreviewCluster struct {
			Nodes []struct {
				Nodenum  int
				Hostname string
				Services []string
			}
			Tasks    []struct{ Ref, Action, Service string }
			Edges    [][]string
			Stages   [][]string
			PlanHash string
		}
	}
	s.Must(w.alice, `mutation($in: ClusterInput!) { previewCluster(input: $in) {
		nodes { nodenum hostname services } tasks { ref action service } edges stages planHash } }`, map[string]any{"in": input}, &pv)
	p := pv.PreviewCluster
	if len(p.Nodes) != 5 || len(p.Tasks) == 0 || len(p.Edges) == 0 || len(p.Stages) == 0 || len(p.PlanHash) != 64 {
		t.Fatalf("preview: %d nodes, %d tasks, %d edges, %d stages, hash %q", len(p.Nodes), len(p.Tasks), len(p.Edges), len(p.Stages), p.PlanHash)
	}
	if p.Nodes[0].Nodenum != 1000 || p.Nodes[0].Hostname != "web-shop-0-1000.local" {
		t.Errorf("first previewed node %+v", p.Nodes[0])
	}
	var none struct {
		Clusters struct{ Nodes []struct{ ID string } }
	}
	s.Must(w.admin, `{ clusters { nodes { id } } }`, nil, &none)
	if len(none.Clusters.Nodes) != 0 {
		t.Fatal("the preview stored a cluster")
	}

	if r := s.Do(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in, expectedPlanHash: "beef") { id } }`,
		map[string]any{"in": input}); r.Code() != "CONFLICT" {
		t.Errorf("create with a stale plan hash: %+v, want CONFLICT", r.Errors)
	}
	var cr struct{ CreateCluster clusterOut }
	s.Must(w.alice, `mutation($in: ClusterInput!, $h: String) { createCluster(input: $in, expectedPlanHash: $h) { `+clusterFields+` } }`,
		map[string]any{"in": input, "h": p.PlanHash}, &cr)
	c := cr.CreateCluster
	if len(c.ID) != 8 || c.Status != "PENDING" || c.Owner != "alice" || c.Size != 5 || len(c.Nodes) != 5 || c.ExpireTime != nil {
		t.Fatalf("created %+v", c)
	}
	idnum := strings.TrimLeft(c.ID, "0")
	if want := "web-shop-" + idnum + "-1000.local"; c.Nodes[0].Hostname != want {
		t.Errorf("hostname %q, want %q", c.Nodes[0].Hostname, want)
	}
	if c.LatestJob.ID != c.ID+"-001" || c.LatestJob.Action != "CLUSTER_CREATE" || c.LatestJob.Counts.Total != len(p.Tasks) {
		t.Errorf("job %+v, want %s-001 with %d tasks", c.LatestJob, c.ID, len(p.Tasks))
	}
	for i, n := range c.Nodes {
		if n.Nodenum != p.Nodes[i].Nodenum || strings.Join(n.Services, ",") != strings.Join(p.Nodes[i].Services, ",") {
			t.Errorf("node %d differs from the preview: %+v vs %+v", i, n, p.Nodes[i])
		}
	}

	// Owner isolation: bob does not see alice's cluster; the admin does.
	var got struct{ Cluster *struct{ ID string } }
	s.Must(w.bob, `query($id: ID!) { cluster(id: $id) { id } }`, map[string]any{"id": c.ID}, &got)
	if got.Cluster != nil {
		t.Error("bob sees alice's cluster")
	}
	for _, q := range []string{
		`mutation($id: ID!) { deleteCluster(id: $id) { id } }`,
		`mutation($id: ID!) { pauseJob(id: $id) { id } }`,
	} {
		id := c.ID
		if strings.Contains(q, "Job") {
			id = c.LatestJob.ID
		}
		if r := s.Do(w.bob, q, map[string]any{"id": id}); r.Code() != "NOT_FOUND" {
			t.Errorf("bob: %s: %+v, want NOT_FOUND", q, r.Errors)
		}
	}
	s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { id } }`, map[string]any{"id": c.ID}, &got)
	if got.Cluster == nil {
		t.Error("the tenant admin does not see alice's cluster")
	}
	if r := s.Do(w.alice, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": c.ID}); r.Code() != "CONFLICT" {
		t.Errorf("delete while PENDING: %+v, want CONFLICT", r.Errors)
	}

	w.run(t, w.alice, c.ID, "ACTIVE")
	var del struct{ DeleteCluster struct{ ID, Action string } }
	s.Must(w.alice, `mutation($id: ID!) { deleteCluster(id: $id) { id action } }`, map[string]any{"id": c.ID}, &del)
	if del.DeleteCluster.ID != c.ID+"-002" || del.DeleteCluster.Action != "CLUSTER_DELETE" {
		t.Errorf("delete job %+v", del.DeleteCluster)
	}
	w.run(t, w.alice, c.ID, "TERMINATED")
	var again struct{ DeleteCluster *struct{ ID string } }
	s.Must(w.alice, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": c.ID}, &again)
	if again.DeleteCluster != nil {
		t.Error("deleting a TERMINATED cluster made a job")
	}
}

func TestClusterCreateRefusals(t *testing.T) {
	w := newWorld(t)
	s := w.s
	in := func(mod map[string]any) map[string]any {
		m := map[string]any{"name": "c", "clusterTemplate": "hadoop-distributed", "numMachines": 3}
		for k, v := range mod {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name  string
		input map[string]any
		code  string
		want  string // in the message
	}{
		{"unknown template", in(map[string]any{"clusterTemplate": "nope"}), "NOT_FOUND", "hadoop-distributed, lamp"},
		{"no machines", in(map[string]any{"numMachines": 0}), "INVALID_INPUT", "numMachines"},
		{"over the server cap", in(map[string]any{"numMachines": 10001}), "QUOTA_EXCEEDED", "10000"},
		{"under the template's minimum", in(map[string]any{"numMachines": 2}), "INVALID_INPUT", "3"},
		{"empty name", in(map[string]any{"name": ""}), "INVALID_INPUT", "name"},
		{"unknown provider", in(map[string]any{"provider": "moon"}), "NOT_FOUND", "moon"},
		{"bad dns suffix", in(map[string]any{"dnsSuffix": "bad..suffix"}), "INVALID_INPUT", "dnsSuffix"},
		{"bad macro", in(map[string]any{"config": map[string]any{"x": map[string]any{"y": "%join(host.service.a)%"}}}), "INVALID_INPUT", "config.x.y"},
		{"bad lease", in(map[string]any{"initialLeaseDuration": "soon"}), "INVALID_INPUT", "initialLeaseDuration"},
		{"config not an object", in(map[string]any{"config": []any{1}}), "INVALID_INPUT", "config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range []string{"previewCluster", "createCluster"} {
				r := s.Do(w.alice, `mutation($in: ClusterInput!) { `+m+`(input: $in) { __typename } }`, map[string]any{"in": c.input})
				if r.Code() != c.code || !strings.Contains(r.Errors[0].Message, c.want) {
					t.Errorf("%s: %+v, want %s mentioning %q", m, r.Errors, c.code, c.want)
				}
			}
		})
	}
	var list struct {
		Clusters struct{ Nodes []struct{ ID string } }
	}
	s.Must(w.admin, `{ clusters { nodes { id } } }`, nil, &list)
	if len(list.Clusters.Nodes) != 0 {
		t.Errorf("refused creates left %d clusters", len(list.Clusters.Nodes))
	}
}

func TestClusterQuotaAndPaging(t *testing.T) {
	w := newWorld(t)
	s := w.s
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", maxClusters: 3, maxNodes: 7}) { id } }`, nil, &struct{}{})
	create := func(n int) *servertest.Response {
		return s.Do(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"name": "c", "clusterTemplate": "lamp", "numMachines": n}})
	}
	for range 3 {
		if r := create(2); r.Code() != "" {
			t.Fatalf("create: %+v", r.Errors)
		}
	}
	if r := create(1); r.Code() != "QUOTA_EXCEEDED" || !strings.Contains(r.Errors[0].Message, "maxClusters") {
		t.Errorf("fourth cluster: %+v, want QUOTA_EXCEEDED on maxClusters", r.Errors)
	}
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", maxClusters: -1}) { id } }`, nil, &struct{}{})
	// The preview says what the quotas are and what the create takes of them.
	var pv struct {
		PreviewCluster struct {
			Quota struct {
				MaxClusters, MaxNodes *int
				Clusters, Nodes       int
				AddClusters, AddNodes int
			}
		}
	}
	s.Must(w.alice, `mutation($in: ClusterInput!) { previewCluster(input: $in) {
		quota { maxClusters maxNodes clusters nodes addClusters addNodes } } }`,
		map[string]any{"in": map[string]any{"name": "c", "clusterTemplate": "lamp", "numMachines": 1}}, &pv)
	if q := pv.PreviewCluster.Quota; q.MaxClusters != nil || q.MaxNodes == nil || *q.MaxNodes != 7 || q.Clusters != 3 ||
		q.Nodes != 6 || q.AddClusters != 1 || q.AddNodes != 1 {
		t.Errorf("preview quota %+v (maxNodes %v), want no cluster limit, 6 of 7 nodes used, 1 cluster of 1 node added", q, q.MaxNodes)
	}
	if r := create(2); r.Code() != "QUOTA_EXCEEDED" || !strings.Contains(r.Errors[0].Message, "maxNodes") {
		t.Errorf("8 nodes over 7: %+v, want QUOTA_EXCEEDED on maxNodes", r.Errors)
	}
	var page struct {
		Clusters struct {
			Nodes       []struct{ ID string }
			EndCursor   *string
			HasNextPage bool
		}
	}
	s.Must(w.alice, `{ clusters(first: 2) { nodes { id } endCursor hasNextPage } }`, nil, &page)
	if len(page.Clusters.Nodes) != 2 || !page.Clusters.HasNextPage || page.Clusters.EndCursor == nil {
		t.Fatalf("page 1 %+v", page.Clusters)
	}
	first := page.Clusters.Nodes
	s.Must(w.alice, `query($a: String) { clusters(first: 2, after: $a) { nodes { id } endCursor hasNextPage } }`,
		map[string]any{"a": *page.Clusters.EndCursor}, &page)
	if len(page.Clusters.Nodes) != 1 || page.Clusters.HasNextPage || page.Clusters.Nodes[0].ID >= first[1].ID {
		t.Errorf("page 2 %+v after %v", page.Clusters, first)
	}
	for status, want := range map[string]int{"PENDING": 3, "ACTIVE": 0} {
		s.Must(w.alice, `query($s: [ClusterStatus!]) { clusters(status: $s) { nodes { id } endCursor hasNextPage } }`,
			map[string]any{"s": []string{status}}, &page)
		if len(page.Clusters.Nodes) != want {
			t.Errorf("status %s: %d clusters, want %d", status, len(page.Clusters.Nodes), want)
		}
	}
	s.Must(w.bob, `{ clusters { nodes { id } endCursor hasNextPage } }`, nil, &page)
	if len(page.Clusters.Nodes) != 0 {
		t.Errorf("bob lists %d of alice's clusters", len(page.Clusters.Nodes))
	}
}

// Node host names come from the cluster name, apart from its id; a name
// that makes none is refused, naming the field, before anything is made.
func TestClusterHostnames(t *testing.T) {
	w := newWorld(t)
	s := w.s
	in := func(name string) map[string]any {
		return map[string]any{"in": map[string]any{"name": name, "clusterTemplate": "lamp", "numMachines": 2}}
	}
	for _, m := range []string{"previewCluster", "createCluster"} {
		r := s.Do(w.alice, `mutation($in: ClusterInput!) { `+m+`(input: $in) { __typename } }`, in("☃ 2024"))
		if r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["field"] != "name" || !strings.Contains(r.Errors[0].Message, "makes no host name") {
			t.Errorf("%s of a cluster named ☃ 2024: %+v, want INVALID_INPUT on name", m, r.Errors)
		}
	}
	for name, prefix := range map[string]string{"demo2": "demo2", "ünïcødé ☃": "unicode", "Web_Shop": "web-shop"} {
		var out struct{ CreateCluster clusterOut }
		s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { `+clusterFields+` } }`, in(name), &out)
		c := out.CreateCluster
		want := prefix + "-" + strings.TrimLeft(c.ID, "0") + "-1000.local"
		if c.Name != name || len(c.Nodes) == 0 || c.Nodes[0].Hostname != want {
			t.Errorf("cluster %q: %+v, want its first node %s", name, c, want)
		}
	}
}

// A cluster made before the separator keeps its host names, and its new
// nodes are named the same way: one scheme within a cluster.
func TestScaleOutKeepsOldHostnames(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "demo2", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")
	idnum := strings.TrimLeft(id, "0")
	// As the old scheme named them: demo2 and the id run together.
	if _, err := s.Srv.Store().DB().Exec(`UPDATE nodes SET hostname = 'demo2' || $2 || '-' || nodenum || '.local' WHERE cluster_id = $1`,
		id, idnum); err != nil {
		t.Fatal(err)
	}
	var out struct {
		PreviewOperation struct{ Added []struct{ Hostname string } }
	}
	s.Must(w.alice, `mutation($id: ID!) { previewOperation(clusterId: $id, input: {operation: SCALE, numMachines: 3}) { added { hostname } } }`,
		map[string]any{"id": id}, &out)
	if a := out.PreviewOperation.Added; len(a) != 1 || a[0].Hostname != "demo2"+idnum+"-1002.local" {
		t.Errorf("new node of an old cluster: %+v, want demo2%s-1002.local", a, idnum)
	}
}

// A scale-out after a scale-in does not hand out the removed nodes' numbers
// again: the new node's id would be the removed node's.
func TestScaleOutAfterScaleInTakesNewNumbers(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "grow", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")
	scale := func(n int) {
		t.Helper()
		s.Must(w.alice, `mutation($id: ID!, $n: Int!) { runOperation(clusterId: $id, input: {operation: SCALE, numMachines: $n}) { id } }`,
			map[string]any{"id": id, "n": n}, &struct{}{})
		w.run(t, w.alice, id, "ACTIVE")
	}
	scale(3)
	scale(2)
	var out struct {
		PreviewOperation struct{ Added []struct{ Hostname string } }
	}
	s.Must(w.alice, `mutation($id: ID!) { previewOperation(clusterId: $id, input: {operation: SCALE, numMachines: 3}) { added { hostname } } }`,
		map[string]any{"id": id}, &out)
	want := "grow-" + strings.TrimLeft(id, "0") + "-1003.local"
	if a := out.PreviewOperation.Added; len(a) != 1 || a[0].Hostname != want {
		t.Errorf("scale-out after a scale-in adds %+v, want %s (1002 was given up)", a, want)
	}
}
