package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/builtin"
	"github.com/cooprhq/coopr/drivers/vm/local"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// The agent as packaged, under real systemd: the .deb installed in a
// local node (systemd as PID 1), its unit started with the server on
// this host, and checked from inside the node: Type=notify (active only
// once READY=1 came, which is once the agent registered), STATUS= in
// systemctl show, its log in the journal, tasks of a cluster run in
// transient coopr-task-*.service units (--isolation=systemd-run), the
// watchdog killing and restarting a frozen agent, and a clean stop with
// STOPPING=1.
func TestAgentUnderSystemd(t *testing.T) {
	began := time.Now()
	// The package builds while the server and the node come up.
	debDir := t.TempDir()
	var deb sdBuild
	built := make(chan struct{})
	go func() { deb = sdBuildDeb(debDir); close(built) }()
	t.Cleanup(func() { <-built }) // before debDir goes

	w := newWorld(t, 2)
	n := sdBootNode(t, w)

	<-built
	if deb.err != nil {
		t.Fatalf("build the package: %v", deb.err)
	}
	t.Logf("package %s and node %s at %s ready after %s", filepath.Base(deb.path), n.name, n.addr, time.Since(began).Round(time.Millisecond))

	// The server as the node reaches it: on the bridge's host address, shut
	// until the gate opens, so that the agent's registration waits.
	px := sdProxy(t, n.hostAddr+":0", strings.TrimPrefix(w.s.URL, "http://"))
	var tok struct{ CreateAPIToken struct{ Secret string } }
	w.s.Must(w.s.Super, `mutation { createAPIToken(input: {name: "sd-agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)

	f, err := os.Open(deb.path)
	if err != nil {
		t.Fatal(err)
	}
	n.mustIn(f, "cat > /root/coopr.deb")
	f.Close()
	n.must("DEBIAN_FRONTEND=noninteractive dpkg -i /root/coopr.deb")
	// The token goes on stdin, never on a command line. cat keeps the
	// packaged file's owner and mode (root:coopr 0640).
	n.mustIn(strings.NewReader(fmt.Sprintf(`COOPR_SERVER=http://%s
COOPR_TOKEN=%s
COOPR_AGENT_CAPACITY=2
COOPR_AGENT_NAME=sd-agent
COOPR_ISOLATION=systemd-run
COOPR_AGENT_GRACE=5s
COOPR_TASK_CPU_QUOTA=150%%
COOPR_TASK_MEMORY_MAX=512M
`, px.ln.Addr(), tok.CreateAPIToken.Secret)), "cat > /etc/coopr/agent.env")
	if got := n.must("stat -c '%U:%G %a' /etc/coopr/agent.env"); got != "root:coopr 640" {
		t.Errorf("/etc/coopr/agent.env is %s, want root:coopr 640", got)
	}
	// Starting task units needs root (the image has no polkit): the
	// packaged drop-in for that. And a short watchdog for this test.
	n.must(`set -e
d=/etc/systemd/system/coopr-agent.service.d
mkdir -p $d
cp /usr/share/coopr/coopr-agent-local.conf $d/local.conf
printf '[Service]\nWatchdogSec=3s\nRestartSec=1s\n' > $d/test.conf
systemctl daemon-reload`)

	t.Run("type notify", func(t *testing.T) {
		n.must("systemctl start --no-block coopr-agent.service")
		// Started, told systemd it is registering, and held there while the
		// server cannot be reached.
		p := n.waitProps(t, 20*time.Second, func(p map[string]string) bool {
			return strings.HasPrefix(p["StatusText"], "registering with ")
		}, "ActiveState", "SubState", "StatusText", "MainPID")
		if p["ActiveState"] != "activating" || p["SubState"] != "start" || p["MainPID"] == "0" {
			t.Fatalf("while registering: %v, want activating (start) with a main process", p)
		}
		// systemd logs notifications and state changes at debug level. Only
		// from now on: at debug level the forked child logs before it runs
		// the agent, and journald may then file the agent's first line
		// under PID 1's cgroup, as it saw that PID there.
		n.must("systemd-analyze log-level debug")
		time.Sleep(1500 * time.Millisecond)
		if p := n.props("ActiveState", "SubState"); p["ActiveState"] != "activating" {
			t.Fatalf("the unit is %v before the agent could register: Type=notify must wait for READY=1", p)
		}
		px.open()
		p = n.waitProps(t, 30*time.Second, func(p map[string]string) bool { return p["ActiveState"] != "activating" },
			"ActiveState", "SubState", "MainPID")
		if p["ActiveState"] != "active" || p["SubState"] != "running" {
			t.Fatalf("after registering: %v, want active (running)\n%s\n%s", p, n.journal("coopr-agent.service"), n.health())
		}
		// systemd's own account: READY=1 from the main process, then running.
		j := n.journal("coopr-agent.service")
		ready := strings.Index(j, fmt.Sprintf("Got notification message from PID %s (READY=1", p["MainPID"]))
		running := strings.Index(j, "Changed start -> running")
		if ready < 0 || running < ready {
			t.Errorf("want READY=1 from PID %s before start -> running in the journal (at %d, %d):\n%s", p["MainPID"], ready, running, j)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("journal", func(t *testing.T) {
		// journald files stream lines a moment after they were written.
		wants := []string{"coopr agent starting", "isolation=systemd-run", "agent registered", "agent=sd-agent"}
		var j string
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			j = n.journal("coopr-agent.service")
			if !slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(j, w) }) || time.Now().After(deadline) {
				break
			}
		}
		for _, want := range wants {
			if !strings.Contains(j, want) {
				t.Errorf("journalctl -u coopr-agent has no %q:\n%s", want, j)
			}
		}
		if strings.Contains(j, "isolation unavailable") {
			t.Errorf("the agent fell back from systemd-run:\n%s", j)
		}
	})

	t.Run("listed by the server", func(t *testing.T) {
		var out struct {
			Agents []struct {
				ID, Version, Host string
				Capacity          int
				Drivers           []struct{ Role, Name string }
			}
		}
		w.s.Must(w.s.Super, `{ agents { id version host capacity drivers } }`, nil, &out)
		if len(out.Agents) != 1 {
			t.Fatalf("agents %+v, want sd-agent alone", out.Agents)
		}
		a := out.Agents[0]
		var got, want []string
		for _, d := range a.Drivers {
			got = append(got, d.Role+"/"+d.Name)
		}
		// What the same source's agent carries.
		reg, closeDrivers, err := builtin.Registry(builtin.Config{WorkDir: t.TempDir(), Log: w.log})
		if err != nil {
			t.Fatal(err)
		}
		closeDrivers()
		for _, d := range reg.Descriptors() {
			want = append(want, string(d.Role)+"/"+d.Name)
		}
		slices.Sort(got)
		slices.Sort(want)
		if a.ID != "sd-agent" || a.Version != deb.version || a.Capacity != 2 || !slices.Equal(got, want) {
			t.Errorf("agent %+v (drivers %v), want sd-agent version %s capacity 2 with drivers %v", a, got, deb.version, want)
		}
	})

	t.Run("tasks in transient units", func(t *testing.T) {
		// A cluster on the node itself, through the pool provider: only the
		// agent in the node serves this tenant (no agent runs in this test
		// process), so every task of it runs there. The probe finds the
		// process at the other end of its own SSH connection, the task
		// process, and records its cgroup.
		w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
			map[string]any{"e": map[string]any{"name": "self", "providertype": "pool",
				"provisioner": map[string]any{"hosts": n.addr, "ssh_user": "root", "ssh_key": n.keyPEM},
				"network":     map[string]any{"type": "hosts", "fields": map[string]any{}}}}, &struct{}{})
		put := func(kind string, e map[string]any) {
			w.s.Must(w.admin, `mutation($k: CatalogKind!, $e: JSON!) { putCatalogEntity(kind: $k, entity: $e) { entity { version } } }`,
				map[string]any{"k": kind, "e": e}, &struct{}{})
		}
		put("HARDWARETYPES", map[string]any{"name": "sdsmall", "providermap": map[string]any{"self": map[string]any{"flavor": "any"}}})
		put("IMAGETYPES", map[string]any{"name": "sddebian",
			"providermap": map[string]any{"self": map[string]any{"image": "existing", "sshuser": "root"}}})
		w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: SERVICES, entity: $e) { entity { version } } }`,
			map[string]any{"e": map[string]any{"name": "sdprobe", "description": "records the task process's unit",
				"dependencies": map[string]any{"conflicts": []string{}, "provides": []string{},
					"install": map[string]any{"requires": []string{}, "uses": []string{}},
					"runtime": map[string]any{"requires": []string{}, "uses": []string{}}},
				"provisioner": map[string]any{"actions": map[string]any{
					"install": map[string]any{"type": "shell", "fields": map[string]any{"script": sdProbeScript}}}}}}, &struct{}{})
		w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
			map[string]any{"e": map[string]any{"name": "sdprobe", "description": "the probe on the agent's own node",
				"defaults": map[string]any{"services": []string{"sdprobe"}, "provider": "self", "hardwaretype": "sdsmall",
					"imagetype": "sddebian", "config": map[string]any{}},
				"compatibility": map[string]any{"services": []string{"sdprobe"}, "hardwaretypes": []string{"sdsmall"},
					"imagetypes": []string{"sddebian"}},
				"constraints": map[string]any{"size": map[string]any{"min": 1, "max": 1}}}}, &struct{}{})
		id := w.create(t, "sdprobe", "", 1)
		w.follow(t, id, "ACTIVE", 2*time.Minute)
		c := w.cluster(t, id)
		if len(c.Jobs) != 1 {
			t.Fatalf("cluster %s has jobs %+v, want its create job alone", id, c.Jobs)
		}

		probe := map[string]string{}
		for _, l := range strings.Split(n.must("cat /var/lib/sdprobe.out"), "\n") {
			k, v, _ := strings.Cut(l, "=")
			probe[k] = v
		}
		t.Logf("the probe saw %v", probe)
		m := regexp.MustCompile(`^0::/system\.slice/(coopr-task-(.+)-(\d+)\.service)$`).FindStringSubmatch(probe["cgroup"])
		if m == nil {
			t.Fatalf("the task process is in cgroup %q, want a coopr-task-*.service unit (probe: %v)", probe["cgroup"], probe)
		}
		unit, taskID := m[1], m[2]
		if probe["cmdline"] != "/usr/bin/coopr agent run-task --work-dir /var/lib/coopr/work" {
			t.Errorf("the task process is %q, want coopr agent run-task", probe["cmdline"])
		}
		// The unit as systemd has it, with the agent's task limits.
		for k, v := range map[string]string{"Type": "exec", "KillMode": "control-group", "CPUQuotaPerSecUSec": "1.500000s",
			"MemoryMax": strconv.Itoa(512 << 20), "WorkingDirectory": "/var/lib/coopr/work", "User": ""} {
			if probe[k] != v {
				t.Errorf("task unit %s: %s=%q, want %q (probe: %v)", unit, k, probe[k], v, probe)
			}
		}
		// Nothing of the agent's that a task must not have: its token, the
		// agent's notification socket and watchdog.
		for _, name := range strings.Fields(probe["env"]) {
			if strings.HasPrefix(name, "COOPR_") || name == "NOTIFY_SOCKET" || strings.HasPrefix(name, "WATCHDOG_") {
				t.Errorf("the task process has %s in its environment (%s)", name, probe["env"])
			}
		}
		if probe["RuntimeMaxUSec"] == "" || probe["RuntimeMaxUSec"] == "infinity" {
			t.Errorf("task unit %s has no RuntimeMaxUSec bound: %q", unit, probe["RuntimeMaxUSec"])
		}
		var ids []string
		for _, tk := range c.Jobs[0].Tasks {
			ids = append(ids, tk.ID)
		}
		if !slices.Contains(ids, taskID) {
			t.Errorf("unit %s names no task of the job (%v)", unit, ids)
		}
		// systemd's record of that unit carries the invocation the task
		// process was started as.
		if inv := probe["invocation"]; inv == "" || !strings.Contains(n.must("journalctl --no-pager -o json -u "+unit), `"INVOCATION_ID":"`+inv+`"`) {
			t.Errorf("the task process's INVOCATION_ID %q is not %s's in the journal", inv, unit)
		}
		// Every task of the job ran in a unit of its own, and none is left.
		units := n.must("journalctl --no-pager -o cat -u 'coopr-task-*'")
		for _, id := range ids {
			if !strings.Contains(units, "Started coopr-task-"+id+"-") {
				t.Errorf("no unit started for task %s:\n%s", id, units)
			}
		}
		if left := n.must("systemctl list-units --all --no-legend --plain 'coopr-task-*'"); left != "" {
			t.Errorf("task units left: %s", left)
		}
	})

	t.Run("status", func(t *testing.T) {
		// STATUS= follows each heartbeat (every 10 s): the next one after
		// the cluster's last task says every slot is free.
		n.waitProps(t, 25*time.Second, func(p map[string]string) bool { return p["StatusText"] == "0/2 slots busy" }, "StatusText")
	})

	var pid string
	t.Run("watchdog", func(t *testing.T) {
		p := n.props("NRestarts", "MainPID", "WatchdogUSec", "ActiveState")
		// The agent has run many times its watchdog's 3 s by now: it pings.
		if p["NRestarts"] != "0" || p["WatchdogUSec"] != "3s" || p["ActiveState"] != "active" {
			t.Fatalf("before freezing: %v, want 0 restarts, a 3s watchdog, active", p)
		}
		frozen := p["MainPID"]
		n.must("kill -STOP " + frozen)
		p = n.waitProps(t, 30*time.Second, func(p map[string]string) bool {
			return p["NRestarts"] != "0" && p["ActiveState"] == "active"
		}, "NRestarts", "MainPID", "ActiveState", "SubState")
		if p["NRestarts"] != "1" || p["MainPID"] == frozen {
			t.Errorf("after freezing PID %s: %v, want one restart and a new main process", frozen, p)
		}
		pid = p["MainPID"]
		j := n.journal("coopr-agent.service")
		for _, want := range []string{"Watchdog timeout (limit 3s)", "Failed with result 'watchdog'"} {
			if !strings.Contains(j, want) {
				t.Errorf("journalctl -u coopr-agent has no %q:\n%s", want, j)
			}
		}
	})

	t.Run("stop", func(t *testing.T) {
		if pid == "" {
			pid = n.props("MainPID")["MainPID"]
		}
		n.must("systemctl stop coopr-agent.service")
		p := n.props("ActiveState", "SubState", "Result", "ExecMainStatus", "ExecMainCode")
		if p["ActiveState"] != "inactive" || p["Result"] != "success" || p["ExecMainStatus"] != "0" {
			t.Errorf("after stop: %v, want inactive, result success, exit status 0", p)
		}
		if j := n.journal("coopr-agent.service"); !strings.Contains(j, fmt.Sprintf("Got notification message from PID %s (STOPPING=1)", pid)) {
			t.Errorf("no STOPPING=1 from PID %s in the journal:\n%s", pid, j)
		}
	})
	t.Logf("done in %s", time.Since(began).Round(time.Millisecond))
}

