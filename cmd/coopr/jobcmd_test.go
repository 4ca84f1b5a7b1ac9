package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// latestJob is the id of a cluster's latest job.
func (w *cliWorld) latestJob(t *testing.T, cluster string) string {
	t.Helper()
	var out struct {
		Cluster struct{ LatestJob struct{ ID string } }
	}
	w.s.Must(w.token, `query($id: ID!) { cluster(id: $id) { latestJob { id } } }`, map[string]any{"id": cluster}, &out)
	return out.Cluster.LatestJob.ID
}

// The job commands pause, resume, abort and retry a create through the
// API, and job show lists its tasks.
func TestJobCommands(t *testing.T) {
	w := newCLIWorld(t)
	id := w.create(t, "web-cluster", "demo", 3)
	job := w.latestJob(t, id)
	// The golden file shows the first task queued once (attempt 1/3):
	// pause only after the scheduler has queued it, or the page shows 0/3.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var q struct {
			Job struct{ Tasks []struct{ Attempt int } }
		}
		w.s.Must(w.token, `query($id: ID!) { job(id: $id) { tasks(first: 1) { attempt } } }`, map[string]any{"id": job}, &q)
		if len(q.Job.Tasks) == 1 && q.Job.Tasks[0].Attempt == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job's first task was not queued within 10 s: %+v", q.Job.Tasks)
		}
		time.Sleep(10 * time.Millisecond)
	}

	for _, step := range []struct{ verb, state string }{{"pause", "PAUSED"}, {"resume", "RUNNING"}, {"abort", "FAILED"}} {
		out, errOut, code := w.cli(t, "job", step.verb, job)
		if want := "job " + job + " (CLUSTER_CREATE of cluster " + id + ") is " + step.state + "\n"; code != 0 || out != want {
			t.Fatalf("job %s: exit %d: %q%s, want %q", step.verb, code, out, errOut, want)
		}
	}
	out, errOut, code := w.cli(t, "job", "show", job)
	if code != 0 {
		t.Fatalf("job show: exit %d: %s", code, errOut)
	}
	golden(t, "job-show-aborted.txt", out)

	// An aborted job cannot be resumed; the server says why.
	if _, errOut, code := w.cli(t, "job", "resume", job); code != 1 || !strings.Contains(errOut, "coopr: ") {
		t.Errorf("resume of a FAILED job: exit %d: %q, want 1 with the server's reason", code, errOut)
	}

	// A create that failed on a task is retried from its unfinished tasks.
	agent := w.startAgent(t)
	agent.failing("START lb")
	id = w.create(t, "web-cluster", "demo2", 3)
	w.await(t, id, "INCOMPLETE")
	job = w.latestJob(t, id)
	agent.failing("")
	out, errOut, code = w.cli(t, "job", "retry", job, "-o", "json")
	var retried shownJob
	// The agent may finish the retried task before the answer is read
	// back: COMPLETE is as right as RUNNING here.
	if err := json.Unmarshal([]byte(out), &retried); code != 0 || err != nil || retried.State != "RUNNING" && retried.State != "COMPLETE" || retried.ID != job {
		t.Fatalf("job retry -o json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	w.await(t, id, "ACTIVE")
	out, _, _ = w.cli(t, "job", "show", job, "-o", "json")
	var done shownJob
	if err := json.Unmarshal([]byte(out), &done); err != nil || done.State != "COMPLETE" || len(done.Tasks) == 0 {
		t.Fatalf("job show -o json after the agent: %v: %s", err, out)
	}
	for _, tk := range done.Tasks {
		if tk.State != "COMPLETE" {
			t.Errorf("task %s %s %s: %s, want COMPLETE", tk.ID, tk.Action, tk.Service, tk.State)
		}
	}
	if _, errOut, code := w.cli(t, "job", "show", "nosuch"); code != 1 || !strings.Contains(errOut, "job nosuch: not found") {
		t.Errorf("job show nosuch: exit %d: %q", code, errOut)
	}
}

// lease extend sets the end of a cluster's lease, --until a time or --by
// a duration past the current end.
func TestLeaseExtend(t *testing.T) {
	w := newCLIWorld(t)
	w.startAgent(t)
	id := w.create(t, "single", "demo", 1)
	w.await(t, id, "ACTIVE")

	if _, errOut, code := w.cli(t, "cluster", "lease", "extend", "demo", "--by", "1h"); code != 1 || !strings.Contains(errOut, "never ends") {
		t.Errorf("--by on a lease that never ends: exit %d: %q", code, errOut)
	}
	if _, errOut, code := w.cli(t, "cluster", "lease", "extend", "demo"); code != 1 || !strings.Contains(errOut, "--until") {
		t.Errorf("neither flag: exit %d: %q", code, errOut)
	}
	end := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second)
	out, errOut, code := w.cli(t, "cluster", "lease", "extend", "demo", "--until", end.Format(time.RFC3339))
	if want := "cluster " + id + ` "demo": lease ends ` + end.Format(time.RFC3339) + "\n"; code != 0 || out != want {
		t.Fatalf("--until: exit %d: %q%s, want %q", code, out, errOut, want)
	}
	out, errOut, code = w.cli(t, "cluster", "lease", "extend", id, "--by", "2h", "-o", "json")
	var got struct{ ExpireTime time.Time }
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || !got.ExpireTime.Equal(end.Add(2*time.Hour)) {
		t.Fatalf("--by 2h: exit %d, %v: %s%s; want the end at %s", code, err, out, errOut, end.Add(2*time.Hour))
	}
	// cluster list and show print the lease as JSON too.
	out, _, _ = w.cli(t, "cluster", "list", "-o", "json")
	var listed []listedCluster
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0].ID != id || listed[0].Status != "ACTIVE" ||
		listed[0].ExpireTime == nil || !listed[0].ExpireTime.Equal(end.Add(2*time.Hour)) {
		t.Errorf("cluster list -o json: %v: %s", err, out)
	}
	out, _, _ = w.cli(t, "cluster", "show", "demo", "-o", "json")
	var shown struct {
		ID, Status string
		ExpireTime time.Time
		Nodes      []struct {
			Hostname    string
			Ipaddresses map[string]string
		}
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || shown.ID != id || shown.Status != "ACTIVE" || len(shown.Nodes) != 1 ||
		shown.Nodes[0].Ipaddresses["access_v4"] == "" || !shown.ExpireTime.Equal(end.Add(2*time.Hour)) {
		t.Errorf("cluster show -o json: %v: %s", err, out)
	}
	for _, tc := range []struct {
		args []string
		n    int
	}{{[]string{"--status", "active,pending"}, 1}, {[]string{"--status", "terminated"}, 0}, {[]string{"--template", "single", "--name", "demo"}, 1},
		{[]string{"--template", "web-cluster"}, 0}} {
		out, errOut, code := w.cli(t, append([]string{"cluster", "list", "-o", "json"}, tc.args...)...)
		var got []listedCluster
		if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || len(got) != tc.n {
			t.Errorf("cluster list %v: exit %d, %v: %s%s; want %d clusters", tc.args, code, err, out, errOut, tc.n)
		}
	}
	if _, errOut, code := w.cli(t, "cluster", "list", "-o", "yaml"); code != 1 || !strings.Contains(errOut, "use json or table") {
		t.Errorf("cluster list -o yaml: exit %d: %q", code, errOut)
	}

	if _, errOut, code := w.cli(t, "cluster", "lease", "extend", "demo", "--until", "2000-01-01T00:00:00Z"); code != 1 || !strings.Contains(errOut, "expireTime") {
		t.Errorf("an end before creation: exit %d: %q, want the server's refusal naming expireTime", code, errOut)
	}

	// create gives a lease and the other optional fields.
	before := time.Now()
	out, errOut, code = w.cli(t, "cluster", "create", "single", "--name", "leased", "--lease", "48h", "--description", "for the lease test", "--no-wait")
	if code != 0 {
		t.Fatalf("create --lease 48h: exit %d: %s%s", code, out, errOut)
	}
	w.await(t, "00000002", "ACTIVE")
	var leased struct {
		Cluster struct {
			Description string
			ExpireTime  *time.Time
		}
	}
	w.s.Must(w.token, `{ cluster(id: "00000002") { description expireTime } }`, nil, &leased)
	if c := leased.Cluster; c.Description != "for the lease test" || c.ExpireTime == nil ||
		c.ExpireTime.Before(before.Add(48*time.Hour-time.Minute)) || c.ExpireTime.After(time.Now().Add(48*time.Hour+time.Minute)) {
		t.Errorf("create --lease 48h --description: %+v", c)
	}
	// The previews print as JSON too.
	out, errOut, code = w.cli(t, "cluster", "create", "web-cluster", "--size", "3", "--dry-run", "-o", "json")
	var pv struct {
		Template string
		Nodes    []struct{ Hostname string }
		Quota    struct{ AddNodes int }
		PlanHash string
	}
	if err := json.Unmarshal([]byte(out), &pv); code != 0 || err != nil || pv.Template != "web-cluster" || len(pv.Nodes) != 3 ||
		pv.Quota.AddNodes != 3 || pv.PlanHash == "" {
		t.Errorf("create --dry-run -o json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	out, errOut, code = w.cli(t, "cluster", "op", "demo", "restart", "--dry-run", "-o", "json")
	var op struct {
		Action string
		Tasks  []struct{ Action string }
	}
	if err := json.Unmarshal([]byte(out), &op); code != 0 || err != nil || !strings.Contains(op.Action, "RESTART") || len(op.Tasks) == 0 {
		t.Errorf("op restart --dry-run -o json: exit %d, %v: %s%s", code, err, out, errOut)
	}
	if _, errOut, code := w.cli(t, "cluster", "op", "demo", "restart", "-o", "json"); code != 1 || !strings.Contains(errOut, "-o is for --dry-run") {
		t.Errorf("op -o json without --dry-run: exit %d: %q", code, errOut)
	}
	if _, errOut, code := w.cli(t, "cluster", "create", "single", "--provider-fields", "/nonexistent.json"); code != 1 || !strings.Contains(errOut, "--provider-fields") {
		t.Errorf("create --provider-fields of a missing file: exit %d: %q", code, errOut)
	}
}

// logs prints a task's finished attempts' tails; with -f it follows the
// running attempt's output as the agent reports it until the task is
// done.
func TestLogs(t *testing.T) {
	w := newCLIWorld(t)
	var agentTok struct{ CreateAPIToken struct{ Secret string } }
	w.s.Must(w.s.Super, `mutation { createAPIToken(input: {name: "a", kind: AGENT, agents: "*"}) { secret } }`, nil, &agentTok)
	w.create(t, "single", "demo", 1)
	eng := w.s.Srv.Engine()
	ctx := context.Background()
	claim := func() *engine.Assignment {
		t.Helper()
		for i := 0; i < 100; i++ {
			as, err := eng.Claim(ctx, engine.ClaimRequest{TenantID: w.tenantID, AgentID: "logs-agent", Wait: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if as != nil {
				return as
			}
		}
		t.Fatal("no task to claim")
		return nil
	}

	// A first attempt fails, leaving its tails.
	as := claim()
	task := as.TaskID
	if err := eng.Finish(ctx, task, as.Attempt, as.ClaimToken, engine.Result{Status: 1, Message: "boom",
		StdoutTail: "creating vm\n", StderrTail: "quota hit"}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := w.cli(t, "logs", task)
	if code != 0 {
		t.Fatalf("logs: exit %d: %s", code, errOut)
	}
	golden(t, "logs-failed-attempt.txt", out)

	// The retry runs; logs -f shows its live output, then ends with it.
	as = claim()
	if as.TaskID != task {
		t.Fatalf("claimed %s, want the retry of %s", as.TaskID, task)
	}
	var follow syncBuffer
	exited := make(chan int, 1)
	go func() {
		var errOut bytes.Buffer
		code := run(ctx, []string{"logs", task, "-f", "--server", w.s.URL, "--token", w.token}, &follow, &errOut)
		if code != 0 {
			t.Errorf("logs -f: exit %d: %s", code, errOut.String())
		}
		exited <- code
	}()
	// The subscription is live once a line reported gets through.
	deadline := time.Now().Add(30 * time.Second)
	for seq := 1; !strings.Contains(follow.String(), "progress 1\n"); seq++ {
		if time.Now().After(deadline) {
			t.Fatalf("logs -f printed no live output in 30 s:\n%s", follow.String())
		}
		w.s.Must(agentTok.CreateAPIToken.Secret, `mutation($in: ProgressInput!) { reportProgress(input: $in) }`,
			map[string]any{"in": map[string]any{"taskId": task, "attempt": as.Attempt, "claimToken": as.ClaimToken, "seq": seq,
				"stream": "STDOUT", "chunk": "progress 1\n"}}, &struct{}{})
		time.Sleep(20 * time.Millisecond)
	}
	if err := eng.Finish(ctx, task, as.Attempt, as.ClaimToken, engine.Result{StdoutTail: "progress 1\nvm up\n"}); err != nil {
		t.Fatal(err)
	}
	<-exited
	got := follow.String()
	for _, want := range []string{"== attempt 1 on logs-agent (status 1: boom)\n-- stdout\ncreating vm\n-- stderr\nquota hit\n",
		"progress 1\n", "== attempt 2 on logs-agent (status 0)\n-- stdout\nprogress 1\nvm up\n", "== task " + task + " COMPLETE"} {
		if !strings.Contains(got, want) {
			t.Errorf("logs -f lacks %q:\n%s", want, got)
		}
	}
	if _, errOut, code := w.cli(t, "logs", "nodash"); code != 1 || !strings.Contains(errOut, "<job id>-<number>") {
		t.Errorf("logs nodash: exit %d: %q", code, errOut)
	}
}

// job show opens a job of 15,000 tasks (a 1,000-node cluster's create)
// under the server's default complexity limit, which refuses reading
// them all in one request: it reads them a page at a time, every task
// once, in plan order; and logs finds a task of it without reading the
// rest.
func TestJobShowBigJob(t *testing.T) {
	w := newCLIWorld(t)
	id := w.create(t, "web-cluster", "big", 3)
	job := w.latestJob(t, id)
	const n = 15_000
	all := servertest.CloneTasks(t, w.s.Srv.Store().DB(), job, n)

	out, errOut, code := w.cli(t, "job", "show", job, "-o", "json")
	var shown shownJob
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil {
		t.Fatalf("job show -o json: exit %d, %v: %s", code, err, errOut)
	}
	got := make([]string, len(shown.Tasks))
	for i, tk := range shown.Tasks {
		got[i] = tk.ID
	}
	if strings.Join(got, " ") != strings.Join(all, " ") {
		t.Errorf("job show lists %d tasks, not the job's %d in plan order", len(got), len(all))
	}

	out, errOut, code = w.cli(t, "job", "show", job)
	if lines := strings.Count(out, "\n"); code != 0 || lines != n+2 {
		t.Errorf("job show: exit %d, %d lines, want %d: %s", code, lines, n+2, errOut)
	}
	if !strings.Contains(out, all[n-1]) {
		t.Errorf("job show does not list the last task %s", all[n-1])
	}

	if _, errOut, code := w.cli(t, "logs", all[0]); code != 0 {
		t.Errorf("logs %s: exit %d: %s", all[0], code, errOut)
	}
}
