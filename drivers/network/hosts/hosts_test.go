package hosts_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/drivers/network/hosts"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

func newDriver(t *testing.T) drivers.Driver {
	log := slog.New(slog.NewTextHandler(t.Output(), nil))
	p := remote.NewPool(remote.Options{Logger: log})
	t.Cleanup(func() { _ = p.Close() })
	return hosts.New(p, log)
}

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
		opts  sshdtest.Options
	}{
		{"root", 3, sshdtest.Options{}},
		{"sudo user", 2, sshdtest.Options{NonRoot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := drivertest.NewCluster(t, tc.nodes, tc.opts)
			c.Nodes[1].IPAddresses["bind_v4"] = "10.232.0.2"
			drivertest.Network(t, newDriver(t), drivertest.NetworkEnv{Cluster: c})
		})
	}
}

func run(t *testing.T, drv drivers.Driver, task *drivers.Task) drivers.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := drv.Run(ctx, task, &drivertest.Recorder{})
	if r.Status != 0 {
		t.Fatalf("%s: status %d: %s", task.TaskName, r.Status, r.Message)
	}
	return r
}

// The driver edits only its block, on a /etc/hosts that is a bind mount
// (as sshdtest hosts have it, like containers), so it must write in place.
func TestBlockInRealHostsFile(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 2, sshdtest.Options{NonRoot: true})
	c.Nodes[1].IPAddresses["bind_v4"] = "10.232.0.2"
	h := c.Hosts[0]
	path := h.Path("/etc/hosts")
	initial := "127.0.0.1\tlocalhost\n# keep me\n10.9.9.9 other.example other\n# BEGIN coopr someone-else\n10.8.8.8 x\n# END coopr someone-else\n::1 ip6-localhost"
	if err := os.WriteFile(path, []byte(initial), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	drv := newDriver(t)
	sessions := strings.Count(h.Log(), "Starting session:")

	configure := func() drivers.Task {
		task := c.Task("NETWORK_CONFIGURE", 0)
		// A node with no address yet is left out.
		task.Nodes["node-9"] = drivers.Node{ID: "node-9", NodeNum: 999, Hostname: "n9.coopr.test"}
		run(t, drv, task)
		return *task
	}
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	block := "# BEGIN coopr " + c.ID + "\n" +
		"10.231.0.1 " + c.Nodes[0].Hostname + " n1-" + c.ID + "\n" +
		"10.232.0.2 " + c.Nodes[1].Hostname + " n2-" + c.ID + "\n" +
		"# END coopr " + c.ID + "\n"

	configure()
	if got, want := read(), initial+"\n"+block; got != want {
		t.Fatalf("after CONFIGURE:\n%s\nwant:\n%s", got, want)
	}
	configure()
	if got, want := read(), initial+"\n"+block; got != want {
		t.Fatalf("after CONFIGURE again:\n%s\nwant:\n%s", got, want)
	}

	// A changed address replaces the block where it is.
	if err := os.WriteFile(path, []byte(read()+"10.7.7.7 added-later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Nodes[0].IPAddresses["access_v4"] = "10.231.0.11"
	configure()
	want := initial + "\n" + strings.Replace(block, "10.231.0.1 ", "10.231.0.11 ", 1) + "10.7.7.7 added-later\n"
	if got := read(); got != want {
		t.Fatalf("after an address changed:\n%s\nwant:\n%s", got, want)
	}

	for range 2 {
		run(t, drv, c.Task("NETWORK_UNCONFIGURE", 0))
		if got, want := read(), initial+"\n10.7.7.7 added-later\n"; got != want {
			t.Fatalf("after UNCONFIGURE:\n%s\nwant:\n%s", got, want)
		}
	}
	// One session a task, whether it writes or finds the file right: read,
	// work out, write.
	deadline := time.Now().Add(2 * time.Second)
	for strings.Count(h.Log(), "Starting session:")-sessions < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := strings.Count(h.Log(), "Starting session:") - sessions; got != 5 {
		t.Errorf("%d sessions for 5 tasks", got)
	}
	after, _ := os.Stat(path)
	if !os.SameFile(before, after) {
		t.Error("/etc/hosts was replaced, not written in place")
	}
	if got := h.Exec(t, "ls -A /etc | grep -c '^.hosts.coopr' || true"); strings.TrimSpace(got) != "0" {
		t.Errorf("temporary files left in /etc: %s", got)
	}
}

func TestApply(t *testing.T) {
	const b = "# BEGIN coopr c1\n10.0.0.1 a.x a\n# END coopr c1\n"
	for _, tc := range []struct {
		name, hosts, block, want string
	}{
		{"empty file", "", b, b},
		{"append", "127.0.0.1 localhost\n", b, "127.0.0.1 localhost\n" + b},
		{"no final newline", "127.0.0.1 localhost", b, "127.0.0.1 localhost\n" + b},
		{"replace in place", "1\n# BEGIN coopr c1\nold\n# END coopr c1\n2\n", b, "1\n" + b + "2\n"},
		{"other cluster untouched", "# BEGIN coopr c2\ny\n# END coopr c2\n", b, "# BEGIN coopr c2\ny\n# END coopr c2\n" + b},
		{"prefix id is another cluster", "# BEGIN coopr c10\ny\n# END coopr c10\n", "", "# BEGIN coopr c10\ny\n# END coopr c10\n"},
		{"duplicates collapse", "# BEGIN coopr c1\nx\n# END coopr c1\n1\n# BEGIN coopr c1\nz\n# END coopr c1\n", b, b + "1\n"},
		{"remove", "1\n" + b + "2", "", "1\n2"},
		{"remove absent", "1\n2\n", "", "1\n2\n"},
		{"crlf markers", "1\r\n# BEGIN coopr c1\r\nold\r\n# END coopr c1\r\n2\r\n", "", "1\r\n2\r\n"},
		{"unterminated block", "1\n# BEGIN coopr c1\n10.0.0.9 old\n\n# user\n5\n", b, "1\n" + b + "\n# user\n5\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hosts.Apply(tc.hosts, "c1", tc.block); got != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestBlock(t *testing.T) {
	node := func(id string, num int, host string, addrs map[string]string) drivers.Node {
		return drivers.Node{ID: id, NodeNum: num, Hostname: host, IPAddresses: addrs}
	}
	for _, tc := range []struct {
		name  string
		nodes []drivers.Node
		want  string
		err   string
	}{
		{
			name: "order, bind preferred, short names, nodes without address skipped",
			nodes: []drivers.Node{
				node("b", 2, "web-2.c.example", map[string]string{"access_v4": "10.0.0.2", "bind_v4": "192.168.0.2"}),
				node("a", 1, "web-1.c.example", map[string]string{"access_v4": "10.0.0.1"}),
				node("c", 3, "solo", map[string]string{"access_v4": "10.0.0.3"}),
				node("d", 4, "web-4.c.example", nil),
			},
			want: "# BEGIN coopr c1\n10.0.0.1 web-1.c.example web-1\n192.168.0.2 web-2.c.example web-2\n10.0.0.3 solo\n# END coopr c1\n",
		},
		{name: "bad hostname", nodes: []drivers.Node{node("a", 1, "web 1\n10.6.6.6 evil", map[string]string{"access_v4": "10.0.0.1"})}, err: "not a valid host name"},
		{name: "bad address", nodes: []drivers.Node{node("a", 1, "web-1", map[string]string{"access_v4": "10.0.0.1 evil"})}, err: "address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := map[string]drivers.Node{}
			for _, n := range tc.nodes {
				m[n.ID] = n
			}
			got, err := hosts.Block("c1", m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestDescriptor(t *testing.T) {
	d := hosts.Descriptor()
	if d.Role != drivers.RoleNetwork || d.Name != "hosts" {
		t.Fatalf("descriptor %+v", d)
	}
	task := &drivers.Task{TaskName: "NETWORK_CONFIGURE"}
	task.Provider.Network = map[string]any{"type": "hosts"}
	if role, name := drivers.RoleOf(task); role != d.Role || name != d.Name {
		t.Fatalf("NETWORK_CONFIGURE is routed to %s/%s", role, name)
	}
}

// A host that no longer shows the pinned key is refused for CONFIGURE and
// UNCONFIGURE alike, reported unreachable (the server skips the
// UNCONFIGURE of a node being deleted), and its /etc/hosts left alone.
func TestChangedHostKey(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 2, sshdtest.Options{})
	drv := newDriver(t)
	run(t, drv, c.Task("NETWORK_CONFIGURE", 0))
	h := c.Hosts[0]
	c.Nodes[0].Facts["node"] = map[string]any{"hostKeys": []any{h.HostKeyLine()}} // as BOOTSTRAP pins it
	h.RotateHostKey(t)
	before, err := os.ReadFile(h.Path("/etc/hosts"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := drv.Run(ctx, c.Task("NETWORK_CONFIGURE", 0), &drivertest.Recorder{})
	if r.Status == 0 || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, "host key mismatch") {
		t.Errorf("CONFIGURE on a re-keyed host: status %d retryable %v %q, want a terminal mismatch", r.Status, r.Retryable, r.Message)
	}
	if !r.Unreachable {
		t.Errorf("CONFIGURE on a re-keyed host: not reported unreachable: %q", r.Message)
	}
	r = drv.Run(ctx, c.Task("NETWORK_UNCONFIGURE", 0), &drivertest.Recorder{})
	if r.Status == 0 || !r.Unreachable || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, "host key mismatch") {
		t.Errorf("UNCONFIGURE on a re-keyed host: status %d unreachable %v retryable %v %q, want a terminal unreachable mismatch",
			r.Status, r.Unreachable, r.Retryable, r.Message)
	}
	if after, _ := os.ReadFile(h.Path("/etc/hosts")); string(after) != string(before) {
		t.Errorf("/etc/hosts of the re-keyed host changed:\n%s", after)
	}
}

// NETWORK_CONFIGURE runs as few programs as the compare-and-swap allows,
// each a fork and exec that a loaded host makes slow. A change reads the
// file (base64), has the shell write the new content beside it and check
// that the file is unchanged (the shell's read for a small file, base64
// again for a large one), and puts it in place (mv, which a bind-mounted
// /etc/hosts refuses: then the shell writes in place, and rm removes the
// temporary file); no change only reads it.
func TestProgramsPerUpdate(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 2, sshdtest.Options{})
	execs := c.Hosts[0].TraceExecs(t, "/usr/bin/sha256sum", "/usr/bin/base64", "/usr/bin/mktemp", "/usr/bin/cat",
		"/usr/bin/tail", "/usr/bin/chmod", "/usr/bin/mv", "/usr/bin/rm", "/usr/bin/printf")
	drv := newDriver(t)
	run(t, drv, c.Task("NETWORK_CONFIGURE", 0))
	if got, want := execs(), []string{"/usr/bin/base64", "/usr/bin/mv", "/usr/bin/rm"}; !slices.Equal(got, want) {
		t.Errorf("a change ran %q, want %q", got, want)
	}
	hostsFile, err := os.ReadFile(c.Hosts[0].Path("/etc/hosts"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(hostsFile), c.Nodes[1].Hostname) {
		t.Errorf("/etc/hosts has no line for %s:\n%s", c.Nodes[1].Hostname, hostsFile)
	}
	before := len(execs())
	run(t, drv, c.Task("NETWORK_CONFIGURE", 0))
	if got, want := execs()[before:], []string{"/usr/bin/base64"}; !slices.Equal(got, want) {
		t.Errorf("no change ran %q, want %q", got, want)
	}

	// A large file is checked with base64.
	large := string(hostsFile) + strings.Repeat("10.9.9.9 filler.example filler\n", 100)
	if err := os.WriteFile(c.Hosts[0].Path("/etc/hosts"), []byte(large), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Nodes[1].IPAddresses["bind_v4"] = "10.232.0.2"
	before = len(execs())
	task := c.Task("NETWORK_CONFIGURE", 0)
	run(t, drv, task)
	if got, want := execs()[before:], []string{"/usr/bin/base64", "/usr/bin/base64", "/usr/bin/mv", "/usr/bin/rm"}; !slices.Equal(got, want) {
		t.Errorf("a change to a large file ran %q, want %q", got, want)
	}
	block, err := hosts.Block(c.ID, task.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := read(t, c.Hosts[0].Path("/etc/hosts")), hosts.Apply(large, c.ID, block); got != want || !strings.Contains(got, "10.232.0.2 ") {
		t.Errorf("the large file after the change:\n%s\nwant:\n%s", got, want)
	}
}

// A writer that comes between the read and the write of /etc/hosts (here
// on the sshd host, through the bind-mounted file) is never overwritten:
// the driver reads again and writes, and gives up after three tries when
// the writer keeps coming.
func TestCompareAndSwap(t *testing.T) {
	t.Parallel()
	for _, size := range []struct {
		name  string
		lines int
	}{{"small", 0}, {"large", 100}} {
		t.Run(size.name, func(t *testing.T) {
			t.Parallel()
			c := drivertest.NewCluster(t, 2, sshdtest.Options{NonRoot: true})
			path := c.Hosts[0].Path("/etc/hosts")
			initial := "127.0.0.1 localhost\n" + strings.Repeat("10.9.9.9 filler.example filler\n", size.lines)
			if err := os.WriteFile(path, []byte(initial), 0o644); err != nil {
				t.Fatal(err)
			}
			drv := newDriver(t)
			writes := 0
			hosts.SetAfterRead(drv, func() {
				writes++
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				_, _ = f.WriteString(fmt.Sprintf("10.5.5.%d theirs-%d\n", writes, writes))
			})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := drv.Run(ctx, c.Task("NETWORK_CONFIGURE", 0), &drivertest.Recorder{})
			if r.Status == 0 || !strings.Contains(r.Message, "changed while being updated") || writes != 3 {
				t.Fatalf("status %d %q after %d writes, want a failure after 3", r.Status, r.Message, writes)
			}
			want := initial + "10.5.5.1 theirs-1\n10.5.5.2 theirs-2\n10.5.5.3 theirs-3\n"
			if got := read(t, path); got != want {
				t.Fatalf("/etc/hosts:\n%s\nwant:\n%s", got, want)
			}

			// A writer that comes once: the second try writes.
			writes = 10
			hosts.SetAfterRead(drv, func() {
				if writes == 10 {
					writes++
					_ = os.WriteFile(path, []byte(want+"10.6.6.6 theirs-again\n"), 0o644)
				}
			})
			run(t, drv, c.Task("NETWORK_CONFIGURE", 0))
			got := read(t, path)
			if !strings.HasPrefix(got, want+"10.6.6.6 theirs-again\n# BEGIN coopr "+c.ID+"\n") {
				t.Fatalf("/etc/hosts after a writer came once:\n%s", got)
			}
			if got := c.Hosts[0].Exec(t, "ls -A /etc | grep -c '^.hosts.coopr' || true"); strings.TrimSpace(got) != "0" {
				t.Errorf("temporary files left in /etc: %s", got)
			}
		})
	}
}
