package sshnode_test

import (
	"context"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// CHECK reports a reachable node's hostname and interfaces under check,
// with the job; a changed host key and a stopped sshd are Unreachable
// failures that say so in the facts; a node never bootstrapped has no pin
// to check against.
func TestCheck(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{})
	drv := newDriver(t)
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