// sdProbeScript runs on the node over SSH from the task process. The
// script's own cgroup is sshd's session; the task process is the one
// holding the client end of the connection: found from the sshd process
// that serves this script.
const sdProbeScript = `set -e
p=$$
while [ "$(cat /proc/$p/comm)" != sshd ]; do
  p=$(cut -d' ' -f4 /proc/$p/stat)
  [ "$p" -gt 1 ] || { echo "no sshd above this script" >&2; exit 100; }
done
peer=$(ss -Htnp state established '( sport = :22 )' | grep "pid=$p," | awk '{print $4}' | head -n1)
port=${peer##*:}
[ -n "$port" ] || { echo "no connection of sshd $p" >&2; exit 100; }
task=$(ss -Htnp state established "( sport = :$port )" | grep -v "pid=$p," | sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n1)
[ -n "$task" ] || { echo "no process holds the client end $peer" >&2; exit 100; }
{
  echo "pid=$task"
  echo "cgroup=$(grep '^0::' /proc/$task/cgroup)"
  echo "cmdline=$(tr '\0' ' ' < /proc/$task/cmdline | sed 's/ $//')"
  echo "invocation=$(tr '\0' '\n' < /proc/$task/environ | sed -n 's/^INVOCATION_ID=//p')"
  echo "env=$(tr '\0' '\n' < /proc/$task/environ | cut -d= -f1 | tr '\n' ' ')"
  unit=$(sed -n 's|^0::/system.slice/||p' /proc/$task/cgroup)
  systemctl show "$unit" -p Type -p KillMode -p CPUQuotaPerSecUSec -p MemoryMax -p RuntimeMaxUSec -p WorkingDirectory -p User
} > /var/lib/sdprobe.out
`

