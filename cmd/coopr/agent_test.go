package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/agent/isolation"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/server/servertest"
)

// The test binary is coopr itself when the agent re-executes it for an
// isolated task (`coopr agent run-task`).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "agent" && os.Args[2] == "run-task" {
		main()
	}
	os.Exit(m.Run())
}

func TestAgentConfig(t *testing.T) {
	full := `server: http://file:8080
token: file-token
capacity: 2
name: file-agent
work_dir: /srv/file
grace: 1m
isolation: process-group
kill_grace: 3s
task_cpu_quota: 50%
task_memory_max: 1G
local_state_dir: /srv/file/local
libvirt_state_dir: /srv/file/libvirt
check_retry: 3s
`
	fromFile := agentConfig{Server: "http://file:8080", Token: "file-token", Capacity: 2, Name: "file-agent", WorkDir: "/srv/file",
		Grace: time.Minute, Isolation: "process-group", KillGrace: 3 * time.Second, TaskCPUQuota: "50%", TaskMemoryMax: "1G",
		LocalStateDir: "/srv/file/local", LibvirtStateDir: "/srv/file/libvirt", CheckRetry: 3 * time.Second}
	env := map[string]string{"COOPR_SERVER": "http://env:8080", "COOPR_TOKEN": "env-token", "COOPR_AGENT_CAPACITY": "3",
		"COOPR_AGENT_NAME": "env-agent", "COOPR_WORK_DIR": "/srv/env", "COOPR_AGENT_GRACE": "2m", "COOPR_ISOLATION": "systemd-run",
		"COOPR_KILL_GRACE": "4s", "COOPR_TASK_CPU_QUOTA": "150%", "COOPR_TASK_MEMORY_MAX": "2G", "COOPR_LOCAL_STATE_DIR": "/srv/env/local",
		"COOPR_LIBVIRT_STATE_DIR": "/srv/env/libvirt", "COOPR_CHECK_RETRY": "4s"}
	fromEnv := agentConfig{Server: "http://env:8080", Token: "env-token", Capacity: 3, Name: "env-agent", WorkDir: "/srv/env",
		Grace: 2 * time.Minute, Isolation: "systemd-run", KillGrace: 4 * time.Second, TaskCPUQuota: "150%", TaskMemoryMax: "2G",
		LocalStateDir: "/srv/env/local", LibvirtStateDir: "/srv/env/libvirt", CheckRetry: 4 * time.Second}
	flags := []string{"--server", "http://flag:8080", "--token", "flag-token", "--capacity", "4", "--name", "flag-agent",
		"--work-dir", "/srv/flag", "--grace", "3m", "--isolation", "none", "--kill-grace", "5s", "--task-cpu-quota", "200%",
		"--task-memory-max", "3G", "--local-state-dir", "/srv/flag/local", "--libvirt-state-dir", "/srv/flag/libvirt", "--check-retry", "5s"}
	fromFlags := agentConfig{Server: "http://flag:8080", Token: "flag-token", Capacity: 4, Name: "flag-agent", WorkDir: "/srv/flag",
		Grace: 3 * time.Minute, Isolation: "none", KillGrace: 5 * time.Second, TaskCPUQuota: "200%", TaskMemoryMax: "3G",
		LocalStateDir: "/srv/flag/local", LibvirtStateDir: "/srv/flag/libvirt", CheckRetry: 5 * time.Second}
	minimal := map[string]string{"COOPR_SERVER": "http://s:8080", "COOPR_TOKEN": "t", "COOPR_AGENT_CAPACITY": "1"}

	tests := []struct {
		name    string
		file    string // YAML; "" means no --config
		env     map[string]string
		args    []string
		want    agentConfig
		wantErr string
	}{
		{name: "defaults", env: minimal, want: agentConfig{Server: "http://s:8080", Token: "t", Capacity: 1,
			WorkDir: "/var/lib/coopr/work", Grace: 30 * time.Second, Isolation: "none", KillGrace: 10 * time.Second}},
		{name: "file", file: full, want: fromFile},
		{name: "env over file", file: full, env: env, want: fromEnv},
		{name: "flags over env and file", file: full, env: env, args: flags, want: fromFlags},
		{name: "one flag over env", env: env, args: []string{"--capacity", "9"},
			want: func() agentConfig { c := fromEnv; c.Capacity = 9; return c }()},
		{name: "empty file", file: "# all comments\n", env: minimal, want: agentConfig{Server: "http://s:8080", Token: "t", Capacity: 1,
			WorkDir: "/var/lib/coopr/work", Grace: 30 * time.Second, Isolation: "none", KillGrace: 10 * time.Second}},
		{name: "unknown key named", file: "capacty: 3\n", env: minimal, wantErr: "capacty"},
		{name: "capacity not a number", env: map[string]string{"COOPR_AGENT_CAPACITY": "four"}, wantErr: "COOPR_AGENT_CAPACITY"},
		{name: "bad grace", env: map[string]string{"COOPR_AGENT_GRACE": "soon"}, wantErr: "COOPR_AGENT_GRACE"},
		{name: "no server", env: map[string]string{"COOPR_TOKEN": "t", "COOPR_AGENT_CAPACITY": "1"}, wantErr: "COOPR_SERVER"},
		{name: "no token", env: map[string]string{"COOPR_SERVER": "http://s", "COOPR_AGENT_CAPACITY": "1"}, wantErr: "COOPR_TOKEN"},
		{name: "no capacity", env: map[string]string{"COOPR_SERVER": "http://s", "COOPR_TOKEN": "t"}, wantErr: "capacity 0"},
		{name: "bad isolation", env: minimal, args: []string{"--isolation", "jail"}, wantErr: "jail"},
		{name: "bad memory limit", env: minimal, args: []string{"--task-memory-max", "2GB"}, wantErr: "task_memory_max"},
		{name: "bad cpu quota", env: minimal, args: []string{"--task-cpu-quota", "2"}, wantErr: "task_cpu_quota"},
		{name: "relative local state dir", env: minimal, args: []string{"--local-state-dir", ".coopr-dev/local"}, wantErr: "absolute"},
		{name: "relative libvirt state dir", env: minimal, args: []string{"--libvirt-state-dir", "libvirt"}, wantErr: "libvirt state dir"},
		{name: "negative check retry", env: minimal, args: []string{"--check-retry", "-1s"}, wantErr: "check retry -1s"},
		{name: "check retry past a minute", env: minimal, args: []string{"--check-retry", "5m"}, wantErr: "check retry 5m0s: must be from 0"},
		{name: "bad server", env: map[string]string{"COOPR_SERVER": "not a url", "COOPR_TOKEN": "t", "COOPR_AGENT_CAPACITY": "1"},
			wantErr: "server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				path := filepath.Join(t.TempDir(), "agent.yaml")
				if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"--config", path}, args...)
			}
			var f agentFlags
			cmd := &cobra.Command{Use: "agent"}
			f.register(cmd)
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			got, err := f.resolve(cmd, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("config\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// notifications is a notification socket as systemd makes one.
func notifications(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	ch := make(chan string, 1000)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return ch
}

// syncBuffer is a log destination written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `coopr agent` as systemd runs it: the token from the environment, a
// notification socket and a watchdog. It registers with a real server,
// tells systemd, and stops cleanly on its signal.
func TestAgentCommand(t *testing.T) {
	s := servertest.Start(t)
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	token := tok.CreateAPIToken.Secret
	ch := notifications(t)
	t.Setenv("COOPR_TOKEN", token)
	t.Setenv("WATCHDOG_USEC", "400000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"agent", "--server", s.URL, "--capacity", "2", "--name", "cmd-agent",
			"--work-dir", filepath.Join(t.TempDir(), "work"), "--isolation", "process-group"}, &stdout, &stderr)
	}()
	var states []string
	watchdogs := 0
	await := func(want string) {
		t.Helper()
		for deadline := time.After(20 * time.Second); ; {
			select {
			case m := <-ch:
				if m == "WATCHDOG=1" {
					watchdogs++
					continue
				}
				states = append(states, m)
				if m == want {
					return
				}
			case c := <-code:
				t.Fatalf("agent exited %d before %s; states %q\n%s", c, want, states, stderr.String())
			case <-deadline:
				t.Fatalf("no %s; states %q\n%s", want, states, stderr.String())
			}
		}
	}
	await("READY=1")
	if want := []string{"STATUS=registering with " + s.URL, "READY=1"}; strings.Join(states, "|") != strings.Join(want, "|") {
		t.Errorf("states %q, want %q", states, want)
	}
	if os.Getenv("COOPR_TOKEN") != "" {
		t.Error("COOPR_TOKEN is still in the agent's environment, for its drivers' commands to inherit")
	}
	var agents struct{ Agents []struct{ ID string } }
	s.Must(s.Super, `{ agents { id } }`, nil, &agents)
	if len(agents.Agents) != 1 || agents.Agents[0].ID != "cmd-agent" {
		t.Errorf("agents %+v", agents.Agents)
	}
	time.Sleep(500 * time.Millisecond) // a watchdog period or two
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d\n%s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop")
	}
	await("STOPPING=1") // sent before it exited
	if watchdogs < 2 {
		t.Errorf("%d watchdog pings with WatchdogSec=400ms", watchdogs)
	}
	log := stderr.String()
	if !strings.Contains(log, "isolation=process-group") {
		t.Errorf("the log does not say how tasks are isolated:\n%s", log)
	}
	if strings.Contains(log, token) {
		t.Errorf("the log holds the agent token:\n%s", log)
	}
}

