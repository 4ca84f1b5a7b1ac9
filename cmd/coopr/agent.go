package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/agent/isolation"
	"github.com/cooprhq/coopr/agent/sdnotify"
	"github.com/cooprhq/coopr/server"
)

// agentConfig is `coopr agent`'s configuration: the --config YAML file,
// the environment over it, flags over both.
type agentConfig struct {
	Server    string        `yaml:"server"`     // COOPR_SERVER
	Token     string        `yaml:"token"`      // COOPR_TOKEN
	Capacity  int           `yaml:"capacity"`   // COOPR_AGENT_CAPACITY: task slots
	Name      string        `yaml:"name"`       // COOPR_AGENT_NAME, default the host name
	WorkDir   string        `yaml:"work_dir"`   // COOPR_WORK_DIR, default /var/lib/coopr/work
	Grace     time.Duration `yaml:"grace"`      // COOPR_AGENT_GRACE, default 30s
	Isolation string        `yaml:"isolation"`  // COOPR_ISOLATION: none, process-group, systemd-run
	KillGrace time.Duration `yaml:"kill_grace"` // COOPR_KILL_GRACE, default 10s
	// Limits of each task's unit with systemd-run isolation.
	TaskCPUQuota  string `yaml:"task_cpu_quota"`  // COOPR_TASK_CPU_QUOTA, e.g. 150%
	TaskMemoryMax string `yaml:"task_memory_max"` // COOPR_TASK_MEMORY_MAX, e.g. 2G
	// The local vm driver's state directory where the provider names none
	// (COOPR_LOCAL_STATE_DIR; default its own, /var/lib/coopr/local/state).
	LocalStateDir string `yaml:"local_state_dir"`
	// The libvirt vm driver's state directory (COOPR_LIBVIRT_STATE_DIR;
	// default /var/lib/coopr/libvirt/state): it names this installation's
	// domains and networks, so agents of one installation share it.
	LibvirtStateDir string `yaml:"libvirt_state_dir"`
	// How long CHECK tries again a node that does not answer SSH before
	// it is unreachable (COOPR_CHECK_RETRY; default 8s,
	// docs/operations.md#checking-a-cluster).
	CheckRetry time.Duration `yaml:"check_retry"`
}

func agentDefaults() agentConfig {
	return agentConfig{WorkDir: "/var/lib/coopr/work", Grace: 30 * time.Second, Isolation: string(isolation.ModeNone),
		KillGrace: 10 * time.Second}
}

// loadAgentConfig reads file (if not "") over the defaults, then the
// environment over that. Unknown keys in the file are an error naming
// them, so that a typo does not silently leave a default in place.
func loadAgentConfig(file string, getenv func(string) string) (agentConfig, error) {
	c := agentDefaults()
	if err := server.DecodeFile(file, &c); err != nil {
		return c, err
	}
	for _, s := range []struct {
		dst *string
		key string
	}{{&c.Server, "COOPR_SERVER"}, {&c.Token, "COOPR_TOKEN"}, {&c.Name, "COOPR_AGENT_NAME"}, {&c.WorkDir, "COOPR_WORK_DIR"},
		{&c.Isolation, "COOPR_ISOLATION"}, {&c.TaskCPUQuota, "COOPR_TASK_CPU_QUOTA"}, {&c.TaskMemoryMax, "COOPR_TASK_MEMORY_MAX"},
		{&c.LocalStateDir, "COOPR_LOCAL_STATE_DIR"}, {&c.LibvirtStateDir, "COOPR_LIBVIRT_STATE_DIR"}} {
		if v := getenv(s.key); v != "" {
			*s.dst = v
		}
	}
	if v := getenv("COOPR_AGENT_CAPACITY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("COOPR_AGENT_CAPACITY: %w (want a number of task slots)", err)
		}
		c.Capacity = n
	}
	for _, d := range []struct {
		dst *time.Duration
		key string
	}{{&c.Grace, "COOPR_AGENT_GRACE"}, {&c.KillGrace, "COOPR_KILL_GRACE"}, {&c.CheckRetry, "COOPR_CHECK_RETRY"}} {
		if v := getenv(d.key); v != "" {
			v, err := time.ParseDuration(v)
			if err != nil {
				return c, fmt.Errorf("%s: %w (want a duration such as 30s)", d.key, err)
			}
			*d.dst = v
		}
	}
	return c, nil
}

