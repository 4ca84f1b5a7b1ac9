package ansible

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// newCluster is one node on a real sshd whose host key is pinned, as
// after BOOTSTRAP.
func newCluster(t *testing.T, o sshdtest.Options) *drivertest.Cluster {
	t.Helper()
	c := drivertest.NewCluster(t, 1, o)
	c.Nodes[0].Facts["node"] = map[string]any{"hostKeys": []any{c.Hosts[0].HostKeyLine()}}
	return c
}

// newDriver returns the driver with its own work dir, which every run
// must leave empty, and a log that must never show the cluster key.
func newDriver(t *testing.T, c *drivertest.Cluster) (*Driver, string) {
	t.Helper()
	work := t.TempDir()
	var log sshdtest.Buffer
	t.Cleanup(func() {
		left, _ := os.ReadDir(work)
		if len(left) > 0 {
			t.Errorf("work dir not cleaned: %v", left)
		}
		for _, l := range secretLines(c.Key.PEM) {
			if strings.Contains(log.String(), l) {
				t.Error("the private key appears in the log")
			}
		}
	})
	return New(slog.New(slog.NewTextHandler(&log, nil)), work).(*Driver), work
}

func task(c *drivertest.Cluster, action string, fields map[string]string) *drivers.Task {
	tk := c.Task(action, 0)
	tk.Service = &drivers.Service{Name: "web"}
	tk.Service.Action.Type = "ansible"
	tk.Service.Action.Fields = fields
	return tk
}

func run(t *testing.T, d drivers.Driver, tk *drivers.Task) (drivers.Result, *drivertest.Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := &drivertest.Recorder{}
	start := time.Now()
	r := d.Run(ctx, tk, out)
	t.Logf("%s: status %d in %s: %s", tk.TaskName, r.Status, time.Since(start).Round(time.Millisecond), r.Message)
	key, _ := tk.Secrets["ssh"]["privateKey"].(string)
	for _, l := range secretLines([]byte(key)) {
		if strings.Contains(r.Message, l) || slices.ContainsFunc(out.Events(), func(e drivertest.Event) bool { return strings.Contains(e.Line, l) }) {
			t.Errorf("the private key appears in the result or the output")
		}
	}
	if r.Status != 0 && testing.Verbose() {
		for _, e := range out.Events() {
			t.Logf("  %s: %s", e.Stream, e.Line)
		}
	}
	return r, out
}

func retryable(r drivers.Result) bool { return r.Retryable == nil || *r.Retryable }

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.Role != drivers.RoleAutomator || d.Name != "ansible" || len(d.Params) != 2 ||
		d.Params[0] != (drivers.Param{Name: "playbook", Type: "text", Required: true}) ||
		d.Params[1] != (drivers.Param{Name: "tags", Type: "text"}) {
		t.Fatalf("descriptor %+v", d)
	}
}

const pidfile = `/var/lib/coopr/svc-{{ coopr_service }}.pid`

// TestConformance runs the suite every automator passes.
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
			c := newCluster(t, tc.opts)
			d, _ := newDriver(t, c)
			drivertest.Automator(t, d, drivertest.AutomatorEnv{
				Cluster: c,
				Type:    "ansible",
				Echo: func(line string) map[string]string {
					return map[string]string{"playbook": play(`- shell: echo ` + remote.Quote(line))}
				},
				Fail:  map[string]string{"playbook": play(`- shell: echo broken >&2; exit 3`)},
				Sleep: map[string]string{"playbook": play(`- command: sleep 120`)},
				Start: map[string]string{"playbook": play(`- shell: |
    p=` + pidfile + `
    if [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null; then echo already running; exit 0; fi
    nohup sleep 3600 </dev/null >/dev/null 2>&1 &
    echo $! > "$p"
    echo started`)},
				Stop: map[string]string{"playbook": play(`- shell: |
    p=` + pidfile + `
    if [ -f "$p" ]; then kill "$(cat "$p")" 2>/dev/null || true; rm -f "$p"; fi
    echo stopped`)},
				Running: func(t testing.TB, h *sshdtest.Host) bool {
					out := h.Exec(t, `p=$(cat /var/lib/coopr/svc-svc.pid 2>/dev/null) && kill -0 "$p" 2>/dev/null && echo yes || echo no`)
					return strings.TrimSpace(out) == "yes"
				},
			})
		})
	}
}

