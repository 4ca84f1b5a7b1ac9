// Package bench holds benchmarks through the whole product: a real server
// (in this process) over Postgres and Redis, and the real agent talking to
// it over GraphQL.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/server/servertest"
)

// Run with: make bench-throughput, or
//
//	go test -run '^$' -bench Throughput -benchtime 1x -timeout 1h ./bench/
//
// COOPR_BENCH_SIZES lists the cluster sizes (default 10,100,1000,5000);
// COOPR_BENCH_SLOTS the agent's slots (default 16);
// COOPR_BENCH_CPUPROFILE=FILE writes a CPU profile of each size to FILE-n;
// COOPR_BENCH_PGSAMPLE=1 prints the server's Postgres statements most
// often active (sampled every 5 ms).

// noop is a driver for every role that does nothing and succeeds; a
// CONFIRM gives the node its addresses, as a provider's would.
type noop struct{}

func (noop) Run(_ context.Context, t *drivers.Task, _ drivers.Output) drivers.Result {
	if t.TaskName == "CONFIRM" {
		return drivers.Result{IPAddresses: map[string]string{"access_v4": "10.2.0.1", "bind_v4": "10.2.0.1"}}
	}
	return drivers.Result{}
}

// benchTemplate is one service on every node with a config whose macros
// expand per node: five tasks a node to create (CREATE, CONFIRM,
// BOOTSTRAP, INSTALL, CONFIGURE), one to delete.
const benchTemplate = `{"name": "bench", "description": "base on every node",
	"defaults": {"services": ["base"], "provider": "rackspace", "hardwaretype": "small", "imagetype": "debian12",
		"config": {"bench": {"me": "%host.self%", "addr": "%ip.self%", "nodes": "%num.service.base%"}}},
	"compatibility": {"services": ["base"], "hardwaretypes": ["small"], "imagetypes": ["debian12"]}}`

func sizes(b *testing.B) []int {
	v := os.Getenv("COOPR_BENCH_SIZES")
	if v == "" {
		return []int{10, 100, 1000, 5000}
	}
	var out []int
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			b.Fatalf("COOPR_BENCH_SIZES: %q is not a cluster size", f)
		}
		out = append(out, n)
	}
	return out
}

type row struct {
	nodes       int
	create, del rate
}

// rate is a job's tasks over the time from its first claim to its last
// finish (the engine and agent at work), and the wall time from the
// mutation to the cluster's final status as a client polling every 20 ms
// sees it (planning included).
type rate struct {
	tasks       int
	work, wall  time.Duration
	tasksPerSec float64
	cpu         time.Duration // this process's (server and agent), over the wall time
	trace       *cpuTrace     // this process's CPU through the wall time, to read it over the work's window
	cpuWork     time.Duration // this process's CPU from the first claim to the last finish
	pg, redis   time.Duration // the server's Postgres backends' and Redis's, over the wall time
	requests    float64       // GraphQL requests over HTTP, over the wall time (the client's polls included)
	held, gap   float64       // ms a task is held by the agent; ms from a node's finish to its next claim
	ready, wait float64       // ms from the finish that made a task ready to its queuing; from its queuing to its claim
	// tasks per claim statement and per finish statement (or transaction)
	perClaim, perFinish float64
}

// requests is the server's count of GraphQL requests over HTTP so far.
func requests(b *testing.B, s *servertest.Server) float64 {
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "coopr_http_requests_total{") && strings.Contains(line, `endpoint="graphql"`) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += v
		}
	}
	return n
}

