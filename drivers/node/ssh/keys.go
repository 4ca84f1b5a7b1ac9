package sshnode

import (
	"context"
	"errors"
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
	// Installing the keys is the first command, as in BOOTSTRAP: that it
	// runs is the proof connect waits for.
	var keysRetryable bool
	var keysErr error
	_, err = d.connect(ctx, tg, out, func(probe remote.Target) (bool, error) {
		keysRetryable, keysErr = InstallOwnerKeys(ctx, d.pool, probe, t.AuthorizedKeys)
		var ee *remote.ExitError
		return keysErr == nil || !keysRetryable || errors.As(keysErr, &ee), keysErr
	})
	switch {
	case err != nil && err != keysErr:
		return keysFailure(err, !remote.Terminal(err))
	case keysErr != nil:
		return keysFailure(keysErr, keysRetryable)
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
