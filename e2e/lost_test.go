package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers/vm/local"
)

// A cluster whose machines died can still be deleted. With one web node's
// container killed and its network gone, the next operation fails and the
// cluster shows that node UNREACHABLE; the delete skips what it cannot do
// inside that node, deletes every machine and ends TERMINATED. With every
// container removed (as `coopr dev` does to the nodes an earlier run left),
// the delete ends TERMINATED too, in seconds; and so does a delete waiting
// when the agent restarts, without holding up a new cluster.
func TestDeleteLostNodes(t *testing.T) {
	w := newWorld(t, 8)
	var tok struct{ CreateAPIToken struct{ Secret string } }
	w.s.Must(w.s.Super, `mutation { createAPIToken(input: {name: "agent-1", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	stopAgent := w.runAgent(t, "agent-1", tok.CreateAPIToken.Secret, 8)
	one := w.create(t, "web-cluster", "", 3)
	all := w.create(t, "web-cluster", "", 3)
	left := w.create(t, "web-cluster", "", 3)
	for _, id := range []string{one, all, left} {
		w.follow(t, id, "ACTIVE", 8*time.Minute)
	}

	t.Run("one node lost", func(t *testing.T) {
		victim := withService(w.cluster(t, one), "web")[0]
		w.killNode(t, victim.Ipaddresses["access_v4"])

		// The next operation finds it gone and the cluster says so.
		w.operate(t, one, map[string]any{"operation": "RESTART_SERVICES", "services": []string{"web"}})
		if status := w.settle(t, one, 3*time.Minute); status != "INCONSISTENT" {
			t.Fatalf("a restart with a lost node left the cluster %s, want INCONSISTENT", status)
		}
		lost := w.lostNodes(t, one)
		if len(lost) != 1 || lost[0].Hostname != victim.Hostname || lost[0].StateSince == nil ||
			!strings.Contains(lost[0].StateReason, victim.Ipaddresses["access_v4"]) {
			t.Fatalf("nodes shown unreachable: %+v, want %s with a reason naming its address", lost, victim.Hostname)
		}

		start := time.Now()
		w.delete(t, one)
		w.follow(t, one, "TERMINATED", 3*time.Minute)
		t.Logf("deleted a 3-node cluster with one node lost in %s", time.Since(start).Round(100*time.Millisecond))
		skipped := w.checkDeleted(t, one)
		if len(skipped) != 1 || skipped[0] != victim.Hostname {
			t.Errorf("skipped the cleanup of %v, want of %s alone", skipped, victim.Hostname)
		}
	})

	t.Run("every node lost", func(t *testing.T) {
		if err := local.Cleanup(context.Background(), w.localCfg.StateDir, w.log, true); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		w.delete(t, all)
		w.follow(t, all, "TERMINATED", 3*time.Minute)
		t.Logf("deleted a 3-node cluster whose containers were all removed in %s", time.Since(start).Round(100*time.Millisecond))
		if skipped := w.checkDeleted(t, all); len(skipped) != 3 {
			t.Errorf("skipped the cleanup of %v, want of all 3 nodes", skipped)
		}
		if lost := w.lostNodes(t, all); len(lost) != 3 {
			t.Errorf("nodes shown unreachable: %+v, want all 3", lost)
		}
		// The CLI shows it too.
		cmd := exec.Command(coopr(t), "cluster", "show", all)
		cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Count(string(out), "DELETED (unreachable since") != 3 || !strings.Contains(string(out), "skipped 3 best-effort steps") {
			t.Errorf("coopr cluster show: %v\n%s", err, out)
		}
	})
	t.Run("a delete left waiting by a restart", func(t *testing.T) {
		// As when `coopr dev` is stopped before its deletes end and started
		// again: the agent goes, the delete waits, the nodes are removed,
		// and a new agent process takes over while new work arrives.
		stopAgent()
		w.delete(t, left)
		if err := local.Cleanup(context.Background(), w.localCfg.StateDir, w.log, true); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		w.runAgent(t, "agent-1", tok.CreateAPIToken.Secret, 8)
		fresh := w.create(t, "single", "", 1)
		w.follow(t, left, "TERMINATED", 3*time.Minute)
		t.Logf("the waiting delete ended %s after the agent restarted", time.Since(start).Round(100*time.Millisecond))
		if skipped := w.checkDeleted(t, left); len(skipped) != 3 {
			t.Errorf("skipped the cleanup of %v, want of all 3 nodes", skipped)
		}
		w.follow(t, fresh, "ACTIVE", 5*time.Minute)
		t.Logf("a new 1-node cluster was ACTIVE %s after the agent restarted", time.Since(start).Round(100*time.Millisecond))
		w.delete(t, fresh)
		w.follow(t, fresh, "TERMINATED", 3*time.Minute)
		w.noTraces(t, fresh)
	})
	for _, id := range []string{one, all, left} {
		w.noTraces(t, id)
	}
}

type lostNode struct {
	Hostname, State, StateReason string
	StateSince                   *time.Time
}

// lostNodes lists the cluster's nodes shown UNREACHABLE.
func (w *world) lostNodes(t testing.TB, id string) []lostNode {
	t.Helper()
	var out struct{ Cluster struct{ Nodes []lostNode } }
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { nodes { hostname state stateReason stateSince } } }`,
		map[string]any{"id": id}, &out)
	var lost []lostNode
	for _, n := range out.Cluster.Nodes {
		// A deleted node found unreachable before keeps why and since when.
		if n.State == "UNREACHABLE" || (n.State == "DELETED" && n.StateSince != nil) {
			lost = append(lost, n)
		}
	}
	return lost
}