// check reports the first missing or bad setting, naming how to set it.
func (c agentConfig) check() error {
	switch {
	case c.Server == "":
		return errors.New("no server: set COOPR_SERVER, server in the config file, or --server")
	case c.Token == "":
		return errors.New("no agent token: set COOPR_TOKEN (in /etc/coopr/agent.env under systemd), token in the config file, or --token")
	case c.Capacity < 1:
		return fmt.Errorf("capacity %d: set at least 1 task slot with COOPR_AGENT_CAPACITY, capacity in the config file, or --capacity", c.Capacity)
	case c.WorkDir == "":
		return errors.New("no work directory: set COOPR_WORK_DIR, work_dir in the config file, or --work-dir")
	case c.Grace <= 0 || c.KillGrace <= 0:
		return fmt.Errorf("grace %s and kill grace %s: both must be positive", c.Grace, c.KillGrace)
	case c.CheckRetry < 0 || c.CheckRetry > time.Minute:
		// A CHECK task has two minutes; retries past one would end in
		// its timeout and call a dead node "not checked" instead.
		return fmt.Errorf("check retry %s: must be from 0 (the default, 8s) to 1m (COOPR_CHECK_RETRY, check_retry or --check-retry)", c.CheckRetry)
	case c.LocalStateDir != "" && !filepath.IsAbs(c.LocalStateDir):
		return fmt.Errorf("local state dir %q: give an absolute path (COOPR_LOCAL_STATE_DIR, local_state_dir or --local-state-dir)", c.LocalStateDir)
	case c.LibvirtStateDir != "" && !filepath.IsAbs(c.LibvirtStateDir):
		return fmt.Errorf("libvirt state dir %q: give an absolute path (COOPR_LIBVIRT_STATE_DIR, libvirt_state_dir or --libvirt-state-dir)", c.LibvirtStateDir)
	}
	if _, err := url.ParseRequestURI(c.Server); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	_, err := c.isolation(nil)
	return err
}

// isolation is how tasks are isolated; cmd is the task process's argv.
func (c agentConfig) isolation(cmd []string) (isolation.Config, error) {
	mode, err := isolation.ParseMode(c.Isolation)
	if err != nil {
		return isolation.Config{}, err
	}
	cpu, err := isolation.ParseCPUQuota(c.TaskCPUQuota)
	if err != nil {
		return isolation.Config{}, fmt.Errorf("task_cpu_quota: %w", err)
	}
	mem, err := isolation.ParseBytes(c.TaskMemoryMax)
	if err != nil {
		return isolation.Config{}, fmt.Errorf("task_memory_max: %w", err)
	}
	return isolation.Config{Mode: mode, Command: cmd, Dir: c.WorkDir, KillGrace: c.KillGrace, CPUQuota: cpu, MemoryMax: mem}, nil
}

// taskCommand is the argv of an isolated task process: only what is not
// secret, since anyone on the host may read it; the task comes on stdin.
func taskCommand(exe, workDir string, states stateDirs) []string {
	argv := []string{exe, "agent", "run-task", "--work-dir", workDir}
	if states.local != "" {
		argv = append(argv, "--local-state-dir", states.local)
	}
	if states.libvirt != "" {
		argv = append(argv, "--libvirt-state-dir", states.libvirt)
	}
	if states.checkRetry > 0 {
		argv = append(argv, "--check-retry", states.checkRetry.String())
	}
	return argv
}

// agentFlags are `coopr agent`'s flags; each, when given, wins over the
// environment and the file.
type agentFlags struct {
	file, server, token, name, workDir, isolation, cpuQuota, memoryMax, localStateDir, libvirtStateDir string
	capacity                                                                                           int
	grace, killGrace, checkRetry                                                                       time.Duration
}

