package drivertest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// TaskTimeout bounds each task the node, network and automator suites run.
var TaskTimeout = time.Minute

// NodeEnv is what the node suite runs against.
type NodeEnv struct {
	// Cluster's node 0 is bootstrapped. Its host is stopped and started
	// again during the suite, and its facts are rewritten.
	Cluster *Cluster
}

// Node runs the conformance suite of role node (BOOTSTRAP,
// docs/operations.md#idempotency, docs/task-protocol.md#agents-and-slots,
// docs/drivers.md) against drv. It checks: first contact pins the key the host
// shows (node.hostKeys); the hostname is set (kernel and /etc/hostname); facts
// os, arch, cpus, memoryMB, disks, interfaces and hostname are reported,
// JSON-clean and true of the host; BOOTSTRAP again succeeds and keeps the pin;
// a vm.hostKeys pin is verified and kept; a host showing another key is a
// non-retryable failure naming both fingerprints, with the pin left as it was;
// BOOTSTRAP waits for a host whose sshd is not up yet; when ctx ends while
// waiting it returns promptly with a failure.
func Node(t *testing.T, drv drivers.Driver, env NodeEnv) {
	t.Helper()
	c := env.Cluster
	h := c.Hosts[0]
	node := c.Nodes[0]

	t.Run("first contact pins the host key", func(t *testing.T) {
		r, out, _ := runDriver(t, drv, c.Task("BOOTSTRAP", 0), TaskTimeout)
		if r.Status != 0 {
			t.Fatalf("BOOTSTRAP: status %d: %s", r.Status, r.Message)
		}
		if got := keysOf(r.Facts["hostKeys"]); !slices.Equal(got, []string{h.HostKeyLine()}) {
			t.Fatalf("node.hostKeys %q, want the host's key %q", got, h.HostKeyLine())
		}
		if len(out.Lines("status")) == 0 {
			t.Error("no status line written")
		}
		c.Merge(0, "node", r)
	})
	if t.Failed() {
		return
	}

	t.Run("hostname and facts", func(t *testing.T) {
		if got := strings.TrimSpace(h.Exec(t, "cat /proc/sys/kernel/hostname")); got != node.Hostname {
			t.Errorf("kernel hostname %q, want %q", got, node.Hostname)
		}
		if got := strings.TrimSpace(h.Exec(t, "cat /etc/hostname")); got != node.Hostname {
			t.Errorf("/etc/hostname %q, want %q", got, node.Hostname)
		}
		facts, _ := c.Nodes[0].Facts["node"].(map[string]any) // JSON-decoded by Merge
		if facts["hostname"] != node.Hostname {
			t.Errorf("node.hostname %v, want %q", facts["hostname"], node.Hostname)
		}
		if want := strings.TrimSpace(h.Exec(t, "uname -m")); facts["arch"] != want {
			t.Errorf("node.arch %v, want %q", facts["arch"], want)
		}
		for _, k := range []string{"cpus", "memoryMB"} {
			if n, ok := facts[k].(float64); !ok || n < 1 || n != float64(int(n)) {
				t.Errorf("node.%s %v, want a positive integer", k, facts[k])
			}
		}
		osf, _ := facts["os"].(map[string]any)
		if want := strings.TrimSpace(h.Exec(t, ". /etc/os-release; echo $ID")); osf["id"] != want {
			t.Errorf("node.os %v, want id %q", facts["os"], want)
		}
		if _, ok := facts["disks"].([]any); !ok {
			t.Errorf("node.disks %v (%T), want a list", facts["disks"], facts["disks"])
		}
		ifaces, _ := facts["interfaces"].([]any)
		if !slices.ContainsFunc(ifaces, func(v any) bool {
			m, _ := v.(map[string]any)
			return m["name"] == "lo" && slices.Contains(m["addresses"].([]any), any("127.0.0.1/8"))
		}) {
			t.Errorf("node.interfaces %v, want lo with 127.0.0.1/8", facts["interfaces"])
		}
	})

	t.Run("bootstrap again keeps the pin", func(t *testing.T) {
		r, _, _ := runDriver(t, drv, c.Task("BOOTSTRAP", 0), TaskTimeout)
		if r.Status != 0 {
			t.Fatalf("BOOTSTRAP again: status %d: %s", r.Status, r.Message)
		}
		if got := keysOf(r.Facts["hostKeys"]); !slices.Equal(got, []string{h.HostKeyLine()}) {
			t.Fatalf("node.hostKeys %q changed", got)
		}
	})

	t.Run("a vm pin is verified and kept", func(t *testing.T) {
		task := c.Task("BOOTSTRAP", 0)
		delete(task.Node.Facts, "node")
		task.Node.Facts["vm"].(map[string]any)["hostKeys"] = []any{h.HostKeyLine()}
		r, _, _ := runDriver(t, drv, task, TaskTimeout)
		if r.Status != 0 {
			t.Fatalf("BOOTSTRAP: status %d: %s", r.Status, r.Message)
		}
		if got := keysOf(r.Facts["hostKeys"]); !slices.Equal(got, []string{h.HostKeyLine()}) {
			t.Fatalf("node.hostKeys %q, want the vm pin", got)
		}
	})

	t.Run("another host key is refused", func(t *testing.T) {
		other := newPublicKey(t)
		task := c.Task("BOOTSTRAP", 0)
		task.Node.Facts["node"].(map[string]any)["hostKeys"] = []any{remote.AuthorizedKey(other)}
		r, _, _ := runDriver(t, drv, task, TaskTimeout)
		checkMismatch(t, "BOOTSTRAP", r, ssh.FingerprintSHA256(other), ssh.FingerprintSHA256(h.HostKey()))
		if keys, ok := r.Facts["hostKeys"]; ok && !slices.Equal(keysOf(keys), []string{remote.AuthorizedKey(other)}) {
			t.Errorf("a refused host replaced the pin: node.hostKeys %q", keysOf(keys))
		}
	})

	t.Run("waits for ssh", func(t *testing.T) {
		h.Stop()
		res := make(chan drivers.Result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), TaskTimeout)
			defer cancel()
			res <- drv.Run(ctx, c.Task("BOOTSTRAP", 0), &Recorder{})
		}()
		time.Sleep(1500 * time.Millisecond)
		h.Restart(t)
		if r := <-res; r.Status != 0 {
			t.Fatalf("BOOTSTRAP while sshd came up: status %d: %s", r.Status, r.Message)
		}
	})

	t.Run("ctx ends the wait", func(t *testing.T) {
		h.Stop()
		defer h.Restart(t)
		r, _, took := runDriver(t, drv, c.Task("BOOTSTRAP", 0), time.Second)
		if r.Status == 0 {
			t.Fatal("BOOTSTRAP of a host without sshd succeeded")
		}
		if took > 4*time.Second {
			t.Fatalf("returned %v after a 1s ctx", took)
		}
		if r.Message == "" {
			t.Error("failure without a message")
		}
	})
}

