package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/internal/filelock"
)

// reboot runs REBOOT (docs/operations.md#rebooting-a-node): the node's
// container is powered off as DELETE does it (SIGTERM to its nspawn, then
// SIGKILL) and booted again on the same root, address and network, as
// CREATE adopts an existing container. The node's BOOTSTRAP, next in the
// plan, waits for its SSH. A container that is gone is reported
// Unreachable: a reboot cannot bring back what is not there.
func (d *driver) reboot(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	name, err := targetName(s.StateDir, t)
	if err != nil {
		return drivers.Result{Status: statusFailed, Message: "local: " + err.Error(), Retryable: &no}
	}
	dir := filepath.Join(nodesDir(s.StateDir), name)
	n, err := loadNode(dir)
	if errors.Is(err, os.ErrNotExist) {
		return drivers.Result{Status: statusFailed, Message: "local: container " + name + " does not exist: replace the node", Retryable: &no, Unreachable: true}
	} else if err != nil {
		return failure(statusFailed, "node state", err)
	}
	if err := n.belongs(t); err != nil {
		return drivers.Result{Status: statusFailed, Message: "local: " + err.Error(), Retryable: &no}
	}
	unlock, err := filelock.Lock(ctx, lockOf(s.StateDir, name))
	if err != nil {
		return failure(statusFailed, "lock node", err)
	}
	defer unlock()
	nw, err := ensureClusterNet(ctx, s.StateDir, s.rng, clusterID(t))
	if err != nil {
		return failure(statusFailed, "cluster network", err)
	}
	if n.Bridge != nw.bridge {
		// A node made before clusters had networks of their own: its
		// address is on the old shared bridge and means nothing on the
		// cluster's. A replacement gets one that does.
		return drivers.Result{Status: statusFailed, Retryable: &no,
			Message: fmt.Sprintf("local: container %s is on bridge %s, not its cluster's %s: replace the node", name, n.Bridge, nw.bridge)}
	}
	out.Status("powering off "+name, 10)
	if err := stopNode(ctx, dir, name, d.log); err != nil {
		return failure(statusFailed, "power off", err)
	}
	if err := mountRoot(n); err != nil {
		return failure(statusFailed, "mount root", err)
	}
	if err := nw.ensureNodeNet(ctx, n); err != nil {
		return failure(statusFailed, "network", err)
	}
	out.Status("booting "+name, 50)
	if _, err := d.ensureRunning(ctx, n); err != nil {
		return failure(statusFailed, "boot", err)
	}
	d.log.Info("rebooted container", "name", name, "node", t.Node.ID)
	return drivers.Result{Message: "rebooted container " + name + " at " + n.Address}
}
