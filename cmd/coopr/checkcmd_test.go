package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// checkAgent plays the agent for a tenant until the test ends: CHECK finds
// the node named by dead not there, STATUS finds lb stopped, everything
// else succeeds.
type checkAgent struct {
	mu      sync.Mutex
	dead    string   // a node id
	stopped bool     // lb is stopped
	ran     []string // "ACTION hostname" of the tasks run, in order
}

func (a *checkAgent) run(ctx context.Context, t *testing.T, s *servertest.Server, tenant string) {
	for ctx.Err() == nil {
		as, err := s.Srv.Engine().Claim(ctx, engine.ClaimRequest{TenantID: tenant, AgentID: "test-agent", Wait: 100 * time.Millisecond})
		if err != nil || as == nil {
			continue
		}
		res := engine.Result{}
		a.mu.Lock()
		if as.Node != nil {
			a.ran = append(a.ran, as.TaskName+" "+as.Node.Hostname)
		}
		switch as.TaskName {
		case "CONFIRM":
			res.IPAddresses = map[string]string{"access_v4": "10.231.0.2", "bind_v4": "10.231.0.2"}
		case "CHECK":
			if as.Node.ID == a.dead {
				res = engine.Result{Status: 1, Message: "check: ssh: connect: connection refused", Unreachable: true,
					Facts: map[string]any{"check": map[string]any{"job": as.JobID, "reachable": false, "error": "connection refused"}}}
			} else {
				res.Facts = map[string]any{"check": map[string]any{"job": as.JobID, "reachable": true, "hostname": as.Node.Hostname}}
			}
		case "STATUS":
			if as.Node.ID == a.dead {
				res = engine.Result{Status: 1, Message: "shell: connection refused", Unreachable: true}
				break
			}
			state := "running"
			if as.Service.Name == "lb" && a.stopped {
				state = "stopped"
			}
			res.Facts = map[string]any{"check": map[string]any{"job": as.JobID, "state": state}}
		case "START":
			if as.Service.Name == "lb" {
				a.stopped = false
			}
		}
		a.mu.Unlock()
		if err := s.Srv.Engine().Finish(ctx, as.TaskID, as.Attempt, as.ClaimToken, res); err != nil && ctx.Err() == nil {
			t.Errorf("finish %s: %v", as.TaskID, err)
		}
	}
}

