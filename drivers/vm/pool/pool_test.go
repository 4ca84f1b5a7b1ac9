package pool

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// fixture is a pool of real sshd hosts sharing the pool's login key, and a
// cluster whose own key none of them authorizes: whatever logs in uses
// the key the driver handed back.
type fixture struct {
	key     *sshdtest.Key
	cluster *sshdtest.Key
	hosts   []*sshdtest.Host
	id      string // cluster id
}

func newFixture(t testing.TB, n int, o sshdtest.Options) *fixture {
	t.Helper()
	f := &fixture{key: sshdtest.NewKey(t), cluster: sshdtest.NewKey(t), id: "c" + randHex(4)}
	o.Key = f.key
	for range n {
		f.hosts = append(f.hosts, sshdtest.Start(t, o))
	}
	return f
}

// hostsField lists the hosts as an admin might: mixed separators.
func (f *fixture) hostsField() string {
	var b strings.Builder
	for i, h := range f.hosts {
		if i > 0 {
			b.WriteString([]string{", ", "\n", " ,\t"}[i%3])
		}
		b.WriteString(h.Addr())
	}
	return b.String()
}

// task is a payload of action for node nodeID of the fixture's cluster.
func (f *fixture) task(action, nodeID string) *drivers.Task {
	t := &drivers.Task{
		TaskID:    "t-" + randHex(4),
		ClusterID: f.id,
		TaskName:  action,
		Node:      &drivers.Node{ID: nodeID, Hostname: nodeID + ".coopr.test", Facts: map[string]any{}},
		Secrets: map[string]map[string]any{"ssh": {
			"privateKey": string(f.cluster.PEM), "publicKey": f.cluster.AuthorizedKey,
		}},
	}
	t.Provider.Name, t.Provider.ProviderType = "metal", "pool"
	t.Provider.Provisioner = map[string]any{"hosts": f.hostsField(), "ssh_key": string(f.key.PEM)}
	return t
}

// withFacts is task carrying the facts and addresses of an earlier result,
// as the server merges them.
func withFacts(task *drivers.Task, r drivers.Result) *drivers.Task {
	task.Node.Facts["vm"] = maps.Clone(r.Facts)
	if r.Status == 0 && r.IPAddresses != nil {
		task.Node.IPAddresses = maps.Clone(r.IPAddresses)
	}
	return task
}

// host finds the fixture's host with provider id id.
func (f *fixture) host(t testing.TB, id string) *sshdtest.Host {
	t.Helper()
	for _, h := range f.hosts {
		if h.Addr() == id {
			return h
		}
	}
	t.Fatalf("providerId %q is none of the pool's hosts", id)
	return nil
}

