package shell_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/automator/shell"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

func newDriver(t *testing.T) drivers.Driver {
	p := remote.NewPool(remote.Options{})
	t.Cleanup(func() { _ = p.Close() })
	return shell.New(p, slog.New(slog.NewTextHandler(t.Output(), nil)))
}

const pidfile = `/var/lib/coopr/svc-$COOPR_SERVICE.pid`

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sshdtest.Options
	}{
		{"root", sshdtest.Options{}},
		{"sudo user", sshdtest.Options{NonRoot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			drivertest.Automator(t, newDriver(t), drivertest.AutomatorEnv{
				Cluster: drivertest.NewCluster(t, 1, tc.opts),
				Type:    "shell",
				Echo:    func(line string) map[string]string { return map[string]string{"script": "echo " + remote.Quote(line)} },
				Fail:    map[string]string{"script": "echo broken >&2; exit 3"},
				Sleep:   map[string]string{"script": "sleep 120; echo never"},
				Start: map[string]string{"script": `p=` + pidfile + `
if [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null; then echo already running; exit 0; fi
nohup sleep 3600 </dev/null >/dev/null 2>&1 &
echo $! > "$p"
echo started`},
				Stop: map[string]string{"script": `p=` + pidfile + `
if [ -f "$p" ]; then kill "$(cat "$p")" 2>/dev/null || true; rm -f "$p"; fi
echo stopped`},
				Running: func(t testing.TB, h *sshdtest.Host) bool {
					out := h.Exec(t, `p=$(cat /var/lib/coopr/svc-svc.pid 2>/dev/null) && kill -0 "$p" 2>/dev/null && echo yes || echo no`)
					return strings.TrimSpace(out) == "yes"
				},
			})
		})
	}
}

func run(t *testing.T, drv drivers.Driver, c *drivertest.Cluster, fields map[string]string) (drivers.Result, *drivertest.Recorder) {
	t.Helper()
	task := c.Task("INSTALL", 0)
	task.Service = &drivers.Service{Name: "web"}
	task.Service.Action.Type = "shell"
	task.Service.Action.Fields = fields
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &drivertest.Recorder{}
	r := drv.Run(ctx, task, out)
	return r, out
}

func TestEnvironmentAndConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts sshdtest.Options
	}{
		{"root", sshdtest.Options{}},
		{"sudo user", sshdtest.Options{NonRoot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := drivertest.NewCluster(t, 1, tc.opts)
			drv := newDriver(t)
			r, out := run(t, drv, c, map[string]string{"script": `id -un
for v in COOPR_SERVICE COOPR_ACTION COOPR_NODE_ID COOPR_HOSTNAME COOPR_CLUSTER_ID COOPR_NODENUM; do
  eval "echo $v=\$$v"
done
stat -c 'mode=%a owner=%U' "$COOPR_CONFIG"
echo "config=$(tr -d '\n ' < "$COOPR_CONFIG")"
echo "config_path=$COOPR_CONFIG"
echo "args=$#:$1:$2"
echo "ssh=${SSH_CONNECTION:-unset}"`, "args": `one 'two words'`})
			if r.Status != 0 {
				t.Fatalf("status %d: %s", r.Status, r.Message)
			}
			n := c.Nodes[0]
			stdout := out.Lines("stdout")
			for _, want := range []string{
				"root",
				"COOPR_SERVICE=web",
				"COOPR_ACTION=INSTALL",
				"COOPR_NODE_ID=" + n.ID,
				"COOPR_HOSTNAME=" + n.Hostname,
				"COOPR_CLUSTER_ID=" + c.ID,
				"COOPR_NODENUM=1001",
				"mode=600 owner=root",
				"args=2:one:two words",
				"ssh=unset",
			} {
				if !slices.Contains(stdout, want) {
					t.Errorf("stdout %q lacks %q", stdout, want)
				}
			}
			var config map[string]any
			for _, l := range stdout {
				if s, ok := strings.CutPrefix(l, "config="); ok {
					if err := json.Unmarshal([]byte(s), &config); err != nil {
						t.Fatalf("config.json: %v: %s", err, s)
					}
				}
			}
			// The JSON was read with spaces removed; compare what has none.
			want := map[string]any{"web": map[string]any{"port": 8080.0, "greeting": `it's"quoted"`}}
			if !reflect.DeepEqual(config, want) {
				t.Errorf("config %v, want %v", config, want)
			}
			// The task directory is gone afterwards.
			i := slices.IndexFunc(stdout, func(l string) bool { return strings.HasPrefix(l, "config_path=") })
			path := strings.TrimPrefix(stdout[i], "config_path=")
			if !strings.HasPrefix(path, shell.TaskDir+"/") {
				t.Fatalf("config at %s, outside %s", path, shell.TaskDir)
			}
			if got := c.Hosts[0].Exec(t, "ls -A "+shell.TaskDir); strings.TrimSpace(got) != "" {
				t.Errorf("task directories left: %q", got)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	drv := newDriver(t)
	for _, tc := range []struct {
		name      string
		fields    map[string]string
		status    bool
		retryable bool
		msg       []string
	}{
		{"success", map[string]string{"script": "echo fine"}, true, true, nil},
		{"retryable", map[string]string{"script": "echo first >&2; echo 'disk busy' >&2; exit 3"}, false, true, []string{"exited with 3", "disk busy"}},
		{"terminal", map[string]string{"script": "echo 'unsupported OS' >&2; exit 100"}, false, false, []string{"exited with 100", "terminal", "unsupported OS"}},
		{"killed", map[string]string{"script": "kill -KILL $$"}, false, true, []string{"signal KILL"}},
		{"syntax error", map[string]string{"script": "if then fi"}, false, true, []string{"exited with 2", "Syntax error"}},
		{"no script", map[string]string{"args": "x"}, false, false, []string{"has no script"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := run(t, drv, c, tc.fields)
			if (r.Status == 0) != tc.status {
				t.Fatalf("status %d: %s", r.Status, r.Message)
			}
			if got := r.Retryable == nil || *r.Retryable; got != tc.retryable {
				t.Errorf("retryable %v, want %v", got, tc.retryable)
			}
			for _, s := range tc.msg {
				if !strings.Contains(r.Message, s) {
					t.Errorf("message %q lacks %q", r.Message, s)
				}
			}
		})
	}
}

func TestNoServiceIsTerminal(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	r := newDriver(t).Run(context.Background(), c.Task("INSTALL", 0), &drivertest.Recorder{})
	if r.Status == 0 || r.Retryable == nil || *r.Retryable {
		t.Fatalf("status %d retryable %v: %s", r.Status, r.Retryable, r.Message)
	}
}

func TestDescriptor(t *testing.T) {
	d := shell.Descriptor()
	want := []drivers.Param{{Name: "script", Type: "text", Required: true}, {Name: "args", Type: "text"}}
	if d.Role != drivers.RoleAutomator || d.Name != "shell" || !reflect.DeepEqual(d.Params, want) {
		t.Fatalf("descriptor %+v", d)
	}
}

// A script naming a scripts resource of the payload runs the resource's
// content, fetched through the task's Fetch; other names stay inline text.
func TestScriptResource(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: true})
	drv := newDriver(t)
	local := t.TempDir() + "/setup"
	if err := os.WriteFile(local, []byte("echo \"from resource: $1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := drivers.Resource{PluginType: "automatortypes", Plugin: "shell", ResourceType: "scripts", Name: "setup.sh",
		Version: 2, Format: "file", Digest: "sha256:00"}
	var fetched []drivers.Resource
	run := func(fields map[string]string, fetch func(context.Context, drivers.Resource) (string, error)) (drivers.Result, []string) {
		task := c.Task("INSTALL", 0)
		task.Service = &drivers.Service{Name: "web"}
		task.Service.Action.Type = "shell"
		task.Service.Action.Fields = fields
		task.Resources = []drivers.Resource{res}
		task.Fetch = fetch
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out := &drivertest.Recorder{}
		r := drv.Run(ctx, task, out)
		return r, out.Lines("stdout")
	}
	ok := func(_ context.Context, r drivers.Resource) (string, error) {
		fetched = append(fetched, r)
		return local, nil
	}
	r, stdout := run(map[string]string{"script": "setup.sh", "args": "x"}, ok)
	if r.Status != 0 || !slices.Contains(stdout, "from resource: x") || len(fetched) != 1 || fetched[0] != res {
		t.Fatalf("resource script: status %d %s, stdout %q, fetched %+v", r.Status, r.Message, stdout, fetched)
	}
	// Not a listed name: the field is the script itself.
	r, stdout = run(map[string]string{"script": "echo inline"}, ok)
	if r.Status != 0 || !slices.Contains(stdout, "inline") || len(fetched) != 1 {
		t.Fatalf("inline script: status %d %s, stdout %q", r.Status, r.Message, stdout)
	}
	// A fetch that fails (a digest mismatch) fails the task for good.
	r, _ = run(map[string]string{"script": "setup.sh"}, func(context.Context, drivers.Resource) (string, error) {
		return "", errors.New("digest mismatch")
	})
	if r.Status == 0 || r.Retryable == nil || *r.Retryable || !strings.Contains(r.Message, "digest mismatch") {
		t.Fatalf("failed fetch: status %d retryable %v: %s", r.Status, r.Retryable, r.Message)
	}
}

// A task is one SSH session (files, script, cleanup), whatever the size of
// its files; the script sees its files, the config shows in no process's
// command line, and the task directory is gone afterwards, also when the
// task is cancelled.
func TestSessionsPerTask(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: true})
	drv := newDriver(t)
	h := c.Hosts[0]
	sessions := func() int { return strings.Count(h.Log(), "Starting session:") }
	big := strings.Repeat("# padding that makes the script longer than a command line may be\n", 3000)
	check := `test -s "$COOPR_CONFIG" && echo ok; ps -eo args | grep -c '[q]uoted' || true`
	for _, tc := range []struct {
		name   string
		script string
	}{
		{"small", check},
		{"larger than a command line", big + check},
		{"end marker in the script", "cat > /dev/null <<'COOPR_EOF_x'\nCOOPR_EOF_x\n" + check},
		{"quotes and printf's formats", "x='it'\\''s %s %d \\n'; test \"$x\" = \"it's %s %d \\\\n\" || exit 1\n" + check},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sessions()
			r, out := run(t, drv, c, map[string]string{"script": tc.script})
			if r.Status != 0 {
				t.Fatalf("status %d: %s", r.Status, r.Message)
			}
			// ok, and no process whose command line holds the config's
			// greeting (it's"quoted").
			if got := out.Lines("stdout"); !slices.Equal(got, []string{"ok", "0"}) {
				t.Errorf("stdout %q", got)
			}
			// sshd may log a session's start a moment after it ran.
			deadline := time.Now().Add(2 * time.Second)
			for sessions()-before < 1 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			if got := sessions() - before; got != 1 {
				t.Errorf("%d sessions, want 1", got)
			}
			if got := h.Exec(t, "sudo ls -A "+shell.TaskDir); strings.TrimSpace(got) != "" {
				t.Errorf("task directories left: %q", got)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		task := c.Task("INSTALL", 0)
		task.Service = &drivers.Service{Name: "web"}
		task.Service.Action.Type = "shell"
		task.Service.Action.Fields = map[string]string{"script": "echo started; sleep 120"}
		ctx, cancel := context.WithCancel(context.Background())
		out := &drivertest.Recorder{}
		go func() {
			for !slices.Contains(out.Lines("stdout"), "started") {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		if r := drv.Run(ctx, task, out); r.Status == 0 {
			t.Fatal("a cancelled task succeeded")
		}
		if got := h.Exec(t, "sudo ls -A "+shell.TaskDir); strings.TrimSpace(got) != "" {
			t.Errorf("task directories left: %q", got)
		}
	})
}

// A task runs as few programs besides its script as it can, each a fork
// and exec that a loaded host makes slow: after the login shell, sudo when
// needed, the one shell reading the task from stdin, mkdir for the task's
// directory, the script's shell and rm; the shell writes the files itself.
func TestProgramsPerTask(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts sshdtest.Options
		want []string
	}{
		// root's login shell is bash, which clears the environment itself.
		{"root", sshdtest.Options{}, []string{"/bin/sh", "/usr/bin/mkdir", "/bin/sh", "/usr/bin/rm"}},
		// The user's login shell is /bin/sh.
		{"sudo user", sshdtest.Options{NonRoot: true}, []string{"/bin/sh", "/usr/bin/sudo", "/bin/sh", "/usr/bin/mkdir", "/bin/sh", "/usr/bin/rm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := drivertest.NewCluster(t, 1, tc.opts)
			execs := c.Hosts[0].TraceExecs(t, "/usr/bin/env", "/bin/sh", "/usr/bin/sudo", "/usr/bin/cat", "/usr/bin/mkdir", "/usr/bin/rm")
			r, out := run(t, newDriver(t), c, map[string]string{"script": `test -s "$COOPR_CONFIG" && test -d "$COOPR_TASK_DIR" && echo ok`})
			if r.Status != 0 {
				t.Fatalf("status %d: %s", r.Status, r.Message)
			}
			if got := out.Lines("stdout"); !slices.Equal(got, []string{"ok"}) {
				t.Errorf("stdout %q", got)
			}
			if got := execs(); !slices.Equal(got, tc.want) {
				t.Errorf("programs %q, want %q", got, tc.want)
			}
		})
	}
}

// STATUS reads the script's exit: 0 running, 3 stopped, 4 missing, each
// a success reporting the state under check with the job; any other exit
// is the script failing.
func TestStatus(t *testing.T) {
	t.Parallel()
	drv := newDriver(t)
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	for _, tc := range []struct {
		exit  string
		state string // "" for a failure
	}{{"0", "running"}, {"3", "stopped"}, {"4", "missing"}, {"1", ""}, {"100", ""}} {
		t.Run("exit "+tc.exit, func(t *testing.T) {
			task := c.Task("STATUS", 0)
			task.JobID = "00000001-002"
			task.Service = &drivers.Service{Name: "web"}
			task.Service.Action.Type = "shell"
			task.Service.Action.Fields = map[string]string{"script": "exit " + tc.exit}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := drv.Run(ctx, task, &drivertest.Recorder{})
			if tc.state == "" {
				if r.Status == 0 || r.Facts != nil {
					t.Fatalf("exit %s: %+v, want a failure without facts", tc.exit, r)
				}
				return
			}
			want := map[string]any{"check": map[string]any{"job": "00000001-002", "state": tc.state}}
			if r.Status != 0 || !reflect.DeepEqual(r.Facts, want) {
				t.Fatalf("exit %s: status %d %q facts %v, want success with %v", tc.exit, r.Status, r.Message, r.Facts, want)
			}
		})
	}
}

// A script that exits with the status the driver uses for "could not
// write the task's files" is a script failure, reported as such and
// retried as any other, not taken for a setup failure.
func TestScriptExitingWithTheSetupStatus(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	r, _ := run(t, newDriver(t), c, map[string]string{"script": "echo own failure >&2; exit 222"})
	if r.Status == 0 || !strings.Contains(r.Message, "script exited with 222") || !strings.Contains(r.Message, "own failure") {
		t.Fatalf("result %+v, want the script's own failure, exit 222", r)
	}
}
