package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// capWorld is a server with the example catalog (local and pool
// providers) in two tenants, acme and zeta.
type capWorld struct {
	s          *servertest.Server
	acme, zeta string // the tenants' admin tokens
	tenants    map[string]string
}

func newCapWorld(t *testing.T) *capWorld {
	t.Helper()
	s := servertest.Start(t)
	doc := loadBundle(t, "../examples/catalog")
	shared := map[string]any{"providertypes": doc["providertypes"], "automatortypes": doc["automatortypes"]}
	delete(doc, "providertypes")
	delete(doc, "automatortypes")
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, &struct{}{})
	w := &capWorld{s: s, tenants: map[string]string{}}
	for _, tok := range []*string{&w.acme, &w.zeta} {
		name := map[*string]string{&w.acme: "acme", &w.zeta: "zeta"}[tok]
		*tok, _ = tenantTokens(t, s, name)
		s.Must(*tok, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc}, &struct{}{})
		var me struct {
			Me struct{ Tenant struct{ ID string } }
		}
		s.Must(*tok, `{ me { tenant { id } } }`, nil, &me)
		w.tenants[*tok] = me.Me.Tenant.ID
	}
	return w
}

// provider stores a provider of the tenant of token.
func (w *capWorld) provider(t *testing.T, token, name, typ string, fields map[string]any) {
	t.Helper()
	w.providerOn(t, token, name, typ, "hosts", fields)
}

// providerOn stores a provider whose network block has type network.
func (w *capWorld) providerOn(t *testing.T, token, name, typ, network string, fields map[string]any) {
	t.Helper()
	w.s.Must(token, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": name, "providertype": typ, "provisioner": fields,
			"network": map[string]any{"type": network, "fields": map[string]any{}}}}, &struct{}{})
}

type capacityOut struct {
	Provider, Pool               string
	Nodes, Used, Free, Requested int
}

// try runs mutation (previewCluster or createCluster) for size nodes
// from template on provider and returns the error code ("" for none) and
// the error's extensions.
func (w *capWorld) try(token, mutation, template, provider string, size int) (string, map[string]any) {
	r := w.s.Do(token, `mutation($in: ClusterInput!) { `+mutation+`(input: $in) { __typename } }`,
		map[string]any{"in": map[string]any{"name": "c", "clusterTemplate": template, "provider": provider, "numMachines": size}})
	if r.Code() != "" {
		return r.Code(), r.Errors[0].Extensions
	}
	return "", nil
}

// preview is previewCluster's capacity, or the error code.
func (w *capWorld) preview(t *testing.T, token, template, provider string, size int) (*capacityOut, string) {
	t.Helper()
	var out struct {
		PreviewCluster struct{ Capacity *capacityOut }
	}
	r := w.s.Do(token, `mutation($in: ClusterInput!) { previewCluster(input: $in) { capacity { provider pool nodes used free requested } } }`,
		map[string]any{"in": map[string]any{"name": "c", "clusterTemplate": template, "provider": provider, "numMachines": size}})
	if r.Code() != "" {
		t.Logf("previewCluster: %+v", r.Errors)
		return nil, r.Code()
	}
	if err := r.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.PreviewCluster.Capacity, ""
}

func (w *capWorld) mustCreate(t *testing.T, token, template, provider string, size int) string {
	t.Helper()
	var out struct{ CreateCluster struct{ ID string } }
	w.s.Must(token, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "c", "clusterTemplate": template, "provider": provider, "numMachines": size}}, &out)
	return out.CreateCluster.ID
}