type sdBuild struct {
	path, version string
	err           error
}

// sdBuildDeb builds the binary and the .deb as `make package` does, into a
// directory of its own (the checkout's bin/ is shared).
func sdBuildDeb(dir string) sdBuild {
	b := sdBuild{version: "0.0.0-e2e-systemd"}
	bin := filepath.Join(dir, "coopr")
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+b.version, "-o", bin, "./cmd/coopr")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("go build: %v\n%s", err, out)
		return b
	}
	nfpm := exec.Command("go", "tool", "nfpm", "package", "-f", "packaging/nfpm.yaml", "-p", "deb", "-t", dir+"/")
	nfpm.Dir = ".."
	nfpm.Env = append(os.Environ(), "COOPR_BIN="+bin, "COOPR_PKG_VERSION="+b.version, "GOARCH="+runtime.GOARCH)
	if out, err := nfpm.CombinedOutput(); err != nil {
		b.err = fmt.Errorf("nfpm: %v\n%s", err, out)
		return b
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(debs) != 1 {
		b.err = fmt.Errorf("nfpm made %v", debs)
		return b
	}
	b.path = debs[0]
	return b
}

// sdNode is a local node reached over SSH as root.
type sdNode struct {
	t                              *testing.T
	name, addr, hostAddr, stateDir string
	keyPEM                         string // authorized for root
	c                              *ssh.Client
}

