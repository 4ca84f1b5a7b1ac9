package sshnode_test

import (
	"context"
	"log/slog"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// CHECK reports a reachable node's hostname and interfaces under check,
// with the job; a changed host key and a stopped sshd are Unreachable
// failures that say so in the facts; a node never bootstrapped has no pin
// to check against.
func TestCheck(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	drv := newCheckDriver(t, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check := func() drivers.Result {
		task := c.Task("CHECK", 0)
		task.JobID = "00000001-002"
		return drv.Run(ctx, task, &drivertest.Recorder{})
	}
	if r := check(); r.Status == 0 || r.Unreachable || r.Retryable == nil || *r.Retryable {
		t.Fatalf("CHECK before any pin: %+v, want a terminal failure", r)
	}
	r := drv.Run(ctx, c.Task("BOOTSTRAP", 0), &drivertest.Recorder{})
	if r.Status != 0 {
		t.Fatalf("BOOTSTRAP: %s", r.Message)
	}
	c.Merge(0, "node", r)

	r = check()
	ck, _ := r.Facts["check"].(map[string]any)
	if r.Status != 0 || ck["job"] != "00000001-002" || ck["reachable"] != true || ck["hostname"] == "" || ck["interfaces"] == nil {
		t.Fatalf("CHECK of a healthy node: status %d %q facts %v", r.Status, r.Message, r.Facts)
	}

	c.Hosts[0].RotateHostKey(t)
	r = check()
	ck, _ = r.Facts["check"].(map[string]any)
	if r.Status == 0 || !r.Unreachable || ck["reachable"] != false || ck["hostKeyChanged"] != true {
		t.Fatalf("CHECK after the host key changed: status %d unreachable %v facts %v", r.Status, r.Unreachable, r.Facts)
	}

	c.Hosts[0].Stop()
	r = check()
	ck, _ = r.Facts["check"].(map[string]any)
	if r.Status == 0 || !r.Unreachable || ck["reachable"] != false || ck["hostKeyChanged"] != false || ck["error"] == "" {
		t.Fatalf("CHECK with sshd stopped: status %d unreachable %v facts %v", r.Status, r.Unreachable, r.Facts)
	}
}

func newCheckDriver(t *testing.T, retry time.Duration) drivers.Driver {
	p := remote.NewPool(remote.Options{})
	t.Cleanup(func() { _ = p.Close() })
	return sshnode.NewWith(p, slog.New(slog.NewTextHandler(t.Output(), nil)), sshnode.Options{CheckRetry: retry})
}

// bootstrapped is a one-node cluster whose node BOOTSTRAP pinned.
func bootstrapped(t *testing.T, ctx context.Context, drv drivers.Driver) *drivertest.Cluster {
	t.Helper()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	r := drv.Run(ctx, c.Task("BOOTSTRAP", 0), &drivertest.Recorder{})
	if r.Status != 0 {
		t.Fatalf("BOOTSTRAP: %s", r.Message)
	}
	c.Merge(0, "node", r)
	return c
}

// A node whose sshd is away for a moment (restarted, a blip) is tried
// again within the check retry and found reachable; a healthy node costs
// no wait; a node away for longer than the retry is unreachable after
// about the retry, not the task's whole timeout.
func TestCheckRetriesABlip(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drv := newCheckDriver(t, 6*time.Second)
	c := bootstrapped(t, ctx, drv)
	check := func() (drivers.Result, *drivertest.Recorder, time.Duration) {
		task := c.Task("CHECK", 0)
		task.JobID = "00000001-002"
		rec := &drivertest.Recorder{}
		start := time.Now()
		r := drv.Run(ctx, task, rec)
		return r, rec, time.Since(start)
	}
	// No wait is no retry: the status says each one. (Not a bound on the
	// time taken, which a loaded machine stretches past any small one.)
	if r, rec, took := check(); r.Status != 0 || rec.Contains("status", "not answering") {
		t.Fatalf("CHECK of a healthy node: status %d %q in %s, said %q", r.Status, r.Message, took, rec.Lines("status"))
	}

	c.Hosts[0].Stop()
	back := make(chan struct{})
	go func() {
		defer close(back)
		time.Sleep(1500 * time.Millisecond)
		c.Hosts[0].Restart(t)
	}()
	r, rec, took := check()
	<-back
	ck, _ := r.Facts["check"].(map[string]any)
	if r.Status != 0 || r.Unreachable || ck["reachable"] != true {
		t.Fatalf("CHECK of a node whose sshd came back after 1.5 s: status %d %q unreachable %v in %s", r.Status, r.Message, r.Unreachable, took)
	}
	if took < time.Second || !rec.Contains("status", "not answering") {
		t.Errorf("CHECK took %s and said %q: want the retries seen", took, rec.Lines("status"))
	}

	c.Hosts[0].Stop()
	r, _, took = check()
	// Up to 20 s: the retry's 6 s, then the last attempt, which a loaded
	// machine can slow; far below the task's minute either way.
	if r.Status == 0 || !r.Unreachable || took > 20*time.Second || took < 5*time.Second {
		t.Errorf("CHECK of a node whose sshd stays down: status %d unreachable %v in %s, want unreachable after about 6 s", r.Status, r.Unreachable, took)
	}
}

// CHECK asks systemd about the units of the payload; a node without
// systemd (this test's sshd runs on a host without it) says so, and no
// units are reported. The systemd side runs in the e2e check of local
// nodes (TestCheckUnitOnlyServiceOnLocal).
func TestCheckUnitsWithoutSystemd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	drv := newCheckDriver(t, time.Second)
	c := bootstrapped(t, ctx, drv)
	task := c.Task("CHECK", 0)
	task.JobID = "00000001-002"
	task.Units = map[string][]string{"metrics": {"coopr-metrics.service"}}
	r := drv.Run(ctx, task, &drivertest.Recorder{})
	ck, _ := r.Facts["check"].(map[string]any)
	// The test's sshd shares the host's /run: on a host booted with
	// systemd the node runs systemd too, and knows no such unit.
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		units, _ := ck["units"].(map[string]any)
		st, _ := units["coopr-metrics.service"].(map[string]any)
		if r.Status != 0 || ck["systemd"] != true || st["load"] != "not-found" {
			t.Fatalf("CHECK with units on a systemd host: status %d %q facts %v, want the unit not found", r.Status, r.Message, r.Facts)
		}
	} else if r.Status != 0 || ck["systemd"] != false || ck["units"] != nil || ck["hostname"] == "" {
		t.Fatalf("CHECK with units on a node without systemd: status %d %q facts %v", r.Status, r.Message, r.Facts)
	}
	task.Units = nil
	r = drv.Run(ctx, task, &drivertest.Recorder{})
	ck, _ = r.Facts["check"].(map[string]any)
	if _, asked := ck["systemd"]; r.Status != 0 || asked {
		t.Fatalf("CHECK without units: status %d facts %v, want systemd not asked", r.Status, r.Facts)
	}
}

func TestParseUnits(t *testing.T) {
	cases := []struct {
		name    string
		out     string
		systemd bool
		units   map[string]any
	}{
		{"no systemd", "systemd=no\nhostname=a\n", false, map[string]any{}},
		{"states", "systemd=yes\nunit=a.service\nunit.LoadState=loaded\nunit.ActiveState=active\nunit.SubState=running\n" +
			"unit=b.service\nunit.ActiveState=inactive\nunit.SubState=dead\nunit.LoadState=not-found\nunit.Other=x\nhostname=a\n", true,
			map[string]any{"a.service": map[string]any{"load": "loaded", "active": "active", "sub": "running"},
				"b.service": map[string]any{"load": "not-found", "active": "inactive", "sub": "dead"}}},
		{"a unit systemctl said nothing of", "systemd=yes\nunit=c@x.service\n", true, map[string]any{"c@x.service": map[string]any{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			systemd, units := sshnode.ParseUnits(c.out)
			if systemd != c.systemd || !reflect.DeepEqual(units, c.units) {
				t.Errorf("got %v %v, want %v %v", systemd, units, c.systemd, c.units)
			}
		})
	}
}
