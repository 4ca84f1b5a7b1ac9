// Package ansible is the automator "ansible": it runs ansible-playbook on
// the agent host against the task's node, over SSH.
//
// The action's fields are `playbook`, the playbook's YAML text, and
// optional `tags` (comma- or space-separated), which limit the run to the
// plays and tasks tagged so. Each run gets a private directory (0700,
// removed afterwards) under the driver's work dir holding the playbook,
// an inventory with the node alone, the SSH private key (0600), a
// known_hosts file with the node's pinned host keys, and the extra vars.
// The node is reached where drivers.TargetOf says (docs/drivers.md), with
// become (sudo) when the SSH user is not root. A node with no pinned host
// key is refused: BOOTSTRAP pins it, and OpenSSH runs with
// StrictHostKeyChecking=yes against that known_hosts file only. Before
// ansible starts, the driver itself connects once, so that a changed host
// key is reported with both fingerprints and an unreachable host fails
// fast.
//
// The inventory host is the node's hostname, in group all and in one
// group per service of the node (names with characters other than
// letters, digits and _ get _ instead); plays should say `hosts: all`. A
// run whose plays match no host fails. The extra vars (-e @file, so they
// override everything else) are the cluster config of the payload
// (macro-expanded for this node) with, on top:
//
//	coopr_service     the service's name
//	coopr_action      the action, upper case (INSTALL, START, ...)
//	coopr_node_id     the node's id
//	coopr_hostname    the node's hostname
//	coopr_cluster_id  the cluster's id
//	coopr_nodenum     the node's number
//
// ansible-playbook runs in its own process group with a clean environment
// (HOME in the private directory, no colour, no cows, no retry files, no
// config file but the driver's, pipelining on). The run's tasks share one
// SSH connection through an OpenSSH control master, which the driver ends
// with the run: the master detaches from the process group, and nothing
// of a run may outlive it. Its stdout and stderr stream to
// the task's output line by line, and so do the stdout and stderr lines of
// every task result (a command's output), unindented. When ctx ends the
// whole group gets SIGTERM, then SIGKILL; a command it already started on
// the node may run on to its end there, as with any interrupted ansible.
//
// Exit codes of ansible-playbook and what they make of the task:
//
//	0     success
//	2     a task failed (RUN_FAILED_HOSTS): retryable failure naming the task
//	      and its message
//	8     a task failed and broke the play (any_errors_fatal): the same
//	4     the node was unreachable (RUN_UNREACHABLE_HOSTS): retryable; but
//	      "Host key verification failed" is not retryable. ansible also
//	      exits 4 on a playbook it cannot parse (AnsibleParserError): with
//	      no host unreachable, exit 4 is a parse error, not retryable
//	1     any other ansible error (a missing role, an undefined variable
//	      at load): not retryable
//	5     bad options (tags): not retryable
//	other not retryable (250: ansible crashed), except death by a signal
//	      the driver did not send, which is retryable
//
// A missing ansible-playbook is a non-retryable failure that says how to
// install it.
package ansible

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// Program is the program the driver runs, found on PATH.
const Program = "ansible-playbook"

// Descriptor is the driver's identity: role automator, name ansible, with
// the fields examples/catalog/automatortypes/ansible.json declares.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{
		Role:    drivers.RoleAutomator,
		Name:    "ansible",
		Version: "1",
		Params: []drivers.Param{
			{Name: "playbook", Type: "text", Required: true},
			{Name: "tags", Type: "text"},
		},
	}
}

// Driver runs service actions' playbooks.
type Driver struct {
	log     *slog.Logger
	workDir string
	program string
	// grace is how long a cancelled run has between SIGTERM and SIGKILL.
	grace time.Duration
}

// New returns the driver; workDir holds the runs' private directories
// (default os.TempDir()).
func New(log *slog.Logger, workDir string) drivers.Driver {
	if log == nil {
		log = slog.Default()
	}
	if workDir == "" {
		workDir = os.TempDir()
	}
	return &Driver{log: log, workDir: workDir, program: Program, grace: 2 * time.Second}
}

const statusFailed = 1