// checkDeleted checks the cluster's delete: every DELETE complete, every
// other step complete or skipped as unreachable with the reason. It
// returns the hosts whose cleanup was skipped.
func (w *world) checkDeleted(t testing.TB, id string) []string {
	t.Helper()
	var out struct {
		Cluster struct {
			LatestJob struct {
				Action, State string
				Tasks         []struct {
					Action, State, Message string
					Hostname               *string
					BestEffort             bool
				}
			}
		}
	}
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { latestJob { action state tasks { action state message hostname bestEffort } } } }`,
		map[string]any{"id": id}, &out)
	j := out.Cluster.LatestJob
	if j.Action != "CLUSTER_DELETE" || j.State != "COMPLETE" {
		t.Errorf("latest job %s %s", j.Action, j.State)
	}
	var skipped []string
	for _, tk := range j.Tasks {
		host := ""
		if tk.Hostname != nil {
			host = *tk.Hostname
		}
		switch {
		case tk.State == "SKIPPED" && tk.BestEffort && strings.Contains(tk.Message, "node unreachable"):
			skipped = append(skipped, host)
		case tk.State != "COMPLETE":
			t.Errorf("%s on %s: %s %q", tk.Action, host, tk.State, tk.Message)
		}
	}
	return skipped
}

// killNode takes the local node at addr away as a dead machine goes: its
// container is killed and its network namespace removed, so that nothing
// answers at its address any more. Its state dir and overlay stay.
func (w *world) killNode(t testing.TB, addr string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(w.localCfg.StateDir, "nodes", "*", "node.json"))
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var n struct{ Name, Address string }
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatal(err)
		}
		if n.Address != addr {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(filepath.Dir(f), "nspawn.pid"))))
		_ = syscall.Kill(pid, syscall.SIGKILL)
		// The container's own processes outlive their nspawn: kill them.
		pids, err := exec.Command("ip", "netns", "pids", n.Name).Output()
		if err != nil {
			t.Fatalf("ip netns pids %s: %v", n.Name, err)
		}
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			out, _ := exec.Command("ip", "netns", "pids", n.Name).Output()
			if strings.TrimSpace(string(out)) == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes of %s survive SIGKILL: %s", n.Name, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns del %s: %v: %s", n.Name, err, out)
		}
		return
	}
	t.Fatalf("no local node has address %s", addr)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
