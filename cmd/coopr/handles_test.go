package main

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// cliWorld is a real server with the example catalog in tenant cli and a
// token of its admin.
type cliWorld struct {
	s        *servertest.Server
	token    string
	tenantID string
}

func newCLIWorld(t *testing.T) *cliWorld {
	t.Helper()
	s := servertest.Start(t)
	cat, is, err := catalog.LoadPath("../../examples/catalog")
	if err != nil || is.HasErrors() {
		t.Fatalf("example catalog: %v %v", err, is.Errors())
	}
	b, err := cat.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	var own map[string]any
	if err := json.Unmarshal(b, &own); err != nil {
		t.Fatal(err)
	}
	shared := map[string]any{}
	for _, k := range []string{"providertypes", "automatortypes"} {
		shared[k] = own[k]
		delete(own, k)
	}
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, &struct{}{})
	s.Must(s.Super, `mutation { createTenant(input: {name: "cli", workers: 4}) { id } }`, nil, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "cli", tenant: "cli"}) { secret } }`, nil, &tok)
	w := &cliWorld{s: s, token: tok.CreateAPIToken.Secret}
	s.Must(w.token, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": own}, &struct{}{})
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(w.token, `{ me { tenant { id } } }`, nil, &me)
	w.tenantID = me.Me.Tenant.ID
	return w
}

// cli runs the CLI in this process against the world's server.
func (w *cliWorld) cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLI(t, append(args, "--server", w.s.URL, "--token", w.token)...)
}

// agent plays an agent through the server's engine until stop: every task
// succeeds, CONFIRM with an address from the node's number, and the
// actions run are counted by action and service.
type fakeAgent struct {
	stop func()
	mu   sync.Mutex
	ran  []string // "START web", in finishing order
	fail string   // a task "START lb" to fail for good
}

func (a *fakeAgent) failing(task string) {
	a.mu.Lock()
	a.fail = task
	a.mu.Unlock()
}

func (w *cliWorld) startAgent(t *testing.T) *fakeAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a := &fakeAgent{}
	eng := w.s.Srv.Engine()
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			as, err := eng.Claim(ctx, engine.ClaimRequest{TenantID: w.tenantID, AgentID: "cli-test-agent", Wait: 100 * time.Millisecond})
			if err != nil || as == nil {
				continue
			}
			res := engine.Result{}
			if as.Service != nil {
				a.mu.Lock()
				if a.fail == as.TaskName+" "+as.Service.Name {
					no := false
					res = engine.Result{Status: 1, Message: "systemctl: unit failed", Retryable: &no}
				}
				a.mu.Unlock()
			}
			if as.TaskName == "CONFIRM" && as.Node != nil {
				ip := fmt.Sprintf("10.0.0.%d", as.Node.NodeNum%1000+1)
				res.IPAddresses = map[string]string{"access_v4": ip, "bind_v4": ip}
				res.Facts = map[string]any{"hostKeys": []string{testHostKey(as.Node.NodeNum)}}
			}
			if err := eng.Finish(ctx, as.TaskID, as.Attempt, as.ClaimToken, res); err == nil && as.Service != nil {
				a.mu.Lock()
				a.ran = append(a.ran, as.TaskName+" "+as.Service.Name)
				a.mu.Unlock()
			}
		}
	}()
	a.stop = func() { cancel(); <-done }
	t.Cleanup(a.stop)
	return a
}

// create makes a cluster through the API and waits until it has status.
func (w *cliWorld) create(t *testing.T, template, name string, size int) string {
	t.Helper()
	var out struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.token, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
		map[string]any{"in": map[string]any{"name": name, "clusterTemplate": template, "numMachines": size}}, &out)
	return out.CreateCluster.ID
}

// await waits until the cluster has status.
func (w *cliWorld) await(t *testing.T, id, status string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var c struct{ Cluster struct{ Status string } }
		w.s.Must(w.token, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
		if c.Cluster.Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s is %s after a minute, want %s", id, c.Cluster.Status, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *cliWorld) deleteCluster(t *testing.T, id string) {
	t.Helper()
	w.s.Must(w.token, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": id}, &struct{}{})
	w.await(t, id, "TERMINATED")
}

// stamps are the times in CLI output, which golden files cannot hold.
var stamps = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)

// A cluster is named by its id, its number without the padding, or its
// name; a name several live clusters share is refused with their ids, and
// one live cluster among TERMINATED ones of the same name is picked.
func TestClusterHandles(t *testing.T) {
	w := newCLIWorld(t)
	w.startAgent(t)
	demo := w.create(t, "web-cluster", "demo", 3)
	w.await(t, demo, "ACTIVE")
	if demo != "00000001" {
		t.Fatalf("first cluster is %s, want 00000001", demo)
	}

	var shown []string
	for _, h := range []string{"00000001", "1", "001", "demo"} {
		out, errOut, code := w.cli(t, "cluster", "show", h)
		if code != 0 {
			t.Fatalf("cluster show %s: exit %d: %s", h, code, errOut)
		}
		shown = append(shown, out)
	}
	golden(t, "cluster-show.txt", shown[0])
	for i, h := range []string{"1", "001", "demo"} {
		if shown[i+1] != shown[0] {
			t.Errorf("cluster show %s differs from cluster show 00000001:\n%s", h, shown[i+1])
		}
	}

	// Two live clusters called twin: refused, with both ids.
	twin1 := w.create(t, "single", "twin", 1)
	twin2 := w.create(t, "single", "twin", 1)
	w.await(t, twin1, "ACTIVE")
	w.await(t, twin2, "ACTIVE")
	_, errOut, code := w.cli(t, "cluster", "show", "twin")
	if code != 1 {
		t.Fatalf("cluster show twin: exit %d, want 1", code)
	}
	golden(t, "cluster-ambiguous.txt", stamps.ReplaceAllString(errOut, "YYYY-MM-DD hh:mm:ss"))
	// Every command that takes a cluster resolves it the same way.
	for _, args := range [][]string{{"cluster", "delete", "twin"}, {"cluster", "op", "twin", "restart"}, {"watch", "twin"}} {
		_, errOut, code := w.cli(t, args...)
		if code != 1 || !strings.Contains(errOut, `cluster name "twin" is ambiguous`) {
			t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}

	// Once one is deleted, the name means the other, and the CLI says so.
	w.deleteCluster(t, twin1)
	out, errOut, code := w.cli(t, "cluster", "show", "twin")
	if code != 0 || !strings.HasPrefix(out, "cluster "+twin2+` "twin"`) ||
		errOut != `"twin" is cluster `+twin2+", the only one of that name not TERMINATED\n" {
		t.Errorf("cluster show twin after deleting %s: exit %d:\n%s%s", twin1, code, out, errOut)
	}
	out, errOut, code = w.cli(t, "cluster", "delete", "twin")
	if code != 0 || !strings.Contains(out, "deleting cluster "+twin2) {
		t.Errorf("cluster delete twin: exit %d:\n%s%s", code, out, errOut)
	}

	for _, tc := range []struct{ handle, want string }{
		{"7", `NOT_FOUND: cluster 7: not found: no cluster you can see has id 00000007 or name "7" (coopr cluster list shows the clusters you can see)`},
		{"nosuch", `NOT_FOUND: cluster nosuch: not found (coopr cluster list shows the clusters you can see)`},
	} {
		_, errOut, code := w.cli(t, "cluster", "show", tc.handle)
		if code != 1 || strings.TrimSpace(errOut) != "coopr: "+tc.want {
			t.Errorf("cluster show %s: exit %d: %q, want %q", tc.handle, code, errOut, tc.want)
		}
	}
}

// A cluster's services carry the state their last task left them in:
// stopped by an operation, cluster show and the API say so; started
// again, running; a START that fails, failed, with why.
func TestServiceStates(t *testing.T) {
	w := newCLIWorld(t)
	agent := w.startAgent(t)
	id := w.create(t, "web-cluster", "demo", 3)
	w.await(t, id, "ACTIVE")

	out, errOut, code := w.cli(t, "cluster", "op", "demo", "stop", "--services", "web")
	if code != 0 {
		t.Fatalf("stop web: exit %d:\n%s%s", code, out, errOut)
	}
	out, _, _ = w.cli(t, "cluster", "show", "demo")
	golden(t, "cluster-stopped.txt", out)
	type nodeService struct {
		Service, State, Action, Message string
		At                              *time.Time
		JobID                           *string
	}
	var api struct {
		Cluster struct {
			LatestJob      struct{ ID string }
			ServiceSummary []struct{ Service, Summary string }
			Nodes          []struct {
				Nodenum       int
				ServiceStates []nodeService
			}
		}
	}
	query := `query($id: ID!) { cluster(id: $id) { latestJob { id } serviceSummary { service summary }
		nodes { nodenum serviceStates { service state action message at jobId } } } }`
	w.s.Must(w.token, query, map[string]any{"id": id}, &api)
	stopJob := api.Cluster.LatestJob.ID
	for _, n := range api.Cluster.Nodes {
		for _, st := range n.ServiceStates {
			if st.Service != "web" {
				continue
			}
			if st.State != "STOPPED" || st.Action != "STOP" || st.At == nil || st.JobID == nil || *st.JobID != stopJob {
				t.Errorf("node %d web: %+v, want STOPPED by STOP of job %s", n.Nodenum, st, stopJob)
			}
		}
	}
	var summaries []string
	for _, s := range api.Cluster.ServiceSummary {
		summaries = append(summaries, s.Summary)
	}
	if got := strings.Join(summaries, "; "); !strings.Contains(got, "web: stopped on 2/2") {
		t.Errorf("summary %q", got)
	}

	if out, errOut, code := w.cli(t, "cluster", "op", "demo", "start"); code != 0 {
		t.Fatalf("start: exit %d:\n%s%s", code, out, errOut)
	}
	out, _, _ = w.cli(t, "cluster", "show", "demo")
	if want := goldenText(t, "cluster-show.txt"); out != want {
		t.Errorf("after start:\n%s\nwant:\n%s", out, want)
	}

	agent.failing("START lb")
	out, errOut, code = w.cli(t, "cluster", "op", "demo", "restart", "--services", "lb")
	if code != 1 {
		t.Fatalf("restart with START lb failing: exit %d, want 1:\n%s%s", code, out, errOut)
	}
	out, _, _ = w.cli(t, "cluster", "show", "demo")
	golden(t, "cluster-failed.txt", out)
	w.s.Must(w.token, query, map[string]any{"id": id}, &api)
	for _, n := range api.Cluster.Nodes {
		for _, st := range n.ServiceStates {
			if st.Service == "lb" && (st.State != "FAILED" || st.Action != "START" || !strings.Contains(st.Message, "systemctl: unit failed")) {
				t.Errorf("node %d lb: %+v, want FAILED by START with its message", n.Nodenum, st)
			}
		}
	}

	// Deleted, nothing runs and nothing can be logged in to: the nodes
	// once read OK with their services running and an ssh command.
	agent.failing("")
	w.deleteCluster(t, id)
	out, _, _ = w.cli(t, "cluster", "show", id)
	golden(t, "cluster-deleted.txt", out)
	var gone struct {
		Cluster struct {
			ServiceSummary []struct{ Summary string }
			Nodes          []struct {
				Nodenum       int
				State         string
				SSHCommand    string
				ServiceStates []nodeService
			}
		}
	}
	w.s.Must(w.token, `query($id: ID!) { cluster(id: $id) { serviceSummary { summary }
		nodes { nodenum state sshCommand serviceStates { service state action message at jobId } } } }`,
		map[string]any{"id": id}, &gone)
	if len(gone.Cluster.ServiceSummary) != 0 || len(gone.Cluster.Nodes) == 0 {
		t.Errorf("deleted cluster: summary %+v, %d nodes", gone.Cluster.ServiceSummary, len(gone.Cluster.Nodes))
	}
	for _, n := range gone.Cluster.Nodes {
		if n.State != "DELETED" || n.SSHCommand != "" || len(n.ServiceStates) != 0 {
			t.Errorf("deleted cluster's node %d: %+v, want DELETED without ssh or services", n.Nodenum, n)
		}
	}
}

func goldenText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testHostKey is a fixed ed25519 host key for node nodenum, in
// authorized_keys format.
func testHostKey(nodenum int) string {
	seed := make([]byte, ed25519.SeedSize)
	binary.BigEndian.PutUint64(seed, uint64(nodenum))
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed).Public())
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

// known-hosts prints the pinned keys for the names and addresses ssh may
// be given; a node not reached yet is only noted.
func TestKnownHosts(t *testing.T) {
	w := newCLIWorld(t)
	w.startAgent(t)
	w.await(t, w.create(t, "web-cluster", "demo", 3), "ACTIVE")
	out, errOut, code := w.cli(t, "known-hosts", "demo")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	golden(t, "known-hosts.txt", out)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if _, _, _, _, _, err := ssh.ParseKnownHosts([]byte(l)); err != nil {
			t.Errorf("not a known_hosts line: %q: %v", l, err)
		}
	}
}

// A cluster being deleted: a second delete is the first one (it used to
// be refused as a conflict that advised aborting the delete), and an
// operation's refusal names the job it waits for (it used to say only
// that the cluster is PENDING).
func TestBusyCluster(t *testing.T) {
	w := newCLIWorld(t)
	agent := w.startAgent(t)
	id := w.create(t, "web-cluster", "busy", 3)
	w.await(t, id, "ACTIVE")
	agent.stop() // no agent: the delete stays running
	del := `mutation($id: ID!) { deleteCluster(id: $id) { id action } }`
	var first, second struct{ DeleteCluster struct{ ID, Action string } }
	w.s.Must(w.token, del, map[string]any{"id": id}, &first)
	w.s.Must(w.token, del, map[string]any{"id": id}, &second)
	if second.DeleteCluster != first.DeleteCluster || first.DeleteCluster.Action != "CLUSTER_DELETE" {
		t.Errorf("second delete gave %+v, want the first's %+v", second.DeleteCluster, first.DeleteCluster)
	}
	out, errOut, code := w.cli(t, "cluster", "op", id, "restart")
	if want := "is busy with job " + first.DeleteCluster.ID + " (CLUSTER_DELETE)"; code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("restart while deleting: exit %d, want 1 and %q:\n%s%s", code, want, out, errOut)
	}
}