// perTask is the requests per task.
func (r rate) perTask() float64 {
	if r.tasks == 0 {
		return 0
	}
	return r.requests / float64(r.tasks)
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerTask is the process's CPU milliseconds per task.
func (r rate) cpuPerTask() float64 { return r.perTaskMs(r.cpu) }

// perTaskMs is d in milliseconds per task.
func (r rate) perTaskMs(d time.Duration) float64 {
	if r.tasks == 0 {
		return 0
	}
	return float64(d.Microseconds()) / 1000 / float64(r.tasks)
}

// BenchmarkThroughput creates and then deletes a cluster of each size with
// one agent of 16 slots running a no-op driver, and prints the tasks per
// second of each job.
func BenchmarkThroughput(b *testing.B) {
	slots := 16
	if v, err := strconv.Atoi(os.Getenv("COOPR_BENCH_SLOTS")); err == nil && v > 0 {
		slots = v
	}
	ns := sizes(b)
	s := servertest.Start(b)
	// The server names its Postgres connections: the meter finds its
	// backends, to count their CPU time, by that name.
	var app string
	if err := s.Srv.Store().DB().Get(&app, `SELECT current_setting('application_name')`); err != nil {
		b.Fatal(err)
	}
	sampleStatements := os.Getenv("COOPR_BENCH_PGSAMPLE") != ""
	ctx := context.Background()
	for _, part := range []struct{ dir, tenant string }{
		{"../testdata/catalog/types", "superadmin"},
		{"../testdata/catalog/templates", "acme"},
	} {
		c, is, err := catalog.LoadPath(part.dir)
		if err != nil || is.HasErrors() {
			b.Fatalf("%s: %v %v", part.dir, err, is.Errors())
		}
		if _, err := s.Srv.Store().EnsureTenant(ctx, part.tenant); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Srv.Store().ImportCatalog(ctx, part.tenant, c); err != nil {
			b.Fatal(err)
		}
	}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", tenant: "acme"}) { secret } }`, nil, &tok)
	admin := tok.CreateAPIToken.Secret
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agentToken := tok.CreateAPIToken.Secret
	s.Must(s.Super, `mutation($n: Int!) { updateTenant(name: "acme", input: {name: "acme", workers: $n}) { id } }`,
		map[string]any{"n": slots}, &struct{}{})
	s.Must(admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
		map[string]any{"e": jsonRaw(b, benchTemplate)}, &struct{}{})

	reg := drivers.NewRegistry()
	reg.Register(drivers.Descriptor{Role: drivers.RoleVM, Name: "rackspace"}, noop{})
	reg.Register(drivers.Descriptor{Role: drivers.RoleNode, Name: "ssh"}, noop{})
	reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "chef-solo"}, noop{})
	a, err := agent.New(agent.Config{Server: s.URL, Token: agentToken, ID: "bench-agent", Capacity: slots, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, reg)
	if err != nil {
		b.Fatal(err)
	}
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	b.Cleanup(func() { cancel(); <-done })

	var rows []row
	b.ResetTimer()
	for range b.N {
		rows = rows[:0]
		for _, n := range ns {
			stop := profile(b, n)
			var cr struct{ CreateCluster struct{ ID string } }
			// The meter starts first: finding Redis's pid reads every
			// process's name in /proc, about 10 ms of this process's CPU,
			// which is not the server's.
			m := startMeter(s.Srv.Store().DB(), app, sampleStatements)
			start, cpu, reqs := time.Now(), cpuTime(), requests(b, s)
			tr := startTrace()
			s.Must(admin, `mutation($n: Int!) { createCluster(input: {name: "bench", clusterTemplate: "bench", numMachines: $n}) { id } }`,
				map[string]any{"n": n}, &cr)
			id := cr.CreateCluster.ID
			create := follow(b, s, admin, id, "ACTIVE", start)
			create.cpu, create.requests = cpuTime()-cpu, requests(b, s)-reqs
			create.trace = tr.end()
			create.pg, create.redis = m.end()
			m.top(b, fmt.Sprintf("create %d", n), 25)
			m = startMeter(s.Srv.Store().DB(), app, sampleStatements)
			start, cpu, reqs = time.Now(), cpuTime(), requests(b, s)
			tr = startTrace()
			var del struct{ DeleteCluster struct{ ID string } }
			s.Must(admin, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": id}, &del)
			deleted := follow(b, s, admin, id, "TERMINATED", start)
			deleted.cpu, deleted.requests = cpuTime()-cpu, requests(b, s)-reqs
			deleted.trace = tr.end()
			deleted.pg, deleted.redis = m.end()
			m.top(b, fmt.Sprintf("delete %d", n), 25)
			stop()
			create.fill(b, s, firstJob(b, s, id))
			deleted.fill(b, s, del.DeleteCluster.ID)
			rows = append(rows, row{nodes: n, create: create, del: deleted})
		}
	}
	b.StopTimer()
	fmt.Printf("\nno-op tasks through the server and one agent over GraphQL (%d slots), Postgres and Redis\n", slots)
	fmt.Printf("(cpu: this process's, server and agent, in ms per task; pg: the server's Postgres backends', redis: the\n")
	fmt.Printf(" Redis server's (shared with anything else using it), both in ms per task over the wall time;\n")
	fmt.Printf(" req: GraphQL requests per task, the client's polls every 20 ms included;\n")
	fmt.Printf(" held: ms from a task's claim to its finish; gap: ms from a node's finish to the claim of its next task;\n")
	fmt.Printf(" ready: ms from the finish that made a task ready to its queuing; wait: from its queuing to its claim;\n")
	fmt.Printf(" c/r, f/r: tasks per claim statement, per finish statement or transaction;\n")
	fmt.Printf(" cpu/w: this process's CPU in ms per task from the first claim to the last finish, the window of tasks/s)\n")
	fmt.Printf("%6s | %6s %8s %7s %5s %5s %5s %5s %5s %6s %7s %6s %6s %4s %4s | %6s %8s %7s %5s %5s %5s %5s %5s %6s %4s %4s\n", "nodes", "create", "tasks/s", "wall", "cpu", "cpu/w", "pg", "redis", "req",
		"held", "gap", "ready", "wait", "c/r", "f/r", "delete", "tasks/s", "wall", "cpu", "cpu/w", "pg", "redis", "req", "held", "c/r", "f/r")
	for _, r := range rows {
		c, d := r.create, r.del
		fmt.Printf("%6d | %6d %8.0f %6.1fs %5.2f %5.2f %5.2f %5.2f %5.2f %6.1f %7.1f %6.1f %6.1f %4.1f %4.1f | %6d %8.0f %6.1fs %5.2f %5.2f %5.2f %5.2f %5.2f %6.1f %4.1f %4.1f\n", r.nodes,
			c.tasks, c.tasksPerSec, c.wall.Seconds(), c.cpuPerTask(), c.perTaskMs(c.cpuWork), c.perTaskMs(c.pg), c.perTaskMs(c.redis), c.perTask(), c.held, c.gap, c.ready, c.wait, c.perClaim, c.perFinish,
			d.tasks, d.tasksPerSec, d.wall.Seconds(), d.cpuPerTask(), d.perTaskMs(d.cpuWork), d.perTaskMs(d.pg), d.perTaskMs(d.redis), d.perTask(), d.held, d.perClaim, d.perFinish)
		b.ReportMetric(r.create.tasksPerSec, fmt.Sprintf("create-%d-tasks/s", r.nodes))
		b.ReportMetric(r.del.tasksPerSec, fmt.Sprintf("delete-%d-tasks/s", r.nodes))
		b.ReportMetric(r.create.cpuPerTask(), fmt.Sprintf("create-%d-cpu-ms/task", r.nodes))
		b.ReportMetric(r.create.perTaskMs(r.create.pg), fmt.Sprintf("create-%d-pg-ms/task", r.nodes))
		b.ReportMetric(r.create.perTaskMs(r.create.cpuWork), fmt.Sprintf("create-%d-cpu-work-ms/task", r.nodes))
	}
}

// profile starts a CPU profile of this process (the server and the agent)
// for the cluster of n nodes, its create and delete, when
// COOPR_BENCH_CPUPROFILE names a file: it is written as FILE-n.
func profile(b *testing.B, n int) (stop func()) {
	f := os.Getenv("COOPR_BENCH_CPUPROFILE")
	if f == "" {
		return func() {}
	}
	out, err := os.Create(fmt.Sprintf("%s-%d", f, n))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}
}

