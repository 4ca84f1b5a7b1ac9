package isolation

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"

	"github.com/cooprhq/coopr/drivers"
)

// systemd is what task units need of systemd's D-Bus API.
type systemd interface {
	StartTransientUnitContext(ctx context.Context, name, mode string, props []sddbus.Property, ch chan<- string) (int, error)
	StopUnitContext(ctx context.Context, name, mode string, ch chan<- string) (int, error)
	ListUnitsByNamesContext(ctx context.Context, units []string) ([]sddbus.UnitStatus, error)
	Close()
}

// connectSystemd connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, by
// default /run/dbus/system_bus_socket) and checks that systemd answers on
// it, so that a host without it is found at start and not by every task.
func connectSystemd(ctx context.Context) (systemd, error) {
	// godbus closes a connection when the context it was made with ends:
	// this one must live as long as the runner.
	c, err := sddbus.NewSystemConnectionContext(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	if _, err := c.ListUnitsByNamesContext(ctx, []string{"coopr-agent.service"}); err != nil {
		c.Close()
		return nil, fmt.Errorf("systemd does not answer: %w", err)
	}
	return c, nil
}

// unitName names a task attempt's unit. The attempt is in it because a
// retry may come back to this agent while the last attempt's unit is
// still stopping, and unit names must be unique.
func unitName(t *drivers.Task) string {
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.', r == ':':
			return r
		}
		return '_'
	}, t.TaskID)
	if len(id) > 200 { // unit names stop at 255 bytes
		id = id[:200]
	}
	return fmt.Sprintf("coopr-task-%s-%d.service", id, t.Attempt)
}

func prop(name string, v any) sddbus.Property {
	return sddbus.Property{Name: name, Value: dbus.MakeVariant(v)}
}

// unitProperties describes a task's transient service: the task process
// as ExecStart, reading and writing the given descriptors (systemd takes
// copies when the unit is created, as systemd-run --pipe has it do).
func (r *Runner) unitProperties(t *drivers.Task, stdin, stdout, stderr int) []sddbus.Property {
	usec := func(d time.Duration) uint64 { return uint64(d / time.Microsecond) }
	props := []sddbus.Property{
		sddbus.PropDescription(fmt.Sprintf("coopr task %s attempt %d (%s)", t.TaskID, t.Attempt, t.TaskName)),
		// exec: the start job fails when the binary cannot be run.
		sddbus.PropType("exec"),
		// false: a failed exit counts (go-systemd's name for this flag reads
		// backwards: systemd takes it as "ignore failure").
		sddbus.PropExecStart(r.cfg.Command, false),
		// Stopping the unit kills every process of its cgroup, wherever
		// they moved in the process tree.
		prop("KillMode", "control-group"),
		prop("TimeoutStopUSec", usec(r.cfg.KillGrace)),
		// Failed units go too: a failure is reported through the result,
		// not by leaving units behind.
		prop("CollectMode", "inactive-or-failed"),
		prop("StandardInputFileDescriptor", dbus.UnixFD(stdin)),
		prop("StandardOutputFileDescriptor", dbus.UnixFD(stdout)),
		prop("StandardErrorFileDescriptor", dbus.UnixFD(stderr)),
		// The unit starts from systemd's environment, not the agent's.
		prop("Environment", childEnv(os.Environ())),
	}
	if r.cfg.Dir != "" {
		props = append(props, prop("WorkingDirectory", r.cfg.Dir))
	}
	if uid := os.Getuid(); uid != 0 {
		// A unit runs as root unless told otherwise: tasks must not gain
		// what the agent does not have.
		props = append(props, prop("User", strconv.Itoa(uid)), prop("Group", strconv.Itoa(os.Getgid())))
	}
	if r.cfg.CPUQuota > 0 {
		// CPUQuota=100% is one second of CPU time per second.
		props = append(props, prop("CPUQuotaPerSecUSec", uint64(r.cfg.CPUQuota*10_000)))
	}
	if r.cfg.MemoryMax > 0 {
		props = append(props, prop("MemoryMax", r.cfg.MemoryMax))
	}
	if t.TimeoutSeconds > 0 {
		// A bound for a unit whose agent died: the agent enforces the
		// timeout itself; this catches a unit nobody watches any more.
		props = append(props, prop("RuntimeMaxUSec", usec(time.Duration(t.TimeoutSeconds)*time.Second+r.cfg.KillGrace+time.Minute)))
	}
	return props
}

// runUnit runs the task process as a transient systemd service.
func (r *Runner) runUnit(ctx context.Context, t *drivers.Task, payload []byte, out drivers.Output, log *slog.Logger) drivers.Result {
	name := unitName(t)
	log = log.With("unit", name)
	p, err := newPipes()
	if err != nil {
		return drivers.Result{Status: 1, Message: err.Error()}
	}
	defer p.closeParent()
	started := make(chan string, 1)
	_, err = r.sd.StartTransientUnitContext(ctx, name, "fail", r.unitProperties(t, int(p.inR.Fd()), int(p.outW.Fd()), int(p.errW.Fd())), started)
	p.closeChild() // systemd holds its own copies now
	if err != nil {
		return drivers.Result{Status: 1, Message: fmt.Sprintf("start task unit %s: %v", name, err)}
	}
	st := p.start(payload, out, log)
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := r.sd.StopUnitContext(sctx, name, "replace", nil); err != nil {
			// Most often the unit ended and was collected already.
			log.Debug("stop task unit", "err", err)
		}
	}
	select {
	case res := <-started:
		if res != "done" {
			stop()
			st.finish(time.Second)
			return drivers.Result{Status: 1, Message: fmt.Sprintf("task unit %s did not start (%s): see journalctl -u %s", name, res, name)}
		}
	case <-ctx.Done():
	}

	// The end is EOF on the task's stdout. The unit's state is watched as
	// well, in case systemd keeps its copy of the descriptor past the end.
	wctx, endWatch := context.WithCancel(ctx)
	defer endWatch()
	gone := make(chan struct{})
	go r.watchUnit(wctx, name, gone, log)
	drain := time.Second
	select {
	case <-st.outDone:
	case <-gone:
	case <-ctx.Done():
		// systemd sends SIGTERM to the whole cgroup, then SIGKILL after
		// TimeoutStopUSec.
		stop()
		drain = r.cfg.KillGrace + 5*time.Second
	}
	res := st.finish(drain)
	// Whatever the task left running goes with its unit.
	stop()
	if res != nil {
		return *res
	}
	return ended(ctx, nil, st.stderr.tail())
}

// watchUnit closes gone once the unit is no longer running.
func (r *Runner) watchUnit(ctx context.Context, name string, gone chan<- struct{}, log *slog.Logger) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		us, err := r.sd.ListUnitsByNamesContext(ctx, []string{name})
		if err != nil {
			log.Debug("task unit state", "err", err)
			continue
		}
		if len(us) == 0 || us[0].LoadState == "not-found" || us[0].ActiveState == "inactive" || us[0].ActiveState == "failed" {
			close(gone)
			return
		}
	}
}
