// Package isolation runs each task in a process of its own instead of in
// the agent, so that a task's scripts, their children and a driver that
// misbehaves can be limited and killed as a whole without touching the
// agent or the other tasks.
//
// The task process is this same binary re-executed with a hidden
// subcommand that calls RunTask: it reads the task payload on stdin (it
// holds secrets, which must never be in argv or the environment, where
// other users and child processes can read them), runs it through the
// same driver registry, and answers with newline-delimited JSON on stdout:
//
//	{"stream":"stdout","line":"…"}
//	{"stream":"status","line":"…","percent":40}
//	{"result":{…drivers.Result…}}
//
// Two ways to run it:
//
//   - systemd-run: a transient service unit coopr-task-<task>-<attempt>.service
//     started over D-Bus, with the unit's CPU and memory limits, stdin,
//     stdout and stderr handed over as file descriptors, and
//     KillMode=control-group so that stopping it kills everything the task
//     started, even processes that left its process group.
//   - process-group: a child in a process group of its own, sent SIGTERM
//     and then SIGKILL as a group when the task's context ends. A process
//     that calls setsid escapes it; only the systemd mode catches those.
//
// systemd-run falls back to process-group when the host is not run by
// systemd or its D-Bus does not answer.
package isolation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cooprhq/coopr/drivers"
)

// Mode is how tasks are isolated.
type Mode string

// Modes.
const (
	ModeNone         Mode = "none"          // tasks run in the agent process
	ModeProcessGroup Mode = "process-group" // a child process group per task
	ModeSystemdRun   Mode = "systemd-run"   // a transient systemd unit per task
)

// ParseMode reads a mode by name; "" is none.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeNone, nil
	case ModeNone, ModeProcessGroup, ModeSystemdRun:
		return m, nil
	}
	return "", fmt.Errorf("isolation %q: want none, process-group or systemd-run", s)
}

// ParseCPUQuota reads a CPU quota as systemd's CPUQuota= writes it, a
// percentage of one CPU ("150%"); "" is no limit.
func ParseCPUQuota(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v <= 0 {
		return 0, fmt.Errorf("CPU quota %q: want a positive percentage of one CPU, such as 150%%", s)
	}
	return v, nil
}

// ParseBytes reads a size as systemd's MemoryMax= writes it: bytes, or
// with K, M, G or T (powers of 1024); "" is no limit.
func ParseBytes(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	num, mult := strings.TrimSpace(s), uint64(1)
	for i, suffix := range []string{"K", "M", "G", "T"} {
		if n, ok := strings.CutSuffix(num, suffix); ok {
			num, mult = n, 1<<(10*(i+1))
			break
		}
	}
	v, err := strconv.ParseUint(num, 10, 64)
	if err != nil || v == 0 || v > (1<<64-1)/mult {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, or with K, M, G or T, such as 2G", s)
	}
	return v * mult, nil
}

// Config says how to isolate tasks.
type Config struct {
	Mode Mode
	// Command is the task process's argv: this binary and the hidden
	// subcommand whose body is RunTask. Only non-secret settings belong
	// here: other users can read any process's argv.
	Command []string
	// Dir is the task process's working directory ("" keeps the agent's).
	Dir string
	// KillGrace is how long a stopped task may take to exit after SIGTERM
	// before SIGKILL. Default 10 s.
	KillGrace time.Duration
	// CPUQuota (percent of one CPU: 200 is two CPUs) and MemoryMax (bytes)
	// limit each task unit; 0 is no limit. systemd-run only: a process
	// group has no such limits.
	CPUQuota  float64
	MemoryMax uint64
	Log       *slog.Logger
}

// Runner runs tasks in isolated processes; as a drivers.Driver it stands
// in for every driver of a registry (Wrap).
type Runner struct {
	cfg  Config
	mode Mode
	sd   systemd // nil unless the mode is systemd-run

	systemdDir string // where a systemd-booted host has its runtime directory
}

// New returns a runner for cfg. For systemd-run it connects to systemd
// over the system bus, and falls back to process groups, with a warning,
// when it cannot: Mode tells which mode is in effect.
func New(ctx context.Context, cfg Config) (*Runner, error) {
	return newRunner(ctx, cfg, "/run/systemd/system", connectSystemd)
}

