package sshnode

import (
	"context"
	"fmt"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// authorizeKeys runs AUTHORIZE_KEYS: the owner's keys of the payload
// replace the marked lines of a live node's authorized_keys, as BOOTSTRAP
// would, without the rest of BOOTSTRAP (hostname, facts, resources). The
// node must have been bootstrapped: with no pinned host key there is no
// host to trust, and the task fails for good rather than pin one.
func (d *Driver) authorizeKeys(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	n := t.Node
	if n == nil {
		return keysFailure(fmt.Errorf("AUTHORIZE_KEYS task %s has no node", t.TaskID), false)
	}
	tg, err := drivers.TargetOf(t, n)
	if err != nil {
		return keysFailure(err, false)
	}
	if len(tg.HostKeys) == 0 {
		return keysFailure(fmt.Errorf("node %s has no pinned host key: it was never bootstrapped, and its keys come with its BOOTSTRAP", n.ID), false)
	}
	out.Status("waiting for ssh on "+tg.String(), 0)
	if _, err := d.connect(ctx, tg, out); err != nil {
		return keysFailure(err, !remote.Terminal(err))
	}
	out.Status(fmt.Sprintf("installing %d SSH key(s) for %s", len(t.AuthorizedKeys), tg.User), 50)
	if retryable, err := InstallOwnerKeys(ctx, d.pool, tg, t.AuthorizedKeys); err != nil {
		return keysFailure(err, retryable)
	}
	out.Status("keys updated on "+tg.String(), 100)
	d.log.Info("authorized keys updated", "task", t.TaskID, "node", n.ID, "keys", len(t.AuthorizedKeys))
	return drivers.Result{Status: 0, Message: fmt.Sprintf("%d SSH key(s) authorized on %s", len(t.AuthorizedKeys), n.Hostname)}
}

func keysFailure(err error, retryable bool) drivers.Result {
	r := drivers.Result{Status: statusFailed, Message: "authorize keys: " + err.Error(), Unreachable: remote.Unreachable(err)}
	if !retryable {
		r.Retryable = &retryable
	}
	return r
}
