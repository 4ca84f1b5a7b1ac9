package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cooprhq/coopr/drivers/vm/pool"
	"github.com/cooprhq/coopr/graph"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// Run with: go test -run '^$' -bench 'AgentRSS|AgentKill' -benchtime 1x ./e2e/
//
// Both benchmarks run real `coopr agent` processes against a real server
// and report what they measured with b.ReportMetric and a table in the
// benchmark's log.

// benchLog is a buffer a subprocess writes while the benchmark reads it.
type benchLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *benchLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *benchLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// benchAgent is a `coopr agent` subprocess.
type benchAgent struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	log    *benchLog
}

// startBenchAgent runs `coopr agent` with its own agent token until stop
// or the benchmark's end.
func startBenchAgent(b *testing.B, w *world, name string, capacity int) *benchAgent {
	b.Helper()
	var tok struct{ CreateAPIToken struct{ Secret string } }
	w.s.Must(w.s.Super, `mutation($n: String!) { createAPIToken(input: {name: $n, kind: AGENT, agents: "*"}) { secret } }`,
		map[string]any{"n": name}, &tok)
	a := &benchAgent{name: name, exited: make(chan struct{}), log: &benchLog{}}
	a.cmd = exec.Command(coopr(b), "agent", "--server", w.s.URL, "--capacity", strconv.Itoa(capacity),
		"--name", name, "--work-dir", b.TempDir())
	a.cmd.Env = append(os.Environ(), "COOPR_TOKEN="+tok.CreateAPIToken.Secret)
	a.cmd.Stdout, a.cmd.Stderr = a.log, a.log
	if err := a.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	b.Cleanup(func() {
		a.kill()
		if b.Failed() {
			b.Logf("agent %s log:\n%s", name, a.log.String())
		}
	})
	return a
}

func (a *benchAgent) kill() {
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	<-a.exited
}

// stop ends the agent as systemd would (SIGTERM), killing it after 30 s.
func (a *benchAgent) stop() {
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		a.kill()
	}
}

// benchProcMem reads the memory lines of /proc/<pid>/status: VmRSS,
// VmHWM, RssAnon and RssFile in bytes, and Threads.
func benchProcMem(pid int) (benchMemSample, error) {
	var s benchMemSample
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer f.Close()
	dst := map[string]*int64{"VmRSS": &s.rss, "VmHWM": &s.hwm, "RssAnon": &s.anon, "RssFile": &s.file, "Threads": &s.threads}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		p := dst[k]
		if p == nil {
			continue
		}
		f := strings.Fields(v) // "12345 kB", or a count
		if len(f) == 0 {
			return s, fmt.Errorf("%s: %q", k, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return s, fmt.Errorf("%s: %q", k, v)
		}
		if len(f) == 2 && f[1] == "kB" {
			n <<= 10
		}
		*p = n
	}
	if s.rss == 0 {
		return s, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
	}
	s.at = time.Now()
	return s, sc.Err()
}

type benchMemSample struct {
	at                            time.Time
	rss, hwm, anon, file, threads int64
}

// benchSampler samples a process's memory every interval until stopped.
type benchSampler struct {
	pid     int
	mu      sync.Mutex
	samples []benchMemSample
	done    chan struct{}
	stopped chan struct{}
}

func benchSampleMem(pid int, every time.Duration) *benchSampler {
	m := &benchSampler{pid: pid, done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(m.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			m.take()
			select {
			case <-m.done:
				return
			case <-tick.C:
			}
		}
	}()
	return m
}

// take records a sample now and returns it.
func (m *benchSampler) take() benchMemSample {
	s, err := benchProcMem(m.pid)
	if err != nil {
		return benchMemSample{}
	}
	m.mu.Lock()
	m.samples = append(m.samples, s)
	m.mu.Unlock()
	return s
}

func (m *benchSampler) stop() []benchMemSample {
	close(m.done)
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]benchMemSample(nil), m.samples...)
}

func benchMB(n int64) float64 { return float64(n) / (1 << 20) }

type benchAttempt struct {
	Attempt    int
	Agent      string
	ClaimedAt  time.Time
	FinishedAt *time.Time
	Status     *int
}

type benchTask struct {
	ID, Action, Service, Hostname, State string
	Attempts                             []benchAttempt
}

