package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// RebootMarkerDir holds the file REBOOT leaves on a host before rebooting
// it, named by the node: /run is emptied at every boot (a tmpfs on every
// systemd host; FHS 3.0 requires it cleared), so the host is back from its
// reboot once it answers and the file is gone.
const RebootMarkerDir = "/run"

// rebootMarker is node's marker file.
func rebootMarker(node string) string { return RebootMarkerDir + "/coopr-reboot." + node }

// rebootHost runs REBOOT (docs/operations.md#rebooting-a-node) of the
// node's host. Hosts are the provider admin's machines, so coopr reboots
// one only the way the admin said, the provider's reboot_script, and
// refuses (terminally, naming the field) when there is none. It checks
// that the node still holds the host's lease (a host handed on since is
// not the node's to reboot), leaves the marker, starts reboot_script as
// root detached from the session (with COOPR_CLUSTER_ID, COOPR_NODE_ID,
// COOPR_HOSTNAME and COOPR_HOST set, as for wipe_script), then waits,
// backing off, until the host answers with its pinned host key and the
// marker is gone. Another host key is a terminal failure; a host not back
// within the wait is a retryable one (the retry reboots it again). The
// plan's BOOTSTRAP after it waits for SSH again and verifies the pin.
func (d *driver) rebootHost(ctx context.Context, s settings, t *drivers.Task, out drivers.Output, log *slog.Logger) drivers.Result {
	id := providerID(t.Node)
	if strings.TrimSpace(s.reboot) == "" {
		return terminal(statusFailed, fmt.Errorf("provider %s has no reboot_script: its hosts are the provider admin's machines, which coopr reboots "+
			"only the way the admin says: set reboot_script (e.g. \"systemctl reboot\"), or reboot %s yourself, or replace the node", s.provider, orNone(id)))
	}
	if id == "" {
		return terminal(statusFailed, errors.New("the node has no vm.providerId: CREATE has not leased it a host"))
	}
	h, ok := s.byID(id)
	if !ok {
		return terminal(statusFailed, fmt.Errorf("host %s is no longer listed in provider %s: replace the node", id, s.provider))
	}
	tg := s.target(h, pinsOf(t.Node))
	st, key, err := d.lease(ctx, tg, "probe", owner(t))
	if err != nil {
		return failure(statusFailed, fmt.Errorf("host %s: %w", id, err), nil)
	}
	if st.kind != "ours" {
		return terminal(statusFailed, fmt.Errorf("host %s is %s, not to this node: not rebooting it", id, st))
	}
	tg.HostKeys = orKey(tg.HostKeys, key)
	marker := rebootMarker(t.Node.ID)
	out.Status("rebooting host "+id, 10)
	err = d.pool.Run(ctx, tg, startReboot, remote.RunOptions{
		Sudo: true,
		Env: map[string]string{
			"COOPR_CLUSTER_ID":     t.ClusterID,
			"COOPR_NODE_ID":        t.Node.ID,
			"COOPR_HOSTNAME":       t.Node.Hostname,
			"COOPR_HOST":           h.id(),
			"COOPR_REBOOT_MARKER":  marker,
			"COOPR_REBOOT_SCRIPT":  s.reboot,
			"COOPR_REBOOT_TASK_ID": t.TaskID,
		},
		Stderr: out.Stderr,
	})
	if err != nil {
		return failure(statusFailed, fmt.Errorf("start reboot_script on host %s: %w", id, describe(err)), nil)
	}
	log.Info("pool: rebooting host", "host", id)
	// The wait ends before the task's own timeout, so that it fails as
	// "not back", not retryably as a task that ran out of time: a retry
	// would reboot the host again, in the middle of a slow boot.
	started := time.Now()
	deadline := started.Add(d.rebootWait)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-30*time.Second).Before(deadline) {
		deadline = dl.Add(-30 * time.Second)
	}
	wait := d.minWait
	for attempt := 1; ; attempt++ {
		// Exit 0: the marker is gone, a new boot. Exit 1: the old boot,
		// still going down.
		err = d.pool.Run(ctx, tg, `test ! -e "$COOPR_REBOOT_MARKER"`, remote.RunOptions{Env: map[string]string{"COOPR_REBOOT_MARKER": marker}})
		if err == nil {
			break
		}
		if remote.Terminal(err) {
			return failure(statusFailed, fmt.Errorf("host %s after its reboot: %w", id, err), nil)
		}
		var ee *remote.ExitError
		if errors.As(err, &ee) && ee.Code == 1 {
			err = errors.New("still up from before the reboot")
		}
		if ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			// Not retried: another attempt would reboot the host once
			// more. Whoever runs the pool looks at it; a check of the
			// cluster then tells whether it came back.
			r := failure(statusFailed, fmt.Errorf("host %s not back from its reboot after %s (attempt %d: %v): see to the host, then check the cluster",
				id, time.Since(started).Round(time.Second), attempt, err), nil)
			r.Retryable = &no
			return r
		}
		out.Status(fmt.Sprintf("host %s not back yet (attempt %d): %v", id, attempt, err), 50)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
		wait = min(2*wait, d.maxWait)
	}
	out.Status("host "+id+" is back", 100)
	log.Info("pool: host back from its reboot", "host", id)
	return drivers.Result{Message: "pool: rebooted host " + id}
}

func orNone(id string) string {
	if id == "" {
		return "the node's host"
	}
	return "host " + id
}

// startReboot leaves the marker and starts the admin's reboot script
// detached, a second later, so that this session ends cleanly before the
// host goes down.
const startReboot = `set -e
printf '%s\n' "$COOPR_REBOOT_TASK_ID" > "$COOPR_REBOOT_MARKER"
( trap '' HUP; sleep 1; eval "$COOPR_REBOOT_SCRIPT" ) </dev/null >/dev/null 2>&1 &
`
