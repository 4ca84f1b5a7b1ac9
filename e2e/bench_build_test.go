package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the timeline reads the server's database
	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/vm/local"
	"github.com/cooprhq/coopr/drivers/vm/pool"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// BenchmarkBuildVsAnsible builds N nodes of base + web from the example
// catalog five ways: with coopr on machines of its own making (the local
// driver inside its cluster job); with coopr on a pre-made fleet lent
// through a pool provider ("coopr-pool"); with one Ansible playbook
// (forks = N); with Terraform (terraform_data resources whose remote-exec
// provisioners run the same steps, -parallelism=N, no provider to
// download); and the floor, every node's steps as one script over one raw
// SSH session, all nodes at once. Every leg but the first runs on fresh
// nodes made the same way, outside the tool: a fleet of local nspawn
// machines (benchFleet), deleted after the leg. It prints one table (per
// round, see COOPR_BENCH_ROUNDS): each tool's machines, services and
// total time, its ratio to coopr, and its services' overhead over the
// floor.
//
// The first coopr leg makes its machines inside its job and starts a
// node's services as soon as that node is up: its services column (from
// the first BOOTSTRAP's claim) holds the spread of its own machines'
// creation, and "after last" is its time from the last machine up to the
// last service started. coopr-pool is the like-for-like measure: its
// machines exist before it starts, as the others' do, and its services
// time runs from the create job's first task claim (the first pool
// CREATE, a lease) to the last task's end, so the lease, CONFIRM,
// BOOTSTRAP and services all count against it.
//
//	go test -run '^$' -bench BuildVsAnsible -benchtime 1x ./e2e/
//
// COOPR_BENCH_NODES is N (default 50); COOPR_BENCH_LEGS names the legs to
// run (default "coopr,coopr-pool,ansible,terraform,floor"). A leg whose
// tool is missing is skipped with a line saying how to get it.
// COOPR_BENCH_ROUNDS=R (default 1) runs the legs round-robin R times in
// one world (every leg once, in order, then every leg again, each on
// fresh nodes), prints each round's table, then per leg the median and
// range of its services and overhead over the floor, and per round the
// coopr legs' overhead over the floor divided by Terraform's in that
// round, with their median; the metrics are the medians. On a shared,
// loaded machine one round's ratio spreads too far to judge by.
// COOPR_BENCH_TIMELINE=1 prints, for each coopr leg, one node's tasks
// (queued, claimed, finished) and where every node's time went;
// COOPR_BENCH_CPUPROFILE=file writes a CPU profile of the server and agent
// during coopr's build (the first coopr leg run).
func BenchmarkBuildVsAnsible(b *testing.B) {
	n := 50
	if v := os.Getenv("COOPR_BENCH_NODES"); v != "" {
		fmt.Sscan(v, &n)
	}
	legs := map[string]bool{"coopr": true, "coopr-pool": true, "ansible": true, "terraform": true, "floor": true}
	if v := os.Getenv("COOPR_BENCH_LEGS"); v != "" {
		clear(legs)
		for _, l := range strings.Split(v, ",") {
			l = strings.TrimSpace(l)
			switch l {
			case "coopr", "coopr-pool", "ansible", "terraform", "floor":
				legs[l] = true
			default:
				b.Fatalf("COOPR_BENCH_LEGS: unknown leg %q (want some of coopr,coopr-pool,ansible,terraform,floor)", l)
			}
		}
	}
	var notes []string
	if _, err := exec.LookPath("ansible-playbook"); legs["ansible"] && err != nil {
		legs["ansible"] = false
		notes = append(notes, "ansible: skipped, ansible-playbook not found (apt-get install ansible)")
	}
	if _, err := exec.LookPath("terraform"); legs["terraform"] && err != nil {
		legs["terraform"] = false
		notes = append(notes, "terraform: skipped, not found; Debian has no package: "+
			"go install github.com/hashicorp/terraform@v1.5.7 (or a release from releases.hashicorp.com) and put it on PATH")
	}
	rounds := 1
	if v := os.Getenv("COOPR_BENCH_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			b.Fatalf("COOPR_BENCH_ROUNDS: %q is not a number of rounds (1 or more)", v)
		}
	}
	for range b.N {
		w := newWorld(b, n)
		w.fitLocalClusters(b, n)
		if legs["coopr"] || legs["coopr-pool"] {
			// One agent serves both coopr legs (one at a time).
			w.startAgent(b, "bench", n)
		}
		profiled := false
		// Round-robin: every leg once per round, so that the machine's
		// load, which swings over minutes, falls on every leg alike and
		// each round's ratios compare legs run minutes apart at most.
		var all []benchRound
		for r := range rounds {
			var got benchRound
			if legs["coopr"] {
				got.legs = append(got.legs, benchLeg{"coopr", cooprBuild(b, w, n, &profiled)})
			}
			if legs["coopr-pool"] {
				got.legs = append(got.legs, benchLeg{"coopr-pool", cooprPoolBuild(b, w, n, &profiled)})
			}
			if legs["ansible"] {
				got.legs = append(got.legs, benchLeg{"ansible", onFleet(b, w, n, ansibleBuild)})
			}
			if legs["terraform"] {
				got.legs = append(got.legs, benchLeg{"terraform", onFleet(b, w, n, terraformBuild)})
			}
			if legs["floor"] {
				p := onFleet(b, w, n, floorBuild)
				got.floor = p.services
				got.legs = append(got.legs, benchLeg{"raw SSH floor", p})
			}
			if rounds > 1 {
				fmt.Printf("\nround %d of %d", r+1, rounds)
			}
			got.print(n)
			all = append(all, got)
		}
		reportRounds(b, all)
		for _, s := range notes {
			fmt.Println(s)
		}
	}
}

