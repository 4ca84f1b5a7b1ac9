package sshnode_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

func newDriver(t *testing.T) drivers.Driver {
	p := remote.NewPool(remote.Options{})
	t.Cleanup(func() { _ = p.Close() })
	return sshnode.New(p, slog.New(slog.NewTextHandler(t.Output(), nil)))
}

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sshdtest.Options
	}{
		{"root", sshdtest.Options{}},
		{"sudo user", sshdtest.Options{NonRoot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drivertest.Node(t, newDriver(t), drivertest.NodeEnv{Cluster: drivertest.NewCluster(t, 1, tc.opts)})
		})
	}
}

func TestRotatedHostKeyRefused(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	drv := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := drv.Run(ctx, c.Task("BOOTSTRAP", 0), &drivertest.Recorder{})
	if r.Status != 0 {
		t.Fatalf("BOOTSTRAP: %s", r.Message)
	}
	c.Merge(0, "node", r)
	pinned := ssh.FingerprintSHA256(c.Hosts[0].HostKey())
	c.Hosts[0].RotateHostKey(t)
	r = drv.Run(ctx, c.Task("BOOTSTRAP", 0), &drivertest.Recorder{})
	if r.Status == 0 || r.Retryable == nil || *r.Retryable {
		t.Fatalf("BOOTSTRAP after the host key changed: status %d retryable %v: %s", r.Status, r.Retryable, r.Message)
	}
	for _, s := range []string{"host key mismatch", pinned, ssh.FingerprintSHA256(c.Hosts[0].HostKey())} {
		if !strings.Contains(r.Message, s) {
			t.Errorf("message %q lacks %q", r.Message, s)
		}
	}
}

func TestBadPayloadsAreTerminal(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	drv := newDriver(t)
	for _, tc := range []struct {
		name   string
		change func(*drivers.Task)
		msg    string
	}{
		{"invalid hostname", func(t *drivers.Task) { t.Node.Hostname = "bad name;rm -rf /" }, "not a valid host name"},
		{"no node", func(t *drivers.Task) { t.Node = nil }, "has no node"},
		{"no key", func(t *drivers.Task) { t.Secrets = nil }, "has no SSH key"},
		{"no address", func(t *drivers.Task) {
			t.Node.Facts = map[string]any{}
			t.Node.IPAddresses = nil
		}, "has no address"},
		{"wrong action", func(t *drivers.Task) { t.TaskName = "INSTALL" }, "not INSTALL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := c.Task("BOOTSTRAP", 0)
			tc.change(task)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := drv.Run(ctx, task, &drivertest.Recorder{})
			if r.Status == 0 || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("status %d retryable %v message %q, want a terminal failure with %q", r.Status, r.Retryable, r.Message, tc.msg)
			}
		})
	}
}

func TestParseFacts(t *testing.T) {
	out := `os.id=debian
os.version=12
os.name=Debian GNU/Linux 12 (bookworm)
arch=x86_64
cpus=2
memkb=24675432
hostname=web-1.example.com
disk=vda 104857600
disk=vdb 0
iface=eth0
iface=lo
addr=lo inet 127.0.0.1/8
addr=eth0@if12 inet 10.0.0.5/24
addr=eth0@if12 inet6 fe80::1/64
garbage line
`
	want := map[string]any{
		"os":       map[string]any{"id": "debian", "version": "12", "name": "Debian GNU/Linux 12 (bookworm)"},
		"arch":     "x86_64",
		"cpus":     2.0,
		"memoryMB": 24097.0,
		"hostname": "web-1.example.com",
		"disks":    []any{map[string]any{"name": "vda", "sizeMB": 51200.0}},
		"interfaces": []any{
			map[string]any{"name": "eth0", "addresses": []any{"10.0.0.5/24", "fe80::1/64"}},
			map[string]any{"name": "lo", "addresses": []any{"127.0.0.1/8"}},
		},
	}
	b, err := json.Marshal(sshnode.ParseFacts(out))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("facts\n%v\nwant\n%v", got, want)
	}
	empty := sshnode.ParseFacts("")
	if _, ok := empty["disks"]; !ok {
		t.Error("no disks list for a host without disks")
	}
}