// Run runs the action's playbook against t.Node.
func (d *Driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if out == nil {
		out = nopOutput{}
	}
	if t.Service == nil {
		return failure(fmt.Errorf("task %s (%s) is no service action", t.TaskID, t.TaskName), false)
	}
	if t.Node == nil {
		return failure(fmt.Errorf("task %s has no node", t.TaskID), false)
	}
	what := t.Service.Name + " " + t.TaskName
	fields := t.Service.Action.Fields
	playbook := fields["playbook"]
	if strings.TrimSpace(playbook) == "" {
		return failure(fmt.Errorf("%s: field playbook is empty: give the playbook's YAML text", what), false)
	}
	tags, err := parseTags(fields["tags"])
	if err != nil {
		return failure(fmt.Errorf("%s: %w", what, err), false)
	}
	program, err := exec.LookPath(d.program)
	if err != nil {
		return failure(fmt.Errorf("%s is not installed on this agent host: apt-get install ansible", d.program), false)
	}
	tg, err := drivers.TargetOf(t, t.Node)
	if err != nil {
		return failure(err, false)
	}
	if len(tg.HostKeys) == 0 {
		return failure(fmt.Errorf("node %s has no pinned host key: BOOTSTRAP pins it at first contact and must run before ansible", nodeName(t.Node)), false)
	}
	log := d.log.With("task", t.TaskID, "service", t.Service.Name, "action", t.TaskName, "target", tg.String())

	out.Status(fmt.Sprintf("%s on %s: checking ssh", what, nodeName(t.Node)), 0)
	if err := preflight(ctx, tg, log); err != nil {
		return failure(fmt.Errorf("%s: %w", what, err), !remote.Terminal(err))
	}

	dir, err := os.MkdirTemp(d.workDir, "coopr-ansible-")
	if err != nil {
		return failure(fmt.Errorf("%s: private directory: %w", what, err), true)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("ansible: could not remove the run's directory", "dir", dir, "err", err)
		}
	}()
	run, err := prepare(dir, t, tg)
	if err != nil {
		return failure(fmt.Errorf("%s: %w", what, err), true)
	}
	args := []string{"-i", run.inventory, "-e", "@" + run.vars}
	if tags != "" {
		args = append(args, "--tags="+tags)
	}
	args = append(args, run.playbook)

	out.Status(fmt.Sprintf("%s on %s: ansible-playbook", what, nodeName(t.Node)), 10)
	rep := newReport(run.host, dir)
	res, err := d.play(ctx, program, args, run, dir, rep, out, log)
	if err != nil {
		return failure(fmt.Errorf("%s: %w", what, err), true)
	}
	r := rep.result(what, res)
	if r.Status == 0 {
		out.Status(what+" done", 100)
		log.Info("playbook succeeded", "recap", rep.recapText())
	} else {
		log.Info("playbook failed", "exit", res.code, "signal", res.signal, "cancelled", res.cancelled, "message", r.Message)
	}
	return r
}

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// parseTags reads the tags field into ansible's comma list.
func parseTags(field string) (string, error) {
	tags := strings.FieldsFunc(field, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	for _, tag := range tags {
		if !tagRE.MatchString(tag) || strings.HasPrefix(tag, "-") {
			return "", fmt.Errorf("field tags: %q is not a tag: list tags of letters, digits and _.:- separated by commas or spaces", tag)
		}
	}
	return strings.Join(tags, ","), nil
}

// preflight connects to the node once, with the pinned keys: a host key
// mismatch comes back as remote's error naming both fingerprints, and an
// unreachable node fails before ansible spends a second starting.
func preflight(ctx context.Context, tg remote.Target, log *slog.Logger) error {
	p := remote.NewPool(remote.Options{Logger: log, MaxSessions: 1})
	defer p.Close()
	_, err := p.Dial(ctx, tg)
	return err
}

// prepared is what a run's private directory holds.
type prepared struct {
	host      string // the node's inventory name
	playbook  string
	inventory string
	vars      string
	env       []string
	// masters is where OpenSSH's control masters put their sockets; ""
	// when the path would be too long for a socket and tasks connect
	// one by one.
	masters string
}

//go:embed coopr_output.py
var outputCallback []byte

var groupChars = regexp.MustCompile(`[^A-Za-z0-9_]`)

// prepare writes the run's files into dir and returns the command's
// environment.
func prepare(dir string, t *drivers.Task, tg remote.Target) (prepared, error) {
	p := prepared{
		host:      nodeName(t.Node),
		playbook:  filepath.Join(dir, "playbook.yml"),
		inventory: filepath.Join(dir, "inventory.yml"),
		vars:      filepath.Join(dir, "vars.json"),
	}
	keyFile := filepath.Join(dir, "id_node")
	knownHosts := filepath.Join(dir, "known_hosts")
	home := filepath.Join(dir, "home")
	tmp := filepath.Join(dir, "tmp")
	plugins := filepath.Join(dir, "callback_plugins")
	cfg := filepath.Join(dir, "ansible.cfg")
	p.masters = filepath.Join(dir, "cp")
	for _, sub := range []string{home, tmp, plugins, p.masters} {
		if err := os.Mkdir(sub, 0o700); err != nil {
			return p, err
		}
	}

	keyPEM := privateKeyOf(t)
	if !strings.HasSuffix(keyPEM, "\n") {
		// OpenSSH refuses a key file whose last line has no newline.
		keyPEM += "\n"
	}
	pins, err := remote.ParseHostKeys(tg.HostKeys)
	if err != nil {
		return p, err
	}
	var kh strings.Builder
	for _, k := range pins {
		kh.WriteString(knownhosts.Line([]string{knownhosts.Normalize(tg.Addr())}, k) + "\n")
	}

	hostVars := map[string]any{
		"ansible_host":                 tg.Host,
		"ansible_port":                 tg.Port,
		"ansible_user":                 tg.User,
		"ansible_ssh_private_key_file": keyFile,
		"ansible_become":               tg.User != "root",
	}
	groups := map[string]any{}
	for _, svc := range append([]string{t.Service.Name}, t.Node.Services...) {
		g := groupChars.ReplaceAllString(svc, "_")
		if g == "" || g == "all" || g == "ungrouped" {
			continue
		}
		if g[0] >= '0' && g[0] <= '9' {
			g = "_" + g
		}
		groups[g] = map[string]any{"hosts": map[string]any{p.host: map[string]any{}}}
	}
	// YAML is a superset of JSON: JSON quoting keeps every value a string.
	inventory, err := json.MarshalIndent(map[string]any{"all": map[string]any{
		"hosts":    map[string]any{p.host: hostVars},
		"children": groups,
	}}, "", "  ")
	if err != nil {
		return p, fmt.Errorf("inventory: %w", err)
	}

	vars := maps.Clone(t.Cluster.Config)
	if vars == nil {
		vars = map[string]any{}
	}
	maps.Copy(vars, map[string]any{
		"coopr_service":    t.Service.Name,
		"coopr_action":     t.TaskName,
		"coopr_node_id":    t.Node.ID,
		"coopr_hostname":   t.Node.Hostname,
		"coopr_cluster_id": t.ClusterID,
		"coopr_nodenum":    t.Node.NodeNum,
	})
	varsJSON, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return p, fmt.Errorf("extra vars from the cluster config: %w", err)
	}

	for _, f := range []struct {
		path string
		data []byte
	}{
		{p.playbook, []byte(t.Service.Action.Fields["playbook"])},
		{p.inventory, inventory},
		{p.vars, varsJSON},
		{keyFile, []byte(keyPEM)},
		{knownHosts, []byte(kh.String())},
		// Its own config file, so that no ansible.cfg of the agent host
		// or of the working directory changes what runs.
		{cfg, []byte("[defaults]\n")},
		{filepath.Join(plugins, "coopr_output.py"), outputCallback},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return p, err
		}
	}

	// One connection for all tasks, not one per task: a master's socket
	// is its path plus ansible's 10-character hash plus the 17 characters
	// OpenSSH adds while binding, within the 107 a socket path may have.
	sharing := "-o ControlMaster=auto -o ControlPersist=60s"
	if len(p.masters)+1+10+17 > 107 {
		sharing, p.masters = "-o ControlMaster=no", ""
	}
	// Ansible splits these like a POSIX shell; the paths are quoted.
	sshArgs := strings.Join([]string{
		sharing,
		"-o IdentitiesOnly=yes",
		"-o BatchMode=yes",
		"-o StrictHostKeyChecking=yes",
		"-o UserKnownHostsFile=" + remote.Quote(knownHosts),
		"-o GlobalKnownHostsFile=/dev/null",
		"-o ServerAliveInterval=15",
		"-o ServerAliveCountMax=4",
	}, " ")
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	p.env = []string{
		"PATH=" + path,
		"HOME=" + home,
		"TMPDIR=" + tmp,
		// ansible refuses to run without a UTF-8 locale.
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"PYTHONUNBUFFERED=1",
		"ANSIBLE_CONFIG=" + cfg,
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_FORCE_COLOR=0",
		"ANSIBLE_NOCOWS=1",
		"ANSIBLE_RETRY_FILES_ENABLED=0",
		"ANSIBLE_HOST_KEY_CHECKING=True",
		"ANSIBLE_STDOUT_CALLBACK=default",
		"ANSIBLE_CALLBACK_PLUGINS=" + plugins,
		"ANSIBLE_CALLBACKS_ENABLED=coopr_output",
		"ANSIBLE_PIPELINING=True",
		"ANSIBLE_PYTHON_INTERPRETER=auto_silent",
		"ANSIBLE_LOCAL_TEMP=" + tmp,
		"ANSIBLE_SSH_ARGS=" + sshArgs,
		"ANSIBLE_SSH_CONTROL_PATH_DIR=" + p.masters,
		"ANSIBLE_TIMEOUT=30",
	}
	return p, nil
}

