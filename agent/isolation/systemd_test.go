package isolation

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"

	"github.com/cooprhq/coopr/drivers"
)

func TestUnitName(t *testing.T) {
	tests := []struct {
		id      string
		attempt int
		want    string
	}{
		{"6f1c2c9e-1d0e-4a43-9c1e-3a1f6d1b2c3d", 2, "coopr-task-6f1c2c9e-1d0e-4a43-9c1e-3a1f6d1b2c3d-2.service"},
		{"a/b c\\d", 1, "coopr-task-a_b_c_d-1.service"},
		{strings.Repeat("x", 300), 1, "coopr-task-" + strings.Repeat("x", 200) + "-1.service"},
	}
	for _, tt := range tests {
		if got := unitName(&drivers.Task{TaskID: tt.id, Attempt: tt.attempt}); got != tt.want {
			t.Errorf("unitName(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}

func TestUnitProperties(t *testing.T) {
	t.Setenv("COOPR_TOKEN", "agent-token-value")
	cmd := []string{"/usr/bin/coopr", "agent", "run-task", "--work-dir", "/var/lib/coopr/work"}
	tests := []struct {
		name    string
		cfg     Config
		timeout int
		want    map[string]any // properties that must be there, with their values
		absent  []string
	}{
		{name: "defaults", cfg: Config{Command: cmd, KillGrace: 10 * time.Second},
			want: map[string]any{"Type": "exec", "KillMode": "control-group", "TimeoutStopUSec": uint64(10_000_000),
				"CollectMode": "inactive-or-failed", "StandardInputFileDescriptor": dbus.UnixFD(3),
				"StandardOutputFileDescriptor": dbus.UnixFD(4), "StandardErrorFileDescriptor": dbus.UnixFD(5)},
			absent: []string{"CPUQuotaPerSecUSec", "MemoryMax", "RuntimeMaxUSec", "WorkingDirectory"}},
		{name: "limits", cfg: Config{Command: cmd, KillGrace: time.Second, CPUQuota: 150, MemoryMax: 2 << 30, Dir: "/var/lib/coopr/work"},
			timeout: 60,
			want: map[string]any{"CPUQuotaPerSecUSec": uint64(1_500_000), "MemoryMax": uint64(2 << 30),
				"WorkingDirectory": "/var/lib/coopr/work", "RuntimeMaxUSec": uint64(121_000_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Runner{cfg: tt.cfg}
			props := map[string]any{}
			for _, p := range r.unitProperties(&drivers.Task{TaskID: "t1", TaskName: "CREATE", TimeoutSeconds: tt.timeout}, 3, 4, 5) {
				props[p.Name] = p.Value.Value()
			}
			for k, v := range tt.want {
				if fmt.Sprint(props[k]) != fmt.Sprint(v) || fmt.Sprintf("%T", props[k]) != fmt.Sprintf("%T", v) {
					t.Errorf("%s = %#v, want %#v", k, props[k], v)
				}
			}
			for _, k := range tt.absent {
				if _, ok := props[k]; ok {
					t.Errorf("%s set: %v", k, props[k])
				}
			}
			exec := fmt.Sprint(props["ExecStart"])
			if !strings.Contains(exec, strings.Join(cmd, " ")) {
				t.Errorf("ExecStart %s, want %v", exec, cmd)
			}
			env := strings.Join(props["Environment"].([]string), "\n")
			if strings.Contains(env, "agent-token-value") || !strings.Contains(env, "PATH=") {
				t.Errorf("unit environment:\n%s", env)
			}
			if _, hasUser := props["User"]; hasUser != (os.Getuid() != 0) {
				t.Errorf("User=%v with uid %d: tasks must run as the agent's user", props["User"], os.Getuid())
			}
		})
	}
}

// The systemd-run mode end to end over a real D-Bus, against a stand-in
// for systemd's manager that runs ExecStart with the descriptors it was
// handed: the unit request, descriptor passing, output, result and
// stopping are ours; what real systemd adds (cgroups, limits) is for a
// test inside a systemd container.
func TestSystemdRunOverDBus(t *testing.T) {
	m := startFakeManager(t)
	var log logBuffer
	r, err := newRunner(context.Background(), Config{Mode: ModeSystemdRun, Command: []string{os.Args[0], childArg},
		Dir: t.TempDir(), KillGrace: 2 * time.Second, MemoryMax: 1 << 30, Log: slog.New(slog.NewTextHandler(&log, nil))},
		t.TempDir(), connectSystemd)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Mode() != ModeSystemdRun {
		t.Fatalf("mode %s\n%s", r.Mode(), log.String())
	}

	t.Run("runs a task in a unit", func(t *testing.T) {
		rec := newRecorder()
		task := scriptTask(map[string]string{"script": "echo one; echo 'status half'; echo two"})
		res := r.Run(context.Background(), task, rec)
		if res.Status != 0 || res.Message != "ran" || res.Secrets["password"] != secret {
			t.Fatalf("result %+v\nlog:\n%s", res, log.String())
		}
		if strings.Join(rec.stdout, "|") != "one|two" || strings.Join(rec.status, "|") != "half 50" {
			t.Errorf("stdout %q status %q", rec.stdout, rec.status)
		}
		u := m.unit(unitName(task))
		if u == nil {
			t.Fatalf("no unit %s started", unitName(task))
		}
		if u.props["KillMode"] != "control-group" || u.props["MemoryMax"] != uint64(1<<30) {
			t.Errorf("unit properties %v", u.props)
		}
		if wd, _ := res.Facts["wd"].(string); wd != r.cfg.Dir {
			t.Errorf("task ran in %q, want %q", wd, r.cfg.Dir)
		}
	})

	t.Run("stopping the task stops its unit", func(t *testing.T) {
		rec := newRecorder()
		task := scriptTask(map[string]string{"script": "echo started; exec sleep 1000"})
		task.TaskID = "stopped-task"
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan drivers.Result, 1)
		go func() { done <- r.Run(ctx, task, rec) }()
		select {
		case <-rec.lines:
		case <-time.After(10 * time.Second):
			t.Fatalf("the task did not start\n%s", log.String())
		}
		cancel()
		select {
		case res := <-done:
			if res.Status == 0 {
				t.Errorf("a stopped task succeeded: %+v", res)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
		if u := m.unit(unitName(task)); u == nil || u.stops == 0 {
			t.Errorf("the unit was not stopped: %+v", u)
		}
	})

	t.Run("a unit that fails to start", func(t *testing.T) {
		m.failNext("failed")
		res := r.Run(context.Background(), scriptTask(map[string]string{"script": "true"}), newRecorder())
		if res.Status == 0 || !strings.Contains(res.Message, "did not start (failed)") {
			t.Errorf("result %+v", res)
		}
	})
}

// fakeManager answers the org.freedesktop.systemd1.Manager calls that
// task units make, on a private bus.
type fakeManager struct {
	conn *dbus.Conn
	mu   sync.Mutex
	jobs uint32
	fail string
	u    map[string]*fakeUnit
}

type fakeUnit struct {
	props   map[string]any
	cmd     *exec.Cmd
	running bool
	stops   int
}

func startFakeManager(t *testing.T) *fakeManager {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Fatal("dbus-daemon is needed (apt-get install dbus-daemon)")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path=`+sock+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>`), 0o600); err != nil {
		t.Fatal(err)
	}
	daemon := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile")
	var daemonLog logBuffer // it complains about fd limits it may not raise here
	daemon.Stderr = &daemonLog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = daemon.Process.Kill()
		_ = daemon.Wait()
		if t.Failed() {
			t.Logf("dbus-daemon:\n%s", daemonLog.String())
		}
	})
	addr := "unix:path=" + sock
	var conn *dbus.Conn
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if conn, err = dbus.Connect(addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("private bus: %v", err)
		}
	}
	t.Cleanup(func() { conn.Close() })
	m := &fakeManager{conn: conn, u: map[string]*fakeUnit{}}
	if err := conn.Export(m, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager"); err != nil {
		t.Fatal(err)
	}
	if reply, err := conn.RequestName("org.freedesktop.systemd1", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the systemd name: %v %v", reply, err)
	}
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", addr)
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, u := range m.u {
			if u.running {
				_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	})
	return m
}

func (m *fakeManager) unit(name string) *fakeUnit {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u[name]
}

func (m *fakeManager) failNext(result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fail = result
}

type property struct {
	Name  string
	Value dbus.Variant
}

func (m *fakeManager) StartTransientUnit(name, mode string, props []property, _ []struct {
	Name  string
	Props []property
}) (dbus.ObjectPath, *dbus.Error) {
	u := &fakeUnit{props: map[string]any{}}
	for _, p := range props {
		u.props[p.Name] = p.Value.Value()
	}
	fd := func(k string) *os.File {
		n, _ := u.props[k].(dbus.UnixFD)
		return os.NewFile(uintptr(n), k)
	}
	stdin, stdout, stderr := fd("StandardInputFileDescriptor"), fd("StandardOutputFileDescriptor"), fd("StandardErrorFileDescriptor")
	defer stdin.Close()
	defer stdout.Close()
	defer stderr.Close()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jobs++
	job := dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", m.jobs))
	result := "done"
	if m.fail != "" {
		result, m.fail = m.fail, ""
	} else {
		// ExecStart is a(sasb): path, argv, ignore-failure.
		execs, _ := u.props["ExecStart"].([][]any)
		if len(execs) != 1 {
			return "", dbus.MakeFailedError(fmt.Errorf("ExecStart %v", u.props["ExecStart"]))
		}
		argv, _ := execs[0][1].([]string)
		u.cmd = exec.Command(execs[0][0].(string), argv[1:]...)
		u.cmd.Stdin, u.cmd.Stdout, u.cmd.Stderr = stdin, stdout, stderr
		u.cmd.Env, _ = u.props["Environment"].([]string)
		u.cmd.Dir, _ = u.props["WorkingDirectory"].(string)
		u.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := u.cmd.Start(); err != nil {
			result = "failed"
		} else {
			u.running = true
			go func() {
				_ = u.cmd.Wait()
				m.mu.Lock()
				u.running = false
				m.mu.Unlock()
			}()
		}
	}
	m.u[name] = u
	id := m.jobs
	go func() {
		_ = m.conn.Emit("/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager.JobRemoved", id, job, name, result)
	}()
	return job, nil
}

// StopUnit does what KillMode=control-group does, for the unit's process
// group: SIGTERM, then SIGKILL after TimeoutStopUSec.
func (m *fakeManager) StopUnit(name, mode string) (dbus.ObjectPath, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.u[name]
	if u == nil || !u.running {
		return "", dbus.NewError("org.freedesktop.systemd1.NoSuchUnit", []any{"Unit " + name + " not loaded."})
	}
	u.stops++
	pid := u.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	grace := time.Duration(u.props["TimeoutStopUSec"].(uint64)) * time.Microsecond
	time.AfterFunc(grace, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if u.running {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	m.jobs++
	return dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", m.jobs)), nil
}

func (m *fakeManager) ListUnitsByNames(names []string) ([]sddbus.UnitStatus, *dbus.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sddbus.UnitStatus
	for _, n := range names {
		st := sddbus.UnitStatus{Name: n, LoadState: "not-found", ActiveState: "inactive", SubState: "dead", Path: "/", JobPath: "/"}
		if u := m.u[n]; u != nil && u.running {
			st.LoadState, st.ActiveState, st.SubState = "loaded", "active", "running"
		}
		out = append(out, st)
	}
	return out, nil
}
