package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// coopr builds the coopr binary once per test run; TestMain removes it.
func coopr(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "coopr-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "coopr")
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/coopr").CombinedOutput()
		if err != nil {
			buildErr = &buildError{err: err, out: out}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

type attemptView struct {
	Attempt   int
	Agent     string
	ClaimedAt time.Time
}

type taskView struct {
	ID, State, Action string
	Attempts          []attemptView
}

func (w *world) tasks(t testing.TB, id string) []taskView {
	t.Helper()
	var out struct {
		Cluster struct {
			Jobs []struct{ Tasks []taskView }
		}
	}
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { jobs { tasks { id state action attempts { attempt agent claimedAt } } } } }`,
		map[string]any{"id": id}, &out)
	if len(out.Cluster.Jobs) == 0 {
		return nil
	}
	return out.Cluster.Jobs[0].Tasks
}

// doomedAgent is a `coopr agent` process, to be killed with SIGKILL.
type doomedAgent struct {
	cmd    *exec.Cmd
	logs   *bytes.Buffer
	exited chan struct{}
}

// startDoomed runs a `coopr agent` process named "doomed" with capacity
// slots and the extra flags; the test's end kills it if it still runs.
func (w *world) startDoomed(t *testing.T, capacity int, extra ...string) *doomedAgent {
	t.Helper()
	bin := coopr(t)
	var tok struct{ CreateAPIToken struct{ Secret string } }
	w.s.Must(w.s.Super, `mutation { createAPIToken(input: {name: "doomed", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	d := &doomedAgent{logs: &bytes.Buffer{}, exited: make(chan struct{})}
	args := append([]string{"agent", "--server", w.s.URL, "--capacity", strconv.Itoa(capacity), "--name", "doomed", "--work-dir", t.TempDir()}, extra...)
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(os.Environ(), "COOPR_TOKEN="+tok.CreateAPIToken.Secret)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("the killed agent's log:\n%s", d.logs.String())
		}
	})
	return d
}

// killMidCreate waits until the doomed agent holds a CREATE of the
// cluster, kills it with SIGKILL and returns the tasks it held and when
// it died. A CREATE, because it takes a while: the kill lands before it
// ends (a NETWORK_ALLOCATE may finish between the look and the kill).
func (w *world) killMidCreate(t *testing.T, d *doomedAgent, id string, within time.Duration) (held []string, killed time.Time) {
	t.Helper()
	deadline := time.Now().Add(within)
	for len(held) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the doomed agent claimed no CREATE within %s; its log:\n%s", within, d.logs.String())
		}
		for _, tk := range w.tasks(t, id) {
			if n := len(tk.Attempts); tk.State == "IN_PROGRESS" && tk.Action == "CREATE" && n > 0 && tk.Attempts[n-1].Agent == "doomed" {
				held = append(held, tk.ID)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed = time.Now()
	<-d.exited
	return held, killed
}

// checkRerun checks that every task the killed agent held was completed
// by survivor, and logs how long after the kill the last was claimed.
func (w *world) checkRerun(t *testing.T, id string, held []string, killed time.Time, survivor string) {
	t.Helper()
	var slowest time.Duration
	for _, tk := range w.tasks(t, id) {
		for _, h := range held {
			if tk.ID != h {
				continue
			}
			last := tk.Attempts[len(tk.Attempts)-1]
			if tk.State != "COMPLETE" || last.Agent != survivor {
				t.Errorf("task %s held by the killed agent: %s, last run by %q", h, tk.State, last.Agent)
			}
			if d := last.ClaimedAt.Sub(killed); d > slowest {
				slowest = d
			}
		}
	}
	t.Logf("%d tasks held by the killed agent ran again on %s; the last was claimed %.1fs after the kill", len(held), survivor, slowest.Seconds())
}

// An agent killed with SIGKILL in the middle of a create loses its claims
// when their leases lapse; another agent runs them and the cluster is
// built.
func TestAgentKilledMidCreate(t *testing.T) {
	w := newWorld(t, 8)
	doomed := w.startDoomed(t, 8)
	id := w.create(t, "web-cluster", "", 3)
	held, killed := w.killMidCreate(t, doomed, id, 2*time.Minute)
	// The survivor joins only now: had it run from the start, a loaded
	// machine could let it build the whole cluster while the doomed agent
	// waited to learn its share of the slots, and the kill would hit
	// nothing.
	w.startAgent(t, "survivor", 8)

	w.follow(t, id, "ACTIVE", 5*time.Minute)
	w.checkRerun(t, id, held, killed, "survivor")
	c := w.cluster(t, id)
	answers(t, "http://"+withService(c, "lb")[0].Ipaddresses["access_v4"]+"/", hostnames(withService(c, "web")), 30*time.Second)

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
	w.noTraces(t, id)
}
