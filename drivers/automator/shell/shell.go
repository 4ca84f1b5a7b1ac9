// Package shell is the automator "shell": it runs a service action's script
// on the node over SSH, as root (through sudo -n when the SSH user is not
// root).
//
// The action's fields are `script`, the script's text or the name of a
// `scripts` resource listed in the payload (whose content then runs), and
// optional `args`, shell words appended to its command line ($1, $2, …
// with sh quoting).
// Before the script runs, the cluster config of the payload (macro-expanded
// for this node) is written as JSON to
// /var/lib/coopr/tasks/<taskId>/config.json (mode 0600); the task directory
// is removed when the script ends, so a daemon a script starts must copy
// what it needs. The script sees a clean environment with PATH, HOME and:
//
//	COOPR_CONFIG      path of config.json
//	COOPR_SERVICE     the service's name
//	COOPR_ACTION      the action, upper case (INSTALL, START, ...)
//	COOPR_NODE_ID     the node's id
//	COOPR_HOSTNAME    the node's hostname
//	COOPR_CLUSTER_ID  the cluster's id
//	COOPR_NODENUM     the node's number
//	COOPR_TASK_DIR    the task's directory
//
// Writing the files, running the script and removing the directory take
// one SSH session, whose shell reads all of it, the files as words of
// its printf, from stdin.
// Its stdout and stderr stream to the task's output line by line. Exit 0 is
// success. Exit 100 (TerminalExitCode) is a failure a retry cannot fix
// (Retryable false): a script uses it for, say, an unsupported OS. Any other
// exit is a retryable failure whose message names the code and the last stderr
// line. Scripts must converge (docs/operations.md#idempotency): START of a
// running service and STOP of a stopped one succeed.
package shell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// TerminalExitCode is the exit status by which a script says a retry
// cannot help.
const TerminalExitCode = 100

// TaskDir is where a task's files live on the node while it runs.
const TaskDir = "/var/lib/coopr/tasks"

// Descriptor is the driver's identity: role automator, name shell.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{
		Role:    drivers.RoleAutomator,
		Name:    "shell",
		Version: "1",
		Params: []drivers.Param{
			{Name: "script", Type: "text", Required: true},
			{Name: "args", Type: "text"},
		},
	}
}

// Driver runs service actions' scripts.
type Driver struct {
	pool *remote.Pool
	log  *slog.Logger
}

// New returns the driver; pool is shared with the agent's other SSH drivers.
func New(pool *remote.Pool, log *slog.Logger) drivers.Driver {
	if log == nil {
		log = slog.Default()
	}
	return &Driver{pool: pool, log: log}
}

const statusFailed = 1

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// Run runs the action's script on t.Node.
func (d *Driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if t.Service == nil {
		return failure(fmt.Errorf("task %s (%s) is no service action", t.TaskID, t.TaskName), false)
	}
	if t.Node == nil {
		return failure(fmt.Errorf("task %s has no node", t.TaskID), false)
	}
	fields := t.Service.Action.Fields
	script := fields["script"]
	if strings.TrimSpace(script) == "" {
		return failure(fmt.Errorf("service %s action %s has no script", t.Service.Name, t.TaskName), false)
	}
	// A script naming a "scripts" resource of the payload runs that
	// resource's content (docs/task-protocol.md#plugin-resources).
	if r, ok := t.Resource("scripts", strings.TrimSpace(script)); ok && r.PluginType == "automatortypes" && r.Plugin == "shell" {
		path, err := t.FetchResource(ctx, r)
		if err != nil {
			return failure(err, false)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return failure(fmt.Errorf("resource scripts/%s@%d: %w", r.Name, r.Version, err), false)
		}
		script = string(b)
	}
	tg, err := drivers.TargetOf(t, t.Node)
	if err != nil {
		return failure(err, false)
	}
	config := t.Cluster.Config
	if config == nil {
		config = map[string]any{}
	}
	configJSON, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return failure(fmt.Errorf("cluster config: %w", err), false)
	}
	taskID := unsafeChars.ReplaceAllString(t.TaskID, "_")
	if taskID == "" || strings.Trim(taskID, ".") == "" {
		return failure(fmt.Errorf("task id %q cannot name a directory", t.TaskID), false)
	}
	dir := TaskDir + "/" + taskID
	log := d.log.With("task", t.TaskID, "service", t.Service.Name, "action", t.TaskName, "target", tg.String())

	env := map[string]string{
		"COOPR_CONFIG":     dir + "/config.json",
		"COOPR_SERVICE":    t.Service.Name,
		"COOPR_ACTION":     t.TaskName,
		"COOPR_NODE_ID":    t.Node.ID,
		"COOPR_HOSTNAME":   t.Node.Hostname,
		"COOPR_CLUSTER_ID": t.ClusterID,
		"COOPR_NODENUM":    strconv.Itoa(t.Node.NodeNum),
		"COOPR_TASK_DIR":   dir,
	}
	out.Status(fmt.Sprintf("%s %s on %s", t.Service.Name, t.TaskName, t.Node.Hostname), 0)
	// One session writes the task's files, runs the script and removes
	// the files: on a loaded host each session costs a fork of sshd, a
	// login shell and a round trip. The shell reads the whole of it, the
	// files as words of its printf, from stdin, so that neither the config
	// nor the script shows in a process list or sudo's log.
	err = d.pool.Run(ctx, tg, "", remote.RunOptions{
		Script: true,
		Sudo:   true,
		Stdin:  strings.NewReader(oneSession(configJSON, script, fields["args"])),
		Env:    env,
		Stdout: out.Stdout,
		Stderr: out.Stderr,
	})
	// The command removes the files when the script ends; when it was
	// stopped or killed, or the connection failed, a session of its own
	// does.
	var exit *remote.ExitError
	if err != nil && !remote.Unreachable(err) && (!errors.As(err, &exit) || exit.Signal != "") {
		d.cleanup(ctx, tg, dir, log)
	}
	var ee *remote.ExitError
	if t.TaskName == "STATUS" {
		if state, ok := statusOf(err); ok {
			out.Status(fmt.Sprintf("%s is %s on %s", t.Service.Name, state, t.Node.Hostname), 100)
			return drivers.Result{Status: 0, Message: fmt.Sprintf("%s is %s", t.Service.Name, state),
				Facts: map[string]any{"check": map[string]any{"job": t.JobID, "state": state}}}
		}
	}
	switch {
	case errors.As(err, &ee) && ee.Code == setupFailed && ee.Signal == "" && strings.Contains(ee.Stderr, setupFailedSays):
		return failure(fmt.Errorf("write %s: %s", dir, ee.Stderr), true)
	case err == nil:
		out.Status(fmt.Sprintf("%s %s done", t.Service.Name, t.TaskName), 100)
		log.Info("script succeeded")
		return drivers.Result{Status: 0, Message: fmt.Sprintf("%s %s succeeded", t.Service.Name, t.TaskName)}
	case errors.As(err, &ee):
		msg := fmt.Sprintf("%s %s: script exited with %d", t.Service.Name, t.TaskName, ee.Code)
		if ee.Signal != "" {
			msg = fmt.Sprintf("%s %s: script killed by signal %s", t.Service.Name, t.TaskName, ee.Signal)
		}
		if ee.Code == TerminalExitCode && ee.Signal == "" {
			msg += " (terminal)"
		}
		if ee.Stderr != "" {
			msg += ": " + ee.Stderr
		}
		log.Info("script failed", "exit", ee.Code, "signal", ee.Signal)
		return result(msg, ee.Code != TerminalExitCode || ee.Signal != "")
	default:
		return failure(fmt.Errorf("%s %s: %w", t.Service.Name, t.TaskName, err), !remote.Terminal(err))
	}
}