func TestValidHostname(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"web-1", true},
		{"web-1.cluster-1001.example.com", true},
		{"a", true},
		{"", false},
		{"-web", false},
		{"web-", false},
		{"web_1", false},
		{"web 1", false},
		{"web\n1", false},
		{"web..example", false},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("a.", 127) + "a", false},
	} {
		if got := sshnode.ValidHostname(tc.name); got != tc.ok {
			t.Errorf("ValidHostname(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

func TestDescriptor(t *testing.T) {
	d := sshnode.Descriptor()
	if d.Role != drivers.RoleNode || d.Name != "ssh" || len(d.Params) != 0 {
		t.Fatalf("descriptor %+v", d)
	}
	role, name := drivers.RoleOf(&drivers.Task{TaskName: "BOOTSTRAP"})
	if role != d.Role || name != d.Name {
		t.Fatalf("BOOTSTRAP is routed to %s/%s, not this driver", role, name)
	}
}

// BOOTSTRAP installs the payload's resources under ResourceDir: files with
// their permissions, archives extracted, as root even for a sudo user.
func TestBootstrapInstallsResources(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: true})
	drv := newDriver(t)
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Name: "apache/", Mode: 0o755, Typeflag: tar.TypeDir})
	_ = tw.WriteHeader(&tar.Header{Name: "apache/recipes/default.rb", Mode: 0o644, Size: 6, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("recipe"))
	_ = tw.Close()
	_ = zw.Close()
	files := map[string][]byte{"web": []byte("role web\n"), "apache": buf.Bytes()}
	for n, b := range files {
		if err := os.WriteFile(dir+"/"+n, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	task := c.Task("BOOTSTRAP", 0)
	task.Resources = []drivers.Resource{
		{PluginType: "automatortypes", Plugin: "chef-solo", ResourceType: "roles", Name: "web", Version: 1, Format: "file", Permissions: "0400"},
		{PluginType: "automatortypes", Plugin: "chef-solo", ResourceType: "cookbooks", Name: "apache", Version: 3, Format: "archive"},
	}
	task.Fetch = func(_ context.Context, r drivers.Resource) (string, error) { return dir + "/" + r.Name, nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 { // twice: a second BOOTSTRAP replaces what the first put there
		if r := drv.Run(ctx, task, &drivertest.Recorder{}); r.Status != 0 {
			t.Fatalf("BOOTSTRAP: %s", r.Message)
		}
	}
	got := c.Hosts[0].Exec(t, `cd `+sshnode.ResourceDir+`/chef-solo && stat -c '%a %U' roles/web && sudo cat roles/web &&
		cat cookbooks/apache/recipes/default.rb && echo && ls -A cookbooks`)
	if want := "400 root\nrole web\nrecipe\napache\n"; got != want {
		t.Errorf("on the node:\n%s\nwant:\n%s", got, want)
	}
	// A resource the agent cannot fetch fails the BOOTSTRAP for good.
	task.Fetch = func(context.Context, drivers.Resource) (string, error) { return "", errors.New("digest mismatch") }
	if r := drv.Run(ctx, task, &drivertest.Recorder{}); r.Status == 0 || r.Retryable == nil || *r.Retryable ||
		!strings.Contains(r.Message, "digest mismatch") {
		t.Fatalf("failed fetch: status %d retryable %v: %s", r.Status, r.Retryable, r.Message)
	}
}

// Issue 19: BOOTSTRAP installs the cluster owner's SSH keys for the node's
// SSH user, after which the owner's key logs in; a later BOOTSTRAP takes
// out the keys the owner removed, and coopr's own key (and any other line
// of the file) keeps working throughout.
func TestBootstrapInstallsOwnerKeys(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: true})
	h := c.Hosts[0]
	home := h.Dir + "/home/" + h.User
	// The node's image put coopr's cluster key and a line of its own there.
	other := sshdtest.NewKey(t)
	h.Exec(t, `mkdir -p `+home+`/.ssh && printf '%s\n%s\n' '`+c.Key.AuthorizedKey+` coopr' '`+other.AuthorizedKey+` ops' > `+home+`/.ssh/authorized_keys && chown -R `+h.User+`: `+home+`/.ssh`)
	owner1, owner2 := sshdtest.NewKey(t), sshdtest.NewKey(t)
	drv := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	logsIn := func(k *sshdtest.Key) bool {
		cl, err := ssh.Dial("tcp", h.Addr(), &ssh.ClientConfig{User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(k.Signer)},
			HostKeyCallback: ssh.FixedHostKey(h.HostKey()), Timeout: 10 * time.Second})
		if err != nil {
			return false
		}
		cl.Close()
		return true
	}
	if logsIn(owner1) {
		t.Fatal("the owner's key logs in before BOOTSTRAP")
	}
	bootstrap := func(keys ...string) {
		t.Helper()
		task := c.Task("BOOTSTRAP", 0)
		task.AuthorizedKeys = keys
		r := drv.Run(ctx, task, &drivertest.Recorder{})
		if r.Status != 0 {
			t.Fatalf("BOOTSTRAP: %s", r.Message)
		}
		c.Merge(0, "node", r)
	}
	for range 2 { // a second run changes nothing
		bootstrap(owner1.AuthorizedKey+" alice@laptop", owner2.AuthorizedKey)
	}
	for _, k := range []*sshdtest.Key{owner1, owner2, other} {
		if !logsIn(k) {
			t.Errorf("key %s does not log in after BOOTSTRAP", k.AuthorizedKey)
		}
	}
	want := c.Key.AuthorizedKey + " coopr\n" + other.AuthorizedKey + " ops\n" +
		owner1.AuthorizedKey + " " + sshnode.OwnerKeyMarker + "\n" + owner2.AuthorizedKey + " " + sshnode.OwnerKeyMarker + "\n"
	if got := h.Exec(t, `cat `+home+`/.ssh/authorized_keys; stat -c '%a %U' `+home+`/.ssh/authorized_keys`); got != want+"600 "+h.User+"\n" {
		t.Errorf("authorized_keys:\n%s\nwant:\n%s600 %s", got, want, h.User)
	}

	// The owner removed owner1.
	bootstrap(owner2.AuthorizedKey)
	if logsIn(owner1) {
		t.Error("a removed key still logs in after BOOTSTRAP")
	}
	if !logsIn(owner2) || !logsIn(other) {
		t.Error("a kept key no longer logs in")
	}
	bootstrap() // none left: coopr's own key still works (this BOOTSTRAP ran on it)
	if got, want := h.Exec(t, `cat `+home+`/.ssh/authorized_keys`), c.Key.AuthorizedKey+" coopr\n"+other.AuthorizedKey+" ops\n"; got != want {
		t.Errorf("authorized_keys without owner keys:\n%s\nwant:\n%s", got, want)
	}

	// A line that is no plain public key fails for good, naming the field.
	task := c.Task("BOOTSTRAP", 0)
	task.AuthorizedKeys = []string{`command="sh" ` + owner1.AuthorizedKey}
	if r := drv.Run(ctx, task, &drivertest.Recorder{}); r.Status == 0 || r.Retryable == nil || *r.Retryable ||
		!strings.Contains(r.Message, "authorizedKeys[0]") {
		t.Errorf("a key with options: status %d: %s", r.Status, r.Message)
	}
}

