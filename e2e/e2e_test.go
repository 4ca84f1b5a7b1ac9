// Package e2e builds real clusters from the example catalog: a real
// server on real Postgres and Redis, agents with the built-in drivers,
// systemd-nspawn nodes on a private bridge, services over SSH, and HTTP
// through the load balancer the cluster runs.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers/builtin"
	"github.com/cooprhq/coopr/drivers/vm/libvirt"
	"github.com/cooprhq/coopr/drivers/vm/local"
	"github.com/cooprhq/coopr/server/servertest"
)

// netIndex picks this run's bridge and subnet: away from `coopr dev`'s
// coopr0 and the local driver's own tests (100–249), so that concurrent
// runs of those do not share addresses.
var netIndex = 10 + os.Getpid()%90

// world is a server with the example catalog in tenant e2e, whose local
// provider puts nodes on this run's bridge.
type world struct {
	s        *servertest.Server
	admin    string // the tenant admin's token
	tenantID string
	localCfg local.Config
	// libvirtCfg keeps this run's libvirt nodes apart from any other
	// installation's on the host.
	libvirtCfg libvirt.Config
	log        *slog.Logger
}

func newWorld(t testing.TB, workers int) *world {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the end-to-end tests make containers and a bridge: run them as root (.ci/run does)")
	}
	s := servertest.Start(t)
	w := &world{s: s, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if testing.Verbose() {
		w.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	shared, own := bundle(t, "../examples/catalog")
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, &struct{}{})
	s.Must(s.Super, `mutation($w: Int!) { createTenant(input: {name: "e2e", workers: $w}) { id } }`, map[string]any{"w": workers}, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "admin", tenant: "e2e"}) { secret } }`, nil, &tok)
	w.admin = tok.CreateAPIToken.Secret
	s.Must(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": own}, &struct{}{})
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(w.admin, `{ me { tenant { id } } }`, nil, &me)
	w.tenantID = me.Me.Tenant.ID

	dir := t.TempDir()
	w.libvirtCfg = libvirt.Config{StateDir: filepath.Join(dir, "libvirt")}
	// Eight clusters of 29 nodes at once.
	w.localCfg = local.Config{StateDir: filepath.Join(dir, "local"),
		Subnet: fmt.Sprintf("10.231.%d.0/24", netIndex), ClusterPrefix: 27}
	s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "local", "providertype": "local",
			"provisioner": map[string]any{"subnet": w.localCfg.Subnet, "clusterPrefix": "27", "stateDir": w.localCfg.StateDir},
			"network":     map[string]any{"type": "local", "fields": map[string]any{}}}}, &struct{}{})
	t.Cleanup(func() {
		// Whatever a failed test left: nodes, mounts, veths, the bridge.
		if err := local.Cleanup(context.Background(), w.localCfg.StateDir, w.log, true); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if _, err := local.EnsureImage(context.Background(), w.localCfg.ImageDir, w.log); err != nil {
		t.Fatalf("base image: %v", err)
	}
	return w
}

// bundle loads a catalog directory as an import document, split into the
// shared driver descriptors (superadmin's) and the tenant's own entities.
func bundle(t testing.TB, dir string) (shared, own map[string]any) {
	t.Helper()
	c, is, err := catalog.LoadPath(dir)
	if err != nil || is.HasErrors() {
		t.Fatalf("load %s: %v %v", dir, err, is.Errors())
	}
	b, err := c.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &own); err != nil {
		t.Fatal(err)
	}
	shared = map[string]any{}
	for _, k := range []string{"providertypes", "automatortypes"} {
		shared[k] = own[k]
		delete(own, k)
	}
	return shared, own
}

// startAgent runs an in-process agent with the built-in drivers until the
// test ends. It returns the agent's token.
func (w *world) startAgent(t testing.TB, id string, capacity int) string {
	t.Helper()
	var tok struct{ CreateAPIToken struct{ Secret string } }
	w.s.Must(w.s.Super, `mutation($n: String!) { createAPIToken(input: {name: $n, kind: AGENT, agents: "*"}) { secret } }`,
		map[string]any{"n": id}, &tok)
	w.runAgent(t, id, tok.CreateAPIToken.Secret, capacity)
	return tok.CreateAPIToken.Secret
}

// runAgent runs agent id with token until the test ends or the returned
// stop is called, as a restarted agent process would: a new incarnation,
// a new SSH pool.
func (w *world) runAgent(t testing.TB, id, token string, capacity int) (stop func()) {
	t.Helper()
	reg, closeDrivers, err := builtin.Registry(builtin.Config{WorkDir: t.TempDir(), Local: w.localCfg, Libvirt: w.libvirtCfg, Log: w.log})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Server: w.s.URL, Token: token, ID: id, Capacity: capacity,
		Version: "test", Grace: 5 * time.Second, Log: w.log}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent %s: %v", id, err)
			}
			closeDrivers()
		})
	}
	t.Cleanup(stop)
	return stop
}

type node struct {
	ID          string
	Nodenum     int
	Hostname    string
	Services    []string
	Ipaddresses map[string]string
	HostKeys    []struct{ Type, Key, Fingerprint string }
	SSHCommand  string
}

type cluster struct {
	ID, Status, Message string
	Nodes               []node
	Jobs                []struct {
		ID, State, Message string
		Tasks              []struct{ ID, State, Message string }
	}
}

func (w *world) cluster(t testing.TB, id string) cluster {
	t.Helper()
	var out struct{ Cluster cluster }
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { id status message
		nodes { id nodenum hostname services ipaddresses hostKeys { type key fingerprint } sshCommand }
		jobs { id state message tasks { id state message } } } }`, map[string]any{"id": id}, &out)
	sort.Slice(out.Cluster.Nodes, func(i, j int) bool { return out.Cluster.Nodes[i].Nodenum < out.Cluster.Nodes[j].Nodenum })
	return out.Cluster
}