// run completes the tenant's tasks until the cluster is status; vm
// CREATEs report the providerId place gives the node ("" for none).
func (w *capWorld) run(t *testing.T, token, cluster, status string, place func(node string) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := w.s.Srv.Engine()
	for {
		var c struct{ Cluster struct{ Status string } }
		w.s.Must(token, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": cluster}, &c)
		if c.Cluster.Status == status {
			return
		}
		a, err := eng.Claim(ctx, engine.ClaimRequest{TenantID: w.tenants[token], AgentID: "test-agent", Wait: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("cluster %s did not reach %s: %v", cluster, status, err)
		}
		if a == nil {
			continue
		}
		res := engine.Result{}
		switch a.TaskName {
		case "CREATE":
			if place != nil && a.Node != nil {
				if at := place(a.Node.ID); at != "" {
					res.Facts = map[string]any{"providerId": at}
				}
			}
		case "CONFIRM":
			res.IPAddresses = map[string]string{"access_v4": "10.0.0.1", "bind_v4": "10.0.0.1"}
		}
		if err := eng.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, res); err != nil {
			t.Fatal(err)
		}
	}
}

// A create or scale-out that does not fit its provider's room is refused
// up front, with the provider, the room and the request named, previews
// too. Local providers give each cluster a subnet of its own: a cluster's
// nodes take only its own room, and the range holds so many clusters at
// once, shared with other tenants naming the same range; a deleted
// cluster gives its subnet back.
func TestCapacityLocal(t *testing.T) {
	w := newCapWorld(t)
	s := w.s
	// 10.77.0.0/27 in /28s: two clusters of 13 nodes (16 addresses less
	// the network, broadcast and host's).
	rng := map[string]any{"subnet": "10.77.0.0/27", "clusterPrefix": "28"}
	const pool = "a /28 of 10.77.0.0/27 for each cluster"
	w.provider(t, w.acme, "local", "local", rng)
	w.provider(t, w.zeta, "local", "local", map[string]any{"subnet": "10.77.0.1/27", "clusterPrefix": float64(28)})

	c, code := w.preview(t, w.acme, "web-cluster", "local", 10)
	if code != "" || c == nil || *c != (capacityOut{Provider: "local", Pool: pool, Nodes: 13, Used: 0, Free: 13, Requested: 10}) {
		t.Fatalf("preview of 10 nodes: %+v %s", c, code)
	}
	for _, m := range []string{"previewCluster", "createCluster"} {
		code, ext := w.try(w.acme, m, "web-cluster", "local", 14)
		if code != "CAPACITY_EXCEEDED" || ext["pool"] != pool || ext["free"] != 13.0 || ext["requested"] != 14.0 || ext["nodes"] != 13.0 {
			t.Errorf("%s of 14 nodes in a cluster of 13: %s %v, want CAPACITY_EXCEEDED naming the room", m, code, ext)
		}
	}
	big := w.mustCreate(t, w.acme, "web-cluster", "local", 10)

	// zeta's provider names the same range: its cluster has a subnet of
	// its own, all 13 addresses free, whatever acme's holds.
	small := w.mustCreate(t, w.zeta, "web-cluster", "local", 13)

	// Both subnets are taken: no third cluster, whoever asks.
	for _, tok := range []string{w.acme, w.zeta} {
		code, ext := w.try(tok, "createCluster", "web-cluster", "local", 1)
		if code != "CAPACITY_EXCEEDED" || ext["pool"] != pool {
			t.Errorf("a third cluster on a range of two: %s %v", code, ext)
		}
	}
	r := s.Do(w.acme, `mutation { createCluster(input: {name: "c", clusterTemplate: "web-cluster", provider: "local", numMachines: 1}) { id } }`, nil)
	if msg := r.Errors[0].Message; !strings.Contains(msg, "provider local cannot take another cluster: it has room for 2 clusters at once ("+pool+")") {
		t.Errorf("message %q", msg)
	}

	// Scale-out takes the cluster's own room; scale-in frees it when its
	// job is done.
	w.run(t, w.acme, big, "ACTIVE", nil)
	scale := func(id string, size int) (*capacityOut, string) {
		var out struct {
			PreviewOperation struct{ Capacity *capacityOut }
		}
		r := s.Do(w.acme, `mutation($id: ID!, $n: Int!) { previewOperation(clusterId: $id, input: {operation: SCALE, numMachines: $n}) {
			capacity { provider pool nodes used free requested } } }`, map[string]any{"id": id, "n": size})
		if r.Code() != "" {
			return nil, r.Code()
		}
		_ = r.Decode(&out)
		return out.PreviewOperation.Capacity, ""
	}
	if c, code := scale(big, 13); code != "" || *c != (capacityOut{Provider: "local", Pool: pool, Nodes: 13, Used: 10, Free: 3, Requested: 3}) {
		t.Errorf("scale-out preview 10 → 13: %+v %s", c, code)
	}
	if _, code := scale(big, 14); code != "CAPACITY_EXCEEDED" {
		t.Errorf("scale-out preview past the cluster's subnet: %s", code)
	}
	if r := s.Do(w.acme, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: SCALE, numMachines: 14}) { id } }`,
		map[string]any{"id": big}); r.Code() != "CAPACITY_EXCEEDED" {
		t.Errorf("scale-out past the cluster's subnet: %+v", r.Errors)
	}
	s.Must(w.acme, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: SCALE, numMachines: 8}) { id } }`,
		map[string]any{"id": big}, &struct{}{})
	w.run(t, w.acme, big, "ACTIVE", nil)
	if c, code := scale(big, 10); code != "" || *c != (capacityOut{Provider: "local", Pool: pool, Nodes: 13, Used: 8, Free: 5, Requested: 2}) {
		t.Errorf("scale-out preview 8 → 10: %+v %s", c, code)
	}

	// A deleted cluster gives its subnet back.
	w.run(t, w.zeta, small, "ACTIVE", nil)
	s.Must(w.zeta, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": small}, &struct{}{})
	w.run(t, w.zeta, small, "TERMINATED", nil)
	if c, code := w.preview(t, w.acme, "web-cluster", "local", 13); code != "" || c.Used != 0 || c.Free != 13 {
		t.Errorf("after the delete: %+v %s", c, code)
	}
	// Another range is another room.
	w.provider(t, w.acme, "local", "local", map[string]any{"subnet": "10.77.0.32/28", "clusterPrefix": "28"})
	w.mustCreate(t, w.acme, "web-cluster", "local", 13)
	if code, _ := w.try(w.acme, "previewCluster", "web-cluster", "local", 1); code != "CAPACITY_EXCEEDED" {
		t.Errorf("a second cluster on a range of one: %s", code)
	}
}