// benchLeg is one leg's phases in one round.
type benchLeg struct {
	name string
	p    phases
}

// metric is the leg's name in its metrics' units ("raw SSH floor" is "raw").
func (l benchLeg) metric() string { return strings.Fields(l.name)[0] }

// benchRound is one round of BenchmarkBuildVsAnsible: its legs in the
// order run, and the floor's services time (0 when the floor did not run).
type benchRound struct {
	legs  []benchLeg
	floor time.Duration
}

// overFloor is a services time's overhead over the round's floor.
func (r benchRound) overFloor(d time.Duration) (time.Duration, bool) {
	return d - r.floor, r.floor > 0
}

// ratio is the named leg's overhead over the floor divided by
// Terraform's in this round, by its services time (after: its time from
// the last machine up). ok is false without the leg, Terraform or the
// floor, or when Terraform did not take longer than the floor.
func (r benchRound) ratio(name string, after bool) (ratio float64, ok bool) {
	var leg, tf *phases
	for i := range r.legs {
		switch r.legs[i].name {
		case name:
			leg = &r.legs[i].p
		case "terraform":
			tf = &r.legs[i].p
		}
	}
	if leg == nil || tf == nil || r.floor == 0 || tf.services <= r.floor {
		return 0, false
	}
	d := leg.services
	if after {
		d = leg.after
	}
	return (d - r.floor).Seconds() / (tf.services - r.floor).Seconds(), true
}

// print prints the round's table and its overhead ratios.
func (r benchRound) print(n int) {
	fmt.Printf("\n%d nodes of base + web (local nspawn nodes; services: bootstrap, hosts, config, base, web; coopr-pool's also lease and confirm)\n", n)
	fmt.Printf("%-14s %10s %10s %12s %10s %12s %14s\n", "tool", "machines", "services", "after last", "total", "services/coopr", "over floor")
	var coopr time.Duration
	if len(r.legs) > 0 && r.legs[0].name == "coopr" {
		coopr = r.legs[0].p.services
	}
	for _, l := range r.legs {
		ratio, over := "", ""
		if coopr > 0 {
			ratio = fmt.Sprintf("%.2f", l.p.services.Seconds()/coopr.Seconds())
		}
		if d, ok := r.overFloor(l.p.services); ok {
			over = fmt.Sprintf("%+.1fs (%.2fx)", d.Seconds(), l.p.services.Seconds()/r.floor.Seconds())
		}
		fmt.Printf("%-14s %9.1fs %9.1fs %11.1fs %9.1fs %12s %14s\n", l.name, l.p.machines.Seconds(), l.p.services.Seconds(),
			l.p.after.Seconds(), l.p.total.Seconds(), ratio, over)
	}
	if x, ok := r.ratio("coopr", false); ok {
		y, _ := r.ratio("coopr", true)
		fmt.Printf("coopr's overhead over the floor is %.2fx terraform's (coopr's services from its first BOOTSTRAP)\n", x)
		fmt.Printf("coopr's overhead over the floor is %.2fx terraform's (from the last machine up, where the others start)\n", y)
	}
	if x, ok := r.ratio("coopr-pool", false); ok {
		fmt.Printf("coopr-pool's overhead over the floor is %.2fx terraform's (on the same pre-made fleet; from its first lease)\n", x)
	}
}