// play is a one-play playbook for all hosts with tasks (YAML, indented
// two spaces).
func play(tasks string) string {
	return "- hosts: all\n  gather_facts: false\n  tasks:\n  " + strings.ReplaceAll(tasks, "\n", "\n  ") + "\n"
}

// A playbook writes a file from a config value and coopr variables, as
// root through become for a sudo user; the second run changes nothing.
func TestPlaybookConvergesWithConfigAndVariables(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts sshdtest.Options
	}{
		{"root", sshdtest.Options{}},
		{"sudo user", sshdtest.Options{NonRoot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCluster(t, tc.opts)
			h := c.Hosts[0]
			d, _ := newDriver(t, c)
			pb := play(`- file: {path: /var/lib/coopr/web, state: directory}
- name: write the greeting
  copy:
    dest: /var/lib/coopr/web/greeting.txt
    content: "{{ web.greeting }} from {{ coopr_hostname }} #{{ coopr_nodenum }} ({{ coopr_service }} {{ coopr_action }} {{ coopr_node_id }} {{ coopr_cluster_id }}) port {{ web.port }}\n"
    mode: "0640"
- shell: id -un; printf 'to stderr\n' >&2
  changed_when: false`)
			for i, wantChanged := range []string{"changed=2", "changed=0"} {
				r, out := run(t, d, task(c, "CONFIGURE", map[string]string{"playbook": pb}))
				if r.Status != 0 {
					t.Fatalf("run %d: status %d: %s", i+1, r.Status, r.Message)
				}
				if !strings.Contains(r.Message, wantChanged) {
					t.Fatalf("run %d: %q, want %s", i+1, r.Message, wantChanged)
				}
				// The command's output arrives line by line, as itself.
				if !out.Contains("stdout", "TASK [write the greeting]") || !containsLine(out.Lines("stdout"), "root") || !containsLine(out.Lines("stderr"), "to stderr") {
					t.Fatalf("run %d: output %q / %q", i+1, out.Lines("stdout"), out.Lines("stderr"))
				}
			}
			n := c.Nodes[0]
			want := `it's "quoted" from ` + n.Hostname + ` #` + itoa(n.NodeNum) + ` (web CONFIGURE ` + n.ID + ` ` + c.ID + `) port 8080` + "\n"
			got, err := os.ReadFile(h.Path("/var/lib/coopr/web/greeting.txt"))
			if err != nil || string(got) != want {
				t.Fatalf("greeting.txt %q (%v), want %q", got, err, want)
			}
			if owner := strings.TrimSpace(h.Exec(t, "stat -c '%U %a' /var/lib/coopr/web/greeting.txt")); owner != "root 640" {
				t.Fatalf("greeting.txt owner and mode %q", owner)
			}
		})
	}
}

// The node is in one group per service; tags pick tasks; plays that match
// no host fail.
func TestGroupsAndTags(t *testing.T) {
	t.Parallel()
	c := newCluster(t, sshdtest.Options{})
	c.Nodes[0].Services = []string{"base", "web-2"}
	d, _ := newDriver(t, c)
	for _, tc := range []struct {
		name, playbook, tags string
		ok                   bool
		stdout, msg          string
		absent               string
	}{
		{name: "service group", playbook: "- hosts: web_2\n  gather_facts: false\n  tasks:\n  - shell: echo in-web-2\n", ok: true, stdout: "in-web-2"},
		{name: "action's service group", playbook: "- hosts: web:&base\n  gather_facts: false\n  tasks:\n  - shell: echo in-both\n", ok: true, stdout: "in-both"},
		{name: "no such group", playbook: "- hosts: db\n  gather_facts: false\n  tasks:\n  - shell: echo never\n", msg: "match no host"},
		{name: "tags", tags: "b, c", ok: true, stdout: "tag-b", absent: "tag-a",
			playbook: play("- shell: echo tag-a\n  tags: a\n- shell: echo tag-b\n  tags: [b]")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, out := run(t, d, task(c, "INSTALL", map[string]string{"playbook": tc.playbook, "tags": tc.tags}))
			if (r.Status == 0) != tc.ok || !strings.Contains(r.Message, tc.msg) {
				t.Fatalf("status %d: %q", r.Status, r.Message)
			}
			if !tc.ok && retryable(r) {
				t.Fatal("retryable")
			}
			if tc.stdout != "" && !containsLine(out.Lines("stdout"), tc.stdout) {
				t.Fatalf("stdout %q lacks %q", out.Lines("stdout"), tc.stdout)
			}
			if tc.absent != "" && containsLine(out.Lines("stdout"), tc.absent) {
				t.Fatalf("stdout has %q", tc.absent)
			}
		})
	}
}