// leaseOf reads h's lease from this machine, not over SSH: "" when none.
func leaseOf(t testing.TB, h *sshdtest.Host) string {
	t.Helper()
	o, err := os.Readlink(h.Path(LeasePath))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// newDriver is one agent: its own SSH pool and a log that must never show
// the key's private lines.
func newDriver(t testing.TB, secret []byte) *driver {
	t.Helper()
	p := remote.NewPool(remote.Options{})
	var buf sshdtest.Buffer
	t.Cleanup(func() {
		_ = p.Close()
		logged := buf.String()
		for _, l := range secretLines(secret) {
			if strings.Contains(logged, l) {
				t.Errorf("the private key appears in the log")
			}
		}
		if testing.Verbose() {
			t.Logf("driver log:\n%s", logged)
		}
	})
	d := New(p, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).(*driver)
	d.confirmWait = 3 * time.Second
	d.minWait, d.maxWait = 50*time.Millisecond, 200*time.Millisecond
	return d
}

func secretLines(pemKey []byte) []string {
	var out []string
	for _, l := range strings.Split(string(pemKey), "\n") {
		if len(l) >= 16 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

func run(t *testing.T, d drivers.Driver, task *drivers.Task) (drivers.Result, *drivertest.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &drivertest.Recorder{}
	r := d.Run(ctx, task, out)
	t.Logf("%s %s: status %d: %s", task.TaskName, task.Node.ID, r.Status, r.Message)
	return r, out
}

func retryable(r drivers.Result) bool { return r.Retryable == nil || *r.Retryable }

func mustSucceed(t *testing.T, r drivers.Result) {
	t.Helper()
	if r.Status != 0 {
		t.Fatalf("status %d: %s", r.Status, r.Message)
	}
}

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.Role != drivers.RoleVM || d.Name != "pool" {
		t.Fatalf("descriptor %s/%s", d.Role, d.Name)
	}
	want := map[string]drivers.Param{
		"hosts":         {Name: "hosts", Type: "text", Required: true},
		"ssh_user":      {Name: "ssh_user", Type: "text"},
		"ssh_key":       {Name: "ssh_key", Type: "password", Required: true, Sensitive: true},
		"wipe_script":   {Name: "wipe_script", Type: "text"},
		"reboot_script": {Name: "reboot_script", Type: "text"},
	}
	if len(d.Params) != len(want) {
		t.Fatalf("params %+v", d.Params)
	}
	for _, p := range d.Params {
		if want[p.Name] != p {
			t.Errorf("param %+v, want %+v", p, want[p.Name])
		}
	}
}

func TestParseHosts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "10.0.0.1", want: []string{"10.0.0.1:22"}},
		{in: " a.example.com:2222,\tb-2:22 \n10.0.0.3 ", want: []string{"a.example.com:2222", "b-2:22", "10.0.0.3:22"}},
		{in: "h1, h1:22 ,h1:23", want: []string{"h1:22", "h1:23"}},
		{in: " , ", err: "field hosts is empty"},
		{in: "h1:ssh", err: `port "ssh" is not a number`},
		{in: "h1:0", err: "from 1 to 65535"},
		{in: "h1:65536", err: "from 1 to 65535"},
		{in: "[fd00::1]:22", err: "IPv6"},
		{in: "fd00::1", err: "IPv6"},
		{in: "bad_name!", err: "neither a host name nor an IPv4 address"},
		{in: "-lead.example", err: "neither a host name"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			hs, err := parseHosts(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "host:port") {
					t.Fatalf("err %v, want %q and how to list hosts", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hs {
				got = append(got, h.id())
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// Each host is one group keyed by its id, the providerId CREATE reports.
func TestCapacity(t *testing.T) {
	c, err := Capacity(map[string]any{"hosts": "h1 h2:2222, h1:22 10.0.0.3", "ssh_key": "__redacted__"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, g := range c.Groups {
		keys = append(keys, g.Key)
		if g.Size != 1 {
			t.Errorf("group %s holds %d nodes, want 1", g.Key, g.Size)
		}
	}
	if c.Name != "3 hosts" || c.Nodes() != 3 || strings.Join(keys, " ") != "h1:22 h2:2222 10.0.0.3:22" {
		t.Errorf("capacity %+v", c)
	}
	for _, f := range []map[string]any{{}, {"hosts": ""}, {"hosts": 3}} {
		if _, err := Capacity(f); err == nil || !strings.Contains(err.Error(), "hosts") {
			t.Errorf("%v: err %v, want one naming hosts", f, err)
		}
	}
}

func TestSpreadStartsNodesApart(t *testing.T) {
	hosts, _ := parseHosts("h0 h1 h2 h3 h4 h5 h6 h7")
	starts := map[string]bool{}
	for i := range 16 {
		o := spread(hosts, "c1", fmt.Sprintf("node-%d", i))
		if len(o) != len(hosts) {
			t.Fatalf("spread lost hosts: %v", o)
		}
		seen := map[string]bool{}
		for _, h := range o {
			seen[h.id()] = true
		}
		if len(seen) != len(hosts) {
			t.Fatalf("spread repeats hosts: %v", o)
		}
		starts[o[0].name] = true
		if again := spread(hosts, "c1", fmt.Sprintf("node-%d", i)); again[0] != o[0] {
			t.Fatal("spread is not a function of the ids")
		}
	}
	if len(starts) < 4 {
		t.Fatalf("16 nodes start on only %d of 8 hosts", len(starts))
	}
}

// Refused fields fail without touching a host, name the field and the
// fix, and never quote the key.
func TestRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("pass"))
	if err != nil {
		t.Fatal(err)
	}
	locked := string(pem.EncodeToMemory(block))
	garbage := "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbC10aGF0LW11c3Qtbm90LWxlYWs=\n-----END OPENSSH PRIVATE KEY-----\n"
	for _, tc := range []struct {
		name   string
		action string
		set    map[string]any
		node   string
		status int // 0: any failure
		want   []string
	}{
		{"no hosts", "CREATE", map[string]any{"hosts": nil}, "", 200, []string{"provider metal", "field hosts is empty", "host:port"}},
		{"hosts not text", "CREATE", map[string]any{"hosts": 3.0}, "", 200, []string{"field hosts", "want text"}},
		{"bad port", "CREATE", map[string]any{"hosts": "127.0.0.1:x"}, "", 200, []string{"field hosts", `port "x"`}},
		{"no key", "CREATE", map[string]any{"ssh_key": "  "}, "", 200, []string{"field ssh_key is missing", "OpenSSH private key"}},
		{"garbage key", "CREATE", map[string]any{"ssh_key": garbage}, "", 200, []string{"field ssh_key is not a usable private key"}},
		{"locked key", "CREATE", map[string]any{"ssh_key": locked}, "", 200, []string{"field ssh_key is protected by a passphrase", "unencrypted"}},
		{"bad user", "CREATE", map[string]any{"ssh_user": "root; rm -rf /"}, "", 200, []string{"field ssh_user", "not a user name"}},
		{"node id with a space", "CREATE", nil, "a b", 200, []string{`node id "a b" cannot name a lease`}},
		{"confirm with no key", "CONFIRM", map[string]any{"ssh_key": nil}, "", 1, []string{"field ssh_key is missing"}},
		{"confirm before create", "CONFIRM", nil, "", 1, []string{"no vm.providerId"}},
		{"not a vm action", "BOOTSTRAP", nil, "", 1, []string{"do not run BOOTSTRAP"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := tc.node
			if node == "" {
				node = "n1"
			}
			task := f.task(tc.action, node)
			maps.Copy(task.Provider.Provisioner, tc.set)
			r, out := run(t, d, task)
			if r.Status != tc.status {
				t.Errorf("status %d, want %d", r.Status, tc.status)
			}
			if retryable(r) {
				t.Error("retryable")
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
			if strings.Contains(r.Message, "c2VjcmV0") || out.Contains("stdout", "c2VjcmV0") || out.Contains("status", "c2VjcmV0") {
				t.Error("the key leaks")
			}
		})
	}
	if got := leaseOf(t, f.hosts[0]); got != "" {
		t.Fatalf("a refused task leased the host: %q", got)
	}
	// A DELETE of a node that never got a host passes whatever the fields.
	task := f.task("DELETE", "n1")
	task.Provider.Provisioner["hosts"] = ""
	if r, _ := run(t, d, task); r.Status != 0 {
		t.Fatalf("DELETE without providerId and with bad fields: %d %s", r.Status, r.Message)
	}
}

// TestConformance runs the suite every vm driver passes, on three hosts.
func TestConformance(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	drivertest.VM(t, d, func(action string) *drivers.Task { return f.task(action, "conformance-1") })
	noLeases(t, f)
}

// Two agents creating two nodes at once lease two different hosts, and
// each host's lease names its node.
func TestConcurrentCreatesTakeDifferentHosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, sshdtest.Options{})
	nodes := []string{"web-1", "web-2"}
	results := make([]drivers.Result, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		d := newDriver(t, f.key.PEM)
		wg.Go(func() { results[i], _ = run(t, d, f.task("CREATE", n)) })
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, r := range results {
		mustSucceed(t, r)
		id := r.Facts["providerId"].(string)
		ids[id] = true
		if got, want := leaseOf(t, f.host(t, id)), f.id+" "+nodes[i]; got != want {
			t.Errorf("host %s lease %q, want %q", id, got, want)
		}
		h := f.host(t, id)
		if r.Facts["sshHost"] != h.IP || r.Facts["sshPort"] != h.Port || r.Facts["sshUser"] != "root" {
			t.Errorf("facts %v", r.Facts)
		}
		if r.IPAddresses["access_v4"] != h.IP || r.IPAddresses["bind_v4"] != h.IP {
			t.Errorf("addresses %v", r.IPAddresses)
		}
		if keys, _ := r.Facts["hostKeys"].([]string); len(keys) != 1 || keys[0] != h.HostKeyLine() {
			t.Errorf("hostKeys %v, want the host's %s", r.Facts["hostKeys"], h.HostKeyLine())
		}
		if r.Secrets["privateKey"] != string(f.key.PEM) {
			t.Error("the pool key is not handed back as secret privateKey")
		}
	}
	if len(ids) != 2 {
		t.Fatalf("both nodes got %v", ids)
	}
}

// createAll runs n nodes' CREATEs on d at once and checks that each
// succeeded on a host of its own.
func createAll(t *testing.T, f *fixture, d *driver, n int) {
	t.Helper()
	results := make([]drivers.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], _ = run(t, d, f.task("CREATE", fmt.Sprintf("node-%d", i))) })
	}
	wg.Wait()
	ids := map[string]bool{}
	for _, r := range results {
		mustSucceed(t, r)
		ids[r.Facts["providerId"].(string)] = true
	}
	if len(ids) != n {
		t.Fatalf("%d nodes got %d distinct hosts", n, len(ids))
	}
}

// The CREATEs of a cluster's nodes on one agent share their scans of the
// pool: six nodes on six hosts cost a few scans of six probes, not a scan
// each (thirty-six).
func TestConcurrentCreatesShareScans(t *testing.T) {
	t.Parallel()
	const n = 6
	f := newFixture(t, n, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	createAll(t, f, d, n)
	if p := d.probes.Load(); p > 3*n {
		t.Errorf("%d probes for %d CREATEs on %d hosts, want at most %d (three shared scans)", p, n, n, 3*n)
	}
}

// CREATEs that arrive within the gathering time of a scan share it: a
// cluster's CREATEs, claimed together, cost one scan of the pool, where
// most of them used to wait for the first scan to end and then for a
// second. (The gathering time is stretched here so that a loaded test
// machine's scheduling cannot split the burst.)
func TestConcurrentCreatesShareOneScan(t *testing.T) {
	t.Parallel()
	const n = 8
	f := newFixture(t, n, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	d.scanGather = time.Second
	createAll(t, f, d, n)
	if p := d.probes.Load(); p != n {
		t.Errorf("%d probes for %d CREATEs arriving together on %d hosts, want %d (one scan)", p, n, n, n)
	}
}

// A CREATE that arrives after a scan's gathering time but before any host
// has answered the scan's handshakes joins that scan: no lease command has
// run yet, so its answers are as fresh for the late CREATE as for the
// others. It used to wait for the scan to end and then for a second scan of
// every host (at 10 nodes in the build benchmark, a CREATE claimed 56 ms
// after the first did so and took 280 ms where the others took 190).
func TestCreateBeforeAnyHandshakeJoinsTheScan(t *testing.T) {
	t.Parallel()
	const n = 4
	f := newFixture(t, n, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	d.scanGather = time.Millisecond
	// Frozen hosts take the TCP connection and hold the handshake.
	thaw := freeze(t, f.hosts...)
	results := make([]drivers.Result, 2)
	var wg sync.WaitGroup
	wg.Go(func() { results[0], _ = run(t, d, f.task("CREATE", "node-0")) })
	// Well past the gathering: the second CREATE comes late.
	time.Sleep(300 * time.Millisecond)
	wg.Go(func() { results[1], _ = run(t, d, f.task("CREATE", "node-1")) })
	time.Sleep(300 * time.Millisecond)
	thaw()
	wg.Wait()
	for _, r := range results {
		mustSucceed(t, r)
	}
	if results[0].Facts["providerId"] == results[1].Facts["providerId"] {
		t.Fatalf("both nodes got host %v", results[0].Facts["providerId"])
	}
	if p := d.probes.Load(); p != n {
		t.Errorf("%d probes for 2 CREATEs on %d hosts, the second arriving before any handshake ended, want %d (one scan)", p, n, n)
	}
	if a := d.acquires.Load() + d.claims.Load(); a != 2 {
		t.Errorf("%d lease acquisitions (%d by the scan) for 2 CREATEs, want 2", a, d.claims.Load())
	}
}

// The CREATEs of a cluster's nodes on one agent, sharing a scan that found
// every host free, each try a different host first: n nodes on n hosts
// cost n lease acquisitions (the scans' claims among them), not one more for every two nodes that raced
// for the same host (which a 16-node cluster's spread order makes likely,
// each a round trip to the host).
func TestConcurrentCreatesTryDifferentHosts(t *testing.T) {
	t.Parallel()
	const n = 16
	f := newFixture(t, n, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	createAll(t, f, d, n)
	if a := d.acquires.Load() + d.claims.Load(); a != n {
		t.Errorf("%d lease acquisitions (%d by the scans) for %d CREATEs on %d free hosts, want %d", a, d.claims.Load(), n, n, n)
	}
}

// More nodes than hosts, created at once by several agents: exactly one
// node per host succeeds, the others are told nothing was created.
func TestMoreNodesThanHosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, sshdtest.Options{})
	agents := []*driver{newDriver(t, f.key.PEM), newDriver(t, f.key.PEM), newDriver(t, f.key.PEM)}
	const n = 10
	results := make([]drivers.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], _ = run(t, agents[i%len(agents)], f.task("CREATE", fmt.Sprintf("node-%d", i))) })
	}
	wg.Wait()
	byHost := map[string]string{}
	ok := 0
	for i, r := range results {
		node := fmt.Sprintf("node-%d", i)
		switch {
		case r.Status == 0:
			ok++
			id := r.Facts["providerId"].(string)
			if other, dup := byHost[id]; dup {
				t.Errorf("host %s given to %s and %s", id, other, node)
			}
			byHost[id] = node
			if got := leaseOf(t, f.host(t, id)); got != f.id+" "+node {
				t.Errorf("host %s lease %q, want %s's", id, got, node)
			}
		case r.Status >= 200 && r.Status <= 299:
			for _, w := range []string{"provider metal has no free host", "3 of 3 hosts are leased"} {
				if !strings.Contains(r.Message, w) {
					t.Errorf("%s: message %q lacks %q", node, r.Message, w)
				}
			}
		default:
			t.Errorf("%s: status %d: %s", node, r.Status, r.Message)
		}
	}
	if ok != len(f.hosts) {
		t.Fatalf("%d CREATEs succeeded, want %d", ok, len(f.hosts))
	}
}

// A retried CREATE adopts the node's host, from any agent, with or without
// the first result's facts; a DELETE without facts still finds the lease.
func TestAdoptOnRetry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, sshdtest.Options{})
	first, _ := run(t, newDriver(t, f.key.PEM), f.task("CREATE", "db-1"))
	mustSucceed(t, first)
	id := first.Facts["providerId"].(string)
	for _, tc := range []struct {
		name string
		task *drivers.Task
	}{
		{"with facts", withFacts(f.task("CREATE", "db-1"), first)},
		{"without facts", f.task("CREATE", "db-1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := run(t, newDriver(t, f.key.PEM), tc.task)
			mustSucceed(t, r)
			if r.Facts["providerId"] != id || !strings.HasPrefix(r.Message, "adopted") {
				t.Fatalf("retry: %v %q, want adopted %s", r.Facts["providerId"], r.Message, id)
			}
		})
	}
	leased := 0
	for _, h := range f.hosts {
		if leaseOf(t, h) != "" {
			leased++
		}
	}
	if leased != 1 {
		t.Fatalf("%d hosts leased after retries, want 1", leased)
	}
	// The CREATE result was lost: DELETE has no providerId.
	r, _ := run(t, newDriver(t, f.key.PEM), f.task("DELETE", "db-1"))
	mustSucceed(t, r)
	if !strings.Contains(r.Message, "released host "+id) {
		t.Fatalf("DELETE without facts: %q", r.Message)
	}
	if got := leaseOf(t, f.host(t, id)); got != "" {
		t.Fatalf("lease %q left", got)
	}
}

