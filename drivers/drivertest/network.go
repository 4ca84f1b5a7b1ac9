package drivertest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// NetworkEnv is what the network suite runs against.
type NetworkEnv struct {
	// Cluster has two nodes or more; all are configured and unconfigured.
	Cluster *Cluster
	// Exists, for drivers whose NETWORK_ALLOCATE makes something, tells
	// whether the cluster's network is there: the suite wants it there
	// after NETWORK_ALLOCATE and gone after NETWORK_RELEASE.
	Exists func(t testing.TB) bool
}

// Network runs the conformance suite of role network (docs/planner.md#actions,
// docs/operations.md#idempotency) against drv. It checks: NETWORK_ALLOCATE
// (cluster-scoped) succeeds and succeeds again, and (with env.Exists) the
// network is there; after NETWORK_CONFIGURE of
// every node, each node resolves every node's hostname to one of that node's
// addresses; configuring again changes nothing; NETWORK_UNCONFIGURE succeeds,
// twice, and the names no longer resolve; NETWORK_UNCONFIGURE of a node never
// given an address succeeds; NETWORK_RELEASE succeeds twice and (with
// env.Exists) the network is gone; a host showing
// another key than the pinned one is a non-retryable failure naming both
// fingerprints, reported unreachable; an unreachable node is a retryable
// failure within the task's time, reported unreachable; NETWORK_UNCONFIGURE
// of a node whose sshd stopped is reported unreachable within seconds. It
// stops the sshd of the cluster's last node.
func Network(t *testing.T, drv drivers.Driver, env NetworkEnv) {
	t.Helper()
	c := env.Cluster
	if len(c.Nodes) < 2 {
		t.Fatal("the network suite needs a cluster of two nodes or more")
	}
	ok := func(t *testing.T, action string, i int) {
		t.Helper()
		r, _, _ := runDriver(t, drv, c.Task(action, i), TaskTimeout)
		if r.Status != 0 {
			t.Fatalf("%s of node %d: status %d: %s", action, i, r.Status, r.Message)
		}
	}
	// resolved is what node i resolves each node's hostname to ("" for
	// nothing), looking at the host itself.
	resolved := func(t *testing.T, i int) []string {
		var out []string
		for _, n := range c.Nodes {
			got := c.Hosts[i].Exec(t, "getent hosts "+n.Hostname+" || true")
			f := strings.Fields(got)
			if len(f) == 0 {
				out = append(out, "")
				continue
			}
			out = append(out, f[0])
		}
		return out
	}
	checkResolves := func(t *testing.T) {
		t.Helper()
		for i := range c.Nodes {
			for j, addr := range resolved(t, i) {
				n := c.Nodes[j]
				if addr == "" || (addr != n.IPAddresses["bind_v4"] && addr != n.IPAddresses["access_v4"]) {
					t.Errorf("node %d resolves %s to %q, want one of %v", i, n.Hostname, addr, n.IPAddresses)
				}
			}
		}
	}

	t.Run("allocate converges", func(t *testing.T) {
		ok(t, "NETWORK_ALLOCATE", -1)
		ok(t, "NETWORK_ALLOCATE", -1)
		if env.Exists != nil && !env.Exists(t) {
			t.Error("no network after NETWORK_ALLOCATE")
		}
	})

	t.Run("configure makes names resolve", func(t *testing.T) {
		for i := range c.Nodes {
			ok(t, "NETWORK_CONFIGURE", i)
		}
		checkResolves(t)
	})

	t.Run("configure again changes nothing", func(t *testing.T) {
		before := make([][]string, len(c.Nodes))
		for i := range c.Nodes {
			before[i] = resolved(t, i)
		}
		for i := range c.Nodes {
			ok(t, "NETWORK_CONFIGURE", i)
		}
		for i := range c.Nodes {
			if got := resolved(t, i); !slices.Equal(got, before[i]) {
				t.Errorf("node %d resolves %v after configuring again, %v before", i, got, before[i])
			}
		}
	})

	t.Run("another host key is refused", func(t *testing.T) {
		other := newPublicKey(t)
		task := c.Task("NETWORK_CONFIGURE", 0)
		task.Node.Facts["node"] = map[string]any{"hostKeys": []any{remote.AuthorizedKey(other)}}
		r, _, _ := runDriver(t, drv, task, TaskTimeout)
		checkMismatch(t, "NETWORK_CONFIGURE", r, ssh.FingerprintSHA256(other), ssh.FingerprintSHA256(c.Hosts[0].HostKey()))
	})

	t.Run("an unreachable node is a retryable failure", func(t *testing.T) {
		task := c.Task("NETWORK_CONFIGURE", 0)
		vm := task.Node.Facts["vm"].(map[string]any)
		vm["sshHost"], vm["sshPort"] = "127.0.0.1", float64(closedPort(t))
		r, _, took := runDriver(t, drv, task, 5*time.Second)
		if r.Status == 0 {
			t.Fatal("configuring an unreachable node succeeded")
		}
		if r.Retryable != nil && !*r.Retryable {
			t.Errorf("unreachable node is not retryable: %s", r.Message)
		}
		if !r.Unreachable {
			t.Errorf("unreachable node not reported unreachable: %s", r.Message)
		}
		if took > 8*time.Second {
			t.Errorf("took %v with a 5s ctx", took)
		}
	})

	t.Run("unconfigure converges", func(t *testing.T) {
		for i := range c.Nodes {
			ok(t, "NETWORK_UNCONFIGURE", i)
			ok(t, "NETWORK_UNCONFIGURE", i)
		}
		for i := range c.Nodes {
			for j, addr := range resolved(t, i) {
				if addr != "" {
					t.Errorf("node %d still resolves %s to %s", i, c.Nodes[j].Hostname, addr)
				}
			}
		}
	})

	t.Run("unconfigure of a node never given an address", func(t *testing.T) {
		task := c.Task("NETWORK_UNCONFIGURE", 0)
		task.Node.IPAddresses = map[string]string{}
		task.Node.Facts = map[string]any{}
		r, _, _ := runDriver(t, drv, task, TaskTimeout)
		if r.Status != 0 {
			t.Fatalf("status %d: %s", r.Status, r.Message)
		}
	})

	t.Run("release converges", func(t *testing.T) {
		ok(t, "NETWORK_RELEASE", -1)
		ok(t, "NETWORK_RELEASE", -1)
		if env.Exists != nil && env.Exists(t) {
			t.Error("the network is still there after NETWORK_RELEASE")
		}
	})

	t.Run("unconfigure of a node whose sshd stopped", func(t *testing.T) {
		// Configured first, so that the driver may hold a connection.
		last := len(c.Nodes) - 1
		ok(t, "NETWORK_CONFIGURE", last)
		c.Hosts[last].Stop()
		checkGone(t, drv, c.Task("NETWORK_UNCONFIGURE", last), c.Hosts[last].Addr())
	})
}

// checkGone runs task against a node that is gone and checks it fails
// within seconds (not at the task's timeout), reported unreachable with a
// message naming the node's address.
func checkGone(t *testing.T, drv drivers.Driver, task *drivers.Task, addr string) {
	t.Helper()
	r, _, took := runDriver(t, drv, task, TaskTimeout)
	if r.Status == 0 {
		t.Fatalf("%s of a node that is gone succeeded", task.TaskName)
	}
	if !r.Unreachable {
		t.Errorf("%s of a node that is gone not reported unreachable: %s", task.TaskName, r.Message)
	}
	if !strings.Contains(r.Message, addr) {
		t.Errorf("%s: message %q does not name the address %s", task.TaskName, r.Message, addr)
	}
	if took > 5*time.Second {
		t.Errorf("%s of a node that is gone took %v", task.TaskName, took.Round(time.Millisecond))
	}
}