// Failures map to retryable or not by ansible's exit code, with a message
// that says what went wrong and no private path.
func TestFailures(t *testing.T) {
	t.Parallel()
	c := newCluster(t, sshdtest.Options{})
	d, work := newDriver(t, c)
	missing := *d
	missing.program = "ansible-playbook-not-installed"
	for _, tc := range []struct {
		name      string
		drv       drivers.Driver
		fields    map[string]string
		change    func(*drivers.Task)
		retryable bool
		want      []string
	}{
		{name: "failing task", retryable: true,
			fields: map[string]string{"playbook": play("- name: break it\n  shell: echo broken-detail >&2; exit 3")},
			want:   []string{`task "break it" failed`, "non-zero return code", "rc 3", "broken-detail"}},
		{name: "fail module", retryable: true,
			fields: map[string]string{"playbook": play(`- fail: {msg: "web {{ web.port }} is wrong"}`)},
			want:   []string{`task "fail" failed`, "web 8080 is wrong"}},
		{name: "yaml syntax error",
			fields: map[string]string{"playbook": "- hosts: all\n  tasks:\n    - shell: true\n   bad: [\n"},
			want:   []string{"cannot be parsed", "Syntax Error while loading YAML", "(playbook.yml, line 4, column"}},
		{name: "unknown module",
			fields: map[string]string{"playbook": play("- no_such_module_here: {x: 1}")},
			want:   []string{"cannot be parsed", "no_such_module_here"}},
		{name: "missing role",
			fields: map[string]string{"playbook": "- hosts: all\n  roles: [no_such_role]\n"},
			want:   []string{"exited with 1", "no_such_role"}},
		{name: "bad tags", fields: map[string]string{"playbook": play("- ping:"), "tags": "a,--force"},
			want: []string{`field tags: "--force" is not a tag`}},
		{name: "empty playbook", fields: map[string]string{"playbook": " \n"},
			want: []string{"field playbook is empty"}},
		{name: "no pinned host key", fields: map[string]string{"playbook": play("- ping:")},
			change: func(tk *drivers.Task) { delete(tk.Node.Facts, "node") },
			want:   []string{"no pinned host key", "BOOTSTRAP"}},
		{name: "no service", fields: map[string]string{"playbook": play("- ping:")},
			change: func(tk *drivers.Task) { tk.Service = nil },
			want:   []string{"is no service action"}},
		{name: "ansible missing", drv: &missing, fields: map[string]string{"playbook": play("- ping:")},
			want: []string{"ansible-playbook-not-installed is not installed", "apt-get install ansible"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := task(c, "INSTALL", tc.fields)
			if tc.change != nil {
				tc.change(tk)
			}
			drv := tc.drv
			if drv == nil {
				drv = d
			}
			r, _ := run(t, drv, tk)
			if r.Status == 0 || retryable(r) != tc.retryable {
				t.Fatalf("status %d retryable %v, want a failure with retryable %v", r.Status, retryable(r), tc.retryable)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Message, w) {
					t.Errorf("message %q lacks %q", r.Message, w)
				}
			}
			if strings.Contains(r.Message, work) {
				t.Errorf("message %q shows the private directory", r.Message)
			}
		})
	}
}