// reportRounds reports each leg's medians over the rounds as metrics
// (one round: its values, as before rounds were added), and, for more
// than one round, prints per leg the median and range of its services
// and overhead over the floor, and per round the coopr legs' overhead
// ratios to Terraform's, with their medians, reported too.
func reportRounds(b *testing.B, rounds []benchRound) {
	for i, l := range rounds[0].legs {
		var services, total, after, over []float64
		for _, r := range rounds {
			p := r.legs[i].p
			services, total, after = append(services, p.services.Seconds()), append(total, p.total.Seconds()), append(after, p.after.Seconds())
			if d, ok := r.overFloor(p.services); ok {
				over = append(over, d.Seconds())
			}
		}
		b.ReportMetric(median(services), l.metric()+"-services-s")
		b.ReportMetric(median(total), l.metric()+"-total-s")
		b.ReportMetric(median(after), l.metric()+"-after-machines-s")
		if len(rounds) == 1 {
			continue
		}
		if i == 0 {
			fmt.Printf("\nover %d rounds, median (min-max)\n%-14s %22s %24s\n", len(rounds), "tool", "services", "over floor")
		}
		col := ""
		if len(over) > 0 {
			col = fmt.Sprintf("%+.1fs (%+.1f to %+.1f)", median(over), slices.Min(over), slices.Max(over))
			if l.name != "raw SSH floor" {
				b.ReportMetric(median(over), l.metric()+"-over-floor-s")
			}
		}
		fmt.Printf("%-14s %22s %24s\n", l.name,
			fmt.Sprintf("%.1fs (%.1f-%.1f)", median(services), slices.Min(services), slices.Max(services)), col)
	}
	if len(rounds) == 1 {
		return
	}
	for _, name := range []string{"coopr", "coopr-pool"} {
		var ratios []float64
		line := fmt.Sprintf("%s's overhead over the floor / terraform's, by round:", name)
		for _, r := range rounds {
			x, ok := r.ratio(name, false)
			if !ok {
				line += "    -"
				continue
			}
			ratios = append(ratios, x)
			line += fmt.Sprintf(" %.2f", x)
		}
		if len(ratios) == 0 {
			continue
		}
		fmt.Printf("%s; median %.2f (%.2f-%.2f)\n", line, median(ratios), slices.Min(ratios), slices.Max(ratios))
		b.ReportMetric(median(ratios), name+"-over-tf-ratio")
	}
}

// median is the middle of v (the mean of the two middle values for an
// even count); v is not changed.
func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// fitLocalClusters gives the local provider's clusters subnets large
// enough for n nodes (the world's /27 holds 29), for coopr's cluster and
// for the fleet the other legs use alike.
func (w *world) fitLocalClusters(t testing.TB, n int) {
	t.Helper()
	bits := w.localCfg.ClusterPrefix
	for bits > 24 && 1<<(32-bits)-3 < n {
		bits--
	}
	if bits == w.localCfg.ClusterPrefix {
		return
	}
	w.localCfg.ClusterPrefix = bits
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "local", "providertype": "local",
			"provisioner": map[string]any{"subnet": w.localCfg.Subnet, "clusterPrefix": fmt.Sprint(bits), "stateDir": w.localCfg.StateDir},
			"network":     map[string]any{"type": "local", "fields": map[string]any{}}}}, &struct{}{})
}

// cooprBuild creates the cluster with coopr's own agent (capacity n,
// already started), its machines made by the local driver in the job,
// reads the phases from its tasks, and deletes it.
func cooprBuild(b *testing.B, w *world, n int, profiled *bool) phases {
	putBenchTemplate(b, w, "web-farm", "local")
	stop := benchProfile(b, profiled)
	start := time.Now()
	id := w.create(b, "web-farm", "", n)
	w.follow(b, id, "ACTIVE", 20*time.Minute)
	stop()
	p := phases{total: time.Since(start)}
	sp := w.jobSpan(b, id)
	p.machines, p.services = sp.confirmEnd.Sub(sp.createStart), sp.lastEnd.Sub(sp.bootStart)
	// The other legs start their services once every machine is up;
	// coopr's start as each node comes up, so its services column holds
	// the machines' spread (held back by the cross-node install edges),
	// and "after last" is what it takes once the last machine is up.
	p.after = sp.lastEnd.Sub(sp.confirmEnd)
	if os.Getenv("COOPR_BENCH_TIMELINE") != "" {
		fmt.Printf("\ncoopr (machines made in the job):")
		w.timeline(b, id)
	}
	w.delete(b, id)
	w.follow(b, id, "TERMINATED", 10*time.Minute)
	return p
}

