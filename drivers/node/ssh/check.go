package sshnode

import (
	"context"
	"errors"
	"fmt"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// check runs CHECK (docs/operations.md#checking-a-cluster): one attempt to
// reach the node with its pinned host keys, then the node's hostname and
// interfaces, reported in the node namespace as check = {job, reachable,
// hostname, interfaces} for the server to compare with what it knows. A
// node that is not there, or shows another host key, is reported
// (reachable false, hostKeyChanged, error) on an Unreachable failure, so
// that the server marks it; nothing is changed on the node, and nothing
// is pinned: a node never reached has nothing to check against.
func (d *Driver) check(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	n := t.Node
	if n == nil {
		return checkFailure(fmt.Errorf("CHECK task %s has no node", t.TaskID), nil)
	}
	tg, err := drivers.TargetOf(t, n)
	if err != nil {
		return checkFailure(err, nil)
	}
	if len(tg.HostKeys) == 0 {
		return checkFailure(fmt.Errorf("node %s has no pinned host key yet: bootstrap it before checking it", n.ID), nil)
	}
	out.Status("checking "+tg.String(), 0)
	raw, err := d.pool.Output(ctx, tg, gatherFacts, remote.RunOptions{Stderr: out.Stderr})
	if err != nil {
		var mismatch *remote.HostKeyMismatchError
		facts := map[string]any{"check": map[string]any{"job": t.JobID, "reachable": false,
			"hostKeyChanged": errors.As(err, &mismatch), "error": err.Error()}}
		if !remote.Unreachable(err) {
			// The node answered and the command failed: retried, and
			// not reported as unreachable.
			return drivers.Result{Status: statusFailed, Message: "check: " + describe(err).Error()}
		}
		r := checkFailure(err, facts)
		r.Unreachable = true
		return r
	}
	got := ParseFacts(string(raw))
	facts := map[string]any{"check": map[string]any{"job": t.JobID, "reachable": true,
		"hostname": got["hostname"], "interfaces": got["interfaces"]}}
	out.Status("checked "+tg.String(), 100)
	return drivers.Result{Status: 0, Message: "reached " + n.Hostname, Facts: facts}
}

func checkFailure(err error, facts map[string]any) drivers.Result {
	no := false
	return drivers.Result{Status: statusFailed, Message: "check: " + err.Error(), Facts: facts, Retryable: &no}
}