// A libvirt provider whose network block is the libvirt network driver's
// gives each cluster a network of its own on a subnet of its
// clusterRange: a cluster's nodes take only its subnet's room, the range
// holds so many clusters, and its clusters take nothing of the
// provider's shared network. Without that network block the provider's
// nodes share one network's addresses.
func TestCapacityLibvirtClusterNetworks(t *testing.T) {
	w := newCapWorld(t)
	// 10.79.0.0/27 in /28s: two clusters of 13 nodes.
	rng := map[string]any{"clusterRange": "10.79.0.0/27", "clusterPrefix": "28", "subnet": "10.79.1.0/29"}
	const pool = "a /28 of 10.79.0.0/27 on libvirt qemu:///system for each cluster"
	w.providerOn(t, w.acme, "libvirt", "libvirt", "libvirt", rng)
	w.providerOn(t, w.zeta, "libvirt", "libvirt", "libvirt", rng)

	c, code := w.preview(t, w.acme, "libvirt-web-cluster", "libvirt", 10)
	if code != "" || c == nil || *c != (capacityOut{Provider: "libvirt", Pool: pool, Nodes: 13, Used: 0, Free: 13, Requested: 10}) {
		t.Fatalf("preview of 10 nodes: %+v %s", c, code)
	}
	if code, ext := w.try(w.acme, "createCluster", "libvirt-web-cluster", "libvirt", 14); code != "CAPACITY_EXCEEDED" || ext["pool"] != pool {
		t.Errorf("14 nodes in a cluster of 13: %s %v", code, ext)
	}
	big := w.mustCreate(t, w.acme, "libvirt-web-cluster", "libvirt", 10)
	// zeta's cluster has a subnet of its own, all of it free.
	w.mustCreate(t, w.zeta, "libvirt-web-cluster", "libvirt", 13)
	// The range's two subnets are taken: no third cluster.
	r := w.s.Do(w.acme, `mutation { createCluster(input: {name: "c", clusterTemplate: "libvirt-web-cluster", provider: "libvirt", numMachines: 2}) { id } }`, nil)
	if r.Code() != "CAPACITY_EXCEEDED" || !strings.Contains(r.Errors[0].Message, "cannot take another cluster: it has room for 2 clusters at once ("+pool+")") {
		t.Errorf("a third cluster on a range of two: %+v", r.Errors)
	}
	// The cluster networks' nodes take nothing of a shared network's
	// five addresses.
	w.providerOn(t, w.acme, "libvirt", "libvirt", "hosts", rng)
	if c, code := w.preview(t, w.acme, "libvirt-web-cluster", "libvirt", 5); code != "" || c.Used != 0 || c.Free != 5 || c.Pool != "libvirt qemu:///system network coopr (10.79.1.0/29)" {
		t.Errorf("the shared network beside cluster networks: %+v %s", c, code)
	}
	// Scale-out takes the cluster's own room.
	w.run(t, w.acme, big, "ACTIVE", nil)
	r = w.s.Do(w.acme, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: SCALE, numMachines: 14}) { id } }`, map[string]any{"id": big})
	if r.Code() != "CAPACITY_EXCEEDED" {
		t.Errorf("scale-out past the cluster's subnet: %+v", r.Errors)
	}
	w.s.Must(w.acme, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: SCALE, numMachines: 13}) { id } }`,
		map[string]any{"id": big}, &struct{}{})
}