// cooprPoolBuild builds on a fleet made like the other tools' (benchFleet),
// lent to coopr through a pool provider listing its hosts with the fleet's
// key. Its services time runs from the create job's first claim (the first
// pool CREATE, which leases a host) to its last task's end: lease, CONFIRM,
// BOOTSTRAP and services, where the others' count their steps. Node 0 must
// serve the page; the delete must end TERMINATED with every host's lease
// given back before the fleet goes.
func cooprPoolBuild(b *testing.B, w *world, n int, profiled *bool) phases {
	key := sshdtest.NewKey(b)
	start := time.Now()
	addrs, remove := benchFleet(b, w, n, key.AuthorizedKey)
	defer remove()
	p := phases{machines: time.Since(start)}
	// Named pool: the catalog's hardware and image types map that name.
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "pool", "providertype": "pool",
			"provisioner": map[string]any{"hosts": strings.Join(addrs, " "), "ssh_user": "root",
				"ssh_key": string(key.PEM), "wipe_script": "rm -rf /srv/coopr-web"},
			"network": map[string]any{"type": "hosts", "fields": map[string]any{}}}}, &struct{}{})
	putBenchTemplate(b, w, "web-farm-pool", "pool")
	stop := benchProfile(b, profiled)
	id := w.create(b, "web-farm-pool", "", n)
	w.follow(b, id, "ACTIVE", 20*time.Minute)
	stop()
	sp := w.jobSpan(b, id)
	p.services = sp.lastEnd.Sub(sp.createStart)
	p.after = sp.lastEnd.Sub(sp.confirmEnd)
	p.total = p.machines + p.services

	c := w.cluster(b, id)
	if len(c.Nodes) != n {
		b.Fatalf("coopr-pool: %d nodes, want %d", len(c.Nodes), n)
	}
	n0 := c.Nodes[0]
	if !slices.Contains(addrs, n0.Ipaddresses["access_v4"]) {
		b.Fatalf("coopr-pool: node 0 has address %q, not a fleet host (%v)", n0.Ipaddresses["access_v4"], addrs)
	}
	got := answers(b, "http://"+n0.Ipaddresses["access_v4"]+"/", []string{n0.Hostname}, 10*time.Second)
	if want := n0.Hostname + " " + benchGreeting; got[n0.Hostname] != want {
		b.Fatalf("coopr-pool: node 0 answers %q, want %q", got[n0.Hostname], want)
	}
	if os.Getenv("COOPR_BENCH_TIMELINE") != "" {
		fmt.Printf("\ncoopr-pool (on the pre-made fleet):")
		w.timeline(b, id)
	}
	w.delete(b, id)
	w.follow(b, id, "TERMINATED", 10*time.Minute)
	// The hosts are the pool's again.
	var leased []string
	for _, a := range addrs {
		if out := sshRun(b, a, key.Signer, "test -L "+pool.LeasePath+" && echo leased; true"); strings.TrimSpace(out) != "" {
			leased = append(leased, a)
		}
	}
	if len(leased) > 0 {
		b.Fatalf("coopr-pool: hosts still leased after the delete: %v", leased)
	}
	return p
}

// benchGreeting is the greeting coopr's clusters serve.
const benchGreeting = "hello from coopr"

// putBenchTemplate puts template name: base + web on provider.
func putBenchTemplate(b *testing.B, w *world, name, provider string) {
	b.Helper()
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": name, "description": "N web servers",
			"defaults": map[string]any{"services": []string{"base", "web"}, "provider": provider, "hardwaretype": "small",
				"imagetype": "debian12", "config": map[string]any{"web": map[string]any{"greeting": benchGreeting}}},
			"compatibility": map[string]any{"services": []string{"base", "web"}}}}, &struct{}{})
}

// benchProfile starts the CPU profile COOPR_BENCH_CPUPROFILE asks for, for
// the first coopr leg only, and returns what stops it. The server and the
// agent share this process: one profile of both.
func benchProfile(b *testing.B, profiled *bool) (stop func()) {
	f := os.Getenv("COOPR_BENCH_CPUPROFILE")
	if f == "" || *profiled {
		return func() {}
	}
	*profiled = true
	out, err := os.Create(f)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		b.Fatal(err)
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		out.Close()
	})
}

// benchHost is one machine of a fleet made outside coopr for the other
// tools.
type benchHost struct {
	addr, name string
	num        int
}

// onFleet boots n fresh machines with the local driver (the machines
// phase), runs build on them (which returns its services time), checks
// that node 0 serves the page, and deletes the machines.
func onFleet(t testing.TB, w *world, n int, build func(testing.TB, []benchHost, *sshdtest.Key, string) time.Duration) phases {
	t.Helper()
	key := sshdtest.NewKey(t)
	start := time.Now()
	addrs, remove := benchFleet(t, w, n, key.AuthorizedKey)
	defer remove()
	var p phases
	p.machines = time.Since(start)
	hosts := make([]benchHost, n)
	for i, a := range addrs {
		hosts[i] = benchHost{addr: a, name: fmt.Sprintf("bench-%d.local", i), num: 1000 + i}
	}
	const greeting = "hello from the bench"
	p.services = build(t, hosts, key, greeting)
	got := answers(t, "http://"+hosts[0].addr+"/", []string{hosts[0].name}, 10*time.Second)
	if want := hosts[0].name + " " + greeting; got[hosts[0].name] != want {
		t.Fatalf("node 0 answers %q, want %q", got[hosts[0].name], want)
	}
	p.after = p.services
	p.total = p.machines + p.services
	return p
}