// coopr cluster check prints what the check found, as a table and as
// JSON; coopr cluster repair shows and runs the plan that replaces the
// dead node by one with a new number and starts the stopped service; a
// check after it finds the cluster healthy.
func TestClusterCheckAndRepairCLI(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	tokens, err := devBootstrap(ctx, s.Srv, s.URL, devOptions{dir: t.TempDir(), catalog: "../../examples/catalog", tenant: "dev", capacity: 4,
		maxClusters: devMaxClusters, maxNodes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COOPR_SERVER", s.URL)
	t.Setenv("COOPR_TOKEN", tokens.admin)
	cli := func(wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, args...)
		if code != wantCode {
			t.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		return out
	}
	created := cli(0, "cluster", "create", "web-cluster", "--size", "3", "--name", "chk", "--no-wait")
	var id string
	if _, err := fmt.Sscanf(created, "cluster %s created", &id); err != nil {
		t.Fatalf("create said %q", created)
	}
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(tokens.admin, `{ me { tenant { id } } }`, nil, &me)
	agent := &checkAgent{}
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); agent.run(actx, t, s, me.Me.Tenant.ID) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	// Wait until the create settled.
	deadline := time.Now().Add(time.Minute)
	for {
		var c struct{ Cluster struct{ Status string } }
		s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
		if c.Cluster.Status == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s is %s", id, c.Cluster.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, errOut, code := runCLI(t, "cluster", "repair", id); code != 1 || !strings.Contains(errOut, "CONFLICT") || !strings.Contains(errOut, "never checked") {
		t.Fatalf("repair before any check: exit %d %s", code, errOut)
	}
	if out := cli(0, "cluster", "check", id, "--last"); !strings.Contains(out, "never checked") {
		t.Fatalf("check --last before any check:\n%s", out)
	}

	out := cli(0, "cluster", "check", id)
	if !strings.Contains(out, ": healthy") || strings.Count(out, "OK") != 3 {
		t.Fatalf("check of a healthy cluster:\n%s", out)
	}
	var nodes struct {
		Cluster struct {
			Nodes []struct {
				ID, Hostname string
				Nodenum      int
				Services     []string
			}
		}
	}
	s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { nodes { id hostname nodenum services } } }`, map[string]any{"id": id}, &nodes)
	var victim, lb string
	for _, n := range nodes.Cluster.Nodes {
		if slices.Contains(n.Services, "web") && victim == "" {
			victim = n.ID
		}
		if slices.Contains(n.Services, "lb") {
			lb = n.Hostname
		}
	}
	agent.mu.Lock()
	agent.dead, agent.stopped = victim, true
	agent.mu.Unlock()

	out = cli(0, "cluster", "check", id)
	if !strings.Contains(out, "NOT healthy") || strings.Count(out, "UNREACHABLE") != 1 || !strings.Contains(out, "SERVICE_STOPPED  lb") {
		t.Fatalf("check with a dead node and lb stopped:\n%s", out)
	}
	// The dead node's web is not known to run, whatever its last task left.
	if out := cli(0, "cluster", "show", id); !strings.Contains(out, "2 findings on 2 of 3 nodes (") || !strings.Contains(out, "lb       stopped on 1/1") ||
		!strings.Contains(out, "web      running on 1/2, unknown on 1/2") {
		t.Errorf("cluster show after a check with findings:\n%s", out)
	}
	var report struct {
		Healthy bool
		Nodes   []struct {
			NodeID   string
			Findings []struct{ Kind, Service string }
		}
	}
	if err := json.Unmarshal([]byte(cli(0, "cluster", "check", id, "--last", "-o", "json")), &report); err != nil || report.Healthy {
		t.Fatalf("check -o json: %v %+v", err, report)
	}
	var kinds []string
	for _, n := range report.Nodes {
		for _, f := range n.Findings {
			kinds = append(kinds, f.Kind+" "+f.Service)
		}
	}
	slices.Sort(kinds)
	if !slices.Equal(kinds, []string{"SERVICE_STOPPED lb", "UNREACHABLE "}) {
		t.Errorf("findings %q", kinds)
	}
	var st struct {
		Cluster struct {
			Status string
			Nodes  []struct{ ID, State string }
		}
	}
	s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { status nodes { id state } } }`, map[string]any{"id": id}, &st)
	for _, n := range st.Cluster.Nodes {
		if want := map[bool]string{true: "UNREACHABLE", false: "OK"}[n.ID == victim]; n.State != want {
			t.Errorf("node %s is %s, want %s", n.ID, n.State, want)
		}
	}
	if st.Cluster.Status != "ACTIVE" {
		t.Errorf("cluster %s after the check, want ACTIVE", st.Cluster.Status)
	}

	dry := cli(0, "cluster", "repair", id, "--dry-run")
	if !strings.Contains(dry, "would run REPAIR") || !strings.Contains(dry, "add node 1003") || !strings.Contains(dry, "remove node") {
		t.Fatalf("repair --dry-run:\n%s", dry)
	}
	out = cli(0, "cluster", "repair", id)
	if !strings.Contains(out, "by node 1003") || !strings.Contains(out, "ACTIVE") {
		t.Fatalf("repair:\n%s", out)
	}
	s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { nodes { id hostname nodenum services } } }`, map[string]any{"id": id}, &nodes)
	var nums []int
	for _, n := range nodes.Cluster.Nodes {
		nums = append(nums, n.Nodenum)
		if n.ID == victim {
			t.Errorf("the dead node %s is still there", victim)
		}
	}
	slices.Sort(nums)
	if len(nums) != 3 || nums[2] != 1003 {
		t.Errorf("node numbers after the repair %v, want 3 with the new 1003", nums)
	}
	agent.mu.Lock()
	ran := slices.Clone(agent.ran)
	agent.mu.Unlock()
	if !slices.Contains(ran, "START "+lb) {
		t.Errorf("the repair did not start lb on %s: %q", lb, ran)
	}
	if out := cli(0, "cluster", "show", id); !regexp.MustCompile(`2 findings on 2 of 3 nodes, repaired since by job \S+ \(coopr cluster check`).MatchString(out) {
		t.Errorf("cluster show after the repair:\n%s", out)
	}
	out = cli(0, "cluster", "check", id)
	if !strings.Contains(out, ": healthy") {
		t.Errorf("check after the repair:\n%s", out)
	}

	// Node operations: replace a chosen node, then scale in removing a
	// chosen one rather than the solver's pick (the highest number).
	numsOf := func() map[int]string {
		s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { nodes { id hostname nodenum services } } }`, map[string]any{"id": id}, &nodes)
		m := map[int]string{}
		for _, n := range nodes.Cluster.Nodes {
			m[n.Nodenum] = strings.Join(n.Services, ",")
		}
		return m
	}
	before := numsOf()
	var web int
	for num, svcs := range before {
		if strings.Contains(svcs, "web") && (web == 0 || num < web) {
			web = num
		}
	}
	if _, errOut, code := runCLI(t, "cluster", "replace", id, "9999"); code != 1 || !strings.Contains(errOut, "no node \"9999\"") {
		t.Errorf("replace of no such node: exit %d %s", code, errOut)
	}
	out = cli(0, "cluster", "replace", id, fmt.Sprint(web))
	after := numsOf()
	if _, ok := after[web]; ok || after[1004] != before[web] || len(after) != 3 || !strings.Contains(out, fmt.Sprintf("replace node %d by node 1004", web)) {
		t.Fatalf("replace node %d: nodes %v, was %v\n%s", web, after, before, out)
	}
	// Reboot the new node: REBOOT, BOOTSTRAP, START web there, nothing else.
	agent.mu.Lock()
	agent.ran = nil
	agent.mu.Unlock()
	out = cli(0, "cluster", "reboot", id, "1004")
	agent.mu.Lock()
	ran = slices.Clone(agent.ran)
	agent.mu.Unlock()
	var host string
	s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { nodes { id hostname nodenum services } } }`, map[string]any{"id": id}, &nodes)
	for _, n := range nodes.Cluster.Nodes {
		if n.Nodenum == 1004 {
			host = n.Hostname
		}
	}
	if want := []string{"REBOOT " + host, "BOOTSTRAP " + host, "START " + host}; !slices.Equal(ran, want) {
		t.Errorf("reboot ran %q, want %q\n%s", ran, want, out)
	}
	// 1003 is now the lowest web node; the solver would remove 1004.
	out = cli(0, "cluster", "op", id, "scale", "--size", "2", "--remove", "1003")
	after = numsOf()
	if _, ok := after[1003]; ok || len(after) != 2 || after[1004] == "" {
		t.Fatalf("scale to 2 removing 1003: nodes %v\n%s", after, out)
	}
	if _, errOut, code := runCLI(t, "cluster", "op", id, "scale", "--size", "1", "--remove", "1004"); code != 1 || !strings.Contains(errOut, "INVALID_INPUT") {
		t.Errorf("scale to 1 removing the last web node: exit %d %s", code, errOut)
	}
}

// The check's table shows each node's findings or OK, and under it the
// services no node's check could look at, once each: OK is not "every
// service runs" when a service has neither a status action nor units.
func TestWriteCheck(t *testing.T) {
	cases := []struct {
		name, report string
		want, not    []string
	}{
		{"unchecked services listed", `{"at":"2026-11-24T10:00:00Z","jobId":"j1","healthy":false,"nodes":[
			{"nodenum":1,"hostname":"a","reachable":true,"findings":[],"unchecked":["base"]},
			{"nodenum":2,"hostname":"b","reachable":true,"findings":[{"kind":"SERVICE_STOPPED","service":"metrics","detail":"metrics is installed and not running: coopr-metrics.service inactive (dead)"}],"unchecked":["base","extra"]}]}`,
			[]string{"1     a         OK", "SERVICE_STOPPED  metrics  metrics is installed and not running: coopr-metrics.service inactive (dead)",
				"not checked (no status action, no systemd units): base, extra\n", "NOT healthy"}, nil},
		{"every service checked", `{"at":"2026-11-24T10:00:00Z","jobId":"j1","healthy":true,"nodes":[
			{"nodenum":1,"hostname":"a","reachable":true,"findings":[],"unchecked":[]}]}`,
			[]string{"healthy", "OK"}, []string{"not checked"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lc *lastCheck
			if err := json.Unmarshal([]byte(c.report), &lc); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			writeCheck(&b, "demo", lc)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("output has %q:\n%s", w, b.String())
				}
			}
		})
	}
}
