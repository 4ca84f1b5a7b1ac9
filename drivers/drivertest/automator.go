package drivertest

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// AutomatorEnv is what the automator suite runs against: a cluster and the
// action fields that make the driver under test do each thing the suite
// checks.
type AutomatorEnv struct {
	// Cluster's node 0 runs the actions.
	Cluster *Cluster
	// Type is the action type the driver is registered under.
	Type string
	// Service names the service; default "svc".
	Service string
	// Echo returns fields of an action that writes line to stdout.
	Echo func(line string) map[string]string
	// Fail fails (exits non-zero, say).
	Fail map[string]string
	// Sleep runs for more than a minute.
	Sleep map[string]string
	// Start starts a long-running process for the service and Stop stops
	// it; both must converge.
	Start, Stop map[string]string
	// Running tells, by looking at the host itself, whether what Start
	// started runs.
	Running func(t testing.TB, h *sshdtest.Host) bool
}

// Automator runs the conformance suite of role automator
// (docs/operations.md#idempotency, docs/task-protocol.md#progress-and-results)
// against drv. It checks: output is streamed line by line; START starts the
// service and START again succeeds; STOP stops it and STOP again succeeds; a
// failing action is a failure with a message; ending ctx stops a running
// action promptly with a failure; a host showing another key than the pinned
// one is a non-retryable failure naming both fingerprints, reported
// unreachable; an unreachable host is a retryable failure, reported
// unreachable; STOP on a node whose sshd stopped is reported unreachable
// within seconds. It stops the sshd of the cluster's last node.
func Automator(t *testing.T, drv drivers.Driver, env AutomatorEnv) {
	t.Helper()
	c := env.Cluster
	h := c.Hosts[0]
	if env.Service == "" {
		env.Service = "svc"
	}
	task := func(action string, fields map[string]string) *drivers.Task {
		tk := c.Task(action, 0)
		tk.Service = &drivers.Service{Name: env.Service}
		tk.Service.Action.Type = env.Type
		tk.Service.Action.Fields = fields
		return tk
	}

	t.Run("output is streamed", func(t *testing.T) {
		line := "coopr-echo-" + randHex()
		r, out, _ := runDriver(t, drv, task("CONFIGURE", env.Echo(line)), TaskTimeout)
		if r.Status != 0 {
			t.Fatalf("echo: status %d: %s", r.Status, r.Message)
		}
		if !slices.Contains(out.Lines("stdout"), line) {
			t.Fatalf("stdout %q lacks the line %q", out.Lines("stdout"), line)
		}
	})

	t.Run("start and stop converge", func(t *testing.T) {
		t.Cleanup(func() {
			if env.Running(t, h) {
				runDriver(t, drv, task("STOP", env.Stop), TaskTimeout)
			}
		})
		for i := range 2 {
			r, _, _ := runDriver(t, drv, task("START", env.Start), TaskTimeout)
			if r.Status != 0 {
				t.Fatalf("START #%d: status %d: %s", i+1, r.Status, r.Message)
			}
			if !env.Running(t, h) {
				t.Fatalf("START #%d succeeded but the service does not run", i+1)
			}
		}
		for i := range 2 {
			r, _, _ := runDriver(t, drv, task("STOP", env.Stop), TaskTimeout)
			if r.Status != 0 {
				t.Fatalf("STOP #%d: status %d: %s", i+1, r.Status, r.Message)
			}
			if env.Running(t, h) {
				t.Fatalf("STOP #%d succeeded but the service still runs", i+1)
			}
		}
	})

	t.Run("a failing action fails with a message", func(t *testing.T) {
		r, _, _ := runDriver(t, drv, task("INSTALL", env.Fail), TaskTimeout)
		if r.Status == 0 {
			t.Fatal("a failing action succeeded")
		}
		if r.Message == "" {
			t.Fatal("failure without a message")
		}
	})

	t.Run("ending ctx stops the action promptly", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		r := drv.Run(ctx, task("INSTALL", env.Sleep), &Recorder{})
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("returned %v after start, 1s after which ctx ended", d)
		}
		if r.Status == 0 {
			t.Fatal("a cancelled action succeeded")
		}
	})

	t.Run("another host key is refused", func(t *testing.T) {
		other := newPublicKey(t)
		tk := task("CONFIGURE", env.Echo("x"))
		tk.Node.Facts["node"] = map[string]any{"hostKeys": []any{remote.AuthorizedKey(other)}}
		r, _, _ := runDriver(t, drv, tk, TaskTimeout)
		checkMismatch(t, "CONFIGURE", r, ssh.FingerprintSHA256(other), ssh.FingerprintSHA256(h.HostKey()))
	})

	t.Run("an unreachable host is a retryable failure", func(t *testing.T) {
		tk := task("CONFIGURE", env.Echo("x"))
		vm := tk.Node.Facts["vm"].(map[string]any)
		vm["sshHost"], vm["sshPort"] = "127.0.0.1", float64(closedPort(t))
		r, _, took := runDriver(t, drv, tk, 5*time.Second)
		if r.Status == 0 {
			t.Fatal("an action on an unreachable host succeeded")
		}
		if r.Retryable != nil && !*r.Retryable {
			t.Errorf("unreachable host is not retryable: %s", r.Message)
		}
		if !r.Unreachable {
			t.Errorf("unreachable host not reported unreachable: %s", r.Message)
		}
		if took > 8*time.Second {
			t.Errorf("took %v with a 5s ctx", took)
		}
	})

	t.Run("stop on a node whose sshd stopped", func(t *testing.T) {
		last := len(c.Nodes) - 1
		onLast := func(action string, fields map[string]string) *drivers.Task {
			tk := task(action, fields)
			n := c.Task(action, last).Node
			tk.Node = n
			return tk
		}
		// Reached first, so that the driver may hold a connection.
		if r, _, _ := runDriver(t, drv, onLast("CONFIGURE", env.Echo("x")), TaskTimeout); r.Status != 0 {
			t.Fatalf("CONFIGURE: status %d: %s", r.Status, r.Message)
		}
		c.Hosts[last].Stop()
		checkGone(t, drv, onLast("STOP", env.Stop), c.Hosts[last].Addr())
	})
}

// closedPort is a loopback port nothing listens on (it just stopped).
func closedPort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}