// benchFleet is poolHosts that also returns a function deleting the
// machines, so that every leg starts on as many machines as the first.
func benchFleet(t testing.TB, w *world, n int, pub string) ([]string, func()) {
	t.Helper()
	drv := local.New(w.localCfg, w.log)
	addrs := make([]string, n)
	facts := make([]map[string]any, n)
	errs := make([]error, n)
	task := func(i int, action string) *drivers.Task {
		tk := &drivers.Task{TaskID: fmt.Sprintf("fleet-%d-%s", i, action), ClusterID: "fleet", TaskName: action,
			Node:    &drivers.Node{ID: fmt.Sprintf("fleet-%d", i), Hostname: fmt.Sprintf("fleet%d.example", i), Facts: map[string]any{"vm": facts[i]}},
			Secrets: map[string]map[string]any{"ssh": {"publicKey": pub}}}
		tk.Cluster.ID = "fleet"
		tk.Provider.ProviderType = "local"
		return tk
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r := drv.Run(ctx, task(i, "CREATE"), nopOutput{})
			facts[i] = r.Facts
			if r.Status != 0 {
				errs[i] = fmt.Errorf("CREATE fleet host %d: %s", i, r.Message)
				return
			}
			r = drv.Run(ctx, task(i, "CONFIRM"), nopOutput{})
			if r.Status != 0 {
				errs[i] = fmt.Errorf("CONFIRM fleet host %d: %s", i, r.Message)
				return
			}
			addrs[i] = r.IPAddresses["access_v4"]
		}()
	}
	wg.Wait()
	remove := func() {
		var wg sync.WaitGroup
		for i := range n {
			if facts[i] == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				if r := drv.Run(ctx, task(i, "DELETE"), nopOutput{}); r.Status != 0 {
					t.Errorf("DELETE fleet host %d: %s", i, r.Message)
				}
			}()
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			remove()
			t.Fatal(err)
		}
	}
	return addrs, remove
}

// phases: after is the time from the last machine up to the last
// service started (for the other legs, their services).
type phases struct{ machines, services, after, total time.Duration }

// span is when the create job's phases began and ended: its first
// CREATE's claim, its last CONFIRM's end, its first BOOTSTRAP's claim and
// its last task's end.
type span struct{ createStart, confirmEnd, bootStart, lastEnd time.Time }