func newRunner(ctx context.Context, cfg Config, systemdDir string, connect func(context.Context) (systemd, error)) (*Runner, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = 10 * time.Second
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeNone
	}
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if cfg.Mode != ModeNone && len(cfg.Command) == 0 {
		return nil, errors.New("isolation: no command to run tasks with")
	}
	r := &Runner{cfg: cfg, mode: cfg.Mode, systemdDir: systemdDir}
	if cfg.Mode == ModeSystemdRun {
		sd, err := r.detect(ctx, connect)
		if err != nil {
			cfg.Log.Warn("systemd-run isolation unavailable: tasks run in process groups instead", "reason", err)
			r.mode = ModeProcessGroup
		} else {
			r.sd = sd
		}
	}
	if r.mode != ModeSystemdRun && (cfg.CPUQuota > 0 || cfg.MemoryMax > 0) && cfg.Mode != ModeNone {
		cfg.Log.Warn("task CPU and memory limits apply only with systemd-run isolation", "mode", r.mode)
	}
	return r, nil
}

// detect connects to systemd if this host runs it.
func (r *Runner) detect(ctx context.Context, connect func(context.Context) (systemd, error)) (systemd, error) {
	// sd_booted(3)'s test: systemd creates this directory early at boot.
	if fi, err := os.Stat(r.systemdDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("this host does not run systemd (no %s)", r.systemdDir)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sd, err := connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("systemd over the system D-Bus: %w", err)
	}
	if os.Geteuid() != 0 {
		// Reading works for anyone; starting units needs root or polkit.
		r.cfg.Log.Warn("starting a task unit needs root or a polkit rule granting org.freedesktop.systemd1.manage-units to this user")
	}
	return sd, nil
}

// Mode is the mode in effect: systemd-run may have fallen back.
func (r *Runner) Mode() Mode { return r.mode }

// Close lets go of the D-Bus connection.
func (r *Runner) Close() error {
	if r.sd != nil {
		r.sd.Close()
	}
	return nil
}

// Wrap returns a registry with reg's drivers whose tasks run in isolated
// processes: the same descriptors (what the agent registers and the server
// routes by), every one handled by r. With no isolation it is reg itself.
func (r *Runner) Wrap(reg *drivers.Registry) *drivers.Registry {
	if r.mode == ModeNone {
		return reg
	}
	out := drivers.NewRegistry()
	for _, d := range reg.Descriptors() {
		out.Register(d, r)
	}
	return out
}

// Run runs t in a task process and relays its output; it returns when the
// process and everything it started are gone.
func (r *Runner) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	// The task process cannot reach the agent's fetcher: fetch the
	// payload's resources (cached by digest) before it starts.
	if t.Fetch != nil && len(t.Resources) > 0 {
		local := make(map[string]string, len(t.Resources))
		for _, res := range t.Resources {
			p, err := t.Fetch(ctx, res)
			if err != nil {
				no := false
				return drivers.Result{Status: 1, Message: err.Error(), Retryable: &no}
			}
			local[res.Digest] = p
		}
		t.LocalResources = local
	}
	payload, err := json.Marshal(t)
	if err != nil {
		no := false
		return drivers.Result{Status: 1, Message: fmt.Sprintf("encode the task payload: %v", err), Retryable: &no}
	}
	log := r.cfg.Log.With("task", t.TaskID, "attempt", t.Attempt)
	if r.mode == ModeSystemdRun {
		return r.runUnit(ctx, t, payload, out, log)
	}
	return r.runGroup(ctx, payload, out, log)
}

// childEnv is the agent's environment minus what a task must not see or
// would misread: coopr's own settings (the agent token among them) and
// the variables by which systemd talks to the agent, which would let a
// task pose as the agent or confuse its logging.
func childEnv(env []string) []string {
	drop := []string{"COOPR_", "NOTIFY_SOCKET=", "WATCHDOG_USEC=", "WATCHDOG_PID=", "LISTEN_FDS=", "LISTEN_PID=",
		"LISTEN_FDNAMES=", "JOURNAL_STREAM=", "INVOCATION_ID=", "SYSTEMD_EXEC_PID=", "MANAGERPID=", "MAINPID="}
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		for _, p := range drop {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// ended is the result of a task process that gave none.
func ended(ctx context.Context, how error, stderrTail string) drivers.Result {
	if cause := context.Cause(ctx); cause != nil {
		return drivers.Result{Status: 1, Message: "task process stopped: " + cause.Error()}
	}
	msg := "task process ended without a result"
	if how != nil {
		msg += " (" + how.Error() + ")"
	}
	if stderrTail != "" {
		msg += ": " + stderrTail
	}
	return drivers.Result{Status: 1, Message: msg}
}
