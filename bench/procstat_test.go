package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// clockTick is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTick = 100

// procCPU is a process's CPU time, user and system, from /proc/<pid>/stat;
// zero when it is gone.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name is in parentheses and may hold spaces: the fields
	// counted here start after its closing one.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	k, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return time.Duration(u+k) * time.Second / clockTick
}

// pidsNamed lists the processes whose command name is comm.
func pidsNamed(comm string) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	var out []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		if pid, err := strconv.Atoi(strings.Split(d, "/")[2]); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// backendMeter follows the CPU time of the Postgres backends serving this
// benchmark's server (found by their application_name) and of the Redis
// server. Backends come and go with the pool: each is sampled every
// 100 ms and counted at its last sample, so a backend that exits loses at
// most its last 100 ms. Redis is shared with whatever else runs.
type backendMeter struct {
	db      *sqlx.DB
	app     string
	mu      sync.Mutex
	last    map[int]time.Duration // backend pid -> CPU at its last sample
	first   map[int]time.Duration // backend pid -> CPU when first seen
	redis   []int
	redis0  time.Duration
	stop    chan struct{}
	stopped chan struct{}
	// statements samples the active statements' text every 5 ms when set.
	statements map[string]int
	samples    int
}

func startMeter(db *sqlx.DB, app string, sampleStatements bool) *backendMeter {
	m := &backendMeter{db: db, app: app, last: map[int]time.Duration{}, first: map[int]time.Duration{},
		redis: pidsNamed("redis-server"), stop: make(chan struct{}), stopped: make(chan struct{})}
	for _, p := range m.redis {
		m.redis0 += procCPU(p)
	}
	if sampleStatements {
		m.statements = map[string]int{}
	}
	m.poll(true)
	go m.run()
	return m
}

func (m *backendMeter) run() {
	defer close(m.stopped)
	tick := 100 * time.Millisecond
	if m.statements != nil {
		tick = 5 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-m.stop:
			m.poll(false)
			return
		case <-t.C:
			n++
			if m.statements != nil {
				m.sample()
			}
			if m.statements == nil || n%20 == 0 {
				m.poll(false)
			}
		}
	}
}

func (m *backendMeter) pids() []int {
	var pids []int
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.db.SelectContext(ctx, &pids, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.app)
	return pids
}

func (m *backendMeter) poll(initial bool) {
	pids := m.pids()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pids {
		c := procCPU(p)
		if _, ok := m.first[p]; !ok {
			if initial {
				m.first[p] = c
			} else {
				m.first[p] = 0 // born during the run: all of it counts
			}
		}
		m.last[p] = max(m.last[p], c)
	}
}

func (m *backendMeter) sample() {
	var qs []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.db.SelectContext(ctx, &qs, `SELECT left(regexp_replace(query, '\s+', ' ', 'g'), 60) || ' … ' || right(regexp_replace(query, '\s+', ' ', 'g'), 40) || ' [' ||
			coalesce(wait_event_type || ':' || wait_event, 'cpu') || ']'
		FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid()`, m.app)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples++
	for _, q := range qs {
		m.statements[q]++
	}
}

// end stops the meter and returns the Postgres backends' and Redis's CPU
// time since it started.
func (m *backendMeter) end() (pg, redis time.Duration) {
	close(m.stop)
	<-m.stopped
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, c := range m.last {
		pg += c - m.first[p]
	}
	for _, p := range m.redis {
		redis += procCPU(p)
	}
	return pg, redis - m.redis0
}

// top prints the statements most often seen active, with the share of
// samples each was seen in.
func (m *backendMeter) top(tb testing.TB, label string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.statements == nil || m.samples == 0 {
		return
	}
	type kv struct {
		q string
		n int
	}
	var all []kv
	for q, c := range m.statements {
		all = append(all, kv{q, c})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	fmt.Printf("\n%s: statements active in %d samples every 5 ms (mean active backends per sample in %%)\n", label, m.samples)
	for i, s := range all {
		if i == n {
			break
		}
		fmt.Printf("%6.1f%%  %s\n", 100*float64(s.n)/float64(m.samples), s.q)
	}
}

// cpuTrace samples this process's CPU time every millisecond through a
// job, so that the CPU of a window known only afterwards (the job's first
// claim to its last finish, as the database stamped them) can be read.
type cpuTrace struct {
	mu   sync.Mutex
	at   []time.Time
	cpu  []time.Duration
	stop chan struct{}
	done chan struct{}
}

func startTrace() *cpuTrace {
	t := &cpuTrace{stop: make(chan struct{}), done: make(chan struct{})}
	t.add()
	go func() {
		defer close(t.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-t.stop:
				t.add()
				return
			case <-tick.C:
				t.add()
			}
		}
	}()
	return t
}

func (t *cpuTrace) add() {
	now, c := time.Now(), cpuTime()
	t.mu.Lock()
	t.at, t.cpu = append(t.at, now), append(t.cpu, c)
	t.mu.Unlock()
}

// end stops the sampling.
func (t *cpuTrace) end() *cpuTrace {
	close(t.stop)
	<-t.done
	return t
}

// between is the CPU time used from a to b, read off the samples (those
// just outside the window are taken, so it errs by a millisecond's CPU at
// each end).
func (t *cpuTrace) between(a, b time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.at) == 0 || !b.After(a) {
		return 0
	}
	at := func(x time.Time) time.Duration {
		i := sort.Search(len(t.at), func(i int) bool { return !t.at[i].Before(x) })
		if i == len(t.at) {
			i--
		}
		return t.cpu[i]
	}
	return at(b) - at(a)
}