// DELETE runs the wipe script before releasing; a failed wipe keeps the
// host from other nodes; a released host goes to the next node.
func TestDeleteWipesAndFrees(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	withWipe := func(task *drivers.Task, script string) *drivers.Task {
		task.Provider.Provisioner["wipe_script"] = script
		return task
	}
	a, _ := run(t, d, f.task("CREATE", "a"))
	mustSucceed(t, a)
	if err := os.MkdirAll(h.Path("/var/lib/coopr/app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.Path("/var/lib/coopr/app/data"), []byte("a's data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r, _ := run(t, d, f.task("CREATE", "b")); r.Status < 200 || r.Status > 299 {
		t.Fatalf("b got the leased host: %d %s", r.Status, r.Message)
	}

	r, _ := run(t, d, withWipe(withFacts(f.task("DELETE", "a"), a), "echo wiping >&2; exit 3"))
	if r.Status == 0 || !retryable(r) || !strings.Contains(r.Message, "wipe_script") || !strings.Contains(r.Message, "wiping") {
		t.Fatalf("failed wipe: status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}
	if got := leaseOf(t, h); got != f.id+" a" {
		t.Fatalf("after a failed wipe the lease is %q", got)
	}
	if r, _ := run(t, d, f.task("CREATE", "b")); r.Status < 200 || r.Status > 299 {
		t.Fatalf("b got a host whose wipe failed: %d %s", r.Status, r.Message)
	}

	wipe := `rm -rf /var/lib/coopr/app; echo "wiped for $COOPR_NODE_ID of $COOPR_CLUSTER_ID as $(id -un)"`
	r, out := run(t, d, withWipe(withFacts(f.task("DELETE", "a"), a), wipe))
	mustSucceed(t, r)
	if _, err := os.Stat(h.Path("/var/lib/coopr/app/data")); !os.IsNotExist(err) {
		t.Fatalf("the wipe script did not run: %v", err)
	}
	if want := "wiped for a of " + f.id + " as root"; !out.Contains("stdout", want) {
		t.Fatalf("stdout %q lacks %q", out.Lines("stdout"), want)
	}
	if got := leaseOf(t, h); got != "" {
		t.Fatalf("lease %q after DELETE", got)
	}
	// Again: nothing to do, and the wipe does not run on a host that is
	// no longer the node's.
	r, out = run(t, d, withWipe(withFacts(f.task("DELETE", "a"), a), "echo must-not-run"))
	mustSucceed(t, r)
	if out.Contains("stdout", "must-not-run") {
		t.Fatal("DELETE again wiped a released host")
	}

	b, _ := run(t, d, f.task("CREATE", "b"))
	mustSucceed(t, b)
	if b.Facts["providerId"] != h.Addr() || leaseOf(t, h) != f.id+" b" {
		t.Fatalf("b: %v, lease %q", b.Facts, leaseOf(t, h))
	}
	// A's late DELETE must not wipe or release b's host.
	r, out = run(t, d, withWipe(withFacts(f.task("DELETE", "a"), a), "echo must-not-run"))
	mustSucceed(t, r)
	if out.Contains("stdout", "must-not-run") || leaseOf(t, h) != f.id+" b" {
		t.Fatalf("a's DELETE touched b's host: %q", r.Message)
	}
}

// A host showing another key than the pinned one is refused, not
// retried, by CONFIRM, DELETE and a CREATE that would adopt it.
func TestChangedHostKeyIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	created, _ := run(t, d, f.task("CREATE", "n1"))
	mustSucceed(t, created)
	confirmed, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	mustSucceed(t, confirmed)
	pinned := ssh.FingerprintSHA256(h.HostKey())
	h.RotateHostKey(t)
	presented := ssh.FingerprintSHA256(h.HostKey())
	for _, action := range []string{"CONFIRM", "DELETE", "CREATE"} {
		t.Run(action, func(t *testing.T) {
			r, _ := run(t, d, withFacts(f.task(action, "n1"), confirmed))
			if r.Status == 0 || retryable(r) {
				t.Fatalf("status %d retryable %v: %s", r.Status, retryable(r), r.Message)
			}
			if !strings.Contains(r.Message, pinned) || !strings.Contains(r.Message, presented) {
				t.Fatalf("message %q does not name both %s and %s", r.Message, pinned, presented)
			}
		})
	}
	if got := leaseOf(t, h); got != f.id+" n1" {
		t.Fatalf("lease %q", got)
	}
}

// CONFIRM takes back a lease that vanished and fails, retryably, on a host
// another node holds: the server's rollback then finds another host. The
// CONFIRMs run on another agent than the CREATE (d2): one on the CREATE's
// agent right after it trusts the CREATE's lease
// (TestConfirmAfterCreateRunsNothing).
func TestConfirmChecksTheLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	created, _ := run(t, newDriver(t, f.key.PEM), f.task("CREATE", "n1"))
	mustSucceed(t, created)
	d := newDriver(t, f.key.PEM)
	lease := h.Path(LeasePath)
	if err := os.Remove(lease); err != nil {
		t.Fatal(err)
	}
	r, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	mustSucceed(t, r)
	if got := leaseOf(t, h); got != f.id+" n1" {
		t.Fatalf("CONFIRM did not take the lease back: %q", got)
	}
	if err := os.Remove(lease); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other-cluster n9", lease); err != nil {
		t.Fatal(err)
	}
	r, _ = run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	if r.Status == 0 || !retryable(r) || !strings.Contains(r.Message, "leased to other-cluster n9") {
		t.Fatalf("CONFIRM on a host leased to another node: status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}
}

// A non-root ssh_user leases through sudo and is what later tasks log in
// as.
func TestNonRootUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{NonRoot: true})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	task := f.task("CREATE", "n1")
	task.Provider.Provisioner["ssh_user"] = h.User
	r, _ := run(t, d, task)
	mustSucceed(t, r)
	if r.Facts["sshUser"] != h.User {
		t.Fatalf("sshUser %v, want %s", r.Facts["sshUser"], h.User)
	}
	if got := strings.TrimSpace(h.Exec(t, "stat -c %U "+LeasePath)); got != "root" {
		t.Fatalf("lease owned by %q: not taken through sudo", got)
	}
	// Later drivers reach the node as the vm facts and secret say.
	next := &drivers.Task{Secrets: map[string]map[string]any{"vm": r.Secrets}}
	n := drivers.Node{ID: "n1", IPAddresses: r.IPAddresses, Facts: map[string]any{"vm": r.Facts}}
	tg, err := drivers.TargetOf(next, &n)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.pool.Output(context.Background(), tg, "id -un", remote.RunOptions{})
	if err != nil || strings.TrimSpace(string(out)) != h.User {
		t.Fatalf("as the next task: %q %v", out, err)
	}
	// BOOTSTRAP installed the owner's key; the host's own lines are the
	// admin's.
	keys := h.Dir + "/home/" + h.User + "/.ssh/authorized_keys"
	h.Exec(t, `mkdir -p `+h.Dir+`/home/`+h.User+`/.ssh && printf '%s\n%s\n' 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDOv5RJk+H7txT4Dy+60F8/OVqd8/V/JUBUSFg+WHEFR admin' `+
		`'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHvR22Iq5MOrL6vNdxmDzlUN3DjnX8d0IOp3yCy/Y2tS `+sshnode.OwnerKeyMarker+`' > `+keys+` && chown -R `+h.User+`: `+h.Dir+`/home/`+h.User+`/.ssh`)
	del := withFacts(f.task("DELETE", "n1"), r)
	del.Provider.Provisioner["ssh_user"] = h.User
	mustSucceed(t, first(run(t, d, del)))
	if got := leaseOf(t, h); got != "" {
		t.Fatalf("lease %q after DELETE", got)
	}
	// The owner's key left with the node; the admin's stays.
	if got := h.Exec(t, "cat "+keys); got != "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDOv5RJk+H7txT4Dy+60F8/OVqd8/V/JUBUSFg+WHEFR admin\n" {
		t.Errorf("authorized_keys after DELETE:\n%s", got)
	}
}