// An isolated task goes through the real entry point of `coopr agent
// run-task` (this test binary, see TestMain): payload on stdin, messages
// back on stdout, the drivers of driverRegistry.
func TestRunTaskProcess(t *testing.T) {
	dir := t.TempDir()
	r, err := isolation.New(context.Background(), isolation.Config{Mode: isolation.ModeProcessGroup,
		Command: taskCommand(os.Args[0], dir, stateDirs{}), Dir: dir, KillGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	task := &drivers.Task{TaskID: "t1", Attempt: 1, TaskName: "CREATE"}
	task.Provider.ProviderType = "no-such-provider"
	task.Secrets = map[string]map[string]any{"ssh": {"privateKey": "secret-key"}}
	res := r.Run(context.Background(), task, discard{})
	if want := `this agent has no vm driver named "no-such-provider"`; res.Status != 1 || res.Message != want {
		t.Errorf("result %d %q, want 1 %q", res.Status, res.Message, want)
	}
}

type discard struct{}

func (discard) Stdout(string)          {}
func (discard) Stderr(string)          {}
func (discard) Status(string, float64) {}

// The packaged agent.yaml loads as shipped (all comments) and with every
// setting uncommented: its keys are the agent's, its values valid.
func TestAgentYAMLExample(t *testing.T) {
	example, err := os.ReadFile("../../packaging/agent.yaml.example")
	if err != nil {
		t.Fatal(err)
	}
	var uncommented []string
	for _, l := range strings.Split(string(example), "\n") {
		// "#key: value" is a setting; "# text" is prose.
		if k, _, ok := strings.Cut(l, ": "); ok && strings.HasPrefix(k, "#") && !strings.ContainsAny(k, " ") {
			uncommented = append(uncommented, strings.TrimPrefix(l, "#"))
		}
	}
	if len(uncommented) != 12 {
		t.Errorf("%d settings in the example, want all 12 but the token:\n%s", len(uncommented), strings.Join(uncommented, "\n"))
	}
	// The token belongs in agent.env.
	getenv := func(k string) string { return map[string]string{"COOPR_TOKEN": "t"}[k] }
	shipped := agentDefaults()
	shipped.Token = "t"
	for _, tt := range []struct {
		name, body string
		ok         func(agentConfig) bool
	}{
		{"as shipped", string(example), func(c agentConfig) bool { return c == shipped }},
		{"uncommented", strings.Join(uncommented, "\n"), func(c agentConfig) bool {
			return c.Server != "" && c.Capacity > 0 && c.Isolation == "process-group" && c.TaskMemoryMax == "2G" &&
				c.LocalStateDir == "/var/lib/coopr/local/state" && c.LibvirtStateDir == "/var/lib/coopr/libvirt/state" && c.CheckRetry == 8*time.Second && c.check() == nil
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.yaml")
			if err := os.WriteFile(path, []byte(tt.body), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := loadAgentConfig(path, getenv)
			if err != nil || !tt.ok(c) {
				t.Errorf("config %+v, %v", c, err)
			}
		})
	}
}