// sdBootNode makes a node with the local driver, as a CREATE task would,
// and deletes it when the test ends.
func sdBootNode(t *testing.T, w *world) *sdNode {
	t.Helper()
	key := sshdtest.NewKey(t)
	signer, keyPEM := key.Signer, string(key.PEM)
	// Its own name: concurrent runs of this test must not share a node.
	clusterID := fmt.Sprintf("sdagent%d", os.Getpid())
	task := func(action string, facts map[string]any) *drivers.Task {
		tk := &drivers.Task{TaskID: clusterID + "-" + action, ClusterID: clusterID, TaskName: action, Attempt: 1}
		tk.Cluster.ID = clusterID
		tk.Provider.Name, tk.Provider.ProviderType, tk.Provider.Provisioner = "local", "local", map[string]any{}
		tk.Node = &drivers.Node{ID: "agent-node", Hostname: "sd-agent-node", SSHUser: "root", Facts: map[string]any{"vm": facts}}
		tk.Secrets = map[string]map[string]any{"ssh": {"privateKey": keyPEM, "publicKey": string(ssh.MarshalAuthorizedKey(signer.PublicKey()))}}
		return tk
	}
	drv := local.New(w.localCfg, w.log)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res := drv.Run(ctx, task("CREATE", map[string]any{}), nil)
	t.Cleanup(func() {
		facts := res.Facts
		if facts == nil {
			facts = map[string]any{}
		}
		if t.Failed() {
			if name, _ := facts["providerId"].(string); name != "" {
				b, _ := os.ReadFile(filepath.Join(w.localCfg.StateDir, "nodes", name, "console.log"))
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("the node's console, last lines:\n%s", b)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if r := drv.Run(ctx, task("DELETE", facts), nil); r.Status != 0 {
			t.Errorf("DELETE the node: %s", r.Message)
		}
		w.noTraces(t, clusterID, "agent-node")
	})
	if res.Status != 0 {
		t.Fatalf("CREATE the node: %s", res.Message)
	}
	n := &sdNode{t: t, name: res.Facts["providerId"].(string), addr: res.IPAddresses["access_v4"], keyPEM: keyPEM, stateDir: w.localCfg.StateDir}
	// The host's end of the cluster's bridge.
	_, hostCIDR, nerr := local.ClusterNetwork(w.localCfg.StateDir, clusterID)
	if nerr != nil {
		t.Fatalf("the node's cluster network: %v", nerr)
	}
	n.hostAddr, _, _ = strings.Cut(hostCIDR, "/")

	var pins []ssh.PublicKey
	keys, _ := res.Facts["hostKeys"].([]string)
	for _, k := range keys {
		pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k))
		if err != nil {
			t.Fatalf("host key %q: %v", k, err)
		}
		pins = append(pins, pk)
	}
	cfg := &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, Timeout: 5 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			for _, p := range pins {
				if bytes.Equal(p.Marshal(), k.Marshal()) {
					return nil
				}
			}
			return errors.New("host key not the node's")
		}}
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if n.c, err = ssh.Dial("tcp", net.JoinHostPort(n.addr, "22"), cfg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh to the node: %v", err)
		}
	}
	t.Cleanup(func() { n.c.Close() })
	return n
}

