package sshnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// DefaultCheckRetry bounds how long CHECK keeps trying a node that does
// not answer before it reports it unreachable: long enough to ride out an
// sshd restart or a dropped packet, short enough that a check of a dead
// node still ends in seconds.
const DefaultCheckRetry = 8 * time.Second

// check runs CHECK (docs/operations.md#checking-a-cluster): it reaches the
// node with its pinned host keys, then reads the node's hostname,
// interfaces and the systemd states of the units the payload names
// (t.Units, docs/catalog.md#systemd-units), in one session, and reports
// them in the node namespace as check = {job, reachable, hostname,
// interfaces, systemd, units} for the server to compare with what it
// knows. A node that does not answer is tried again, backing off, for up
// to the driver's check retry (a node that answers costs no wait); one
// still not there, or one showing another host key (never retried: that
// is no blip), is reported (reachable false, hostKeyChanged, error) on an
// Unreachable failure, so that the server marks it. Nothing is changed on
// the node, and nothing is pinned: a node never reached has nothing to
// check against.
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
	units := checkUnits(t.Units)
	script, opts := gatherFacts, remote.RunOptions{Stderr: out.Stderr}
	if len(units) > 0 {
		script = unitStates + gatherFacts
		opts.Env = map[string]string{"COOPR_UNITS": strings.Join(units, "\n")}
	}
	out.Status("checking "+tg.String(), 0)
	start := time.Now()
	wait := d.minWait
	var raw []byte
	for attempt := 1; ; attempt++ {
		raw, err = d.pool.Output(ctx, tg, script, opts)
		if err == nil || !errors.Is(err, remote.ErrUnreachable) || remote.Terminal(err) || ctx.Err() != nil {
			break
		}
		left := d.checkRetry - time.Since(start)
		if left <= 0 {
			if attempt > 1 {
				err = fmt.Errorf("no answer in %d attempts over %s: %w", attempt, time.Since(start).Round(100*time.Millisecond), err)
			}
			break
		}
		// Jitter keeps a cluster's nodes from retrying in lockstep; the
		// last attempt comes as the retry ends.
		sleep := min(wait/2+rand.N(wait/2+1), left)
		out.Status(fmt.Sprintf("ssh %s not answering (attempt %d): %v", tg, attempt, err), 0)
		timer := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C:
		}
		wait = min(2*wait, d.maxWait)
	}
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
	ck := map[string]any{"job": t.JobID, "reachable": true, "hostname": got["hostname"], "interfaces": got["interfaces"]}
	if len(units) > 0 {
		systemd, states := ParseUnits(string(raw))
		ck["systemd"] = systemd
		if systemd {
			ck["units"] = states
		}
	}
	out.Status("checked "+tg.String(), 100)
	return drivers.Result{Status: 0, Message: "reached " + n.Hostname, Facts: map[string]any{"check": ck}}
}

// checkUnits is every unit of the payload's services once, sorted.
func checkUnits(byService map[string][]string) []string {
	var all []string
	for _, s := range slices.Sorted(maps.Keys(byService)) {
		all = append(all, byService[s]...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// unitStates prints, where systemd runs, systemd=yes and for each unit
// of COOPR_UNITS (one a line) unit=<name> and its load, active and sub
// states as systemctl show prints them, prefixed with "unit."; else
// systemd=no. systemctl show reads systemd's state over D-Bus: it needs
// no root, and a unit systemd does not know is LoadState=not-found.
const unitStates = `if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  echo systemd=yes
  printf '%s\n' "$COOPR_UNITS" | while IFS= read -r u; do
    [ -n "$u" ] || continue
    printf 'unit=%s\n' "$u"
    systemctl show --no-pager -p LoadState -p ActiveState -p SubState -- "$u" 2>/dev/null | while IFS= read -r l; do
      printf 'unit.%s\n' "$l"
    done
  done
else
  echo systemd=no
fi
`

// ParseUnits reads unitStates' output: whether systemd runs, and by unit
// its states {load, active, sub}.
func ParseUnits(out string) (systemd bool, units map[string]any) {
	units = map[string]any{}
	var cur map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "systemd":
			systemd = v == "yes"
		case "unit":
			cur = map[string]any{}
			units[v] = cur
		case "unit.LoadState", "unit.ActiveState", "unit.SubState":
			if cur != nil {
				cur[strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(k, "unit."), "State"))] = v
			}
		}
	}
	return systemd, units
}

func checkFailure(err error, facts map[string]any) drivers.Result {
	no := false
	return drivers.Result{Status: statusFailed, Message: "check: " + err.Error(), Facts: facts, Retryable: &no}
}