// follow subscribes to the cluster's events and returns when its status
// is want; a status that settles elsewhere fails the test with the failed
// tasks' messages.
func (w *world) follow(t testing.TB, id, want string, timeout time.Duration) {
	t.Helper()
	sub, err := w.s.Subscribe(w.admin, `subscription($id: ID!) { clusterEvents(clusterId: $id) { kind state message taskId } }`,
		map[string]any{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("cluster %s not %s within %s: %s", id, want, timeout, w.failures(t, id))
		}
		r, done, err := sub.Next(left)
		if err != nil || done {
			t.Fatalf("cluster %s events ended before %s (%v): %s", id, want, err, w.failures(t, id))
		}
		var ev struct {
			ClusterEvents struct {
				Kind, State, Message string
				TaskID               *string
			}
		}
		if err := r.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		e := ev.ClusterEvents
		if e.Kind != "CLUSTER" && e.Kind != "SNAPSHOT" {
			continue
		}
		switch {
		case e.State == want:
			return
		case e.State == "ACTIVE" || e.State == "INCOMPLETE" || e.State == "INCONSISTENT" || e.State == "TERMINATED":
			if e.Kind == "SNAPSHOT" {
				continue // the status before the job this test waits for
			}
			t.Fatalf("cluster %s is %s, want %s: %s", id, e.State, want, w.failures(t, id))
		}
	}
}

// failures names the failed tasks of the cluster's newest job.
func (w *world) failures(t testing.TB, id string) string {
	c := w.cluster(t, id)
	var b strings.Builder
	fmt.Fprintf(&b, "status %s %q", c.Status, c.Message)
	if len(c.Jobs) > 0 {
		j := c.Jobs[0]
		fmt.Fprintf(&b, "; job %s %s %q", j.ID, j.State, j.Message)
		for _, tk := range j.Tasks {
			if tk.State != "COMPLETE" {
				fmt.Fprintf(&b, "\n  %s %s %s", tk.ID, tk.State, tk.Message)
			}
		}
	}
	return b.String()
}