// OpenSSH under ansible enforces the pin on its own: with the driver's
// check skipped, a wrong known_hosts entry still stops the run, and that
// is not retryable.
func TestAnsibleEnforcesThePin(t *testing.T) {
	t.Parallel()
	c := newCluster(t, sshdtest.Options{})
	d, _ := newDriver(t, c)
	tk := task(c, "INSTALL", map[string]string{"playbook": play("- shell: echo must-not-run")})
	other := sshdtest.Start(t, sshdtest.Options{}) // a key to pin that this host does not have
	tk.Node.Facts["node"] = map[string]any{"hostKeys": []any{other.HostKeyLine()}}
	tg, err := drivers.TargetOf(tk, tk.Node)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := prepare(dir, tk, tg)
	if err != nil {
		t.Fatal(err)
	}
	out := &drivertest.Recorder{}
	rep := newReport(p.host, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, err := d.play(ctx, Program, []string{"-i", p.inventory, "-e", "@" + p.vars, p.playbook}, p, dir, rep, out, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	r := rep.result("web INSTALL", o)
	t.Logf("exit %d: %s", o.code, r.Message)
	if r.Status == 0 || retryable(r) || !r.Unreachable || !strings.Contains(r.Message, "host key does not match its pin") {
		t.Fatalf("status %d retryable %v unreachable %v: %s", r.Status, retryable(r), r.Unreachable, r.Message)
	}
	if containsLine(out.Lines("stdout"), "must-not-run") {
		t.Fatal("the task ran on a host with another key")
	}
	// The files a run leaves for ansible are private.
	for _, f := range []string{"id_node", "known_hosts", "vars.json", "inventory.yml", "playbook.yml"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, st.Mode(), err)
		}
	}
	kh, _ := os.ReadFile(filepath.Join(dir, "known_hosts"))
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(other.HostKeyLine()))
	if err != nil || !strings.Contains(string(kh), "["+tg.Host+"]:"+itoa(tg.Port)+" "+strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))) {
		t.Fatalf("known_hosts %q", kh)
	}
}

// Ending ctx ends ansible-playbook and everything it started on this
// machine, promptly.
func TestCancelStopsTheProcessGroup(t *testing.T) {
	t.Parallel()
	c := newCluster(t, sshdtest.Options{})
	d, work := newDriver(t, c)
	marker := "300." + itoa(int(time.Now().UnixNano()%1_000_000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &started{Recorder: &drivertest.Recorder{}, want: "TASK [sleep]", ch: make(chan struct{})}
	done := make(chan drivers.Result, 1)
	go func() {
		done <- d.Run(ctx, task(c, "START", map[string]string{"playbook": play("- name: sleep\n  command: sleep " + marker)}), out)
	}()
	select {
	case <-out.ch:
	case r := <-done:
		t.Fatalf("ended before the task started: %d %s", r.Status, r.Message)
	case <-time.After(time.Minute):
		t.Fatal("the sleep task did not start within a minute")
	}
	// Wait until the command runs on the node: ansible's workers and ssh
	// run then.
	h := c.Hosts[0]
	for deadline := time.Now().Add(30 * time.Second); strings.TrimSpace(h.Exec(t, "pgrep -f 'slee[p] "+marker+"' || true")) == ""; {
		if time.Now().After(deadline) {
			t.Fatal("the sleep did not start on the node within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if procs := processesWith(work); len(procs) < 2 {
		t.Fatalf("expected ansible and its children to run, found %v", procs)
	}
	start := time.Now()
	cancel()
	var r drivers.Result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5s of cancel")
	}
	t.Logf("returned %v after cancel: %s", time.Since(start).Round(time.Millisecond), r.Message)
	if r.Status == 0 || !retryable(r) || !strings.Contains(r.Message, "stopped") {
		t.Fatalf("status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}
	if procs := processesWith(work); len(procs) > 0 {
		t.Fatalf("still running after Run returned: %v", procs)
	}
	// The node keeps what ansible had started (see the package doc).
	t.Logf("on the node: %q", h.Exec(t, "pgrep -af 'slee[p] "+marker+"'; pkill -f 'slee[p] "+marker+"' || true"))
}

// started is a Recorder that signals when a stdout line has want.
type started struct {
	*drivertest.Recorder
	want string
	once sync.Once
	ch   chan struct{}
}

func (s *started) Stdout(line string) {
	s.Recorder.Stdout(line)
	if strings.Contains(line, s.want) {
		s.once.Do(func() { close(s.ch) })
	}
}

// processesWith lists the processes whose command line mentions s.
func processesWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if cmd := strings.ReplaceAll(string(b), "\x00", " "); strings.Contains(cmd, s) {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie holds nothing
			}
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

func TestParseTags(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "", want: ""},
		{in: "a", want: "a"},
		{in: " a, b\tc:d ", want: "a,b,c:d"},
		{in: "a;rm", err: `"a;rm" is not a tag`},
		{in: "-x", err: `"-x" is not a tag`},
	} {
		got, err := parseTags(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseTags(%q) err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseTags(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

func secretLines(pemKey []byte) []string {
	var out []string
	for _, l := range strings.Split(string(pemKey), "\n") {
		if len(l) >= 16 && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}