// setupFailed is the exit status of the one-session command when it could
// not write the task's files (the script never ran).
const setupFailed = 222

// setupFailedSays is on stderr when the files could not be written: a
// script may exit with setupFailed itself, and is then a script failure.
const setupFailedSays = "coopr: cannot write the task's files"

// oneSession is the shell script that writes config.json and script.sh
// into $COOPR_TASK_DIR (mode 0600 under umask 077), runs the script with
// args, removes the directory and exits with the script's status.
//
// Each program it executes costs milliseconds on a loaded host, more than
// the rest of a short task: the files are written by the shell's own
// printf (a builtin of every /bin/sh coopr meets: dash, bash, busybox
// ash), so only mkdir, the script's shell and rm run besides the script.
// The subshell that keeps umask 077 from the script is a fork, no program.
func oneSession(config []byte, script, args string) string {
	// printf adds the newline a file ends with, which neither JSON nor a
	// script minds.
	return fmt.Sprintf(`if ! (umask 077 && mkdir -p "$COOPR_TASK_DIR" &&
printf '%%s\n' %[1]s > "$COOPR_TASK_DIR/config.json" &&
printf '%%s\n' %[2]s > "$COOPR_TASK_DIR/script.sh"
); then
  echo "%[5]s in $COOPR_TASK_DIR" >&2
  rm -rf -- "$COOPR_TASK_DIR"
  exit %[3]d
fi
/bin/sh "$COOPR_TASK_DIR/script.sh" %[4]s </dev/null
rc=$?
rm -rf -- "$COOPR_TASK_DIR"
# A script killed by a signal is reported as killed, as if it had run alone.
if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then trap - $((rc - 128)) 2>/dev/null; kill -$((rc - 128)) $$; fi
exit $rc
`, remote.Quote(string(bytes.TrimSuffix(config, []byte("\n")))), remote.Quote(strings.TrimSuffix(script, "\n")), setupFailed, strings.TrimSpace(args), setupFailedSays)
}

// cleanup removes the task's files, even when ctx has ended.
func (d *Driver) cleanup(ctx context.Context, tg remote.Target, dir string, log *slog.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := d.pool.Run(cctx, tg, `rm -rf -- "$COOPR_TASK_DIR"`, remote.RunOptions{
		Sudo: true, Env: map[string]string{"COOPR_TASK_DIR": dir},
	}); err != nil {
		log.Warn("shell: could not remove the task directory", "dir", dir, "err", err)
	}
}

// Exit codes of a status script (docs/catalog.md#status-scripts): 0 runs,
// StoppedExitCode is installed and not running, MissingExitCode is not
// installed. Any other exit is the script failing.
const (
	StoppedExitCode = 3
	MissingExitCode = 4
)

// statusOf reads a status script's exit.
func statusOf(err error) (string, bool) {
	var ee *remote.ExitError
	switch {
	case err == nil:
		return "running", true
	case errors.As(err, &ee) && ee.Signal == "" && ee.Code == StoppedExitCode:
		return "stopped", true
	case errors.As(err, &ee) && ee.Signal == "" && ee.Code == MissingExitCode:
		return "missing", true
	}
	return "", false
}

func failure(err error, retryable bool) drivers.Result {
	r := result("shell: "+err.Error(), retryable)
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