// Two creates at once, of two tenants (so the tenant quota lock does not
// order them), on a range with room for one cluster: exactly one is made.
func TestCapacityConcurrentCreates(t *testing.T) {
	w := newCapWorld(t)
	for round := range 8 {
		subnet := map[string]any{"subnet": fmt.Sprintf("10.78.%d.0/28", round), "clusterPrefix": "28"}
		w.provider(t, w.acme, "local", "local", subnet)
		w.provider(t, w.zeta, "local", "local", subnet)
		codes := make([]string, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, tok := range []string{w.acme, w.zeta} {
			wg.Go(func() {
				<-start
				codes[i], _ = w.try(tok, "createCluster", "web-cluster", "local", 7)
			})
		}
		close(start)
		wg.Wait()
		got := strings.Join(codes, ",")
		if got != ",CAPACITY_EXCEEDED" && got != "CAPACITY_EXCEEDED," {
			t.Fatalf("round %d: two creates on a range of one cluster ended %q, want one made and one CAPACITY_EXCEEDED", round, got)
		}
	}
}

// Each pool host holds one node; a cluster holds the hosts its nodes
// took even after hosts are added to its provider, and providers listing
// other hosts are not charged for them.
func TestCapacityPool(t *testing.T) {
	w := newCapWorld(t)
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nnot checked by the server\n-----END OPENSSH PRIVATE KEY-----\n"
	pool := func(tok, name, hosts string) {
		w.provider(t, tok, name, "pool", map[string]any{"hosts": hosts, "ssh_user": "root", "ssh_key": key})
	}
	pool(w.acme, "pool", "192.0.2.10 192.0.2.11 192.0.2.12")
	c, code := w.preview(t, w.acme, "web-cluster", "pool", 2)
	if code != "" || c == nil || *c != (capacityOut{Provider: "pool", Pool: "3 hosts", Nodes: 3, Used: 0, Free: 3, Requested: 2}) {
		t.Fatalf("preview: %+v %s", c, code)
	}
	if code, ext := w.try(w.acme, "createCluster", "web-cluster", "pool", 4); code != "CAPACITY_EXCEEDED" || ext["free"] != 3.0 {
		t.Errorf("4 nodes on 3 hosts: %s %v", code, ext)
	}
	// Its two nodes take .10 and .11.
	id := w.mustCreate(t, w.acme, "web-cluster", "pool", 2)
	hosts := map[string]string{}
	w.run(t, w.acme, id, "ACTIVE", func(node string) string {
		if hosts[node] == "" {
			hosts[node] = fmt.Sprintf("192.0.2.%d:22", 10+len(hosts))
		}
		return hosts[node]
	})
	if code, _ := w.try(w.acme, "previewCluster", "web-cluster", "pool", 2); code != "CAPACITY_EXCEEDED" {
		t.Errorf("2 nodes on the one free host: %s", code)
	}
	// A host added to the provider: the old cluster still holds two of
	// the four.
	pool(w.acme, "pool", "192.0.2.10 192.0.2.11 192.0.2.12 192.0.2.13")
	if c, code := w.preview(t, w.acme, "web-cluster", "pool", 2); code != "" || c.Used != 2 || c.Free != 2 {
		t.Errorf("after adding a host: %+v %s", c, code)
	}
	// zeta's pool lists .11 (taken) and two others.
	pool(w.zeta, "pool", "192.0.2.11 192.0.2.20 192.0.2.21")
	if c, code := w.preview(t, w.zeta, "web-cluster", "pool", 2); code != "" || c.Used != 1 || c.Free != 2 {
		t.Errorf("zeta's pool sharing one taken host: %+v %s", c, code)
	}
	// Nodes not placed yet may take any host of their provider: they count.
	w.mustCreate(t, w.zeta, "web-cluster", "pool", 2)
	if code, ext := w.try(w.acme, "previewCluster", "web-cluster", "pool", 2); code != "CAPACITY_EXCEEDED" || ext["used"] != 4.0 {
		t.Errorf("with zeta's two unplaced nodes: %s %v, want all 4 hosts counted used", code, ext)
	}
	// A provider its driver cannot use is refused before anything is made.
	pool(w.acme, "pool", "bad_host!")
	if code, ext := w.try(w.acme, "createCluster", "web-cluster", "pool", 2); code != "INVALID_INPUT" || ext["field"] != "provider" {
		t.Errorf("pool without hosts: %s %v", code, ext)
	}
}
