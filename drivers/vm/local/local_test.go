package local

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cooprhq/coopr/drivers"
)

func TestParseSubnet(t *testing.T) {
	for _, c := range []struct {
		in          string
		host, first string
		count       int
		err         string
	}{
		{in: "10.231.0.0/24", host: "10.231.0.1", first: "10.231.0.2", count: 253},
		{in: "10.231.0.1/24", host: "10.231.0.1", first: "10.231.0.2", count: 253},
		{in: "10.231.0.254/24", host: "10.231.0.254", first: "10.231.0.1", count: 253},
		{in: "192.168.7.16/29", host: "192.168.7.17", first: "192.168.7.18", count: 5},
		{in: "10.231.0.255/24", err: "broadcast"},
		{in: "10.0.0.0/8", err: "/16 to /29"},
		{in: "fd00::/64", err: "IPv4"},
		{in: "10.231.0.0", err: "netip.ParsePrefix"},
	} {
		t.Run(c.in, func(t *testing.T) {
			n, err := parseSubnet(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			addrs := n.nodeAddrs()
			if n.host.String() != c.host || addrs[0].String() != c.first || len(addrs) != c.count {
				t.Fatalf("host %s, first %s, %d addresses", n.host, addrs[0], len(addrs))
			}
			for _, a := range addrs {
				if a == n.host || a == n.broadcast() || a == n.prefix.Addr() {
					t.Fatalf("node address %s is the host's, the network's or the broadcast", a)
				}
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	for _, c := range []struct{ cluster, node, prefix string }{
		{"00000412", "3f6c1a52-0001-4c1e-9d1a-000000000001", "coopr-00000412-"},
		{"Web_Shop/../../etc", "n1", "coopr-webshopetc-"},
		{"", "n1", "coopr-x-"},
		{"0123456789abcdefXYZ", "n1", "coopr-0123456789abcdef-"},
	} {
		name := NodeName("/s", c.cluster, c.node)
		if !strings.HasPrefix(name, c.prefix) || !nameRE.MatchString(name) || len(vethOf(name)) > 15 {
			t.Errorf("NodeName(%q, %q) = %q (veth %q)", c.cluster, c.node, name, vethOf(name))
		}
		if NodeName("/s", c.cluster, c.node) != name || NodeName("/s", c.cluster, c.node+"x") == name ||
			NodeName("/s", c.cluster+"x", c.node) == name || NodeName("/other", c.cluster, c.node) == name {
			t.Errorf("NodeName(%q, %q) is not a function of the state dir and both ids", c.cluster, c.node)
		}
	}
}

func TestTargetName(t *testing.T) {
	for _, c := range []struct {
		name  string
		facts map[string]any
		want  string
		err   bool
	}{
		{"provider id", map[string]any{"vm": map[string]any{"providerId": "coopr-00000001-0123456789"}}, "coopr-00000001-0123456789", false},
		{"no provider id: the name CREATE uses", map[string]any{}, NodeName("/s", "00000001", "n1"), false},
		{"empty provider id", map[string]any{"vm": map[string]any{"providerId": ""}}, NodeName("/s", "00000001", "n1"), false},
		{"a path is not a name", map[string]any{"vm": map[string]any{"providerId": "coopr-x-0123456789/../../../etc"}}, "", true},
		{"another driver's id", map[string]any{"vm": map[string]any{"providerId": "10.0.0.5"}}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			task := &drivers.Task{ClusterID: "00000001", Node: &drivers.Node{ID: "n1", Facts: c.facts}}
			got, err := targetName("/s", task)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("targetName = %q, %v; want %q (error %v)", got, err, c.want, c.err)
			}
		})
	}
}

func TestMirror(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, file, want string }{
		{"deb822 skips security", "Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\n\n" +
			"Types: deb\n# comment: with a colon\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n", "http://mirror.example/debian"},
		{"deb822 other suite", "Types: deb\nURIs: http://x/debian\nSuites: trixie\n", ""},
		{"one-line with options", "# x\ndeb [arch=amd64 signed-by=/k.gpg] http://proxy:3142/debian bookworm main\n", "http://proxy:3142/debian"},
		{"one-line", "deb-src http://src/debian bookworm main\ndeb http://m/debian bookworm main contrib\n", "http://m/debian"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(p, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			got := mirrorFromDeb822(p)
			if !strings.HasPrefix(c.name, "deb822") {
				got = mirrorFromList(p)
			}
			if got != c.want {
				t.Fatalf("mirror %q, want %q", got, c.want)
			}
		})
	}
}

// TestRefusals: tasks the driver must refuse before creating anything,
// non-retryable, saying what is wrong.
func TestRefusals(t *testing.T) {
	key := newClusterKey(t)
	stateDir := t.TempDir()
	cfg := Config{StateDir: stateDir, ImageDir: filepath.Join(stateDir, "images")}
	drv := New(cfg, nil)
	for _, c := range []struct {
		name   string
		task   func() *drivers.Task
		status int
		want   string
	}{
		{"no cluster key", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			delete(task.Secrets["ssh"], "publicKey")
			return task
		}, statusNothingCreated, "secrets.ssh.publicKey"},
		{"bad cluster key", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			task.Secrets["ssh"]["publicKey"] = "ssh-ed25519 garbage"
			return task
		}, statusNothingCreated, "publicKey"},
		{"bad hostname", func() *drivers.Task { return newTask(key, "00000001", "n1", "a b;rm -rf", "CREATE") }, statusNothingCreated, "not a valid host name"},
		{"no node", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			task.Node = nil
			return task
		}, statusNothingCreated, "names no node"},
		{"bad subnet", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			task.Provider.Provisioner["subnet"] = "10.0.0.0/7"
			return task
		}, statusNothingCreated, "subnet"},
		{"cluster prefix wider than the range", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			task.Provider.Provisioner["subnet"] = "10.9.0.0/24"
			task.Provider.Provisioner["clusterPrefix"] = "20"
			return task
		}, statusNothingCreated, "clusterPrefix"},
		{"cluster prefix not a number", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			task.Provider.Provisioner["clusterPrefix"] = "big"
			return task
		}, statusNothingCreated, "clusterPrefix"},
		{"relative state dir", func() *drivers.Task {
			task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
			task.Provider.Provisioner["stateDir"] = "state"
			return task
		}, statusNothingCreated, "absolute path"},
		{"another task", func() *drivers.Task { return newTask(key, "00000001", "n1", "h1.local", "BOOTSTRAP") }, statusFailed, "BOOTSTRAP"},
		{"confirm of nothing", func() *drivers.Task { return newTask(key, "00000001", "n1", "h1.local", "CONFIRM") }, statusFailed, "does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := drv.Run(context.Background(), c.task(), nil)
			if r.Status != c.status || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, c.want) {
				t.Fatalf("result %+v, want status %d, not retryable, message with %q", r, c.status, c.want)
			}
		})
	}
	entries, _ := os.ReadDir(stateDir)
	if len(entries) != 0 {
		t.Errorf("refused tasks left %d entries in the state dir", len(entries))
	}
}

