package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cooprhq/coopr/client"
	"github.com/cooprhq/coopr/drivers/vm/local"
)

// devRun is one `coopr dev` process.
type devRun struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	exited         chan struct{}
}

func startDev(t *testing.T, bin, dir, listen string) *devRun {
	t.Helper()
	catalog, err := filepath.Abs("../../examples/catalog")
	if err != nil {
		t.Fatal(err)
	}
	d := &devRun{stdout: newLockedBuffer(), stderr: newLockedBuffer(), exited: make(chan struct{})}
	d.cmd = exec.Command(bin, "dev", "--dir", dir, "--listen", listen, "--catalog", catalog, "--install=false", "--delete-wait", "3m")
	// Its own databases, whatever the test's environment names.
	d.cmd.Env = append(os.Environ(), "COOPR_DATABASE_URL=", "COOPR_REDIS_URL=")
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("coopr dev (pid %d) wrote:\n%s%s", d.cmd.Process.Pid, d.stdout, d.stderr)
		}
	})
	return d
}

var (
	devTokenRE = regexp.MustCompile(`COOPR_TOKEN=(\S+)`)
	agentPidRE = regexp.MustCompile(`msg="dev agent (?:running|started again)" pid=(\d+)`)
)

// token waits for the dev run to be up and returns the token it prints.
func (d *devRun) token(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !strings.Contains(d.stdout.String(), "coopr is up.") {
		if !d.alive() {
			t.Fatal("coopr dev exited before it was up")
		}
		if time.Now().After(deadline) {
			t.Fatal("coopr dev is not up after 5 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	m := devTokenRE.FindStringSubmatch(d.stdout.String())
	if m == nil {
		t.Fatalf("no token in:\n%s", d.stdout)
	}
	return m[1]
}

// agentPid is the pid of the dev agent last started.
func (d *devRun) agentPid(t *testing.T) int {
	t.Helper()
	ms := agentPidRE.FindAllStringSubmatch(d.stderr.String(), -1)
	if ms == nil {
		t.Fatalf("no dev agent pid in:\n%s", d.stderr)
	}
	pid, _ := strconv.Atoi(ms[len(ms)-1][1])
	return pid
}

func (d *devRun) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

type devTask struct {
	ID, Action, State, Message string
	Attempts                   []struct{ Agent string }
}

// devTasks is the cluster's status and its newest job's tasks.
func devTasks(t *testing.T, c *client.Client, id string) (string, []devTask) {
	t.Helper()
	var out struct {
		Cluster struct {
			Status string
			Jobs   []struct{ Tasks []devTask }
		}
	}
	if err := gql(context.Background(), c, `query($id: ID!) { cluster(id: $id) { status jobs { tasks { id action state message attempts { agent } } } } }`,
		map[string]any{"id": id}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Cluster.Jobs) == 0 {
		return out.Cluster.Status, nil
	}
	return out.Cluster.Status, out.Cluster.Jobs[0].Tasks
}

// waitTasks polls the cluster until ok holds.
func waitTasks(t *testing.T, c *client.Client, id, what string, within time.Duration, ok func(status string, ts []devTask) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, ts := devTasks(t, c, id)
		if ok(st, ts) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s: not %s within %s: %s %+v", id, what, within, st, ts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// `coopr dev` runs its agent as a child: killed with SIGKILL in the middle
// of a create, it is started again and the create completes with the dev
// process up throughout. Then `coopr dev` itself is killed after the node
// was confirmed: the next run keeps the node (its cluster is live) and the
// job completes on it. A second coopr dev on the directory stops at once
// while one runs; the killed one blocks nothing. Ctrl-C deletes the
// cluster and leaves no node.
func TestDevSurvivesKills(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("coopr dev makes containers and a bridge: run this test as root (.ci/run does)")
	}
	bin := filepath.Join(t.TempDir(), "coopr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	// Postgres runs as its own user, which must reach the directory.
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stateDir := filepath.Join(dir, "local")
	t.Cleanup(func() {
		if err := local.Cleanup(context.Background(), stateDir, nil, true); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	url := "http://" + listen

	d := startDev(t, bin, dir, listen)
	c := &client.Client{URL: url, Token: d.token(t)}
	firstToken := c.Token

	// A second coopr dev on the same directory stops at once, saying why.
	second := startDev(t, bin, dir, listen)
	select {
	case <-second.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a second coopr dev on the same directory still runs after 10 s")
	}
	if want := fmt.Sprintf("coopr dev is already running (pid %d, directory %s)", d.cmd.Process.Pid, dir); !strings.Contains(second.stderr.String(), want) {
		t.Errorf("a second coopr dev wrote %q, want %q", second.stderr, want)
	}
	var created struct{ CreateCluster struct{ ID string } }
	if err := gql(context.Background(), c, `mutation { createCluster(input: {name: "dev", clusterTemplate: "single", numMachines: 1}) { id } }`,
		nil, &created); err != nil {
		t.Fatal(err)
	}
	id := created.CreateCluster.ID

	// Kill the agent while it runs a task.
	first := d.agentPid(t)
	waitTasks(t, c, id, "running a task on the dev agent", 2*time.Minute, func(_ string, ts []devTask) bool {
		for _, tk := range ts {
			if n := len(tk.Attempts); tk.State == "IN_PROGRESS" && n > 0 && tk.Attempts[n-1].Agent == "dev-agent" {
				return true
			}
		}
		return false
	})
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.stderr.await(t, `msg="dev agent started again"`, 30*time.Second)
	if d.agentPid(t) == first || !d.alive() {
		t.Fatalf("after killing agent %d: agent %d, dev alive %v", first, d.agentPid(t), d.alive())
	}

	// Kill coopr dev once the node is confirmed, before the job is done.
	waitTasks(t, c, id, "confirmed", 3*time.Minute, func(st string, ts []devTask) bool {
		if st != "PENDING" {
			t.Fatalf("cluster %s settled %s before the dev process was killed: %+v", id, st, ts)
		}
		for _, tk := range ts {
			if tk.Action == "CONFIRM" && tk.State == "COMPLETE" {
				return true
			}
		}
		return false
	})
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	nodes, _ := filepath.Glob(filepath.Join(stateDir, "nodes", "coopr-*"))
	if len(nodes) != 1 {
		t.Fatalf("after killing coopr dev: nodes %v, want the cluster's one", nodes)
	}

	// The lock file the killed run left does not stop the next, and the
	// token it printed goes on working.
	d = startDev(t, bin, dir, listen)
	if c.Token = d.token(t); c.Token != firstToken {
		t.Errorf("the restart printed another token")
	}
	d.stderr.await(t, "keeping the nodes of clusters an earlier run left live", time.Second)
	waitTasks(t, c, id, "ACTIVE", 5*time.Minute, func(st string, ts []devTask) bool {
		if st == "INCOMPLETE" || st == "INCONSISTENT" {
			t.Fatalf("cluster %s is %s after the restart: %+v", id, st, ts)
		}
		return st == "ACTIVE"
	})
	if still, _ := filepath.Glob(filepath.Join(stateDir, "nodes", "coopr-*")); len(still) != 1 || still[0] != nodes[0] {
		t.Errorf("nodes after the restart: %v, want %v kept", still, nodes)
	}
	// The live cluster keeps its own network through the restart.
	bridge, _, err := local.ClusterNetwork(stateDir, id)
	if err != nil {
		t.Errorf("the cluster's network after the restart: %v", err)
	} else if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err != nil {
		t.Errorf("the cluster's bridge after the restart: %v", err)
	}

	// Ctrl-C: the cluster is deleted, everything stops, no node is left.
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(4 * time.Minute):
		t.Fatal("coopr dev did not stop within 4 minutes of SIGINT")
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("coopr dev exited %d", code)
	}
	if !strings.Contains(d.stderr.String(), fmt.Sprintf(`msg="cluster deleted" cluster=%s`, id)) {
		t.Errorf("cluster %s not deleted at Ctrl-C", id)
	}
	if left, _ := filepath.Glob(filepath.Join(stateDir, "nodes", "*")); len(left) > 0 {
		t.Errorf("nodes left after Ctrl-C: %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(stateDir, "nets", "*")); len(left) > 0 {
		t.Errorf("cluster networks left after Ctrl-C: %v", left)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", local.ClusterBridge(stateDir, id))); err == nil {
		t.Errorf("the cluster's bridge is left after Ctrl-C")
	}
}