// jobSpan reads the span of the cluster's create job from its tasks'
// attempts.
func (w *world) jobSpan(t testing.TB, id string) span {
	t.Helper()
	var out struct {
		Cluster struct {
			Jobs []struct {
				Tasks []struct {
					Action   string
					Attempts []struct {
						ClaimedAt  time.Time
						FinishedAt *time.Time
					}
				}
			}
		}
	}
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { jobs { tasks { action attempts { claimedAt finishedAt } } } } }`,
		map[string]any{"id": id}, &out)
	job := out.Cluster.Jobs[len(out.Cluster.Jobs)-1] // the create
	var sp span
	for _, tk := range job.Tasks {
		for _, a := range tk.Attempts {
			end := a.ClaimedAt
			if a.FinishedAt != nil {
				end = *a.FinishedAt
			}
			switch tk.Action {
			case "CREATE":
				if sp.createStart.IsZero() || a.ClaimedAt.Before(sp.createStart) {
					sp.createStart = a.ClaimedAt
				}
			case "CONFIRM":
				if end.After(sp.confirmEnd) {
					sp.confirmEnd = end
				}
			case "BOOTSTRAP":
				if sp.bootStart.IsZero() || a.ClaimedAt.Before(sp.bootStart) {
					sp.bootStart = a.ClaimedAt
				}
			}
			if end.After(sp.lastEnd) {
				sp.lastEnd = end
			}
		}
	}
	return sp
}

// ansibleBuild runs the catalog's own scripts on the hosts with
// ansible-playbook, forks = n: the hostname and facts (coopr's BOOTSTRAP),
// every node's name in /etc/hosts (NETWORK_CONFIGURE), the cluster config,
// then base and web's install, configure and start.
func ansibleBuild(t testing.TB, hosts []benchHost, key *sshdtest.Key, greeting string) time.Duration {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, key.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var inv strings.Builder
	inv.WriteString("[web]\n")
	for i, h := range hosts {
		fmt.Fprintf(&inv, "node%d ansible_host=%s coopr_hostname=%s coopr_nodenum=%d\n", i, h.addr, h.name, h.num)
	}
	if err := os.WriteFile(filepath.Join(dir, "inventory"), []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), benchConfig(greeting), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "play.yml"), []byte(playbook(t, benchSteps)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", "inventory", "-f", fmt.Sprint(len(hosts)), "play.yml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANSIBLE_HOST_KEY_CHECKING=False", "ANSIBLE_PIPELINING=True", "ANSIBLE_REMOTE_USER=root",
		"ANSIBLE_PRIVATE_KEY_FILE="+keyFile, "ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "HOME="+dir,
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"), "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if testing.Verbose() {
		t.Logf("ansible-playbook:\n%s", tail(string(out), 40))
	}
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, tail(string(out), 40))
	}
	if !strings.Contains(string(out), "failed=0") {
		t.Fatalf("ansible-playbook reported failures:\n%s", tail(string(out), 40))
	}
	return took
}

// benchSteps are the service actions every leg runs, in order.
var benchSteps = []step{{"base", "install"}, {"base", "configure"}, {"web", "install"}, {"web", "configure"}, {"web", "start"}}

func benchConfig(greeting string) []byte {
	b, _ := json.Marshal(map[string]any{"web": map[string]any{"greeting": greeting}})
	return b
}

// benchConfigPath is where the other tools put the cluster config
// ($COOPR_CONFIG).
const benchConfigPath = "/var/lib/coopr-bench.json"

// nodeScripts are the steps of one node as shell scripts with the
// environment the shell automator gives them: the hostname, the cluster's
// names in /etc/hosts (rewritten in place: in a container it may be a
// mount), the config, and each service action.
func nodeScripts(t testing.TB, hosts []benchHost, h benchHost, greeting string) []string {
	t.Helper()
	var etc strings.Builder
	for _, o := range hosts {
		fmt.Fprintf(&etc, "%s %s # coopr bench\n", o.addr, o.name)
	}
	out := []string{
		fmt.Sprintf("set -e\nhostname %[1]s\necho %[1]s > /etc/hostname\n", h.name),
		"set -e\nkeep=$(grep -v ' # coopr bench$' /etc/hosts || true)\nprintf '%s\\n' \"$keep\" > /etc/hosts\ncat >> /etc/hosts <<'HOSTS'\n" +
			etc.String() + "HOSTS\n",
		fmt.Sprintf("set -e\numask 077\ncat > %s <<'CONFIG'\n%s\nCONFIG\n", benchConfigPath, benchConfig(greeting)),
	}
	for _, s := range benchSteps {
		out = append(out, fmt.Sprintf("export COOPR_CONFIG=%s COOPR_SERVICE=%s COOPR_ACTION=%s COOPR_HOSTNAME=%s COOPR_NODENUM=%d COOPR_CLUSTER_ID=bench\n%s",
			benchConfigPath, s.service, strings.ToUpper(s.action), h.name, h.num, catalogScript(t, s)))
	}
	return out
}

// terraformBuild runs the same steps with terraform apply: one
// terraform_data resource per node, whose remote-exec provisioners run
// each step over SSH, -parallelism = n. terraform_data is built in, so
// init downloads nothing; init is not timed.
func terraformBuild(t testing.TB, hosts []benchHost, key *sshdtest.Key, greeting string) time.Duration {
	t.Helper()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, key.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var tf strings.Builder
	for i, h := range hosts {
		fmt.Fprintf(&tf, `resource "terraform_data" "node%d" {
  connection {
    type        = "ssh"
    host        = %q
    user        = "root"
    agent       = false
    private_key = file(%q)
    timeout     = "2m"
  }
`, i, h.addr, keyFile)
		for _, sc := range nodeScripts(t, hosts, h, greeting) {
			// HCL heredocs interpolate ${ and %{; the scripts mean them literally.
			sc = strings.NewReplacer("${", "$${", "%{", "%%{").Replace(sc)
			fmt.Fprintf(&tf, "  provisioner \"remote-exec\" {\n    inline = [<<-EOT\n#!/bin/sh\n%sEOT\n    ]\n  }\n", sc)
		}
		tf.WriteString("}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tf.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	run := func(args ...string) {
		cmd := exec.CommandContext(ctx, "terraform", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0",
			"TF_CLI_CONFIG_FILE="+filepath.Join(dir, "terraformrc"))
		out, err := cmd.CombinedOutput()
		if testing.Verbose() {
			t.Logf("terraform %s:\n%s", args[0], tail(string(out), 20))
		}
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", args[0], err, tail(string(out), 40))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "terraformrc"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run("init", "-input=false", "-no-color")
	start := time.Now()
	run("apply", "-auto-approve", "-input=false", "-no-color", fmt.Sprintf("-parallelism=%d", len(hosts)))
	return time.Since(start)
}

// floorBuild is the least any tool can take: each node's steps as one
// script over one SSH session, every node at once.
func floorBuild(t testing.TB, hosts []benchHost, key *sshdtest.Key, greeting string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	scripts := make([]string, len(hosts))
	for i, h := range hosts {
		var b strings.Builder
		for _, sc := range nodeScripts(t, hosts, h, greeting) {
			b.WriteString("(\n" + sc + "\n) || exit 1\n")
		}
		scripts[i] = b.String()
	}
	errs := make([]error, len(hosts))
	start := time.Now()
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = rawSSH(ctx, h.addr, key.Signer, scripts[i])
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("floor on %s: %v", hosts[i].addr, err)
		}
	}
	return took
}

// rawSSH dials addr and runs script through sh on one session.
func rawSSH(ctx context.Context, addr string, key ssh.Signer, script string) error {
	d := net.Dialer{Timeout: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr, "22"))
	if err != nil {
		return err
	}
	sc, chans, reqs, err := ssh.NewClientConn(nc, addr, &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		nc.Close()
		return err
	}
	c := ssh.NewClient(sc, chans, reqs)
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	s.Stdin = strings.NewReader(script)
	if out, err := s.CombinedOutput("/bin/sh -s"); err != nil {
		return fmt.Errorf("%w: %s", err, tail(string(out), 10))
	}
	return nil
}

type step struct{ service, action string }

// playbook runs the example catalog's scripts, unchanged, with the
// environment the shell automator gives them.
func playbook(t testing.TB, steps []step) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`- hosts: web
  gather_facts: true
  tasks:
    - name: hostname
      ansible.builtin.shell: hostname {{ coopr_hostname }} && echo {{ coopr_hostname }} > /etc/hostname
    - name: cluster names in /etc/hosts
      ansible.builtin.blockinfile:
        path: /etc/hosts
        unsafe_writes: true
        marker: "# {mark} coopr bench"
        block: |
          {% for h in groups['web'] %}
          {{ hostvars[h].ansible_host }} {{ hostvars[h].coopr_hostname }}
          {% endfor %}
    - name: cluster config
      ansible.builtin.copy:
        src: config.json
        dest: /var/lib/coopr-bench.json
        mode: "0600"
`)
	for _, s := range steps {
		script := catalogScript(t, s)
		fmt.Fprintf(&b, "    - name: %s %s\n      ansible.builtin.shell: |\n", s.service, s.action)
		for _, line := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
			fmt.Fprintf(&b, "        %s\n", line)
		}
		fmt.Fprintf(&b, `      args:
        executable: /bin/sh
      environment:
        COOPR_CONFIG: /var/lib/coopr-bench.json
        COOPR_SERVICE: %s
        COOPR_ACTION: %s
        COOPR_HOSTNAME: "{{ coopr_hostname }}"
        COOPR_NODENUM: "{{ coopr_nodenum }}"
        COOPR_CLUSTER_ID: bench
`, s.service, strings.ToUpper(s.action))
	}
	return b.String()
}

// catalogScript is the example catalog's script for a service action.
func catalogScript(t testing.TB, s step) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../examples/catalog/services", s.service+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var svc struct {
		Provisioner struct {
			Actions map[string]struct {
				Fields map[string]string
			}
		}
	}
	if err := json.Unmarshal(raw, &svc); err != nil {
		t.Fatal(err)
	}
	script := svc.Provisioner.Actions[s.action].Fields["script"]
	if script == "" {
		t.Fatalf("%s has no %s script", s.service, s.action)
	}
	return script
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// timeline prints, for the cluster's first node, when each task of the
// create was queued (ready), claimed, and finished, from the events and
// attempts the server wrote (COOPR_BENCH_TIMELINE=1), relative to the
// first BOOTSTRAP's claim, and the gaps between one task's finish and the
// next one's claim.
func (w *world) timeline(t testing.TB, clusterID string) {
	t.Helper()
	db, err := sqlx.Open("postgres", w.s.Config.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []struct {
		Action, Service string
		Queued          time.Time
		Claimed         time.Time
		Finished        time.Time
	}
	err = db.Select(&rows, `
		WITH n AS (SELECT node_id FROM tasks t JOIN jobs j ON j.id = t.job_id
			WHERE j.cluster_id = $1 AND t.node_id <> '' ORDER BY t.node_id LIMIT 1)
		SELECT t.action, t.service,
			(SELECT max(e.created_at) FROM events e WHERE e.task_id = t.id AND e.state = 'QUEUED') AS queued,
			a.claimed_at AS claimed, a.finished_at AS finished
		FROM tasks t JOIN jobs j ON j.id = t.job_id JOIN task_attempts a ON a.task_id = t.id AND a.attempt = t.attempt
		WHERE j.cluster_id = $1 AND t.node_id = (SELECT node_id FROM n) AND a.finished_at IS NOT NULL
		ORDER BY a.claimed_at`, clusterID)
	if err != nil {
		t.Fatalf("timeline: %v", err)
	}
	var zero time.Time
	for _, r := range rows {
		if r.Action == "BOOTSTRAP" {
			zero = r.Claimed
		}
	}
	ms := func(x time.Time) string { return fmt.Sprintf("%7.0f", float64(x.Sub(zero).Microseconds())/1000) }
	fmt.Printf("\none node's tasks, ms from its BOOTSTRAP's claim: queued, claimed, finished; run = finished-claimed; wait = claimed - previous finished\n")
	var prev time.Time
	for _, r := range rows {
		wait := ""
		if !prev.IsZero() {
			wait = fmt.Sprintf("%6.0f", float64(r.Claimed.Sub(prev).Microseconds())/1000)
		}
		fmt.Printf("%-18s %-5s %s %s %s run %6.0f wait %s\n", r.Action, r.Service, ms(r.Queued), ms(r.Claimed), ms(r.Finished),
			float64(r.Finished.Sub(r.Claimed).Microseconds())/1000, wait)
		prev = r.Finished
	}
	w.gaps(t, db, clusterID)
}

// gaps prints, over every node of the cluster, the median and 90th
// percentile of where the time between a node's tasks goes, by task:
// ready (its node's previous task's finish to its queuing: the scheduler,
// or a wait for other nodes), claim (queued to claimed) and run (claimed
// to finished, which holds the payload's trip, the driver and the
// finish's trip).
func (w *world) gaps(t testing.TB, db *sqlx.DB, clusterID string) {
	t.Helper()
	var rows []struct {
		Node, Action, Service string
		Queued                time.Time
		Claimed               time.Time
		Finished              time.Time
	}
	err := db.Select(&rows, `
		SELECT t.node_id AS node, t.action, t.service,
			(SELECT max(e.created_at) FROM events e WHERE e.task_id = t.id AND e.state = 'QUEUED') AS queued,
			a.claimed_at AS claimed, a.finished_at AS finished
		FROM tasks t JOIN jobs j ON j.id = t.job_id JOIN task_attempts a ON a.task_id = t.id AND a.attempt = t.attempt
		WHERE j.cluster_id = $1 AND t.node_id <> '' AND a.finished_at IS NOT NULL
		ORDER BY t.node_id, a.claimed_at`, clusterID)
	if err != nil {
		t.Fatalf("gaps: %v", err)
	}
	type key struct{ action, service string }
	var order []key
	ready, claim, run := map[key][]float64{}, map[key][]float64{}, map[key][]float64{}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for i, r := range rows {
		k := key{r.Action, r.Service}
		if _, ok := run[k]; !ok {
			order = append(order, k)
		}
		if i > 0 && rows[i-1].Node == r.Node {
			ready[k] = append(ready[k], ms(r.Queued.Sub(rows[i-1].Finished)))
		}
		claim[k] = append(claim[k], ms(r.Claimed.Sub(r.Queued)))
		run[k] = append(run[k], ms(r.Finished.Sub(r.Claimed)))
	}
	pct := func(v []float64, p float64) string {
		if len(v) == 0 {
			return "      -"
		}
		v = slices.Clone(v)
		slices.Sort(v)
		return fmt.Sprintf("%7.0f", v[min(len(v)-1, int(p*float64(len(v))))])
	}
	fmt.Printf("\nevery node, ms, p50/p90: ready = queued - the node's previous finish; claim = claimed - queued; run = finished - claimed\n")
	for _, k := range order {
		fmt.Printf("%-18s %-5s ready %s %s  claim %s %s  run %s %s\n", k.action, k.service, pct(ready[k], .5), pct(ready[k], .9),
			pct(claim[k], .5), pct(claim[k], .9), pct(run[k], .5), pct(run[k], .9))
	}
	// Each node's time from the job's first queuing to its last finish
	// is, exactly, its wait to be first queued plus the sums of its
	// tasks' ready, claim and run times (one task of a node runs at a
	// time).
	var zero time.Time
	for _, r := range rows {
		if zero.IsZero() || r.Queued.Before(zero) {
			zero = r.Queued
		}
	}
	var first, readyS, claimS, runS, spanS []float64
	for i := 0; i < len(rows); {
		j := i
		var rd, cl, rn float64
		for ; j < len(rows) && rows[j].Node == rows[i].Node; j++ {
			if j > i {
				rd += ms(rows[j].Queued.Sub(rows[j-1].Finished))
			}
			cl += ms(rows[j].Claimed.Sub(rows[j].Queued))
			rn += ms(rows[j].Finished.Sub(rows[j].Claimed))
		}
		first = append(first, ms(rows[i].Queued.Sub(zero)))
		readyS, claimS, runS = append(readyS, rd), append(claimS, cl), append(runS, rn)
		spanS = append(spanS, ms(rows[j-1].Finished.Sub(zero)))
		i = j
	}
	fmt.Printf("every node's span (job's first queuing to its last finish), ms, p50/p90: first queued %s %s + ready %s %s + claim %s %s + run %s %s = %s %s\n",
		pct(first, .5), pct(first, .9), pct(readyS, .5), pct(readyS, .9), pct(claimS, .5), pct(claimS, .9),
		pct(runS, .5), pct(runS, .9), pct(spanS, .5), pct(spanS, .9))
}