// benchTasks lists the tasks of the cluster's newest job.
func benchTasks(b *testing.B, w *world, id string) []benchTask {
	b.Helper()
	var out struct {
		Cluster struct {
			Jobs []struct{ Tasks []benchTask }
		}
	}
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { jobs { tasks { id action service hostname state
		attempts { attempt agent claimedAt finishedAt status } } } } }`, map[string]any{"id": id}, &out)
	if len(out.Cluster.Jobs) == 0 {
		return nil
	}
	return out.Cluster.Jobs[0].Tasks
}

// benchTasksOf lists the tasks of the clusters' newest jobs, a few
// clusters a request (the server's cost limit: with attempts, a read per
// task); attempts adds each task's attempts.
func benchTasksOf(b *testing.B, w *world, ids []string, attempts bool) []benchTask {
	b.Helper()
	fields := "id action state"
	per := 40
	if attempts {
		fields += " attempts { attempt agent claimedAt finishedAt status }"
		per = 3
	}
	var all []benchTask
	for len(ids) > 0 {
		chunk := ids[:min(per, len(ids))]
		ids = ids[len(chunk):]
		var q strings.Builder
		q.WriteString("query {")
		for i, id := range chunk {
			fmt.Fprintf(&q, " c%d: cluster(id: %q) { jobs { tasks { %s } } }", i, id, fields)
		}
		q.WriteString(" }")
		var out map[string]struct{ Jobs []struct{ Tasks []benchTask } }
		w.s.Must(w.admin, q.String(), nil, &out)
		for _, c := range out {
			if len(c.Jobs) > 0 {
				all = append(all, c.Jobs[0].Tasks...)
			}
		}
	}
	return all
}

func benchPut(b *testing.B, w *world, kind string, e map[string]any) {
	b.Helper()
	w.s.Must(w.admin, `mutation($k: CatalogKind!, $e: JSON!) { putCatalogEntity(kind: $k, entity: $e) { entity { version } } }`,
		map[string]any{"k": kind, "e": e}, &struct{}{})
}

// BenchmarkAgentRSS measures a `coopr agent --capacity 200` process while
// 200 of its slots run real tasks: the INSTALL of a service on 200 pool
// hosts (real sshd processes), each task's script waiting over SSH until
// the benchmark has seen all 200 IN_PROGRESS on the server and sampled
// the agent's memory. Target (issue): RSS ≤ 64 MB.
//
// The 200 hosts are split over benchGroups pool providers, one cluster of
// 200/benchGroups nodes each: the pool driver's CREATE probes every host
// of its provider before it leases one, so one provider of 200 hosts and
// one cluster of 200 nodes cost 200×200 SSH probes; on this 2-core machine
// the CREATEs then ran past their leases (30 s) and nothing got further.
// The providers have no network block (no NETWORK_* tasks): every SSH
// command costs tens of ms of CPU here, and the measure is of the INSTALLs.
func BenchmarkAgentRSS(b *testing.B) {
	const (
		slots       = 200
		benchGroups = 40
		per         = slots / benchGroups
	)
	w := newWorld(b, slots)

	// The fleet: 200 sshd hosts that accept one key.
	t0 := time.Now()
	key := sshdtest.NewKey(b)
	hosts := make([]*sshdtest.Host, slots)
	// Four at a time; buffered, so that a worker ended by a failed Start
	// (b.Fatal) blocks no one.
	next := make(chan int, slots)
	for i := range hosts {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				hosts[i] = sshdtest.Start(b, sshdtest.Options{Key: key, Hostname: fmt.Sprintf("benchhost%d", i)})
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	hostsTook := time.Since(t0)

	// Each INSTALL reads a FIFO on this machine (the sshd hosts share its
	// /tmp) until the benchmark closes its end: busy, without burning CPU
	// on polling, for 5 minutes at most.
	fifo := filepath.Join(b.TempDir(), "release")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		b.Fatal(err)
	}
	// Held open for writing: readers block in read until it is closed.
	hold, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { _ = hold.Close() }) }
	b.Cleanup(release)
	script := fmt.Sprintf("timeout 300 cat %q >/dev/null\nexit 0\n", fifo)
	providers := make([]string, benchGroups)
	hw, img := map[string]any{}, map[string]any{}
	for g := range providers {
		providers[g] = fmt.Sprintf("benchpool%02d", g)
		addrs := make([]string, per)
		for i := range addrs {
			addrs[i] = hosts[g*per+i].Addr()
		}
		benchPut(b, w, "PROVIDERS", map[string]any{"name": providers[g], "providertype": "pool",
			"provisioner": map[string]any{"hosts": strings.Join(addrs, " "), "ssh_user": "root",
				"ssh_key": string(key.PEM), "wipe_script": "true"}})
		hw[providers[g]] = map[string]any{"flavor": "any"}
		img[providers[g]] = map[string]any{"image": "existing", "sshuser": "root"}
	}
	benchPut(b, w, "HARDWARETYPES", map[string]any{"name": "benchsmall", "providermap": hw})
	benchPut(b, w, "IMAGETYPES", map[string]any{"name": "benchdebian", "providermap": img})
	benchPut(b, w, "SERVICES", map[string]any{"name": "benchbusy", "description": "an INSTALL that stays busy",
		"dependencies": map[string]any{"conflicts": []string{},
			"install":  map[string]any{"requires": []string{}, "uses": []string{}},
			"provides": []string{},
			"runtime":  map[string]any{"requires": []string{}, "uses": []string{}}},
		"provisioner": map[string]any{"actions": map[string]any{
			"install": map[string]any{"type": "shell", "fields": map[string]any{"script": script}}}}})
	benchPut(b, w, "CLUSTERTEMPLATES", map[string]any{"name": "bench-busy", "description": "N nodes busy installing",
		"defaults": map[string]any{"services": []string{"benchbusy"}, "provider": providers[0],
			"hardwaretype": "benchsmall", "imagetype": "benchdebian"},
		"compatibility": map[string]any{"services": []string{"benchbusy"}, "hardwaretypes": []string{"benchsmall"},
			"imagetypes": []string{"benchdebian"}}})

	agent := startBenchAgent(b, w, "bench-rss", slots)
	pid := agent.cmd.Process.Pid
	sampler := benchSampleMem(pid, 100*time.Millisecond)
	// Idle: registered, no task yet.
	time.Sleep(2 * time.Second)
	idle := sampler.take()

	b.ResetTimer()
	t1 := time.Now()
	ids := make([]string, benchGroups)
	var cwg sync.WaitGroup
	for k := range 4 {
		cwg.Go(func() {
			for g := k; g < benchGroups; g += 4 {
				ids[g] = w.create(b, "bench-busy", providers[g], per)
			}
		})
	}
	cwg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	failures := func() string {
		var out []string
		for _, id := range ids {
			out = append(out, w.failures(b, id))
		}
		return strings.Join(out, "\n")
	}
	// busy counts the INSTALLs IN_PROGRESS, as the server sees them, and
	// those complete; with attempts, only those under a claim of the
	// agent under test.
	progress := []string{fmt.Sprintf("  %4.0fs %d clusters created", time.Since(t1).Seconds(), len(ids))}
	lastProgress := time.Now()
	busy := func(attempts bool) (n, done int) {
		all := benchTasksOf(b, w, ids, attempts)
		if time.Since(lastProgress) >= 5*time.Second {
			lastProgress = time.Now()
			progress = append(progress, fmt.Sprintf("  %4.0fs%s", time.Since(t1).Seconds(), benchCounts(all)))
		}
		for _, tk := range all {
			if tk.Action != "INSTALL" {
				continue
			}
			if tk.State == "FAILED" {
				b.Fatalf("INSTALL %s failed: %s", tk.ID, failures())
			}
			k := len(tk.Attempts)
			if tk.State == "IN_PROGRESS" && (!attempts || k > 0 && tk.Attempts[k-1].Agent == agent.name) {
				n++
			}
			if tk.State == "COMPLETE" {
				done++
			}
		}
		return n, done
	}
	var at200 benchMemSample
	deadline := time.Now().Add(150 * time.Second)
	for {
		select {
		case <-agent.exited:
			b.Fatalf("the agent exited; its log:\n%s", agent.log.String())
		default:
		}
		n, done := busy(false)
		if n == slots {
			at200 = sampler.take()
			if n, _ := busy(true); n != slots {
				b.Fatalf("%d INSTALLs IN_PROGRESS, but only %d claimed by %s", slots, n, agent.name)
			}
			break
		}
		if done > 0 {
			b.Fatalf("an INSTALL completed before all %d were busy", slots)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d INSTALLs IN_PROGRESS after %s; progress:\n%s\n%s", n, slots, time.Since(t1),
				strings.Join(progress, "\n"), failures())
		}
		time.Sleep(time.Second)
	}
	ramp := time.Since(t1)
	// Hold the 200 busy slots a few seconds, sampling, and check they are
	// still all busy at the end.
	hold0 := time.Now()
	time.Sleep(5 * time.Second)
	if n, _ := busy(true); n != slots {
		b.Fatalf("only %d of %d INSTALLs IN_PROGRESS at the end of the hold", n, slots)
	}
	hold1 := time.Now()
	release()
	for _, id := range ids {
		w.follow(b, id, "ACTIVE", 2*time.Minute)
	}
	activeTook := time.Since(t1)
	b.StopTimer()

	t2 := time.Now()
	for _, id := range ids {
		w.delete(b, id)
	}
	for _, id := range ids {
		w.follow(b, id, "TERMINATED", 2*time.Minute)
	}
	deleteTook := time.Since(t2)
	final := sampler.take()
	samples := sampler.stop()
	agent.stop()
	for _, h := range hosts {
		if _, err := os.Lstat(h.Path(pool.LeasePath)); !errors.Is(err, fs.ErrNotExist) {
			b.Errorf("pool host %s still leased after the delete (%v)", h.Addr(), err)
		}
	}

	var peak, holdMax, holdMin int64
	for _, s := range samples {
		peak = max(peak, s.rss)
		if !s.at.Before(hold0) && !s.at.After(hold1) {
			holdMax = max(holdMax, s.rss)
			if holdMin == 0 || s.rss < holdMin {
				holdMin = s.rss
			}
		}
	}
	var tab strings.Builder
	tw := tabwriter.NewWriter(&tab, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "coopr agent --capacity %d; %d sshd pool hosts (%d providers × %d, one cluster of %d on each); %d INSTALLs IN_PROGRESS at once on the server\n",
		slots, slots, benchGroups, per, per, slots)
	fmt.Fprintf(tw, "phase\tVmRSS MB\tRssAnon MB\tRssFile MB\tthreads\n")
	row := func(name string, m benchMemSample) {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%d\n", name, benchMB(m.rss), benchMB(m.anon), benchMB(m.file), m.threads)
	}
	row("idle (registered)", idle)
	row("200 busy (first seen)", at200)
	fmt.Fprintf(tw, "200 busy, 5 s hold min–max\t%.1f–%.1f\t\t\t\n", benchMB(holdMin), benchMB(holdMax))
	row("after the delete", final)
	fmt.Fprintf(tw, "peak: max of %d samples (100 ms), VmHWM\t%.1f, %.1f\t\t\t(target ≤ 64)\n", len(samples), benchMB(peak), benchMB(final.hwm))
	tw.Flush()
	// Benchmark logs are cut after 10 lines unless -v.
	b.Logf("\n%stimes: %d hosts started %s, create→200 busy %s, create→ACTIVE %s, delete %s",
		tab.String(), slots, hostsTook.Round(time.Millisecond), ramp.Round(time.Millisecond),
		activeTook.Round(time.Millisecond), deleteTook.Round(time.Millisecond))
	if testing.Verbose() {
		var sessions, conns int
		for _, h := range hosts {
			l := h.Log()
			sessions += strings.Count(l, "Starting session:")
			conns += strings.Count(l, "Accepted publickey")
		}
		b.Logf("ramp (tasks by action:state):\n%s\nsshd: %d connections, %d sessions over the run",
			strings.Join(progress, "\n"), conns, sessions)
	}

	b.ReportMetric(benchMB(at200.rss), "MB-RSS@200busy")
	b.ReportMetric(benchMB(holdMax), "MB-RSS-hold-max")
	b.ReportMetric(benchMB(max(peak, final.hwm)), "MB-peak")
	b.ReportMetric(ramp.Seconds(), "s-to-200busy")
}

// BenchmarkAgentKillRestart measures how soon a SIGKILLed agent's tasks
// run again on another agent: a `coopr agent` subprocess and an
// in-process survivor build a web-cluster of 3 on the local provider; the
// subprocess is killed while it holds claims, and for each task it held
// the benchmark takes the time from the kill to the server failing its
// attempt and to the survivor's claim of the next attempt. Rounds:
// max(b.N, 5), a fresh subprocess and cluster each. Target (issue): ≤ 15 s.
func BenchmarkAgentKillRestart(b *testing.B) {
	w := newWorld(b, 8)
	coopr(b)
	w.startAgent(b, "survivor", 8)
	grace := w.s.Config.AgentSessionGrace
	graceSrc := "configured"
	if grace <= 0 {
		grace, graceSrc = graph.DefaultSessionGrace, "default"
	}
	ttl := w.s.Srv.Engine().LeaseTTL()

	type row struct {
		round           int
		task, action    string
		failed, claimed time.Duration
		by              string
	}
	var rows []row
	rounds := max(b.N, 5)
	var took []time.Duration
	b.ResetTimer()
	for r := 1; r <= rounds; r++ {
		start := time.Now()
		doomed := startBenchAgent(b, w, fmt.Sprintf("doomed-%d", r), 8)
		id := w.create(b, "web-cluster", "", 3)
		// Kill it while it holds claims: as soon as it holds two, or one
		// for half a second.
		held := map[string]int{} // task id -> the doomed attempt
		var first time.Time
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if time.Now().After(deadline) {
				b.Fatalf("round %d: %s claimed nothing within 2 minutes; its log:\n%s", r, doomed.name, doomed.log.String())
			}
			clear(held)
			for _, tk := range benchTasks(b, w, id) {
				if k := len(tk.Attempts); tk.State == "IN_PROGRESS" && k > 0 && tk.Attempts[k-1].Agent == doomed.name {
					held[tk.ID] = tk.Attempts[k-1].Attempt
				}
			}
			if len(held) > 0 && first.IsZero() {
				first = time.Now()
			}
			if len(held) >= 2 || (len(held) > 0 && time.Since(first) > 500*time.Millisecond) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := doomed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		<-doomed.exited

		w.follow(b, id, "ACTIVE", 5*time.Minute)
		for _, tk := range benchTasks(b, w, id) {
			n, ok := held[tk.ID]
			if !ok {
				continue
			}
			var mine *benchAttempt
			var next *benchAttempt
			for i := range tk.Attempts {
				a := &tk.Attempts[i]
				switch {
				case a.Attempt == n && a.Agent == doomed.name:
					mine = a
				case a.Attempt > n && next == nil:
					next = a
				}
			}
			if mine == nil || (mine.Status != nil && *mine.Status == 0 && mine.FinishedAt != nil && mine.FinishedAt.Before(killed)) {
				continue // finished between the look and the kill: not held
			}
			if next == nil {
				b.Errorf("round %d: task %s (%s) held by the killed agent never ran again", r, tk.ID, tk.Action)
				continue
			}
			var failed time.Duration
			if mine.FinishedAt != nil {
				failed = mine.FinishedAt.Sub(killed)
			}
			rows = append(rows, row{round: r, task: tk.ID, action: tk.Action, failed: failed,
				claimed: next.ClaimedAt.Sub(killed), by: next.Agent})
			if next.Agent != "survivor" {
				b.Errorf("round %d: task %s re-claimed by %q, want survivor", r, tk.ID, next.Agent)
			}
		}
		w.delete(b, id)
		w.follow(b, id, "TERMINATED", 3*time.Minute)
		w.noTraces(b, id)
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	if len(rows) == 0 {
		b.Fatal("no task was held by a killed agent")
	}

	claims := make([]float64, len(rows))
	fails := make([]float64, len(rows))
	for i, r := range rows {
		claims[i], fails[i] = r.claimed.Seconds(), r.failed.Seconds()
	}
	// One line a round: benchmark logs are cut after 10 lines unless -v.
	var tab strings.Builder
	tw := tabwriter.NewWriter(&tab, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "settings: agent session grace %s (%s), lease TTL %s, retry backoff 5s ±20%% (engine default); web-cluster of 3 on local; %d rounds\n",
		grace, graceSrc, ttl, rounds)
	fmt.Fprintf(tw, "round\ttasks held at kill\tkill→attempt failed\tkill→re-claimed by survivor\tround took\n")
	for r := 1; r <= rounds; r++ {
		var acts []string
		var f, c []float64
		for _, x := range rows {
			if x.round == r {
				acts = append(acts, x.action)
				f, c = append(f, x.failed.Seconds()), append(c, x.claimed.Seconds())
			}
		}
		fmt.Fprintf(tw, "%d\t%d (%s)\t%s\t%s\t%s\n", r, len(acts), strings.Join(acts, " "), benchRange(f), benchRange(c),
			took[r-1].Round(time.Second))
	}
	fmt.Fprintf(tw, "all\t%d\tmedian %.2fs\tmedian %.2fs, max %.2fs (target ≤ 15 s)\t\n", len(rows),
		benchMedian(fails), benchMedian(claims), benchMaxOf(claims))
	tw.Flush()
	b.Logf("\n%s", tab.String())

	b.ReportMetric(benchMaxOf(claims), "s-reclaim-max")
	b.ReportMetric(benchMedian(claims), "s-reclaim-median")
	b.ReportMetric(benchMedian(fails), "s-failed-median")
	b.ReportMetric(float64(len(rows)), "tasks-held")
}

// benchCounts summarizes tasks as action:state=count.
func benchCounts(tasks []benchTask) string {
	c := map[string]int{}
	for _, tk := range tasks {
		c[tk.Action+":"+tk.State]++
	}
	ks := make([]string, 0, len(c))
	for k := range c {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var sb strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&sb, " %s=%d", k, c[k])
	}
	return sb.String()
}

func benchMedian(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func benchMaxOf(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// benchRange is "a–b s" over xs (seconds).
func benchRange(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo == hi {
		return fmt.Sprintf("%.2fs", lo)
	}
	return fmt.Sprintf("%.2f–%.2fs", lo, hi)
}
