// Package sdnotify tells systemd how a coopr process is doing, through
// the notification socket systemd names in $NOTIFY_SOCKET: READY=1 once
// the agent is registered (so Type=notify units start only when they
// work), STATUS= lines for `systemctl status`, STOPPING=1, and WATCHDOG=1
// keep-alives when the unit sets WatchdogSec. Outside systemd (no
// $NOTIFY_SOCKET) every call does nothing.
package sdnotify

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends states to the service manager.
type Notifier struct {
	log *slog.Logger

	mu     sync.Mutex
	failed bool // a send failed: warn once, not on every heartbeat
}

// New returns a notifier logging failures to log (slog.Default if nil).
func New(log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{log: log}
}

// Notify sends one state ("READY=1", "STATUS=...", "STOPPING=1", or
// several separated by newlines). Its signature is agent.Config.Notify's.
//
// NOTIFY_SOCKET stays in the environment because every later call reads
// it; children that inherit it cannot pose as us because the units set
// NotifyAccess=main, and isolated task processes get an environment
// without it.
func (n *Notifier) Notify(state string) {
	sent, err := daemon.SdNotify(false, state)
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case err != nil && !n.failed:
		// Losing READY=1 makes systemd time the unit out; say why.
		n.failed = true
		n.log.Warn("cannot notify systemd", "state", state, "err", err)
	case err == nil && sent && n.failed:
		n.failed = false
		n.log.Info("notifying systemd again")
	}
}

// WatchdogInterval is how often Watchdog pings: half of the unit's
// WatchdogSec (systemd's advice, leaving a full half for a late tick), or 0
// when the watchdog is off or watches another process.
func WatchdogInterval() (time.Duration, error) {
	// Keep the variables: a second call (a restarted loop, a test) must see
	// the same answer.
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0, fmt.Errorf("systemd watchdog settings: %w", err)
	}
	return d / 2, nil
}

// Watchdog sends WATCHDOG=1 every WatchdogInterval until ctx ends, and
// returns at once when the watchdog is off. Run it for as long as the
// process should count as alive, including a graceful stop: a stop that
// waits out the tasks' grace period must not be mistaken for a hang.
//
// The pings prove that the process is scheduled and not wedged, not that
// the server answers: an unreachable server is the server's outage, and
// restarting every agent over it would only lose their running tasks.
func (n *Notifier) Watchdog(ctx context.Context) error {
	every, err := WatchdogInterval()
	if err != nil || every <= 0 {
		return err
	}
	n.log.Debug("systemd watchdog on", "ping every", every)
	n.Notify(daemon.SdNotifyWatchdog)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			n.Notify(daemon.SdNotifyWatchdog)
		}
	}
}