// run runs cmd with sh on the node and returns its trimmed output.
func (n *sdNode) run(stdin io.Reader, cmd string) (string, error) {
	s, err := n.c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	s.Stdin = stdin
	// One writer for both, safe for the two goroutines copying into it
	// (bytes.Buffer's ReadFrom is not).
	out := &sshdtest.Buffer{}
	s.Stdout, s.Stderr = out, out
	err = s.Run("exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/sh -c '" + strings.ReplaceAll(cmd, "'", `'\''`) + "'")
	return strings.TrimSpace(out.String()), err
}

func (n *sdNode) must(cmd string) string {
	n.t.Helper()
	return n.mustIn(nil, cmd)
}

func (n *sdNode) mustIn(stdin io.Reader, cmd string) string {
	n.t.Helper()
	out, err := n.run(stdin, cmd)
	if err != nil {
		n.t.Fatalf("on the node: %s: %v\n%s\n%s", cmd, err, out, n.health())
	}
	return out
}

// health tells, for a failure's message, whether the node's container and
// its link are still there.
func (n *sdNode) health() string {
	pid, _ := os.ReadFile(filepath.Join(n.stateDir, "nodes", n.name, "nspawn.pid"))
	cmdline, _ := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cmdline")
	link, _ := exec.Command("ip", "-br", "link", "show", "vc"+n.name[len(n.name)-10:]).CombinedOutput()
	return fmt.Sprintf("nspawn pid %s running %q; host link: %s", strings.TrimSpace(string(pid)),
		strings.ReplaceAll(string(cmdline), "\x00", " "), strings.TrimSpace(string(link)))
}