// A host that does not answer is passed over by CREATE and counted when
// nothing is free; DELETE of a node on it fails retryably until the host
// leaves the provider's list.
func TestUnreachableHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	dead := closedPort(t)
	d := newDriver(t, f.key.PEM)
	withDead := func(task *drivers.Task) *drivers.Task {
		task.Provider.Provisioner["hosts"] = dead + " " + f.hostsField()
		return task
	}
	a, _ := run(t, d, withDead(f.task("CREATE", "a")))
	mustSucceed(t, a)
	if a.Facts["providerId"] != f.hosts[0].Addr() {
		t.Fatalf("a got %v", a.Facts["providerId"])
	}
	r, _ := run(t, d, withDead(f.task("CREATE", "b")))
	if r.Status < 200 || r.Status > 299 || !strings.Contains(r.Message, "1 of 2 hosts are leased") || !strings.Contains(r.Message, "1 did not answer") {
		t.Fatalf("b: status %d: %s", r.Status, r.Message)
	}

	gone := drivers.Result{Facts: map[string]any{"providerId": dead}}
	r, _ = run(t, d, withDead(withFacts(f.task("DELETE", "z"), gone)))
	if r.Status == 0 || !retryable(r) || !r.Unreachable || !strings.Contains(r.Message, "remove it from provider metal's hosts") {
		t.Fatalf("DELETE on a silent host: status %d retryable %v unreachable %v: %s", r.Status, retryable(r), r.Unreachable, r.Message)
	}
	r, _ = run(t, d, withFacts(f.task("DELETE", "z"), gone))
	if r.Status != 0 || !strings.Contains(r.Message, "no longer listed") {
		t.Fatalf("DELETE on a host no longer listed: status %d: %s", r.Status, r.Message)
	}
}