// TestHostNotReady runs CREATE where the driver cannot work (as another
// user, without its tools): it must refuse, non-retryable, naming what to
// do, having created nothing.
func TestHostNotReady(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the helper as another user")
	}
	key := newClusterKey(t)
	// The test binary may sit in a dir only root can enter: copy it
	// where nobody can run it.
	dir, err := os.MkdirTemp("", "coopr-local-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	bin := filepath.Join(dir, "local.test")
	if err := copyFile(exe, bin); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, "state")
	cfg := Config{StateDir: stateDir, ImageDir: filepath.Join(dir, "images")}
	task := newTask(key, "00000001", "n1", "h1.local", "CREATE")
	for _, c := range []struct {
		name  string
		setup func(*exec.Cmd)
		want  []string
	}{
		{"not root", func(cmd *exec.Cmd) {
			cmd.Path = bin
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}, []string{"root"}},
		{"no tools", func(cmd *exec.Cmd) {
			cmd.Env = append(cmd.Env, "PATH="+dir)
		}, []string{"systemd-nspawn", "ip", "nft", "apt-get install systemd-container iproute2 nftables mount"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runHelper(t, cfg, task, c.setup)
			if out.Status < 200 || out.Status > 299 || out.Retryable {
				t.Errorf("status %d retryable %v, want 2xx and not retryable: %s", out.Status, out.Retryable, out.Message)
			}
			for _, w := range c.want {
				if !strings.Contains(out.Message, w) {
					t.Errorf("message %q does not say %q", out.Message, w)
				}
			}
			if _, err := os.Stat(stateDir); err == nil {
				t.Errorf("a refused CREATE made %s", stateDir)
			}
		})
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func TestCapacity(t *testing.T) {
	for _, c := range []struct {
		fields   map[string]any
		name     string
		nodes    int
		clusters int
		err      string
	}{
		{fields: map[string]any{}, name: "a /24 of 10.232.0.0/16 for each cluster", nodes: 253, clusters: 256},
		{fields: map[string]any{"subnet": "", "clusterPrefix": ""}, name: "a /24 of 10.232.0.0/16 for each cluster", nodes: 253, clusters: 256},
		{fields: map[string]any{"subnet": "10.9.0.17/24", "clusterPrefix": "28"}, name: "a /28 of 10.9.0.0/24 for each cluster", nodes: 13, clusters: 16},
		{fields: map[string]any{"subnet": "192.168.7.16/29", "clusterPrefix": float64(29)}, name: "a /29 of 192.168.7.16/29 for each cluster", nodes: 5, clusters: 1},
		{fields: map[string]any{"subnet": "10.0.0.0/8", "clusterPrefix": "/16"}, name: "a /16 of 10.0.0.0/8 for each cluster", nodes: 65533, clusters: 256},
		{fields: map[string]any{"subnet": "10.0.0.0/8"}, name: "a /24 of 10.0.0.0/8 for each cluster", nodes: 253, clusters: 65536},
		{fields: map[string]any{"subnet": "10.0.0.0/7"}, err: "/8 to /29"},
		{fields: map[string]any{"subnet": "10.0.0.0/24", "clusterPrefix": "30"}, err: "clusterPrefix 30"},
		{fields: map[string]any{"subnet": 7}, err: "want a string"},
		{fields: map[string]any{"clusterPrefix": 24.5}, err: "whole prefix length"},
	} {
		got, err := Capacity(c.fields)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.fields, err, c.err)
			}
			continue
		}
		if err != nil || got.Name != c.name || !got.PerCluster || len(got.Groups) != 1 || got.Nodes() != c.nodes || got.Clusters != c.clusters {
			t.Errorf("%v: %+v %v, want %q: %d nodes in each of %d clusters", c.fields, got, err, c.name, c.nodes, c.clusters)
		}
		// The count is the addresses CREATE hands out in a cluster's subnet.
		s, _ := resolve(Config{}.withDefaults(), c.fields)
		sn, _ := parseSubnet(s.rng.nth(s.rng.clusters() - 1).String())
		if len(sn.nodeAddrs()) != got.Nodes() {
			t.Errorf("%v: capacity %d, but a cluster's subnet has %d node addresses", c.fields, got.Nodes(), len(sn.nodeAddrs()))
		}
	}
	// Providers naming the same range share its clusters; another
	// prefix length carves the same addresses another way, and still
	// shares them.
	a, _ := Capacity(map[string]any{"subnet": "10.9.0.0/16"})
	b, _ := Capacity(map[string]any{"subnet": "10.9.0.0/16", "stateDir": "/srv/other"})
	if a.ClusterKey != b.ClusterKey {
		t.Errorf("one range, two keys: %q and %q", a.ClusterKey, b.ClusterKey)
	}
}
