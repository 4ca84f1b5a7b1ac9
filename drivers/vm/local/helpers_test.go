package local

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
)

// The helper mode runs one task in a child process and prints its result:
// to show a container outliving the process that created it, and to run
// the driver as another user or without tools.
const helperEnv = "COOPR_LOCAL_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

type helperInput struct {
	Config Config        `json:"config"`
	Task   *drivers.Task `json:"task"`
}

type helperOutput struct {
	Status      int               `json:"status"`
	Message     string            `json:"message"`
	Retryable   bool              `json:"retryable"`
	IPAddresses map[string]string `json:"ipaddresses"`
	Facts       map[string]any    `json:"facts"`
}

func helperMain() int {
	var in helperInput
	if err := json.Unmarshal([]byte(os.Getenv(helperEnv)), &in); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	r := New(in.Config, nil).Run(context.Background(), in.Task, nil)
	out := helperOutput{Status: r.Status, Message: r.Message, Retryable: r.Retryable == nil || *r.Retryable,
		IPAddresses: r.IPAddresses, Facts: r.Facts}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 2
	}
	return 0
}

// runHelper runs task in a child process; setup adjusts the command (user,
// environment).
func runHelper(t *testing.T, cfg Config, task *drivers.Task, setup func(*exec.Cmd)) helperOutput {
	t.Helper()
	in, err := json.Marshal(helperInput{Config: cfg, Task: task})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(in))
	if setup != nil {
		setup(cmd)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, stderr.String())
	}
	var out helperOutput
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("helper output %q: %v", b, err)
	}
	return out
}

// clusterKey is a cluster's ssh key pair as the server makes it.
type clusterKey struct {
	private, public string
	signer          ssh.Signer
}

func newClusterKey(t *testing.T) clusterKey {
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
	return clusterKey{private: string(pem.EncodeToMemory(block)), public: string(ssh.MarshalAuthorizedKey(signer.PublicKey())), signer: signer}
}

var (
	imageOnce sync.Once
	imageErr  error
)

// testConfig gives a test its own state dir, bridge and subnet, so tests
// and a `coopr dev` on the same host do not meet. The image is the shared
// cache (COOPR_LOCAL_IMAGE_DIR or the default), built once (~80 s).
func testConfig(t *testing.T) Config {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the local vm driver needs root")
	}
	if err := preflight(); err != nil {
		t.Fatalf("host not ready: %v", err)
	}
	imageDir := os.Getenv("COOPR_LOCAL_IMAGE_DIR")
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		start := time.Now()
		_, imageErr = EnsureImage(ctx, imageDir, slog.New(slog.NewTextHandler(os.Stderr, nil)))
		t.Logf("base image ready in %s", time.Since(start).Round(time.Millisecond))
	})
	if imageErr != nil {
		t.Fatalf("base image: %v", imageErr)
	}
	// The pid spreads concurrent test binaries over bridges and subnets.
	n := os.Getpid()%150 + 100
	cfg := Config{
		StateDir: t.TempDir(),
		ImageDir: imageDir,
		Subnet:   fmt.Sprintf("10.231.%d.0/24", n),
		// Eight clusters of 29 nodes.
		ClusterPrefix: 27,
	}
	t.Cleanup(func() {
		// Whatever a failed test left: nodes, veths, the bridge.
		if err := Cleanup(context.Background(), cfg.StateDir, nil, true); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return cfg
}

// newTask is a payload for one node of cluster, as the server sends it.
func newTask(key clusterKey, cluster, nodeID, hostname, action string) *drivers.Task {
	t := &drivers.Task{TaskID: cluster + "-001-001", JobID: cluster + "-001", ClusterID: cluster, TaskName: action, Attempt: 1}
	t.Cluster.ID = cluster
	t.Provider.Name = "local"
	t.Provider.ProviderType = "local"
	t.Provider.Provisioner = map[string]any{}
	t.Node = &drivers.Node{ID: nodeID, Hostname: hostname, SSHUser: "root", Facts: map[string]any{}}
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

type recOutput struct {
	mu    sync.Mutex
	lines []string
}

func (o *recOutput) Stdout(l string) { o.mu.Lock(); o.lines = append(o.lines, l); o.mu.Unlock() }
func (o *recOutput) Stderr(l string) { o.mu.Lock(); o.lines = append(o.lines, l); o.mu.Unlock() }
func (o *recOutput) Status(l string, _ float64) {
	o.mu.Lock()
	o.lines = append(o.lines, l)
	o.mu.Unlock()
}