func first(r drivers.Result, _ *drivertest.Recorder) drivers.Result { return r }

// createdNode starts one host and a driver, and creates node n1 there.
func createdNode(t *testing.T) (*fixture, *sshdtest.Host, *driver, drivers.Result) {
	t.Helper()
	f := newFixture(t, 1, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	created, _ := run(t, d, f.task("CREATE", "n1"))
	mustSucceed(t, created)
	return f, f.hosts[0], d, created
}

// scansSettled waits until d has no scan running, and a second more for
// what the last gives back: by then it has.
func scansSettled(t *testing.T, d *driver) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		d.scanMu.Lock()
		idle := len(d.scans) == 0
		d.scanMu.Unlock()
		if idle {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
}

// freeze stops hosts (their sshd takes connections and answers nothing)
// until the returned thaw, which the test's end calls if it has not.
func freeze(t *testing.T, hosts ...*sshdtest.Host) (thaw func()) {
	t.Helper()
	for _, h := range hosts {
		h.Freeze()
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			for _, h := range hosts {
				h.Thaw()
			}
		})
	}
	t.Cleanup(thaw)
	return thaw
}

// freezeDuringGathering freezes h once d's scan has taken a CREATE in and
// before it probes, then waits for the probe to start on the frozen host.
func freezeDuringGathering(t *testing.T, d *driver, h *sshdtest.Host) (thaw func()) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for d.pool.Len() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	thaw = freeze(t, h)
	if d.probes.Load() != 0 {
		t.Fatal("the scan stopped gathering before the host was frozen")
	}
	for d.probes.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	return thaw
}

