package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// The tests of remote URIs reach this machine's libvirtd as another
// host's: over TCP (scripts/test-prereqs has it listen on 127.0.0.1:16509
// without authentication) and over SSH through a test sshd that lets root
// in with a key the test makes.

const tcpURI = "qemu+tcp://127.0.0.1/system"

func TestParseRoutes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "routes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "routes.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, p := range parseRoutes(string(b)) {
		fmt.Fprintln(&got, p)
	}
	if got.String() != string(want) {
		t.Errorf("parseRoutes(testdata/routes.txt):\n%s\nwant (testdata/routes.golden):\n%s", got.String(), want)
	}
}

func TestRemoteURI(t *testing.T) {
	for _, tc := range []struct {
		uri    string
		remote bool
	}{
		{"qemu:///system", false},
		{"qemu:///system?socket=/run/x", false},
		{"qemu+unix:///system", false},
		{"qemu+tcp://127.0.0.1/system", true},
		{"qemu+ssh://root@kvm1/system?keyfile=/k", true},
		{"qemu+tls://kvm1.example.com/system", true},
	} {
		u, err := url.Parse(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		if got := remoteURI(u); got != tc.remote {
			t.Errorf("remoteURI(%s) = %v, want %v", tc.uri, got, tc.remote)
		}
	}
}

// needRoot skips unless the test can reach libvirt and act as root.
func needLibvirt(t *testing.T, uri string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("libvirt tests need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := connect(ctx, uri, nil)
	if err != nil {
		t.Skipf("libvirt at %s is not usable here (%v): scripts/test-prereqs starts libvirtd listening on 127.0.0.1:16509", uri, err)
	}
	c.close()
}

// sshLibvirt starts an sshd letting root in with a new key and returns a
// qemu+ssh URI through it to this machine's libvirtd: the host key pinned
// in a known_hosts file, or no_verify=1 when pin is false. It also returns
// the sshd.
func sshLibvirt(t *testing.T, pin bool) (string, *sshdtest.Host) {
	t.Helper()
	h := sshdtest.Start(t, sshdtest.Options{})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, h.Key.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	q := url.Values{"keyfile": {keyFile}}
	if pin {
		kh := filepath.Join(dir, "known_hosts")
		line := knownhosts.Line([]string{knownhosts.Normalize(h.Addr())}, h.HostKey())
		if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		q.Set("known_hosts", kh)
	} else {
		q.Set("no_verify", "1")
	}
	return fmt.Sprintf("qemu+ssh://root@%s/system?%s", h.Addr(), q.Encode()), h
}

// TestSSHTransport: qemu+ssh reaches libvirt through the host's sshd with
// the URI's key, checks the host key known_hosts pins and refuses another,
// reads the host's routes for cluster subnets, and closing the connection
// ends the SSH session (one per task, so none may stay open).
func TestSSHTransport(t *testing.T) {
	needLibvirt(t, DefaultURI)
	uri, h := sshLibvirt(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connect(ctx, uri, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", uri, err)
	}
	if _, err := c.lv.ConnectGetLibVersion(); err != nil {
		t.Errorf("libvirt over ssh: %v", err)
	}
	if !c.remote {
		t.Errorf("%s is not taken for a remote libvirt", uri)
	}
	// The sshd is on this machine: its routes are this machine's, among
	// them its interfaces' subnets.
	used := c.usedPrefixes(ctx)
	routes, err := c.ssh.hostPrefixes(ctx)
	if err != nil || len(routes) == 0 {
		t.Errorf("the libvirt host's routes: %v %v", routes, err)
	}
	for _, r := range routes {
		if !overlapsAny(r, used) {
			t.Errorf("route %s of the libvirt host is not among the used subnets %v", r, used)
		}
	}
	local := localPrefixes(t)
	for _, p := range local {
		if !overlapsAny(p, used) {
			t.Errorf("this host's subnet %s is not among the used subnets %v", p, used)
		}
	}
	c.close()
	deadline := time.Now().Add(10 * time.Second)
	for open := sessionsOpen(h.Log()); len(open) > 0; open = sessionsOpen(h.Log()) {
		if time.Now().After(deadline) {
			t.Fatalf("SSH sessions from ports %v are still open after the libvirt connection closed; sshd says:\n%s", open, h.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Another host key than the pinned one: refused, without retry.
	h.RotateHostKey(t)
	_, err = connect(ctx, uri, nil)
	var te *terminalError
	if err == nil || !errors.As(err, &te) || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("connect with another host key than known_hosts pins: %v, want a refusal naming known_hosts", err)
	}
	// A URI without a key the driver could log in with names the fix.
	bad := strings.Replace(uri, "keyfile=", "keyfile=/nonexistent", 1)
	if _, err := connect(ctx, bad, nil); err == nil || !strings.Contains(err.Error(), "keyfile") {
		t.Errorf("connect with a missing keyfile: %v, want an error naming keyfile", err)
	}
}

var acceptedRE = regexp.MustCompile(`Accepted publickey for \S+ from \S+ port (\d+)`)

// sessionsOpen are the client ports of the logins sshd's log shows that it
// does not show ended.
func sessionsOpen(log string) []string {
	var open []string
	for _, m := range acceptedRE.FindAllStringSubmatch(log, -1) {
		ended := false
		for _, line := range strings.Split(log, "\n") {
			// A close with unread bytes in the socket reaches sshd as a
			// reset ("Read error ... Connection reset by peer"): ended too.
			if strings.Contains(line, " port "+m[1]) && (strings.Contains(line, "isconnect") || strings.Contains(line, "closed") ||
				strings.Contains(line, "reset by peer")) {
				ended = true
			}
		}
		if !ended {
			open = append(open, m[1])
		}
	}
	return open
}

func localPrefixes(t *testing.T) []netip.Prefix {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && !p.Addr().IsLoopback() {
			out = append(out, p.Masked())
		}
	}
	return out
}

// TestRouteForward: with the provider's forward "route" the networks
// coopr defines are routed (what an agent on another host needs to reach
// the nodes); by default and with "isolated" they forward nothing; any
// other value is refused. No VM boots.
func TestRouteForward(t *testing.T) {
	needLibvirt(t, DefaultURI)
	nd := NewNetwork(Config{StateDir: t.TempDir()}, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := connect(ctx, DefaultURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	stamp := time.Now().UnixNano() % 1e6
	for i, tc := range []struct {
		forward string
		mode    string // the network's forward mode, "" for none
		err     string
	}{
		{"", "", ""},
		{ForwardIsolated, "", ""},
		{ForwardRoute, "route", ""},
		{"nat", "", "provider field forward"},
	} {
		t.Run(fmt.Sprintf("%d-%s", i, tc.forward), func(t *testing.T) {
			task := &drivers.Task{TaskName: "NETWORK_ALLOCATE", ClusterID: fmt.Sprintf("lvfwd%d-%d", stamp, i)}
			task.Provider.Provisioner = map[string]any{"clusterRange": "10.240.0.0/20", "clusterPrefix": "28"}
			if tc.forward != "" {
				task.Provider.Provisioner["forward"] = tc.forward
			}
			task.Provider.Network = map[string]any{"type": "libvirt"}
			r := nd.Run(ctx, task, nil)
			if tc.err != "" {
				if r.Status == 0 || !strings.Contains(r.Message, tc.err) {
					t.Errorf("ALLOCATE with forward %q: %d %q, want a refusal naming %q", tc.forward, r.Status, r.Message, tc.err)
				}
				return
			}
			if r.Status != 0 {
				t.Fatalf("ALLOCATE: %d %s", r.Status, r.Message)
			}
			release := *task
			release.TaskName = "NETWORK_RELEASE"
			defer nd.Run(context.Background(), &release, nil)
			n, err := c.lv.NetworkLookupByName(clusterNetName(nd.(*netDriver).vm.cfg.StateDir, task.ClusterID))
			if err != nil {
				t.Fatal(err)
			}
			desc, err := c.lv.NetworkGetXMLDesc(n, 0)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if i := strings.Index(desc, "<forward mode='"); i >= 0 {
				got, _, _ = strings.Cut(desc[i+len("<forward mode='"):], "'")
			}
			if got != tc.mode {
				t.Errorf("forward %q: the network's forward mode is %q, want %q:\n%s", tc.forward, got, tc.mode, desc)
			}
		})
	}
}

// hiddenEnv marks the child process TestRemoteURIs runs the driver in.
const hiddenEnv = "COOPR_TEST_LIBVIRT_HIDDEN"

// TestRemoteURIs: a node's life (CREATE, CONFIRM over SSH, DELETE) on a
// libvirt reached over TCP and over SSH. The driver runs in a child
// process whose /var/lib/libvirt (where the pool's volumes are) and
// /var/log/libvirt are empty file systems of its own: it must do all of
// it through libvirt, as for another host, uploading the base image into
// a pool of its own and each node's seed. The seed and the overlay are
// volumes; the driver's state dir holds no file of the node but its lock,
// and nothing after DELETE.
func TestRemoteURIs(t *testing.T) {
	if os.Getenv(hiddenEnv) != "" {
		remoteNodeLife(t, os.Getenv("COOPR_TEST_LIBVIRT_URI"))
		return
	}
	needLibvirt(t, DefaultURI)
	for _, tc := range []struct {
		name string
		uri  func(t *testing.T) string
	}{
		{"tcp", func(t *testing.T) string { needLibvirt(t, tcpURI); return tcpURI }},
		{"ssh", func(t *testing.T) string { u, _ := sshLibvirt(t, false); return u }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := tc.uri(t)
			// Each transport uploads the base image itself.
			dropPool(t, remotePool)
			t.Cleanup(func() { dropPool(t, remotePool) })
			cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
				`set -e; for d in /var/lib/libvirt /var/log/libvirt; do mount -t tmpfs coopr-hidden "$d"; done; exec "$0" "$@"`,
				os.Args[0], "-test.run=^TestRemoteURIs$", "-test.v", "-test.count=1", "-test.timeout=15m")
			cmd.Env = append(os.Environ(), hiddenEnv+"=1", "COOPR_TEST_LIBVIRT_URI="+uri)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestRemoteURIs") {
				t.Fatalf("the node's life at %s with the pool's directory hidden: %v\n%s", uri, err, out)
			}
			t.Logf("%s", out)
		})
	}
}

const remotePool = "coopr-remote-test"

// dropPool removes the pool and its volumes.
func dropPool(t *testing.T, name string) {
	c, err := connect(context.Background(), DefaultURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	p, err := c.lv.StoragePoolLookupByName(name)
	if err != nil {
		return
	}
	if vols, _, err := c.lv.StoragePoolListAllVolumes(p, 1, 0); err == nil {
		for _, v := range vols {
			_ = c.lv.StorageVolDelete(v, 0)
		}
	}
	_ = c.lv.StoragePoolDestroy(p)
	_ = c.lv.StoragePoolDelete(p, 0)
	_ = c.lv.StoragePoolUndefine(p)
}

func remoteNodeLife(t *testing.T, uri string) {
	if entries, err := os.ReadDir("/var/lib/libvirt"); err != nil || len(entries) != 0 {
		t.Fatalf("/var/lib/libvirt is not hidden (%v, %d entries): run by TestRemoteURIs", err, len(entries))
	}
	e := newTestEnv(t)
	if e.cfg.URI != uri {
		t.Fatalf("the test env's libvirt is %s, want %s", e.cfg.URI, uri)
	}
	e.fields["pool"] = remotePool
	e.fields["poolPath"] = "/var/lib/libvirt/" + remotePool
	key := newClusterKey(t)
	cluster := fmt.Sprintf("lvremote%d", time.Now().UnixNano()%1e6)
	drv := New(e.cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	start := time.Now()
	r := drv.Run(ctx, e.task(key, cluster, "node-1", "remote1", "CREATE"), nil)
	if r.Status != 0 {
		t.Fatalf("CREATE at %s: %d %s", uri, r.Status, r.Message)
	}
	t.Logf("CREATE at %s (base image uploaded): %s", uri, time.Since(start).Round(time.Millisecond))
	deleted := false
	defer func() {
		if !deleted {
			drv.Run(context.Background(), withFacts(e.task(key, cluster, "node-1", "remote1", "DELETE"), r), nil)
		}
	}()
	name := r.Facts["providerId"].(string)
	c, err := connect(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	pool, err := c.lv.StoragePoolLookupByName(remotePool)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{diskVol(name), seedVol(name), baseName() + ".qcow2", readyMark(baseName())} {
		if _, ok, err := c.volume(pool, v); !ok || err != nil {
			t.Errorf("volume %s of pool %s after CREATE: %v %v", v, remotePool, ok, err)
		}
	}
	if files := stateFiles(t, e.cfg.StateDir); len(files) != 1 || files[0] != filepath.Join("locks", name+".lock") {
		t.Errorf("the driver's state dir after CREATE holds %v, want only the node's lock", files)
	}
	r2 := drv.Run(ctx, withFacts(e.task(key, cluster, "node-1", "remote1", "CONFIRM"), r), nil)
	if r2.Status != 0 {
		t.Fatalf("CONFIRM at %s: %d %s", uri, r2.Status, r2.Message)
	}
	if out := sshRun(t, r.IPAddresses["access_v4"], key, "hostname"); strings.TrimSpace(out) != "remote1" {
		t.Errorf("the node says its hostname is %q, want remote1", out)
	}
	rd := drv.Run(ctx, withFacts(e.task(key, cluster, "node-1", "remote1", "DELETE"), r), nil)
	if rd.Status != 0 {
		t.Fatalf("DELETE at %s: %d %s", uri, rd.Status, rd.Message)
	}
	deleted = true
	if _, err := c.lv.DomainLookupByName(name); !notFound(err, golibvirt.ErrNoDomain) {
		t.Errorf("domain %s after DELETE: %v", name, err)
	}
	for _, v := range []string{diskVol(name), seedVol(name)} {
		if _, ok, _ := c.volume(pool, v); ok {
			t.Errorf("volume %s is still there after DELETE", v)
		}
	}
	if files := stateFiles(t, e.cfg.StateDir); len(files) != 0 {
		t.Errorf("the driver's state dir after DELETE holds %v, want nothing", files)
	}
	// Nothing was written where the pool lies on the libvirt host.
	if entries, err := os.ReadDir("/var/lib/libvirt"); err != nil || len(entries) != 0 {
		t.Errorf("the driver wrote into /var/lib/libvirt on the agent's side: %v %v", entries, err)
	}
}

// stateFiles are the regular files under dir, relative to it.
func stateFiles(t *testing.T, dir string) []string {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUnreachableHint(t *testing.T) {
	m := &nodeMeta{Network: "coopr-c-0123456789"}
	base := fmt.Errorf("wait: %w", context.DeadlineExceeded)
	for _, tc := range []struct{ uri, host string }{
		{"qemu+ssh://root@kvm1.example.com:2222/system?keyfile=/k", "kvm1.example.com"},
		{"qemu+tcp://10.1.2.3/system", "10.1.2.3"},
	} {
		err := unreachableHint(base, m, tc.uri)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "route network coopr-c-0123456789's subnet to "+tc.host+" ") ||
			!strings.Contains(err.Error(), "forward to route") {
			t.Errorf("%s: %v", tc.uri, err)
		}
	}
}

// TestUploadImage: `coopr libvirt image --uri` puts the base image into
// the pool of a remote libvirt (defining the pool), once: a second call
// finds it.
func TestUploadImage(t *testing.T) {
	needLibvirt(t, tcpURI)
	imageDir := os.Getenv("COOPR_LIBVIRT_IMAGE_DIR")
	if imageDir == "" {
		imageDir = DefaultImageDir
	}
	if _, err := os.Stat(filepath.Dir(imageFiles(imageDir).Disk)); err != nil {
		t.Skipf("the base image is not built here (%v): the VM tests build it", err)
	}
	const pool = "coopr-upload-test"
	dropPool(t, pool)
	t.Cleanup(func() { dropPool(t, pool) })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	o := UploadOptions{URI: tcpURI, Pool: pool, PoolPath: "/var/lib/libvirt/" + pool, ImageDir: imageDir}
	start := time.Now()
	path, err := UploadImage(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uploaded in %s", time.Since(start).Round(time.Millisecond))
	if want := "/var/lib/libvirt/" + pool + "/" + baseName() + ".qcow2"; path != want {
		t.Errorf("UploadImage: %s, want %s", path, want)
	}
	c, err := connect(ctx, tcpURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	p, err := c.lv.StoragePoolLookupByName(pool)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := c.volume(p, baseName()+".qcow2")
	if err != nil {
		t.Fatal(err)
	}
	_, _, alloc, err := c.lv.StorageVolGetInfo(v)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(imageFiles(imageDir).Disk)
	if err != nil {
		t.Fatal(err)
	}
	if alloc < uint64(st.Size())/2 {
		t.Errorf("the uploaded disk holds %d bytes, the image %d", alloc, st.Size())
	}
	again, err := UploadImage(ctx, o)
	if err != nil || again != path {
		t.Errorf("UploadImage again: %s %v, want %s", again, err, path)
	}
}
