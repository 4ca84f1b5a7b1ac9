package isolation

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
)

// childArg makes the test binary the task process (what `coopr agent
// run-task` is in the real binary), with the script driver below.
const childArg = "isolation-test-task-process"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childArg {
		os.Exit(taskProcess())
	}
	os.Exit(m.Run())
}

func taskProcess() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	out, err := TakeStdout()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reg := drivers.NewRegistry()
	reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "script"}, scriptDriver{})
	if err := RunTask(ctx, reg, os.Stdin, out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// scriptDriver runs the task's "script" field with sh; output lines
// starting "status " are status lines at 50%. It reports what its own
// process could see, so that tests can look for leaked secrets, and hands
// the task's secrets back as its result's.
type scriptDriver struct{}

func (scriptDriver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	f := t.Service.Action.Fields
	if f["panic"] != "" {
		panic(f["panic"])
	}
	if f["print"] != "" {
		fmt.Println(f["print"]) // a careless driver writing to stdout
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", f["script"])
	if f["resource"] != "" {
		path, err := t.FetchResource(ctx, t.Resources[0])
		if err != nil {
			return drivers.Result{Status: 1, Message: err.Error()}
		}
		cmd.Env = append(os.Environ(), "RESOURCE="+path)
	}
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return drivers.Result{Status: 1, Message: err.Error()}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.Stderr(sc.Text())
		}
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "status "); ok {
			out.Status(s, 50)
		} else {
			out.Stdout(sc.Text())
		}
	}
	wg.Wait()
	env, _ := os.ReadFile("/proc/self/environ")
	cmdline, _ := os.ReadFile("/proc/self/cmdline")
	res := drivers.Result{Message: "ran", Secrets: t.Secrets["vm"],
		Facts: map[string]any{"environ": string(env), "cmdline": string(cmdline), "wd": must(os.Getwd())}}
	if err := cmd.Wait(); err != nil {
		res.Status, res.Message = 1, err.Error()
		res.Unreachable = f["unreachable"] != ""
	}
	return res
}

func must[T any](v T, _ error) T { return v }

// recorder is the agent's side of the output.
type recorder struct {
	mu                     sync.Mutex
	stdout, stderr, status []string
	lines                  chan string // stdout lines, as they come
}

func newRecorder() *recorder { return &recorder{lines: make(chan string, 100)} }

func (r *recorder) Stdout(line string) {
	r.mu.Lock()
	r.stdout = append(r.stdout, line)
	r.mu.Unlock()
	r.lines <- line
}

func (r *recorder) Stderr(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stderr = append(r.stderr, line)
}

func (r *recorder) Status(line string, percent float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = append(r.status, fmt.Sprintf("%s %g", line, percent))
}

func scriptTask(fields map[string]string) *drivers.Task {
	t := &drivers.Task{TaskID: "6f1c2c9e-1d0e-4a43-9c1e-3a1f6d1b2c3d", Attempt: 1, TaskName: "INSTALL",
		Service: &drivers.Service{Name: "web"}}
	t.Service.Action.Type = "script"
	t.Service.Action.Fields = fields
	t.Secrets = map[string]map[string]any{"vm": {"password": secret}}
	return t
}

const secret = "s3cr3t-in-the-payload"