// noLeases fails t for every host of f still leased.
func noLeases(t *testing.T, f *fixture) {
	t.Helper()
	for _, h := range f.hosts {
		if got := leaseOf(t, h); got != "" {
			t.Errorf("host %s still leased to %q", h.Addr(), got)
		}
	}
}

// closedPort is a loopback address nothing listens on (it just stopped).
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// A host already released from under the node (its lease removed, as a
// reinstall or an admin freeing it would) is gone as far as the node is
// concerned: DELETE succeeds and runs nothing there.
func TestDeleteOfReleasedHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	created, _ := run(t, d, f.task("CREATE", "n1"))
	mustSucceed(t, created)
	if err := os.Remove(h.Path(LeasePath)); err != nil {
		t.Fatal(err)
	}
	task := withFacts(f.task("DELETE", "n1"), created)
	task.Provider.Provisioner["wipe_script"] = "echo must-not-run"
	r, out := run(t, d, task)
	mustSucceed(t, r)
	if !strings.Contains(r.Message, "nothing to release") || out.Contains("stdout", "must-not-run") {
		t.Fatalf("DELETE of a released host: %q, stdout %q", r.Message, out.Lines("stdout"))
	}
	if got := leaseOf(t, h); got != "" {
		t.Fatalf("lease %q after DELETE", got)
	}
}

// A scan's SSH handshakes start as soon as the first task asks for it,
// during the time it waits for other tasks to share it: that wait then
// costs the CREATEs nothing, where it used to come before the handshakes.
func TestScanDialsWhileGathering(t *testing.T) {
	t.Parallel()
	const n = 4
	f := newFixture(t, n, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	d.scanGather = 3 * time.Second
	done := make(chan drivers.Result)
	go func() {
		r, _ := run(t, d, f.task("CREATE", "node-0"))
		done <- r
	}()
	deadline := time.Now().Add(2 * time.Second)
	for d.pool.Len() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := d.pool.Len(); got != n {
		t.Errorf("%d of %d hosts connected 2 s into a scan's 3 s gathering, want all", got, n)
	}
	if p := d.probes.Load(); p != 0 {
		t.Errorf("%d probes before the gathering ended", p)
	}
	mustSucceed(t, <-done)
	if got := d.pool.Dials(); got != n {
		t.Errorf("%d dials, want %d (the probes use the connections dialed early)", got, n)
	}
}

// A CREATE whose node already holds a host (its result was lost) adopts
// it, and gives back the host the scan leased to it besides: a node never
// keeps two.
func TestAdoptGivesBackTheClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, sshdtest.Options{})
	task := f.task("CREATE", "db-2")
	order := spread(func() []host {
		hs, err := parseHosts(f.hostsField())
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}(), f.id, "db-2")
	// Not the host the scan claims for the node (the first of its order).
	held := f.host(t, order[1].id())
	held.Exec(t, "mkdir -p "+remote.Quote(LeasePath[:strings.LastIndex(LeasePath, "/")])+" && ln -s "+remote.Quote(f.id+" db-2")+" "+LeasePath)
	d := newDriver(t, f.key.PEM)
	r, _ := run(t, d, task)
	mustSucceed(t, r)
	if r.Facts["providerId"] != order[1].id() || !strings.HasPrefix(r.Message, "adopted") {
		t.Fatalf("CREATE: %v %q, want adopted %s", r.Facts["providerId"], r.Message, order[1].id())
	}
	if d.claims.Load() != 1 {
		t.Errorf("%d claims, want 1 (the scan leases the first host of the node's order)", d.claims.Load())
	}
	for _, h := range f.hosts {
		if got, want := leaseOf(t, h), map[bool]string{true: f.id + " db-2"}[h == held]; got != want {
			t.Errorf("host %s lease %q, want %q", h.Addr(), got, want)
		}
	}
}

