package libvirt

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/drivers"
)

func TestPickDomainType(t *testing.T) {
	for _, tc := range []struct {
		caps, accel string
		want        string
		err         string // part of the refusal
		terminal    bool
	}{
		{"caps-kvm.xml", AccelKVM, "kvm", "", false},
		{"caps-kvm.xml", AccelAuto, "kvm", "", false},
		{"caps-kvm.xml", AccelTCG, "qemu", "", false},
		{"caps-tcg.xml", AccelKVM, "", "offers no KVM", true},
		{"caps-tcg.xml", AccelAuto, "qemu", "", false},
		{"caps-tcg.xml", AccelTCG, "qemu", "", false},
		{"caps-none.xml", AccelAuto, "", "apt-get install qemu-system-x86", true},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.caps))
		if err != nil {
			t.Fatal(err)
		}
		got, err := pickDomainType(string(b), tc.accel, "qemu:///system")
		if tc.err != "" {
			r := failure(statusNothingCreated, "accelerator", err)
			if err == nil || !strings.Contains(err.Error(), tc.err) || (r.Retryable != nil) != tc.terminal {
				t.Errorf("%s %s: %v (retryable %v), want a refusal saying %q", tc.caps, tc.accel, err, r.Retryable == nil, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %s: %q %v, want %q", tc.caps, tc.accel, got, err, tc.want)
		}
	}
}