// BOOTSTRAP takes one session as root: the owner's keys, which are also
// the proof that the node runs commands, the host name and the facts; and
// two as a user that needs sudo for the host name (the keys, then the
// rest). A second BOOTSTRAP finds the name set and changes nothing.
func TestBootstrapSessions(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		nonRoot  bool
		sessions int
	}{
		{"root", false, 1},
		{"sudo user", true, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: c.nonRoot})
			drv := newDriver(t)
			h := cl.Hosts[0]
			sessions := func() int { return strings.Count(h.Log(), "Starting session:") }
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i := range 2 {
				before := sessions()
				task := cl.Task("BOOTSTRAP", 0)
				r := drv.Run(ctx, task, &drivertest.Recorder{})
				if r.Status != 0 {
					t.Fatalf("BOOTSTRAP %d: %s", i+1, r.Message)
				}
				if r.Facts["arch"] == nil || r.Facts["hostname"] != cl.Nodes[0].Hostname || r.Facts["hostKeys"] == nil {
					t.Errorf("BOOTSTRAP %d: facts %v", i+1, r.Facts)
				}
				if got := strings.TrimSpace(h.Exec(t, "cat /etc/hostname")); got != cl.Nodes[0].Hostname {
					t.Errorf("BOOTSTRAP %d: /etc/hostname %q, want %q", i+1, got, cl.Nodes[0].Hostname)
				}
				cl.Merge(0, "node", r)
				// sshd logs a session as it starts it; give the log time to
				// show one more than wanted.
				deadline := time.Now().Add(2 * time.Second)
				for sessions()-before <= c.sessions && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if got := sessions() - before; got != c.sessions {
					t.Errorf("BOOTSTRAP %d: %d sessions, want %d", i+1, got, c.sessions)
				}
			}
		})
	}
}