func (w *world) create(t testing.TB, template, provider string, size int) string {
	t.Helper()
	var out struct{ CreateCluster struct{ ID string } }
	in := map[string]any{"name": "e2e", "clusterTemplate": template, "numMachines": size}
	if provider != "" {
		in["provider"] = provider
	}
	w.s.Must(w.admin, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": in}, &out)
	return out.CreateCluster.ID
}

func (w *world) operate(t testing.TB, id string, in map[string]any) {
	t.Helper()
	w.s.Must(w.admin, `mutation($id: ID!, $in: OperationInput!) { runOperation(clusterId: $id, input: $in) { id } }`,
		map[string]any{"id": id, "in": in}, &struct{}{})
}

func (w *world) delete(t testing.TB, id string) {
	t.Helper()
	w.s.Must(w.admin, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": id}, &struct{}{})
}

// withService lists the nodes that run svc.
func withService(c cluster, svc string) []node {
	var out []node
	for _, n := range c.Nodes {
		if slices.Contains(n.Services, svc) {
			out = append(out, n)
		}
	}
	return out
}

// answers asks url until every body in want was seen (each body's first
// word is the answering node's hostname) or the time is up, and returns
// the bodies seen by hostname.
func answers(t testing.TB, url string, want []string, timeout time.Duration) map[string]string {
	t.Helper()
	seen := map[string]string{}
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		resp, err := c.Get(url)
		if err != nil {
			last = err
			time.Sleep(200 * time.Millisecond)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := strings.TrimSpace(string(b))
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("%s: %s", resp.Status, body)
			time.Sleep(200 * time.Millisecond)
			continue
		}
		host, _, _ := strings.Cut(body, " ")
		seen[host] = body
		done := true
		for _, h := range want {
			if _, ok := seen[h]; !ok {
				done = false
			}
		}
		if done {
			return seen
		}
	}
	t.Fatalf("%s: answered by %v within %s, want all of %v (last error: %v)", url, keys(seen), timeout, want, last)
	return nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func hostnames(ns []node) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Hostname
	}
	return out
}

// noTraces checks that nothing of the cluster is left on this host: no
// nspawn process, no mount, no network namespace, no node directory, and
// its network released: no bridge, no record. It looks for this run's
// nodes only (every node the cluster's tasks named): a coopr dev beside the
// tests has a cluster 00000001 too, whose containers are not a leak.
// nodeIDs adds nodes made without tasks (a driver run by hand).
func (w *world) noTraces(t testing.TB, clusterID string, nodeIDs ...string) {
	t.Helper()
	stateDir := w.localCfg.StateDir
	var ids []string
	if err := w.s.Srv.Store().DB().SelectContext(context.Background(), &ids,
		`SELECT DISTINCT t.node_id FROM tasks t JOIN jobs j ON j.id = t.job_id WHERE j.cluster_id = $1 AND t.node_id <> ''`, clusterID); err != nil {
		t.Fatalf("nodes of cluster %s: %v", clusterID, err)
	}
	ids = append(ids, nodeIDs...)
	if len(ids) == 0 {
		t.Fatalf("cluster %s: no nodes to look for", clusterID)
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = local.NodeName(stateDir, clusterID, id)
	}
	bridge := local.ClusterBridge(stateDir, clusterID)
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
		t.Errorf("the cluster's bridge %s remains", bridge)
	}
	if _, _, err := local.ClusterNetwork(stateDir, clusterID); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cluster's network record remains (%v)", err)
	}
	mounts, _ := os.ReadFile("/proc/mounts")
	if strings.Contains(string(mounts), stateDir) {
		t.Errorf("mounts under %s remain", stateDir)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
		if out, _ := exec.Command("ip", "-o", "link", "show", "master", bridge).CombinedOutput(); strings.TrimSpace(string(out)) != "" {
			t.Errorf("links on %s remain:\n%s", bridge, out)
		}
	}
	for _, name := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", name)); err == nil {
			t.Errorf("network namespace %s remains", name)
		}
	}
	if nodes, _ := filepath.Glob(filepath.Join(stateDir, "nodes", "*")); len(nodes) > 0 {
		t.Errorf("node directories remain: %v", nodes)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		for _, name := range names {
			if strings.Contains(string(b), name) {
				t.Errorf("process %s remains: %s", filepath.Dir(p), strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
	}
}