func jsonRaw(b *testing.B, s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		b.Fatal(err)
	}
	return v
}

// follow polls the cluster every 20 ms until it has status want.
func follow(b *testing.B, s *servertest.Server, token, id, want string, start time.Time) rate {
	b.Helper()
	deadline := time.Now().Add(time.Hour)
	for time.Now().Before(deadline) {
		var c struct {
			Cluster struct{ Status, Message string }
		}
		s.Must(token, `query($id: ID!) { cluster(id: $id) { status message } }`, map[string]any{"id": id}, &c)
		switch c.Cluster.Status {
		case want:
			return rate{wall: time.Since(start)}
		case "PENDING", "INCOMPLETE":
		default:
			b.Fatalf("cluster %s is %s (%s), want %s", id, c.Cluster.Status, c.Cluster.Message, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("cluster %s: not %s within an hour", id, want)
	return rate{}
}

// firstJob is the id of the cluster's first job, the one that created it.
func firstJob(b *testing.B, s *servertest.Server, cluster string) string {
	var id string
	if err := s.Srv.Store().DB().Get(&id, `SELECT id FROM jobs WHERE cluster_id = $1 ORDER BY created_at LIMIT 1`, cluster); err != nil {
		b.Fatalf("create job of %s: %v", cluster, err)
	}
	return id
}

// fill reads the job's tasks and the span of its attempts.
func (r *rate) fill(b *testing.B, s *servertest.Server, job string) {
	var span struct {
		Tasks int     `db:"tasks"`
		Secs  float64 `db:"secs"`
	}
	if err := s.Srv.Store().DB().Get(&span, `SELECT (SELECT count(*) FROM tasks WHERE job_id = $1) AS tasks,
		coalesce(extract(epoch FROM max(a.finished_at) - min(a.claimed_at)), 0)::float8 AS secs
		FROM task_attempts a JOIN tasks t ON t.id = a.task_id WHERE t.job_id = $1`, job); err != nil {
		b.Fatalf("job %s: %v", job, err)
	}
	r.tasks, r.work = span.Tasks, time.Duration(span.Secs*float64(time.Second))
	var bounds struct {
		First time.Time `db:"first"`
		Last  time.Time `db:"last"`
	}
	if err := s.Srv.Store().DB().Get(&bounds, `SELECT min(a.claimed_at) AS first, max(a.finished_at) AS last
		FROM task_attempts a JOIN tasks t ON t.id = a.task_id WHERE t.job_id = $1`, job); err != nil {
		b.Fatalf("job %s: %v", job, err)
	}
	if r.trace != nil {
		r.cpuWork = r.trace.between(bounds.First, bounds.Last)
	}
	// Where a node's tasks spend their time: held by the agent (claim to
	// finish: the claim's answer, the run, the finish's request), and
	// waiting between one task's finish and the claim of the node's next
	// (the commit, the scheduler, the queue, the claim).
	var lat struct {
		Held  float64 `db:"held"`
		Gap   float64 `db:"gap"`
		Ready float64 `db:"ready"`
		Wait  float64 `db:"wait"`
	}
	// The QUEUED event is stamped with the queuing transaction's start;
	// ready is from the job's last finish before it (the one that made
	// the task ready, not a slower peer's behind the address gate).
	if err := s.Srv.Store().DB().Get(&lat, `WITH a AS (SELECT t.node_id, a.claimed_at, a.finished_at,
			lag(a.finished_at) OVER (PARTITION BY t.node_id ORDER BY a.claimed_at) AS prev,
			(SELECT min(e.created_at) FROM events e WHERE e.job_id = t.job_id AND e.task_id = t.id AND e.kind = 'task'
				AND e.state = 'QUEUED' AND e.attempt = a.attempt) AS queued
			FROM task_attempts a JOIN tasks t ON t.id = a.task_id WHERE t.job_id = $1 AND t.node_id <> ''),
		r AS (SELECT a.*, (SELECT max(b.finished_at) FROM task_attempts b JOIN tasks u ON u.id = b.task_id
				WHERE u.job_id = $1 AND b.finished_at <= a.queued) AS cause FROM a WHERE a.prev IS NOT NULL)
		SELECT coalesce((SELECT avg(extract(epoch FROM finished_at - claimed_at)) FROM a), 0)::float8 * 1000 AS held,
			coalesce(avg(extract(epoch FROM claimed_at - prev)), 0)::float8 * 1000 AS gap,
			coalesce(avg(extract(epoch FROM queued - cause)), 0)::float8 * 1000 AS ready,
			coalesce(avg(extract(epoch FROM claimed_at - queued)), 0)::float8 * 1000 AS wait FROM r`, job); err != nil {
		b.Fatalf("job %s: %v", job, err)
	}
	r.held, r.gap, r.ready, r.wait = lat.Held, lat.Gap, lat.Ready, lat.Wait
	// Tasks per claim statement and per finish batch: the statements
	// stamp their rows with their transaction's start, now(), so rows
	// stamped alike came from one statement.
	var per struct {
		Claim  float64 `db:"claim"`
		Finish float64 `db:"finish"`
	}
	if err := s.Srv.Store().DB().Get(&per, `SELECT count(*)::float8 / greatest(count(DISTINCT a.claimed_at), 1) AS claim,
			count(*)::float8 / greatest(count(DISTINCT a.finished_at), 1) AS finish
		FROM task_attempts a JOIN tasks t ON t.id = a.task_id WHERE t.job_id = $1`, job); err != nil {
		b.Fatalf("job %s: %v", job, err)
	}
	r.perClaim, r.perFinish = per.Claim, per.Finish
	if span.Secs > 0 {
		r.tasksPerSec = float64(span.Tasks) / span.Secs
	}
}