// A CREATE that stops waiting for a scan gets no host: one that left while
// the scan gathered gets no claim, and a lease the scan took for one that
// left during its claim is given back, since nothing will report it to
// the server.
func TestAbandonedCreateLeasesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		claims int64
	}{{"while gathering", 0}, {"during the claim", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 3
			f := newFixture(t, n, sshdtest.Options{})
			d := newDriver(t, f.key.PEM)
			d.scanGather = 500 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.claims == 0 {
				time.AfterFunc(100*time.Millisecond, cancel)
			} else {
				// Hold every host's answer until the CREATE has left.
				go func() {
					for d.pool.Len() < n {
						time.Sleep(5 * time.Millisecond)
					}
					for _, h := range f.hosts {
						h.Freeze()
					}
					for d.probes.Load() < n {
						time.Sleep(5 * time.Millisecond)
					}
					time.Sleep(50 * time.Millisecond)
					cancel()
					time.Sleep(50 * time.Millisecond)
					for _, h := range f.hosts {
						h.Thaw()
					}
				}()
			}
			if r := d.Run(ctx, f.task("CREATE", "gone-1"), &drivertest.Recorder{}); r.Status != statusNothingCreated {
				t.Fatalf("CREATE cut short: status %d: %s", r.Status, r.Message)
			}
			// The scan goes on, and gives back what it claimed.
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				d.scanMu.Lock()
				idle := len(d.scans) == 0
				d.scanMu.Unlock()
				if idle && d.probes.Load() == n {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if d.claims.Load() != tc.claims {
				t.Errorf("%d claims, want %d", d.claims.Load(), tc.claims)
			}
			noLeases(t, f)
		})
	}
}

// A CONFIRM right after the same agent's CREATE of the node, over the
// connection CREATE's lease command ran on, runs no command on the host:
// that command showed the lease held by the node. It reports what a full
// check would, and still checks the connection's host key against the
// node's pins.
func TestConfirmAfterCreateRunsNothing(t *testing.T) {
	t.Parallel()
	f, h, d, created := createdNode(t)
	time.Sleep(100 * time.Millisecond) // sshd logs a session as it starts it
	sessions := sessionsOf(h)
	confirmed, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	mustSucceed(t, confirmed)
	time.Sleep(100 * time.Millisecond)
	if got := sessionsOf(h) - sessions; got != 0 {
		t.Errorf("CONFIRM right after CREATE started %d sessions on the host, want 0", got)
	}
	if !maps.Equal(confirmed.IPAddresses, created.IPAddresses) || fmt.Sprint(confirmed.Facts) != fmt.Sprint(created.Facts) ||
		confirmed.Secrets["privateKey"] != created.Secrets["privateKey"] {
		t.Errorf("CONFIRM reported %v %v, CREATE %v %v", confirmed.IPAddresses, confirmed.Facts, created.IPAddresses, created.Facts)
	}
	if got := leaseOf(t, h); got != f.id+" n1" {
		t.Errorf("lease %q", got)
	}

	// Once only: a second CONFIRM checks the host.
	sessions = sessionsOf(h)
	r, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	mustSucceed(t, r)
	time.Sleep(100 * time.Millisecond)
	if got := sessionsOf(h) - sessions; got != 1 {
		t.Errorf("a second CONFIRM started %d sessions, want 1 (the lease command)", got)
	}

	// Pins the connection's key does not match are refused as before.
	f = newFixture(t, 1, sshdtest.Options{})
	created, _ = run(t, d, f.task("CREATE", "n2"))
	mustSucceed(t, created)
	task := withFacts(f.task("CONFIRM", "n2"), created)
	task.Node.Facts["node"] = map[string]any{"hostKeys": []string{sshdtest.NewKey(t).AuthorizedKey}}
	r, _ = run(t, d, task)
	if r.Status == 0 || retryable(r) || !strings.Contains(r.Message, "host key mismatch") {
		t.Fatalf("CONFIRM with pins the host does not show: status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}
}

// CONFIRM checks the host in full on the CREATE's agent too when the proof
// of CREATE's lease no longer holds: the connection it ran on is gone, the
// node's DELETE ran since, or it is older than confirmFresh. Each case
// removes the lease behind the agent's back, which only a full check sees
// and takes back.
func TestConfirmChecksAfterTheProofLapses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		lapse func(t *testing.T, d *driver, h *sshdtest.Host, f *fixture, created drivers.Result)
	}{
		{"connection gone", func(t *testing.T, d *driver, h *sshdtest.Host, _ *fixture, _ drivers.Result) {
			h.Restart(t)
			deadline := time.Now().Add(10 * time.Second)
			for d.pool.Len() > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if d.pool.Len() > 0 {
				t.Fatal("the pool kept the connection of a restarted sshd")
			}
		}},
		{"deleted since", func(t *testing.T, d *driver, _ *sshdtest.Host, f *fixture, created drivers.Result) {
			mustSucceed(t, first(run(t, d, withFacts(f.task("DELETE", "n1"), created))))
		}},
		{"too old", func(t *testing.T, d *driver, _ *sshdtest.Host, _ *fixture, _ drivers.Result) {
			time.Sleep(2 * d.confirmFresh)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1, sshdtest.Options{})
			h := f.hosts[0]
			d := newDriver(t, f.key.PEM)
			d.confirmFresh = 300 * time.Millisecond
			created, _ := run(t, d, f.task("CREATE", "n1"))
			mustSucceed(t, created)
			tc.lapse(t, d, h, f, created)
			_ = os.Remove(h.Path(LeasePath))
			r, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
			mustSucceed(t, r)
			if got := leaseOf(t, h); got != f.id+" n1" {
				t.Fatalf("CONFIRM did not take the lease back: %q", got)
			}
			if n := d.byProof.Load(); n != 0 {
				t.Errorf("%d CONFIRMs by proof, want 0", n)
			}
		})
	}
}