// props reads properties of coopr-agent.service.
func (n *sdNode) props(names ...string) map[string]string {
	n.t.Helper()
	out := n.must("systemctl show coopr-agent.service -p " + strings.Join(names, ","))
	p := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			p[k] = v
		}
	}
	if len(p) != len(names) {
		n.t.Fatalf("systemctl show -p %v: %q", names, out)
	}
	return p
}

// waitProps reads names until ok says so or the time is up.
func (n *sdNode) waitProps(t *testing.T, timeout time.Duration, ok func(map[string]string) bool, names ...string) map[string]string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p := n.props(names...)
		if ok(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("coopr-agent.service still %v after %s\n%s\n%s", p, timeout, n.journal("coopr-agent.service"), n.health())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (n *sdNode) journal(unit string) string {
	n.t.Helper()
	out, err := n.run(nil, "journalctl --no-pager -o cat -u "+unit)
	if err != nil {
		return fmt.Sprintf("(journalctl: %v: %s)", err, out)
	}
	return out
}

// sdGatedProxy forwards TCP connections to target once open is called;
// until then they wait, accepted.
type sdGatedProxy struct {
	ln     net.Listener
	gate   chan struct{}
	opened sync.Once
	mu     sync.Mutex
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func sdProxy(t *testing.T, addr, target string) *sdGatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &sdGatedProxy{ln: ln, gate: make(chan struct{}), conns: map[net.Conn]bool{}}
	track := func(c net.Conn) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.conns == nil {
			c.Close()
			return false
		}
		p.conns[c] = true
		return true
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !track(c) {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer c.Close()
				<-p.gate
				s, err := net.Dial("tcp", target)
				if err != nil || !track(s) {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.open()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.conns = nil
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *sdGatedProxy) open() { p.opened.Do(func() { close(p.gate) }) }