func TestSettings(t *testing.T) {
	d := New(Config{StateDir: "/tmp/st"}, nil).(*driver)
	for _, tc := range []struct {
		name   string
		fields map[string]any
		err    string
		check  func(t *testing.T, s settings)
	}{
		{"defaults", map[string]any{}, "", func(t *testing.T, s settings) {
			if s.URI != DefaultURI || s.Accelerator != AccelKVM || s.Pool != DefaultPool || s.Network != DefaultNetwork || s.Subnet.String() != DefaultSubnet {
				t.Errorf("defaults: %+v", s)
			}
			if f, _ := s.flavorOf("small"); f != (flavor{1, 512}) {
				t.Errorf("small: %+v", f)
			}
		}},
		{"fields", map[string]any{"uri": "qemu+ssh://root@kvm1/system", "accelerator": "auto", "subnet": "10.9.8.7/24", "flavors": "small=2,768; big=4,8192"}, "", func(t *testing.T, s settings) {
			if s.URI != "qemu+ssh://root@kvm1/system" || s.Accelerator != AccelAuto || s.Subnet.String() != "10.9.8.0/24" {
				t.Errorf("fields: %+v", s)
			}
			if f, _ := s.flavorOf("small"); f != (flavor{2, 768}) {
				t.Errorf("small overridden: %+v", f)
			}
			if f, _ := s.flavorOf("big"); f != (flavor{4, 8192}) {
				t.Errorf("big: %+v", f)
			}
			if _, err := s.flavorOf("huge"); err == nil || !strings.Contains(err.Error(), "big, large, medium, small") {
				t.Errorf("unknown flavor: %v", err)
			}
		}},
		{"bad accelerator", map[string]any{"accelerator": "xen"}, "accelerator \"xen\"", nil},
		{"bad subnet", map[string]any{"subnet": "10.0.0.0/30"}, "subnet", nil},
		{"ipv6 subnet", map[string]any{"subnet": "fd00::/64"}, "subnet", nil},
		{"bad flavors", map[string]any{"flavors": "small=one,512"}, "flavors", nil},
		{"tiny flavor", map[string]any{"flavors": "small=1,64"}, "flavors", nil},
		{"not a string", map[string]any{"pool": 3.0}, "provider field pool", nil},
		{"bad pool", map[string]any{"pool": "a/b"}, "pool", nil},
		{"relative pool path", map[string]any{"poolPath": "images"}, "poolPath", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := &drivers.Task{}
			task.Provider.Provisioner = tc.fields
			s, err := d.settingsFor(task)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

// TestRefusesWithoutLibvirt: a CREATE where libvirtd is not installed or
// not running fails at once, without retry, saying what to install or
// start.
func TestRefusesWithoutLibvirt(t *testing.T) {
	key := newClusterKey(t)
	for _, tc := range []struct {
		name string
		path string // PATH: no libvirtd on it
		want string
	}{
		{"not installed", t.TempDir(), "apt-get install libvirt-daemon-system qemu-system-x86"},
		{"not running", os.Getenv("PATH"), "libvirtd -d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not running" {
				if _, err := exec.LookPath("libvirtd"); err != nil {
					t.Skip("libvirtd is not installed here")
				}
			}
			t.Setenv("PATH", tc.path)
			d := New(Config{StateDir: t.TempDir(), ImageDir: t.TempDir()}, nil)
			task := testEnv{fields: map[string]any{"uri": "qemu:///system?socket=" + filepath.Join(t.TempDir(), "no-libvirt-sock")}}.
				task(key, "c1", "n1", "n1", "CREATE")
			r := d.Run(context.Background(), task, nil)
			if r.Status != statusNothingCreated || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, tc.want) {
				t.Errorf("CREATE: status %d retryable %v %q, want %d, not retryable, naming %q", r.Status, r.Retryable == nil, r.Message, statusNothingCreated, tc.want)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	a := nodeName("/var/lib/coopr/libvirt/state", "00000001", "n1")
	if !nameRE.MatchString(a) {
		t.Errorf("%q does not match %s", a, nameRE)
	}
	for _, other := range []string{
		nodeName("/var/lib/coopr/libvirt/state/", "00000001", "n2"),
		nodeName("/tmp/other", "00000001", "n1"),
		nodeName("/var/lib/coopr/libvirt/state", "00000002", "n1"),
	} {
		if other == a {
			t.Errorf("%q names two nodes", a)
		}
	}
	if b := nodeName("/var/lib/coopr/libvirt/state/", "00000001", "n1"); b != a {
		t.Errorf("the same node has two names: %q, %q", a, b)
	}
	if m := macOf(a); m != macOf(a) || !strings.HasPrefix(m, "52:54:00:") || len(m) != 17 {
		t.Errorf("mac %q", m)
	}
}

func TestFailureRetryable(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retryable bool
	}{
		{errors.New("connection reset"), true},
		{&missingError{what: []string{"genisoimage"}, pkgs: []string{"genisoimage"}}, false},
		{terminal("domain x belongs to another cluster"), false},
	} {
		r := failure(statusFailed, "x", tc.err)
		if got := r.Retryable == nil || *r.Retryable; got != tc.retryable {
			t.Errorf("%v: retryable %v, want %v", tc.err, got, tc.retryable)
		}
	}
}

func TestCapacity(t *testing.T) {
	for _, tc := range []struct {
		fields     map[string]any
		network    string
		key        string
		size       int
		perCluster bool
		clusters   int
		clusterKey string
		err        bool
	}{
		{fields: map[string]any{}, key: "libvirt qemu:///system network coopr", size: 253},
		{fields: map[string]any{"subnet": "10.5.0.0/28", "network": "lab", "uri": "qemu+ssh://h/system"}, network: "hosts",
			key: "libvirt qemu+ssh://h/system network lab", size: 13},
		{fields: map[string]any{"subnet": "nope"}, err: true},
		// Cluster networks: a subnet of the range each, whatever subnet says.
		{fields: map[string]any{"subnet": "10.5.0.0/28"}, network: "libvirt",
			key: "cluster subnet /24", size: 253, perCluster: true, clusters: 256, clusterKey: "libvirt qemu:///system subnets of 10.236.0.0/16"},
		{fields: map[string]any{"clusterRange": "10.9.0.1/26", "clusterPrefix": float64(28), "uri": "qemu+ssh://h/system"}, network: "libvirt",
			key: "cluster subnet /28", size: 13, perCluster: true, clusters: 4, clusterKey: "libvirt qemu+ssh://h/system subnets of 10.9.0.0/26"},
		{fields: map[string]any{"clusterRange": "10.9.0.0/26", "clusterPrefix": "24"}, network: "libvirt", err: true},
		{fields: map[string]any{"clusterRange": "10.9.0.0/26", "clusterPrefix": "24"}, network: "hosts", key: "libvirt qemu:///system network coopr", size: 253},
	} {
		c, err := Capacity(tc.fields, tc.network)
		if tc.err {
			if err == nil {
				t.Errorf("%v %s: no error", tc.fields, tc.network)
			}
			continue
		}
		if err != nil || len(c.Groups) != 1 || c.Groups[0].Key != tc.key || c.Nodes() != tc.size ||
			c.PerCluster != tc.perCluster || c.Clusters != tc.clusters || c.ClusterKey != tc.clusterKey {
			t.Errorf("%v %s: %+v %v, want key %q size %d, per cluster %v, %d clusters keyed %q",
				tc.fields, tc.network, c, err, tc.key, tc.size, tc.perCluster, tc.clusters, tc.clusterKey)
		}
	}
}

// A build that fails (here: stopped before debootstrap ends) says it is
// building, leaves neither the image nor its temporary tree, and the next
// build first removes what a crashed one left.
func TestImageBuildFailureLeavesNothing(t *testing.T) {
	if err := needTools(tool{"debootstrap", "debootstrap"}, tool{"mkfs.ext4", "e2fsprogs"}, tool{"qemu-img", "qemu-utils"}); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	img := imageFiles(dir)
	crashed := filepath.Join(dir, ".tmp-"+img.Name+"-crashed")
	if err := os.MkdirAll(filepath.Join(crashed, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var logs bytes.Buffer
	_, err := EnsureImage(ctx, dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err == nil || !strings.Contains(err.Error(), "debootstrap") {
		t.Fatalf("EnsureImage with its context ended: %v, want a debootstrap failure", err)
	}
	for _, want := range []string{"not cached: building it, or waiting", "removing a crashed image build", "building the libvirt base image"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q does not say %q", logs.String(), want)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"+img.Name+"*"))
	for _, l := range left {
		if !strings.HasSuffix(l, ".lock") {
			t.Errorf("the failed build left %s", l)
		}
	}
	if _, err := os.Stat(filepath.Dir(img.Disk)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("image dir after a failed build: %v", err)
	}
}