// BOOTSTRAP reads files with the shell's read, not cat, and takes the
// CPUs from /sys, not getconf: each program is a fork and exec that a
// loaded host makes slow. The architecture is uname's, which alone sees a
// 32-bit personality. The facts are what those programs say.
func TestBootstrapRunsNoCat(t *testing.T) {
	asRootAndSudo(t, func(t *testing.T, cl *drivertest.Cluster) {
		h := cl.Hosts[0]
		arch, cpus := strings.TrimSpace(h.Exec(t, "uname -m")), strings.TrimSpace(h.Exec(t, "getconf _NPROCESSORS_ONLN"))
		execs := h.TraceExecs(t, "/usr/bin/cat", "/usr/bin/uname", "/usr/bin/getconf")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		task := cl.Task("BOOTSTRAP", 0)
		task.AuthorizedKeys = []string{sshdtest.NewKey(t).AuthorizedKey}
		r := newDriver(t).Run(ctx, task, &drivertest.Recorder{})
		if r.Status != 0 {
			t.Fatalf("BOOTSTRAP: %s", r.Message)
		}
		if r.Facts["hostname"] != cl.Nodes[0].Hostname || r.Facts["disks"] == nil || r.Facts["arch"] != arch ||
			fmt.Sprint(r.Facts["cpus"]) != cpus {
			t.Errorf("facts %v, want arch %s and %s cpus", r.Facts, arch, cpus)
		}
		if got := execs(); !slices.Equal(got, []string{"/usr/bin/uname"}) {
			t.Errorf("ran %q, want uname alone", got)
		}
	})
}

// BOOTSTRAP names a systemd machine without systemd-hostnamed: asking the
// daemon (hostnamectl) starts it on demand, most of a BOOTSTRAP's time on
// a fleet of containers, and fails where it is masked or D-Bus is down.
// The host here looks systemd-booted and its hostnamectl cannot reach the
// daemon; the static and kernel names are set all the same.
func TestHostnameWithoutHostnamed(t *testing.T) {
	asRootAndSudo(t, func(t *testing.T, cl *drivertest.Cluster) {
		h := cl.Hosts[0]
		// In the host's own mount namespace only: /run/systemd/system
		// is how programs tell systemd runs, and a hostnamectl that
		// cannot connect to the bus.
		fake := filepath.Join(h.Dir, "fake-hostnamectl")
		if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'Failed to connect to bus: No such file or directory' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		h.Exec(t, "mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && mount --bind "+remote.Quote(fake)+" /usr/bin/hostnamectl")
		execs := h.TraceExecs(t, "/usr/bin/hostnamectl")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r := newDriver(t).Run(ctx, cl.Task("BOOTSTRAP", 0), &drivertest.Recorder{})
		if r.Status != 0 {
			t.Fatalf("BOOTSTRAP: %s", r.Message)
		}
		want := cl.Nodes[0].Hostname
		if got := strings.TrimSpace(h.Exec(t, "cat /etc/hostname; hostname")); got != want+"\n"+want {
			t.Errorf("static and kernel names %q, want %s", got, want)
		}
		if r.Facts["hostname"] != want {
			t.Errorf("hostname fact %v, want %s", r.Facts["hostname"], want)
		}
		if got := execs(); len(got) > 0 {
			t.Errorf("ran %q", got)
		}
	})
}

// asRootAndSudo runs f, in parallel, on a one-node cluster whose SSH user
// is root and on one whose user is not (sudo).
func asRootAndSudo(t *testing.T, f func(t *testing.T, cl *drivertest.Cluster)) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		nonRoot bool
	}{
		{"root", false},
		{"sudo user", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f(t, drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: tc.nonRoot}))
		})
	}
}