func (f *agentFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.file, "config", "", "YAML configuration file")
	fs.StringVar(&f.server, "server", "", "the coopr server's URL")
	fs.StringVar(&f.token, "token", "", "agent token (prefer COOPR_TOKEN: other users can read a process's arguments)")
	fs.IntVar(&f.capacity, "capacity", 0, "task slots: tasks run at once at most")
	fs.StringVar(&f.name, "name", "", "agent id, stable across restarts (default the host name)")
	fs.StringVar(&f.workDir, "work-dir", "", "directory for drivers' and tasks' files (default /var/lib/coopr/work)")
	fs.DurationVar(&f.grace, "grace", 0, "how long running tasks may go on after a stop before they are handed back (default 30s)")
	fs.StringVar(&f.isolation, "isolation", "", "how tasks run: none (in the agent), process-group, or systemd-run (default none)")
	fs.DurationVar(&f.killGrace, "kill-grace", 0, "how long an isolated task may take to exit after SIGTERM before SIGKILL (default 10s)")
	fs.StringVar(&f.cpuQuota, "task-cpu-quota", "", "CPU quota of each task unit with systemd-run, e.g. 150%")
	fs.StringVar(&f.memoryMax, "task-memory-max", "", "memory limit of each task unit with systemd-run, e.g. 2G")
	fs.StringVar(&f.localStateDir, "local-state-dir", "", "the local vm driver's state directory where the provider names none (default /var/lib/coopr/local/state)")
	fs.StringVar(&f.libvirtStateDir, "libvirt-state-dir", "", "the libvirt vm driver's state directory, naming this installation's domains (default /var/lib/coopr/libvirt/state)")
	fs.DurationVar(&f.checkRetry, "check-retry", 0, "how long a cluster check tries again a node that does not answer SSH before reporting it unreachable (default 8s)")
}

// resolve is the configuration from the file, the environment and the
// flags given on cmd's command line.
func (f *agentFlags) resolve(cmd *cobra.Command, getenv func(string) string) (agentConfig, error) {
	c, err := loadAgentConfig(f.file, getenv)
	if err != nil {
		return c, err
	}
	changed := cmd.Flags().Changed
	for _, s := range []struct {
		flag string
		dst  *string
		v    string
	}{{"server", &c.Server, f.server}, {"token", &c.Token, f.token}, {"name", &c.Name, f.name}, {"work-dir", &c.WorkDir, f.workDir},
		{"isolation", &c.Isolation, f.isolation}, {"task-cpu-quota", &c.TaskCPUQuota, f.cpuQuota}, {"task-memory-max", &c.TaskMemoryMax, f.memoryMax},
		{"local-state-dir", &c.LocalStateDir, f.localStateDir}, {"libvirt-state-dir", &c.LibvirtStateDir, f.libvirtStateDir}} {
		if changed(s.flag) {
			*s.dst = s.v
		}
	}
	if changed("capacity") {
		c.Capacity = f.capacity
	}
	if changed("grace") {
		c.Grace = f.grace
	}
	if changed("kill-grace") {
		c.KillGrace = f.killGrace
	}
	if changed("check-retry") {
		c.CheckRetry = f.checkRetry
	}
	return c, c.check()
}

func newAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run tasks for a coopr server",
		Long: `agent registers with the server, claims tasks for the task slots the server
assigns it, and runs them with its drivers; under systemd it reports readiness,
its busy slots and watchdog keep-alives (Type=notify, WatchdogSec).

Settings come from flags, then the environment (COOPR_SERVER, COOPR_TOKEN,
COOPR_AGENT_CAPACITY, COOPR_AGENT_NAME, COOPR_WORK_DIR, COOPR_AGENT_GRACE,
COOPR_ISOLATION, COOPR_KILL_GRACE, COOPR_TASK_CPU_QUOTA, COOPR_TASK_MEMORY_MAX,
COOPR_LOCAL_STATE_DIR), then the --config YAML file (server, token, capacity,
name, work_dir, grace, isolation, kill_grace, task_cpu_quota, task_memory_max,
local_state_dir).

With --isolation=process-group each task runs in a child process group, killed
as a whole when the task ends; with systemd-run in a transient unit
coopr-task-<task>-<attempt>.service with the task_* limits (root, or a polkit
rule, is needed to start units); where systemd is not running, systemd-run
falls back to process groups.

SIGINT or SIGTERM stops claiming, gives running tasks the grace period and
hands back the rest.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.resolve(cmd, os.Getenv)
			if err != nil {
				return err
			}
			log := slog.Default()
			if cmd.Flags().Changed("token") {
				log.Warn("--token shows the agent token to every user of this host: prefer COOPR_TOKEN")
			}
			return runAgent(cmd.Context(), cfg, log)
		},
	}
	f.register(cmd)
	cmd.AddCommand(newRunTaskCmd())
	cmd.AddCommand(newAgentListCmd())
	return cmd
}

// runAgent runs the agent until ctx ends.
func runAgent(ctx context.Context, cfg agentConfig, log *slog.Logger) error {
	// An agent is I/O-bound and holds many small per-task buffers: trading
	// a little CPU for a heap at most 1.5× the live data keeps a 200-slot
	// agent under 64 MB (BenchmarkAgentRSS). GOGC in the environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	// In-process drivers start commands with this process's environment:
	// the token must not be in it.
	if err := os.Unsetenv("COOPR_TOKEN"); err != nil {
		return fmt.Errorf("clear COOPR_TOKEN: %w", err)
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o700); err != nil {
		return fmt.Errorf("work directory: %w", err)
	}
	states := stateDirs{local: cfg.LocalStateDir, libvirt: cfg.LibvirtStateDir, checkRetry: cfg.CheckRetry}
	reg, closeDrivers, err := driverRegistry(cfg.WorkDir, states, log)
	if err != nil {
		return fmt.Errorf("drivers: %w", err)
	}
	defer closeDrivers()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary to run isolated tasks with: %w", err)
	}
	icfg, err := cfg.isolation(taskCommand(exe, cfg.WorkDir, states))
	if err != nil {
		return err
	}
	icfg.Log = log
	runner, err := isolation.New(ctx, icfg)
	if err != nil {
		return err
	}
	defer runner.Close()

	n := sdnotify.New(log)
	// The watchdog runs through the graceful stop too, which may take the
	// whole grace period; it ends when Run has returned.
	wctx, endWatchdog := context.WithCancel(context.WithoutCancel(ctx))
	defer endWatchdog()
	go func() {
		if err := n.Watchdog(wctx); err != nil {
			log.Warn("systemd watchdog off", "err", err)
		}
	}()
	server := cfg.Server
	if u, err := url.Parse(cfg.Server); err == nil {
		server = u.Redacted()
	}
	n.Notify("STATUS=registering with " + server)
	a, err := agent.New(agent.Config{Server: cfg.Server, Token: cfg.Token, ID: cfg.Name, Capacity: cfg.Capacity,
		Version: version, Grace: cfg.Grace, Notify: n.Notify, Log: log, ResourceDir: filepath.Join(cfg.WorkDir, "resources")},
		runner.Wrap(reg))
	if err != nil {
		return err
	}
	log.Info("coopr agent starting", "server", server, "capacity", cfg.Capacity, "isolation", runner.Mode(),
		"drivers", len(reg.Descriptors()), "work_dir", cfg.WorkDir)
	return a.Run(ctx)
}

// newRunTaskCmd is the isolated task process: `coopr agent run-task`,
// started by the agent with the task's payload on stdin.
func newRunTaskCmd() *cobra.Command {
	var workDir string
	var states stateDirs
	cmd := &cobra.Command{
		Use:    "run-task",
		Short:  "Run one task read on stdin (started by the agent for isolated tasks)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if out == io.Writer(os.Stdout) {
				f, err := isolation.TakeStdout()
				if err != nil {
					return err
				}
				defer f.Close()
				out = f
			}
			reg, closeDrivers, err := driverRegistry(workDir, states, slog.Default())
			if err != nil {
				return fmt.Errorf("drivers: %w", err)
			}
			defer closeDrivers()
			return isolation.RunTask(cmd.Context(), reg, cmd.InOrStdin(), out)
		},
	}
	cmd.Flags().StringVar(&workDir, "work-dir", agentDefaults().WorkDir, "directory for drivers' and tasks' files")
	cmd.Flags().StringVar(&states.local, "local-state-dir", "", "the local vm driver's state directory where the provider names none")
	cmd.Flags().StringVar(&states.libvirt, "libvirt-state-dir", "", "the libvirt vm driver's state directory")
	cmd.Flags().DurationVar(&states.checkRetry, "check-retry", 0, "how long CHECK tries again a node that does not answer SSH")
	return cmd
}