// privateKeyOf is the key drivers.TargetOf logs in with: the vm driver's,
// else the cluster's.
func privateKeyOf(t *drivers.Task) string {
	if k, _ := t.Secrets["vm"]["privateKey"].(string); strings.TrimSpace(k) != "" {
		return k
	}
	k, _ := t.Secrets["ssh"]["privateKey"].(string)
	return k
}

func nodeName(n *drivers.Node) string {
	if n.Hostname != "" {
		return n.Hostname
	}
	return n.ID
}

// outcome is how ansible-playbook ended.
type outcome struct {
	code      int
	signal    string
	cancelled error // ctx's cause when the driver stopped it
}

// result turns an outcome into the task's result by the mapping of the
// package doc.
func (r *report) result(what string, o outcome) drivers.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	fail := func(retryable bool, format string, args ...any) drivers.Result {
		return result(fmt.Sprintf("ansible: %s: ", what)+r.clean(fmt.Sprintf(format, args...)), retryable)
	}
	switch {
	case o.cancelled != nil:
		return fail(true, "stopped: %v", o.cancelled)
	case o.signal != "":
		return fail(true, "ansible-playbook killed by signal %s", o.signal)
	case o.code == 0:
		if r.recap == nil && r.noHosts {
			return fail(false, "the playbook's plays match no host: name the node's groups or write hosts: all")
		}
		return drivers.Result{Status: 0, Message: fmt.Sprintf("ansible: %s: %s", what, r.recapLocked())}
	case o.code == 2 || o.code == 8:
		if r.failedTask != "" {
			return fail(true, "task %q failed: %s", r.failedTask, r.failMsg)
		}
		return fail(true, "a task failed (exit %d)%s", o.code, r.errorSuffix())
	case o.code == 4 && (r.unreachable != "" || r.recap["unreachable"] > 0):
		// The preflight reached the node moments ago; it went away since.
		res := fail(true, "node unreachable: %s", r.unreachable)
		if r.hostKeyRefused {
			res = fail(false, "the node's host key does not match its pin: ssh: Host key verification failed")
		}
		res.Unreachable = true
		return res
	case o.code == 4:
		return fail(false, "the playbook cannot be parsed%s", r.errorSuffix())
	}
	return fail(false, "ansible-playbook exited with %d%s", o.code, r.errorSuffix())
}

func failure(err error, retryable bool) drivers.Result {
	r := result("ansible: "+err.Error(), retryable)
	r.Unreachable = remote.Unreachable(err)
	return r
}

func result(msg string, retryable bool) drivers.Result {
	r := drivers.Result{Status: statusFailed, Message: msg}
	if !retryable {
		r.Retryable = &retryable
	}
	return r
}

// exitOf reads a finished command's exit status or signal.
func exitOf(err error) (outcome, error) {
	if err == nil {
		return outcome{}, nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return outcome{}, err
	}
	if st, ok := ee.Sys().(interface {
		Signaled() bool
		Signal() os.Signal
	}); ok && st.Signaled() {
		return outcome{code: -1, signal: st.Signal().String()}, nil
	}
	return outcome{code: ee.ExitCode()}, nil
}

type nopOutput struct{}

func (nopOutput) Stdout(string)          {}
func (nopOutput) Stderr(string)          {}
func (nopOutput) Status(string, float64) {}