// logBuffer is a concurrency-safe log destination.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func groupRunner(t *testing.T, grace time.Duration) (*Runner, *logBuffer) {
	t.Helper()
	var log logBuffer
	r, err := New(context.Background(), Config{Mode: ModeProcessGroup, Command: []string{os.Args[0], childArg},
		Dir: t.TempDir(), KillGrace: grace, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode() != ModeProcessGroup {
		t.Fatalf("mode %s", r.Mode())
	}
	return r, &log
}

func TestProcessGroupRunsTasks(t *testing.T) {
	// The agent's own secrets and systemd's variables must not reach tasks.
	t.Setenv("COOPR_TOKEN", "agent-token-value")
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	tests := []struct {
		name       string
		fields     map[string]string
		taskName   string
		wantStatus int
		wantMsg    string // substring
		wantLost   bool   // the result says the node is unreachable
		wantStdout []string
		wantStderr []string
		wantLines  []string
	}{
		{name: "output and result", fields: map[string]string{"script": "echo one; echo 'status half'; echo two >&2; echo three"},
			wantMsg: "ran", wantStdout: []string{"one", "three"}, wantStderr: []string{"two"}, wantLines: []string{"half 50"}},
		{name: "stray stdout does not break the protocol", fields: map[string]string{"script": "echo ok", "print": "not a message"},
			wantMsg: "ran", wantStdout: []string{"ok"}},
		{name: "script fails", fields: map[string]string{"script": "echo before; exit 3"},
			wantStatus: 1, wantMsg: "exit status 3", wantStdout: []string{"before"}},
		{name: "node unreachable", fields: map[string]string{"script": "exit 3", "unreachable": "yes"},
			wantStatus: 1, wantMsg: "exit status 3", wantLost: true},
		{name: "no such driver", taskName: "nope", wantStatus: 1, wantMsg: `no automator driver named "nope"`},
		{name: "driver panics", fields: map[string]string{"panic": "driver broke"},
			wantStatus: 1, wantMsg: "ended without a result (exit status 2): panic: driver broke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, log := groupRunner(t, time.Second)
			task := scriptTask(tt.fields)
			if tt.taskName != "" {
				task.Service.Action.Type = tt.taskName
			}
			rec := newRecorder()
			reg := drivers.NewRegistry()
			reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "script"}, scriptDriver{})
			reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "nope"}, scriptDriver{})
			drv, _, err := r.Wrap(reg).For(task)
			if err != nil {
				t.Fatal(err)
			}
			res := drv.Run(context.Background(), task, rec)
			if res.Status != tt.wantStatus || !strings.Contains(res.Message, tt.wantMsg) || res.Unreachable != tt.wantLost {
				t.Fatalf("result %d %q unreachable %v, want %d, %q and %v\nlog:\n%s", res.Status, res.Message, res.Unreachable,
					tt.wantStatus, tt.wantMsg, tt.wantLost, log)
			}
			for _, c := range []struct {
				name      string
				got, want []string
			}{{"stdout", rec.stdout, tt.wantStdout}, {"stderr", rec.stderr, tt.wantStderr}, {"status", rec.status, tt.wantLines}} {
				if strings.Join(c.got, "|") != strings.Join(c.want, "|") {
					t.Errorf("%s %q, want %q", c.name, c.got, c.want)
				}
			}
			if res.Message != "ran" {
				return
			}
			if res.Secrets["password"] != secret {
				t.Errorf("the payload's secrets did not reach the driver and back: %v", res.Secrets)
			}
			for _, k := range []string{"environ", "cmdline"} {
				v, _ := res.Facts[k].(string)
				for _, bad := range []string{secret, "agent-token-value", "COOPR_TOKEN", "NOTIFY_SOCKET"} {
					if strings.Contains(v, bad) {
						t.Errorf("the task process's %s holds %q", k, bad)
					}
				}
			}
			if wd, _ := res.Facts["wd"].(string); wd != r.cfg.Dir {
				t.Errorf("task ran in %q, want %q", wd, r.cfg.Dir)
			}
			if strings.Contains(log.String(), secret) {
				t.Errorf("the agent's log holds a secret:\n%s", log)
			}
		})
	}
}

// Ending the task's context kills the task process and everything it
// started: SIGTERM to the group, SIGKILL after the grace for what ignores
// it.
func TestProcessGroupKilledWithDescendants(t *testing.T) {
	tests := []struct {
		name             string
		script           string
		grace            time.Duration
		minTook, maxTook time.Duration
	}{
		// SIGTERM reaches the grandchild at once: no waiting out the grace.
		{"exits on SIGTERM", "sleep 1000 & echo $! > sleep.pid; echo started; wait", 3 * time.Second, 0, 2 * time.Second},
		// Background children of a shell that ignores TERM ignore it too.
		{"ignores SIGTERM", "trap '' TERM; sleep 1000 & echo $! > sleep.pid; echo started; wait", 500 * time.Millisecond,
			500 * time.Millisecond, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, log := groupRunner(t, tt.grace)
			rec := newRecorder()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan drivers.Result, 1)
			go func() { done <- r.Run(ctx, scriptTask(map[string]string{"script": tt.script}), rec) }()
			select {
			case l := <-rec.lines:
				if l != "started" {
					t.Fatalf("first line %q", l)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the task did not start\nlog:\n%s", log)
			}
			grandchild := readPid(t, filepath.Join(r.cfg.Dir, "sleep.pid"))
			if err := alive(grandchild); err != nil {
				t.Fatalf("the task's grandchild is not running to begin with: %v", err)
			}
			start := time.Now()
			cancel()
			var res drivers.Result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
			took := time.Since(start)
			if took < tt.minTook || took > tt.maxTook {
				t.Errorf("stopping took %s, want %s to %s", took, tt.minTook, tt.maxTook)
			}
			if res.Status == 0 {
				t.Errorf("a killed task succeeded: %+v", res)
			}
			waitDead(t, grandchild)
		})
	}
}