// runDriver runs one task with a fresh Recorder under a timeout.
func runDriver(t testing.TB, drv drivers.Driver, task *drivers.Task, timeout time.Duration) (drivers.Result, *Recorder, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := &Recorder{}
	start := time.Now()
	r := drv.Run(ctx, task, out)
	took := time.Since(start)
	t.Logf("%s: status %d (unreachable %v) in %s: %s", task.TaskName, r.Status, r.Unreachable, took.Round(time.Millisecond), r.Message)
	if _, err := json.Marshal(r.Facts); err != nil {
		t.Errorf("%s: facts are not JSON: %v", task.TaskName, err)
	}
	return r, out, took
}

// checkMismatch checks a result is the non-retryable failure of a host key
// mismatch naming both fingerprints, reported unreachable: what answers is
// not the node.
func checkMismatch(t testing.TB, action string, r drivers.Result, pinned, presented string) {
	t.Helper()
	if r.Status == 0 {
		t.Fatalf("%s against a host with another key succeeded", action)
	}
	if r.Retryable == nil || *r.Retryable {
		t.Errorf("%s: host key mismatch is retryable", action)
	}
	if !r.Unreachable {
		t.Errorf("%s: host key mismatch is not reported unreachable", action)
	}
	for _, s := range []string{"host key mismatch", pinned, presented} {
		if !strings.Contains(r.Message, s) {
			t.Errorf("%s: message %q lacks %q", action, r.Message, s)
		}
	}
}

func keysOf(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		var out []string
		for _, e := range v {
			s, _ := e.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

func newPublicKey(t testing.TB) ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
