package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers/vm/local"
	"github.com/cooprhq/coopr/server/credentials"
)

// Clusters side by side on local nodes, two of one tenant and one of
// another, each on its own network: every cluster's balancer answers from
// its own web nodes, the agent's host reaches every node by SSH, and no
// node reaches a node of another cluster, even routed through the host
// with forwarding on. Deleting the clusters releases their networks.
func TestClusterIsolationOnLocal(t *testing.T) {
	// The agent's slots are shared out tenant by tenant: room for both.
	w := newWorld(t, 8)
	w.startAgent(t, "agent-1", 16)
	other := w.addTenant(t, "e2e-other", 8)

	type cl struct {
		token, id string
		c         cluster
	}
	cls := []*cl{{token: w.admin}, {token: w.admin}, {token: other}}
	for _, c := range cls {
		c.id = w.createAs(t, c.token, "web-cluster", 3)
	}
	for _, c := range cls {
		w.waitStatus(t, c.token, c.id, "ACTIVE", 6*time.Minute)
		c.c = w.clusterAs(t, c.token, c.id)
	}

	t.Run("each balancer answers from its own web nodes", func(t *testing.T) {
		for _, c := range cls {
			lbs, webs := withService(c.c, "lb"), withService(c.c, "web")
			if len(lbs) != 1 || len(webs) != 2 {
				t.Fatalf("cluster %s layout: %d lb, %d web", c.id, len(lbs), len(webs))
			}
			seen := answers(t, "http://"+lbs[0].Ipaddresses["access_v4"]+"/", hostnames(webs), 30*time.Second)
			for host := range seen {
				if !slices.Contains(hostnames(webs), host) {
					t.Errorf("cluster %s's balancer answered from %s, not one of its web nodes %v", c.id, host, hostnames(webs))
				}
			}
		}
	})

	// Every cluster's subnet is its own.
	subnets := map[string]*net.IPNet{}
	for _, c := range cls {
		_, cidr, err := local.ClusterNetwork(w.localCfg.StateDir, c.id)
		if err != nil {
			t.Fatalf("cluster %s's network: %v", c.id, err)
		}
		_, n, _ := net.ParseCIDR(cidr)
		for id, o := range subnets {
			if o.Contains(n.IP) || n.Contains(o.IP) {
				t.Fatalf("clusters %s and %s share addresses: %s and %s", c.id, id, o, n)
			}
		}
		subnets[c.id] = n
		for _, nd := range c.c.Nodes {
			if !n.Contains(net.ParseIP(nd.Ipaddresses["access_v4"])) {
				t.Errorf("node %s of cluster %s at %s, outside its subnet %s", nd.Hostname, c.id, nd.Ipaddresses["access_v4"], n)
			}
		}
	}

	signers := map[string]ssh.Signer{}
	for _, c := range cls {
		signers[c.id] = w.clusterSigner(t, c.id)
	}
	t.Run("the host reaches every node by ssh", func(t *testing.T) {
		for _, c := range cls {
			for _, nd := range c.c.Nodes {
				if out := strings.TrimSpace(sshRun(t, nd.Ipaddresses["access_v4"], signers[c.id], "hostname")); out != nd.Hostname {
					t.Errorf("ssh to %s: %q", nd.Hostname, out)
				}
			}
		}
	})

	t.Run("no node reaches another cluster's", func(t *testing.T) {
		// A host that forwards, and nodes routed to every other cluster
		// through it: only the host's isolation stands between them.
		const fwd = "/proc/sys/net/ipv4/ip_forward"
		old, err := os.ReadFile(fwd)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fwd, []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(fwd, old, 0o644)
		for _, c := range cls {
			hostOf := subnets[c.id].IP.To4()
			gw := net.IPv4(hostOf[0], hostOf[1], hostOf[2], hostOf[3]+1).String()
			// This run's nodes only: a coopr dev beside the tests has a
			// cluster of the same id, in namespaces of other names.
			var nss []string
			for _, n := range c.c.Nodes {
				ns := filepath.Join("/run/netns", local.NodeName(w.localCfg.StateDir, c.id, n.ID))
				if _, err := os.Stat(ns); err != nil {
					t.Fatalf("cluster %s node %d: %v", c.id, n.Nodenum, err)
				}
				nss = append(nss, ns)
			}
			for _, ns := range nss {
				for id, n := range subnets {
					if id == c.id {
						continue
					}
					if out, err := exec.Command("ip", "-n", filepath.Base(ns), "route", "replace", n.String(), "via", gw).CombinedOutput(); err != nil {
						t.Fatalf("route in %s: %v: %s", ns, err, out)
					}
				}
			}
		}
		connect := func(from node, signer ssh.Signer, to string) string {
			return strings.TrimSpace(sshRun(t, from.Ipaddresses["access_v4"], signer, fmt.Sprintf(
				`python3 -c 'import socket; socket.create_connection(("%s", 80), timeout=3); print("connected")' 2>&1 | tail -1`, to)))
		}
		for _, a := range cls {
			from := withService(a.c, "lb")[0]
			// Its own web node answers on port 80: the probe works.
			if out := connect(from, signers[a.id], withService(a.c, "web")[0].Ipaddresses["access_v4"]); out != "connected" {
				t.Errorf("cluster %s: the lb cannot reach its own web node: %s", a.id, out)
			}
			for _, b := range cls {
				if b == a {
					continue
				}
				to := withService(b.c, "web")[0].Ipaddresses["access_v4"]
				if out := connect(from, signers[a.id], to); out == "connected" {
					t.Errorf("a node of cluster %s reached %s, a web node of cluster %s", a.id, to, b.id)
				}
			}
		}
	})

	for _, c := range cls {
		w.s.Must(c.token, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": c.id}, &struct{}{})
	}
	for _, c := range cls {
		w.waitStatus(t, c.token, c.id, "TERMINATED", 4*time.Minute)
	}
	// Once all are gone: noTraces looks at every node of the state dir.
	for _, c := range cls {
		w.noTraces(t, c.id)
	}
}

// addTenant makes another tenant with the example catalog and the same
// local provider as the world's (one host, one state dir, one range), and
// returns its admin's token.
func (w *world) addTenant(t testing.TB, name string, workers int) string {
	t.Helper()
	s := w.s
	s.Must(s.Super, `mutation($n: String!, $w: Int!) { createTenant(input: {name: $n, workers: $w}) { id } }`,
		map[string]any{"n": name, "w": workers}, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation($t: String!) { createAPIToken(input: {name: "admin", tenant: $t}) { secret } }`, map[string]any{"t": name}, &tok)
	admin := tok.CreateAPIToken.Secret
	_, own := bundle(t, "../examples/catalog")
	s.Must(admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": own}, &struct{}{})
	s.Must(admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "local", "providertype": "local",
			"provisioner": map[string]any{"subnet": w.localCfg.Subnet, "clusterPrefix": "27", "stateDir": w.localCfg.StateDir},
			"network":     map[string]any{"type": "local", "fields": map[string]any{}}}}, &struct{}{})
	return admin
}

func (w *world) createAs(t testing.TB, token, template string, size int) string {
	t.Helper()
	var out struct{ CreateCluster struct{ ID string } }
	w.s.Must(token, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": "iso", "clusterTemplate": template, "numMachines": size}}, &out)
	return out.CreateCluster.ID
}

func (w *world) clusterAs(t testing.TB, token, id string) cluster {
	t.Helper()
	admin := w.admin
	w.admin = token
	defer func() { w.admin = admin }()
	return w.cluster(t, id)
}

// waitStatus polls the cluster until it is want; a job that ends
// elsewhere fails the test with its failed tasks.
func (w *world) waitStatus(t testing.TB, token, id, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c := w.clusterAs(t, token, id)
		if c.Status == want {
			return
		}
		if c.Status != "PENDING" && len(c.Jobs) > 0 && c.Jobs[0].State != "RUNNING" && c.Jobs[0].State != "NOT_SUBMITTED" {
			admin := w.admin
			w.admin = token
			msg := w.failures(t, id)
			w.admin = admin
			t.Fatalf("cluster %s settled %s, want %s: %s", id, c.Status, want, msg)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("cluster %s not %s within %s", id, want, timeout)
}

// clusterSigner is the cluster's SSH key, from the credential store.
func (w *world) clusterSigner(t testing.TB, cluster string) ssh.Signer {
	t.Helper()
	creds, err := credentials.New(w.s.Config.CredentialKey)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := creds.Get(context.Background(), w.s.Srv.Store().DB(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := secrets["ssh"]["privateKey"].(string)
	signer, err := ssh.ParsePrivateKey([]byte(pem))
	if err != nil {
		t.Fatalf("cluster key: %v", err)
	}
	return signer
}