// A CONFIRM by CREATE's proof still asks the host for a word on the
// connection: a host that stopped answering since CREATE is checked in
// full and fails (retryably, so that the server's rollback picks another
// host), not confirmed from memory.
func TestConfirmByProofNeedsAnAnsweringHost(t *testing.T) {
	t.Parallel()
	f, h, d, created := createdNode(t)
	h.Freeze()
	t.Cleanup(h.Thaw)
	r, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	if r.Status == 0 {
		t.Errorf("CONFIRM of a host frozen since CREATE succeeded: %s", r.Message)
	}
	if n := d.byProof.Load(); n != 0 {
		t.Errorf("%d CONFIRMs by proof of a host that does not answer, want 0", n)
	}
}

// An acquisition runs one program on a host leased before (ln, the atomic
// step), two on its first lease (mkdir makes the lease's directory).
func TestProgramsPerAcquire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	execs := h.TraceExecs(t, "/usr/bin/mkdir", "/usr/bin/ln", "/usr/bin/readlink", "/usr/bin/rm")
	d := newDriver(t, f.key.PEM)
	created, _ := run(t, d, f.task("CREATE", "n1"))
	mustSucceed(t, created)
	if got, want := execs(), []string{"/usr/bin/mkdir", "/usr/bin/ln"}; !slices.Equal(got, want) {
		t.Errorf("the first lease ran %q, want %q", got, want)
	}
	mustSucceed(t, first(run(t, d, withFacts(f.task("DELETE", "n1"), created))))
	before := len(execs())
	mustSucceed(t, first(run(t, d, f.task("CREATE", "n2"))))
	if got, want := execs()[before:], []string{"/usr/bin/ln"}; !slices.Equal(got, want) {
		t.Errorf("a lease of a host leased before ran %q, want %q", got, want)
	}
}

// A CREATE cancelled while its scan gathers, whose retry (same node, so
// the same lease owner) joins that same scan, leaves the node holding
// exactly the host the retry reports: the scan gives back only what it
// leased for the CREATE that left, never the retry's host. Both with one
// host (the two CREATEs want the same one) and with two.
func TestRetryJoiningTheScanKeepsItsLease(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, n, sshdtest.Options{})
			d := newDriver(t, f.key.PEM)
			d.scanGather = time.Second
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if r := d.Run(ctx, f.task("CREATE", "n1"), &drivertest.Recorder{}); r.Status != statusNothingCreated {
				t.Fatalf("CREATE cut short: status %d: %s", r.Status, r.Message)
			}
			d.scanMu.Lock()
			gathering := len(d.scans) == 1 && d.probes.Load() == 0
			d.scanMu.Unlock()
			if !gathering {
				t.Fatal("the scan no longer gathers: the retry would not join it")
			}
			created, _ := run(t, d, f.task("CREATE", "n1"))
			mustSucceed(t, created)
			confirmed, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
			mustSucceed(t, confirmed)
			scansSettled(t, d)
			held := f.host(t, fmt.Sprint(created.Facts["providerId"]))
			for _, h := range f.hosts {
				if got, want := leaseOf(t, h), map[bool]string{true: f.id + " n1"}[h == held]; got != want {
					t.Errorf("host %s lease %q, want %q (the retry reported %s)", h.Addr(), got, want, held.Addr())
				}
			}
		})
	}
}

// A CREATE that leaves a scan after it claimed the node's host for it, but
// before the claim returned, while a retry of the node waits in the same
// scan with no host of its own: the retry gets the host, leased to the
// node already, rather than the scan giving it back.
func TestRetryGetsTheHostClaimedForTheCreateThatLeft(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	d.scanGather = 500 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan drivers.Result)
	go func() { first <- d.Run(ctx, f.task("CREATE", "n1"), &drivertest.Recorder{}) }()
	time.Sleep(100 * time.Millisecond)
	retry := make(chan drivers.Result)
	go func() {
		r, _ := run(t, d, f.task("CREATE", "n1"))
		retry <- r
	}()
	// Hold the scan's claim on the host: the claim is for the first
	// CREATE (it came first), the retry gets none.
	thaw := freezeDuringGathering(t, d, h)
	time.Sleep(50 * time.Millisecond)
	cancel()
	if r := <-first; r.Status != statusNothingCreated {
		t.Fatalf("CREATE cut short: status %d: %s", r.Status, r.Message)
	}
	thaw()
	created := <-retry
	mustSucceed(t, created)
	if created.Facts["providerId"] != h.Addr() {
		t.Fatalf("retry reported %v", created.Facts["providerId"])
	}
	confirmed, _ := run(t, d, withFacts(f.task("CONFIRM", "n1"), created))
	mustSucceed(t, confirmed)
	scansSettled(t, d)
	if got := leaseOf(t, h); got != f.id+" n1" {
		t.Errorf("lease %q after the retry's CREATE and CONFIRM, want %q", got, f.id+" n1")
	}
}

// A retry of a CREATE that left a scan after the scan had claimed the
// node's host for it, arriving once the claim was sent: the retry's scan
// comes after the first has given the claim back (the CREATE having left).
// A scan run beside the first (tried, docs/performance.md) found the host
// leased to the node, reported it, and lost the lease to the give-back.
func TestRetryAfterTheClaimWaitsForTheScanToSettle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	d.scanGather = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := make(chan drivers.Result)
	go func() { first <- d.Run(ctx, f.task("CREATE", "n1"), &drivertest.Recorder{}) }()
	thaw := freezeDuringGathering(t, d, h)
	cancel()
	if r := <-first; r.Status != statusNothingCreated {
		t.Fatalf("CREATE cut short: status %d: %s", r.Status, r.Message)
	}
	retry := make(chan drivers.Result)
	go func() {
		r, _ := run(t, d, f.task("CREATE", "n1"))
		retry <- r
	}()
	// Past the retry's gathering, with the claim still held by the host.
	time.Sleep(500 * time.Millisecond)
	thaw()
	created := <-retry
	mustSucceed(t, created)
	scansSettled(t, d)
	if got := leaseOf(t, h); got != f.id+" n1" {
		t.Errorf("lease %q after the retry's CREATE, want %q", got, f.id+" n1")
	}
}