// A task that returns leaves nothing behind either.
func TestProcessGroupKillsLeftoversAfterResult(t *testing.T) {
	r, _ := groupRunner(t, time.Second)
	res := r.Run(context.Background(), scriptTask(map[string]string{
		"script": "sleep 1000 >/dev/null 2>&1 & echo $! > sleep.pid; echo done"}), newRecorder())
	if res.Status != 0 || res.Message != "ran" {
		t.Fatalf("result %+v", res)
	}
	// sleep 1000 cannot have ended by itself.
	waitDead(t, readPid(t, filepath.Join(r.cfg.Dir, "sleep.pid")))
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// alive is nil while pid runs; a zombie is dead (nothing may reap
// orphans here).
func alive(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return err
	}
	// pid (comm) state ...
	if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
		return errors.New("zombie")
	}
	return nil
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if alive(pid) != nil {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("process %d outlived its task", pid)
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", ModeNone, false}, {"none", ModeNone, false}, {"process-group", ModeProcessGroup, false},
		{"systemd-run", ModeSystemdRun, false}, {"systemd", "", true}, {"Process-Group", "", true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseMode(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestNoneKeepsTheRegistry(t *testing.T) {
	reg := drivers.NewRegistry()
	reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "script"}, scriptDriver{})
	r, err := New(context.Background(), Config{Mode: ModeNone})
	if err != nil {
		t.Fatal(err)
	}
	if r.Wrap(reg) != reg {
		t.Error("no isolation wrapped the drivers")
	}
}

// systemd-run falls back to process groups where systemd is not there to
// run units, as on this host (PID 1 is not systemd).
func TestSystemdRunFallsBack(t *testing.T) {
	tests := []struct {
		name       string
		systemdDir func(t *testing.T) string
		bus        string
		wantReason string
	}{
		{"not booted with systemd", func(t *testing.T) string { return filepath.Join(t.TempDir(), "absent") }, "",
			"does not run systemd"},
		{"no system bus", func(t *testing.T) string { return t.TempDir() }, "unix:path=/nonexistent/system_bus_socket",
			"D-Bus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.bus != "" {
				t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", tt.bus)
			}
			var log logBuffer
			r, err := newRunner(context.Background(), Config{Mode: ModeSystemdRun, Command: []string{os.Args[0], childArg},
				Log: slog.New(slog.NewTextHandler(&log, nil))}, tt.systemdDir(t), connectSystemd)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Mode() != ModeProcessGroup {
				t.Fatalf("mode %s, want the process-group fallback", r.Mode())
			}
			if !strings.Contains(log.String(), tt.wantReason) {
				t.Errorf("the warning does not say %q:\n%s", tt.wantReason, log.String())
			}
			// And the fallback runs tasks.
			if res := r.Run(context.Background(), scriptTask(map[string]string{"script": "echo hi"}), newRecorder()); res.Message != "ran" {
				t.Errorf("fallback result %+v", res)
			}
		})
	}
	// This host itself.
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		return // a systemd host: the fake-manager test covers the other way
	}
	r, err := New(context.Background(), Config{Mode: ModeSystemdRun, Command: []string{"coopr"}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode() != ModeProcessGroup {
		t.Errorf("on this host systemd-run became %s", r.Mode())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{Mode: "jail"}, {Mode: ModeProcessGroup}} {
		if _, err := New(context.Background(), cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestParseLimits(t *testing.T) {
	quotas := []struct {
		in   string
		want float64
		ok   bool
	}{{"", 0, true}, {"150%", 150, true}, {"12.5%", 12.5, true}, {"150", 0, false}, {"0%", 0, false}, {"-5%", 0, false}, {"x%", 0, false}}
	for _, tt := range quotas {
		got, err := ParseCPUQuota(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseCPUQuota(%q) = %v, %v", tt.in, got, err)
		}
	}
	sizes := []struct {
		in   string
		want uint64
		ok   bool
	}{{"", 0, true}, {"4096", 4096, true}, {"512K", 512 << 10, true}, {"2G", 2 << 30, true}, {"1T", 1 << 40, true},
		{"2GB", 0, false}, {"0", 0, false}, {"-1G", 0, false}, {"99999999999T", 0, false}, {"1.5G", 0, false}}
	for _, tt := range sizes {
		got, err := ParseBytes(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseBytes(%q) = %v, %v", tt.in, got, err)
		}
	}
}

// The agent fetches a task's resources before the task process starts,
// which finds them by digest; a failed fetch fails the task there.
func TestProcessGroupGetsResources(t *testing.T) {
	r, _ := groupRunner(t, time.Second)
	local := t.TempDir() + "/web"
	if err := os.WriteFile(local, []byte("role web"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := drivers.NewRegistry()
	reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "script"}, scriptDriver{})
	task := scriptTask(map[string]string{"script": `cat "$RESOURCE"; echo`, "resource": "1"})
	task.Resources = []drivers.Resource{{PluginType: "automatortypes", Plugin: "script", ResourceType: "roles", Name: "web",
		Version: 1, Format: "file", Digest: "sha256:ab"}}
	fetches := 0
	task.Fetch = func(context.Context, drivers.Resource) (string, error) { fetches++; return local, nil }
	drv, _, err := r.Wrap(reg).For(task)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if res := drv.Run(context.Background(), task, rec); res.Status != 0 || fetches != 1 ||
		strings.Join(rec.stdout, "|") != "role web" {
		t.Fatalf("result %d %q, %d fetches, stdout %q", res.Status, res.Message, fetches, rec.stdout)
	}
	task.LocalResources = nil
	task.Fetch = func(context.Context, drivers.Resource) (string, error) { return "", errors.New("digest mismatch") }
	if res := drv.Run(context.Background(), task, newRecorder()); res.Status == 0 || res.Retryable == nil ||
		*res.Retryable || !strings.Contains(res.Message, "digest mismatch") {
		t.Fatalf("failed fetch: %+v", res)
	}
}
