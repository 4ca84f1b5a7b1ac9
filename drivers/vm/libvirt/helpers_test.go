package libvirt

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
)

// clusterKey is a cluster's ssh key pair as the server makes it.
type clusterKey struct {
	private, public string
}

func newClusterKey(t testing.TB) clusterKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "coopr-test")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return clusterKey{private: string(pem.EncodeToMemory(block)), public: string(ssh.MarshalAuthorizedKey(signer.PublicKey()))}
}

// testAccel is the accelerator VM tests ask for: tcg unless
// COOPR_TEST_LIBVIRT_ACCEL says otherwise (kvm or auto where KVM works:
// several times faster).
func testAccel() string {
	if a := os.Getenv("COOPR_TEST_LIBVIRT_ACCEL"); a != "" {
		return a
	}
	return AccelTCG
}

// testURI is the libvirt the VM tests use: COOPR_TEST_LIBVIRT_URI (such
// as qemu+tcp://127.0.0.1/system, to run them all as against a remote
// libvirt), else the local one.
func testURI() string {
	if u := os.Getenv("COOPR_TEST_LIBVIRT_URI"); u != "" {
		return u
	}
	return DefaultURI
}

var (
	imageOnce sync.Once
	imageErr  error
)

// testEnv is one test's libvirt: its own state dir (so its domains are
// its own), network and subnet; the pool is shared so the base image is
// uploaded once.
type testEnv struct {
	cfg    Config
	fields map[string]any
}

// newTestEnv skips, in one line, when libvirt cannot be reached, and
// builds the base image once per test binary (a few minutes the first
// time on a host, cached after).
func newTestEnv(t testing.TB) testEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("libvirt vm tests need root (they build the base image and define domains on qemu:///system)")
	}
	uri := testURI()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	c, err := connect(ctx, uri, nil)
	cancel()
	if err != nil {
		t.Skipf("libvirt is not usable here (%v): scripts/test-prereqs installs and starts it", err)
	}
	_, err = c.domainType(testAccel())
	c.close()
	if err != nil {
		t.Skipf("libvirt cannot run the test VMs (%v)", err)
	}
	imageDir := os.Getenv("COOPR_LIBVIRT_IMAGE_DIR")
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		start := time.Now()
		_, imageErr = EnsureImage(ctx, imageDir, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		t.Logf("base image ready in %s", time.Since(start).Round(time.Millisecond))
	})
	if imageErr != nil {
		t.Fatalf("base image: %v", imageErr)
	}
	n := os.Getpid()%150 + 100
	e := testEnv{
		cfg: Config{URI: uri, StateDir: t.TempDir(), ImageDir: imageDir},
		fields: map[string]any{
			"accelerator": testAccel(),
			"pool":        "coopr-test",
			"poolPath":    "/var/lib/libvirt/coopr-test",
			"network":     fmt.Sprintf("coopr-test%d", n),
			"subnet":      fmt.Sprintf("10.235.%d.0/24", n),
		},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := Cleanup(ctx, CleanupOptions{URI: e.cfg.URI, StateDir: e.cfg.StateDir, All: true}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return e
}

// task is a payload for one node of cluster, as the server sends it.
func (e testEnv) task(key clusterKey, cluster, nodeID, hostname, action string) *drivers.Task {
	t := &drivers.Task{TaskID: cluster + "-001-001", JobID: cluster + "-001", ClusterID: cluster, TaskName: action, Attempt: 1}
	t.Cluster.ID = cluster
	t.Provider.Name = "libvirt"
	t.Provider.ProviderType = "libvirt"
	t.Provider.Provisioner = map[string]any{}
	for k, v := range e.fields {
		t.Provider.Provisioner[k] = v
	}
	t.Node = &drivers.Node{ID: nodeID, Hostname: hostname, SSHUser: "root", Flavor: "small", Image: BaseImage, Facts: map[string]any{}}
	t.Secrets = map[string]map[string]any{"ssh": {"privateKey": key.private, "publicKey": key.public}}
	return t
}

// withFacts sets the vm facts a task carries, as the server merged them.
func withFacts(t *drivers.Task, r drivers.Result) *drivers.Task {
	t.Node.Facts["vm"] = r.Facts
	if r.IPAddresses != nil {
		t.Node.IPAddresses = r.IPAddresses
	}
	return t
}

// sshRun runs cmd as root on addr with the cluster key and returns its
// output.
func sshRun(t testing.TB, addr string, key clusterKey, cmd string) string {
	t.Helper()
	signer, err := ssh.ParsePrivateKey([]byte(key.private))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", addr+":22", &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("ssh %s: %v", addr, err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("ssh %s %q: %v: %s", addr, cmd, err, out)
	}
	return string(out)
}
