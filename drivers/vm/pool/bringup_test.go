package pool

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/drivers/network/hosts"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// bringUp is what a pool node's way to its first service task cost on one
// agent: CREATE, CONFIRM, NETWORK_CONFIGURE (the hosts driver) and
// BOOTSTRAP of every node at once, each phase after the last, as the
// server runs them, with the drivers sharing one SSH pool as the agent's
// do.
type bringUp struct {
	phase    map[string]time.Duration // wall time of each phase
	dials    int64                    // SSH handshakes
	sessions int                      // SSH sessions (commands) the hosts started
	probes   int64
	acquires int64
}

// sessionsOf counts the sessions sshd started on h (LogLevel VERBOSE logs
// each).
func sessionsOf(h *sshdtest.Host) int { return strings.Count(h.Log(), "Starting session:") }

// runBringUp brings up one node per host of f with d and a BOOTSTRAP
// driver sharing d's SSH pool.
func runBringUp(t testing.TB, f *fixture, d *driver) bringUp {
	n := len(f.hosts)
	boot := sshnode.New(d.pool, slog.New(slog.DiscardHandler))
	network := hosts.New(d.pool, slog.New(slog.DiscardHandler))
	tasks := make([]*drivers.Task, n)
	for i := range n {
		tasks[i] = f.task("CREATE", fmt.Sprintf("node-%d", i))
	}
	before := 0
	for _, h := range f.hosts {
		before += sessionsOf(h)
	}
	dials, probes, acquires := d.pool.Dials(), d.probes.Load(), d.acquires.Load()
	bu := bringUp{phase: map[string]time.Duration{}}
	for _, action := range []string{"CREATE", "CONFIRM", "NETWORK_CONFIGURE", "BOOTSTRAP"} {
		var drv drivers.Driver = d
		switch action {
		case "NETWORK_CONFIGURE":
			drv = network
			nodes := map[string]drivers.Node{}
			for _, task := range tasks {
				nodes[task.Node.ID] = *task.Node
			}
			for _, task := range tasks {
				task.Nodes = nodes
			}
		case "BOOTSTRAP":
			drv = boot
		}
		start := time.Now()
		results := make([]drivers.Result, n)
		var wg sync.WaitGroup
		for i, task := range tasks {
			task.TaskName, task.TaskID = action, "t-"+randHex(4)
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				results[i] = drv.Run(ctx, task, &drivertest.Recorder{})
			})
		}
		wg.Wait()
		bu.phase[action] = time.Since(start)
		for i, r := range results {
			if r.Status != 0 {
				t.Fatalf("%s node-%d: status %d: %s", action, i, r.Status, r.Message)
			}
			switch action {
			case "CREATE", "CONFIRM":
				tasks[i].Node.Facts["vm"] = maps.Clone(r.Facts)
			case "BOOTSTRAP":
				tasks[i].Node.Facts["node"] = maps.Clone(r.Facts)
			}
			if r.IPAddresses != nil {
				tasks[i].Node.IPAddresses = maps.Clone(r.IPAddresses)
			}
			if r.Secrets != nil {
				tasks[i].Secrets["vm"] = r.Secrets
			}
		}
	}
	// sshd logs a session as it starts it: give the logs a moment.
	time.Sleep(100 * time.Millisecond)
	for _, h := range f.hosts {
		bu.sessions += sessionsOf(h)
	}
	bu.sessions -= before
	bu.dials = d.pool.Dials() - dials
	bu.probes, bu.acquires = d.probes.Load()-probes, d.acquires.Load()-acquires
	for i, task := range tasks {
		h := f.host(t, providerID(task.Node))
		if got, want := leaseOf(t, h), f.id+" "+task.Node.ID; got != want {
			t.Errorf("node-%d: lease %q, want %q", i, got, want)
		}
		if got := task.Node.Facts["node"].(map[string]any)["hostname"]; got != task.Node.Hostname {
			t.Errorf("node-%d: hostname fact %v, want %s", i, got, task.Node.Hostname)
		}
	}
	return bu
}

// What a pool node costs on its way to its first service task, in SSH
// handshakes, sessions and lease round trips: one handshake per host (the
// scan's connection serves CREATE's lease, CONFIRM, NETWORK_CONFIGURE and
// BOOTSTRAP, which log in as the same user with the same key; the service
// tasks' shell automator does too) and three sessions: the scan's probe,
// which leases the host the CREATE would have tried first (a separate
// acquisition made it five), NETWORK_CONFIGURE's and BOOTSTRAP's. CONFIRM,
// right after the CREATE on the same connection, runs none (it ran a
// second lease command).
func TestBringUpCosts(t *testing.T) {
	t.Parallel()
	const n = 6
	f := newFixture(t, n, sshdtest.Options{})
	d := newDriver(t, f.key.PEM)
	d.scanGather = time.Second // one scan, however the machine schedules
	bu := runBringUp(t, f, d)
	t.Logf("%d nodes: %d dials, %d sessions, %d probes, %d acquires; %v", n, bu.dials, bu.sessions, bu.probes, bu.acquires, bu.phase)
	if bu.dials != n {
		t.Errorf("%d SSH handshakes for %d nodes, want %d (one each)", bu.dials, n, n)
	}
	if bu.sessions != 3*n {
		t.Errorf("%d SSH sessions for %d nodes, want %d (three each)", bu.sessions, n, 3*n)
	}
}

// BenchmarkBringUp times the bring-up of COOPR_BRINGUP_NODES (default 10)
// pool nodes at once on real sshd hosts, per phase.
func BenchmarkBringUp(b *testing.B) {
	n := 10
	if v, err := strconv.Atoi(os.Getenv("COOPR_BRINGUP_NODES")); err == nil && v > 0 {
		n = v
	}
	f := newFixture(b, n, sshdtest.Options{})
	var sum bringUp
	sum.phase = map[string]time.Duration{}
	for b.Loop() {
		b.StopTimer()
		for _, h := range f.hosts {
			h.Exec(b, "rm -f "+LeasePath+"; hostname "+h.IP)
		}
		d := newDriver(b, f.key.PEM)
		b.StartTimer()
		bu := runBringUp(b, f, d)
		for k, v := range bu.phase {
			sum.phase[k] += v
		}
		sum.dials += bu.dials
		sum.sessions += bu.sessions
		sum.probes += bu.probes
		sum.acquires += bu.acquires
	}
	runs := float64(b.N)
	for _, k := range []string{"CREATE", "CONFIRM", "NETWORK_CONFIGURE", "BOOTSTRAP"} {
		b.ReportMetric(float64(sum.phase[k].Milliseconds())/runs, k+"-ms")
	}
	b.ReportMetric(float64(sum.dials)/runs/float64(n), "dials/node")
	b.ReportMetric(float64(sum.sessions)/runs/float64(n), "sessions/node")
	b.ReportMetric(float64(sum.probes+sum.acquires)/runs/float64(n), "lease-trips/node")
}
