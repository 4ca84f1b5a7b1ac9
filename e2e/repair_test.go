package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

type checkFinding struct{ Kind, Service, Detail string }

type checkReport struct {
	JobID   string
	Healthy bool
	Nodes   []struct {
		NodeID, Hostname string
		Nodenum          int
		Reachable        bool
		Findings         []checkFinding
		Unchecked        []string
	}
}

// check runs a CHECK, waits for it to settle and returns the cluster's
// lastCheck.
func (w *world) check(t testing.TB, id string) checkReport {
	t.Helper()
	var job struct{ CheckCluster struct{ ID string } }
	w.s.Must(w.admin, `mutation($id: ID!) { checkCluster(id: $id) { id } }`, map[string]any{"id": id}, &job)
	if status := w.settle(t, id, 3*time.Minute); status != "ACTIVE" {
		t.Fatalf("after a check the cluster is %s, want ACTIVE as before: %s", status, w.failures(t, id))
	}
	var out struct {
		Cluster struct{ LastCheck *checkReport }
	}
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { lastCheck { jobId healthy
		nodes { nodeId hostname nodenum reachable findings { kind service detail } unchecked } } } }`, map[string]any{"id": id}, &out)
	if out.Cluster.LastCheck == nil || out.Cluster.LastCheck.JobID != job.CheckCluster.ID {
		t.Fatalf("lastCheck %+v is not the check's job %s", out.Cluster.LastCheck, job.CheckCluster.ID)
	}
	return *out.Cluster.LastCheck
}

// findings lists a report's findings as "hostname KIND service".
func (r checkReport) findings() []string {
	var out []string
	for _, n := range r.Nodes {
		for _, f := range n.Findings {
			out = append(out, strings.TrimSpace(n.Hostname+" "+f.Kind+" "+f.Service))
		}
	}
	slices.Sort(out)
	return out
}

// A cluster that went wrong behind coopr's back: a check finds each thing
// (a service stopped by hand, one removed, a node whose sshd is dead, a
// node gone, a node whose host key changed), marks the nodes that do not
// answer UNREACHABLE while the cluster stays ACTIVE, and a repair brings
// it back to its layout: the dead nodes replaced by new ones with new
// numbers, the missing service installed again, the stopped one started;
// the balancer answers from every web node again and a second check finds
// nothing. Then a node is rebooted, and a scale-in removes a chosen node.
func TestCheckAndRepairOnLocal(t *testing.T) {
	w := newWorld(t, 8)
	w.startAgent(t, "agent-1", 8)
	id := w.create(t, "web-cluster", "", 5)
	w.follow(t, id, "ACTIVE", 8*time.Minute)
	c := w.cluster(t, id)
	lbs, webs := withService(c, "lb"), withService(c, "web")
	if len(lbs) != 1 || len(webs) != 4 {
		t.Fatalf("layout: %d lb, %d web nodes, want 1 and 4", len(lbs), len(webs))
	}
	lb, missing, noSSH, gone, rekeyed := lbs[0], webs[0], webs[1], webs[2], webs[3]
	lbURL := "http://" + lb.Ipaddresses["access_v4"] + "/"
	answers(t, lbURL, hostnames(webs), 30*time.Second)

	if r := w.check(t, id); !r.Healthy || len(r.Nodes) != 5 || len(r.findings()) != 0 {
		t.Fatalf("a fresh cluster's check: healthy %v, %d nodes, findings %v", r.Healthy, len(r.Nodes), r.findings())
	}

	key := w.clusterSigner(t, id)
	sshRun(t, lb.Ipaddresses["access_v4"], key, "systemctl stop haproxy.service")
	sshRun(t, missing.Ipaddresses["access_v4"], key, "systemctl disable --now coopr-web.service && rm /etc/systemd/system/coopr-web.service && systemctl daemon-reload")
	// sshd stopped, and its sessions (the agent's pooled one) ended.
	sshRun(t, noSSH.Ipaddresses["access_v4"], key, `nohup sh -c 'sleep 0.3; systemctl stop ssh.service ssh.socket; pkill sshd' >/dev/null 2>&1 &`)
	w.killNode(t, gone.Ipaddresses["access_v4"])
	rekey(t, w, id, rekeyed.Ipaddresses["access_v4"])
	time.Sleep(time.Second)

	r := w.check(t, id)
	want := []string{
		gone.Hostname + " UNREACHABLE",
		lb.Hostname + " SERVICE_STOPPED lb",
		missing.Hostname + " SERVICE_MISSING web",
		noSSH.Hostname + " UNREACHABLE",
		rekeyed.Hostname + " HOST_KEY_CHANGED",
	}
	slices.Sort(want)
	if got := r.findings(); r.Healthy || !slices.Equal(got, want) {
		t.Fatalf("the check found %v (healthy %v), want %v", got, r.Healthy, want)
	}
	lost := w.lostNodes(t, id)
	var lostNames []string
	for _, n := range lost {
		lostNames = append(lostNames, n.Hostname)
	}
	slices.Sort(lostNames)
	if wantLost := slices.Sorted(slices.Values([]string{noSSH.Hostname, gone.Hostname, rekeyed.Hostname})); !slices.Equal(lostNames, wantLost) {
		t.Errorf("nodes shown UNREACHABLE: %v, want %v", lostNames, wantLost)
	}

	t.Run("the CLI prints the findings", func(t *testing.T) {
		cmd := exec.Command(coopr(t), "cluster", "check", id, "--last")
		cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "NOT healthy") || strings.Count(string(out), "UNREACHABLE") != 2 ||
			!strings.Contains(string(out), "HOST_KEY_CHANGED") ||
			!strings.Contains(string(out), "SERVICE_MISSING") || !strings.Contains(string(out), "SERVICE_STOPPED") {
			t.Errorf("coopr cluster check --last: %v\n%s", err, out)
		}
		cmd = exec.Command(coopr(t), "cluster", "check", id, "--last", "-o", "json")
		cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
		out, err = cmd.Output()
		var got checkReport
		if err != nil || json.Unmarshal(out, &got) != nil || got.JobID != r.JobID || got.Healthy {
			t.Errorf("coopr cluster check --last -o json: %v\n%s", err, out)
		}
	})

	start := time.Now()
	cmd := exec.Command(coopr(t), "cluster", "repair", id)
	cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("coopr cluster repair: %v\n%s\n%s", err, out, w.failures(t, id))
	}
	t.Logf("repaired (3 nodes replaced, a service installed, one started) in %s", time.Since(start).Round(100*time.Millisecond))
	c = w.cluster(t, id)
	if c.Status != "ACTIVE" || len(c.Nodes) != 5 {
		t.Fatalf("after the repair: %s with %d nodes, want ACTIVE with 5:\n%s", c.Status, len(c.Nodes), out)
	}
	nums := map[int]bool{}
	for _, n := range c.Nodes {
		nums[n.Nodenum] = true
	}
	for _, old := range []node{noSSH, gone, rekeyed} {
		if nums[old.Nodenum] {
			t.Errorf("node %d (%s) is still in the cluster", old.Nodenum, old.Hostname)
		}
	}
	top := max(gone.Nodenum, noSSH.Nodenum, lb.Nodenum, missing.Nodenum, rekeyed.Nodenum)
	for _, n := range c.Nodes {
		if n.Nodenum != lb.Nodenum && n.Nodenum != missing.Nodenum && n.Nodenum <= top {
			t.Errorf("replacement node %s has number %d, want a new one above %d", n.Hostname, n.Nodenum, top)
		}
	}
	webs = withService(c, "web")
	if len(webs) != 4 {
		t.Fatalf("after the repair %d web nodes, want 4", len(webs))
	}
	for host, body := range answers(t, lbURL, hostnames(webs), 30*time.Second) {
		if body != host+" hello from coopr" {
			t.Errorf("web node %s answers %q", host, body)
		}
	}
	if r := w.check(t, id); !r.Healthy {
		t.Errorf("the check after the repair found %v", r.findings())
	}
	if lost := w.lostNodes(t, id); len(lost) != 0 {
		t.Errorf("nodes UNREACHABLE after the repair: %+v", lost)
	}

	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(coopr(t), args...)
		cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("coopr %s: %v\n%s\n%s", strings.Join(args, " "), err, out, w.failures(t, id))
		}
		return string(out)
	}
	t.Run("reboot a node", func(t *testing.T) {
		// /run is a fresh tmpfs at each boot.
		victim := webs[len(webs)-1]
		key := w.clusterSigner(t, id)
		sshRun(t, victim.Ipaddresses["access_v4"], key, "touch /run/coopr-before-reboot")
		start := time.Now()
		cli("cluster", "reboot", id, victim.Hostname)
		t.Logf("rebooted a node in %s", time.Since(start).Round(100*time.Millisecond))
		if out := sshRun(t, victim.Ipaddresses["access_v4"], key, "test -e /run/coopr-before-reboot && echo same boot || echo rebooted"); strings.TrimSpace(out) != "rebooted" {
			t.Errorf("after the reboot the node says %q", out)
		}
		answers(t, lbURL, hostnames(webs), 30*time.Second)
	})

	t.Run("scale in removing a chosen node", func(t *testing.T) {
		// The solver would remove the highest web node; remove the lowest.
		chosen := webs[0]
		cli("cluster", "op", id, "scale", "--size", "4", "--remove", chosen.Hostname)
		c := w.cluster(t, id)
		left := withService(c, "web")
		if len(c.Nodes) != 4 || len(left) != 3 || slices.ContainsFunc(left, func(n node) bool { return n.Nodenum == chosen.Nodenum }) {
			t.Fatalf("after the scale-in: %d nodes, web on %v; want 4 without %s", len(c.Nodes), hostnames(left), chosen.Hostname)
		}
		answers(t, lbURL, hostnames(left), 30*time.Second)
	})

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
	w.noTraces(t, id)
}

// A service checked through its systemd unit alone (the example's metrics
// has units and no status action): stopped by hand, the check reports it
// SERVICE_STOPPED and a repair starts it; removed, SERVICE_MISSING and a
// repair installs it again. base, with neither, is no finding but is
// listed as not checked.
func TestCheckUnitOnlyServiceOnLocal(t *testing.T) {
	w := newWorld(t, 4)
	w.startAgent(t, "agent-1", 4)
	var out struct{ CreateCluster struct{ ID string } }
	w.s.Must(w.admin, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "units", "clusterTemplate": "single", "numMachines": 1, "services": []string{"base", "web", "metrics"}}}, &out)
	id := out.CreateCluster.ID
	w.follow(t, id, "ACTIVE", 5*time.Minute)
	n := w.cluster(t, id).Nodes[0]
	addr := n.Ipaddresses["access_v4"]
	metricsURL := "http://" + addr + ":9100/"
	key := w.clusterSigner(t, id)
	repair := func(t *testing.T) {
		t.Helper()
		cmd := exec.Command(coopr(t), "cluster", "repair", id)
		cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("coopr cluster repair: %v\n%s\n%s", err, out, w.failures(t, id))
		}
		if got := answers(t, metricsURL, []string{"up"}, 20*time.Second); got["up"] != "up "+n.Hostname {
			t.Errorf("metrics after the repair answers %q", got["up"])
		}
		if r := w.check(t, id); !r.Healthy {
			t.Errorf("the check after the repair found %v", r.findings())
		}
	}

	r := w.check(t, id)
	if !r.Healthy || len(r.Nodes) != 1 || !slices.Equal(r.Nodes[0].Unchecked, []string{"base"}) {
		t.Fatalf("a fresh cluster's check: healthy %v, findings %v, unchecked %v; want healthy with base unchecked",
			r.Healthy, r.findings(), r.Nodes[0].Unchecked)
	}

	t.Run("stopped by hand", func(t *testing.T) {
		sshRun(t, addr, key, "systemctl stop coopr-metrics.service")
		r := w.check(t, id)
		if got, want := r.findings(), []string{n.Hostname + " SERVICE_STOPPED metrics"}; !slices.Equal(got, want) {
			t.Fatalf("the check found %v, want %v", got, want)
		}
		if d := r.Nodes[0].Findings[0].Detail; !strings.Contains(d, "coopr-metrics.service inactive") {
			t.Errorf("detail %q does not name the unit's state", d)
		}
		cmd := exec.Command(coopr(t), "cluster", "check", id, "--last")
		cmd.Env = append(os.Environ(), "COOPR_SERVER="+w.s.URL, "COOPR_TOKEN="+w.admin)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "SERVICE_STOPPED") ||
			!strings.Contains(string(out), "not checked (no status action, no systemd units): base") {
			t.Errorf("coopr cluster check --last: %v\n%s", err, out)
		}
		repair(t)
	})

	t.Run("removed by hand", func(t *testing.T) {
		sshRun(t, addr, key, "systemctl disable --now coopr-metrics.service && rm /etc/systemd/system/coopr-metrics.service && systemctl daemon-reload")
		r := w.check(t, id)
		if got, want := r.findings(), []string{n.Hostname + " SERVICE_MISSING metrics"}; !slices.Equal(got, want) {
			t.Fatalf("the check found %v, want %v", got, want)
		}
		repair(t)
	})

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
	w.noTraces(t, id)
}
