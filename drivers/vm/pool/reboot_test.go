package pool

import (
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// REBOOT of a pool node runs the provider's reboot_script as root on the
// node's host, detached, and waits until the host answers again with its
// pinned key from a new boot (the marker under /run gone; the test's
// script removes it, as a reboot empties /run). Without reboot_script it
// is refused, naming the field; a host that does not come back fails
// without a retry (which would reboot it again); one that comes back with
// another host key, terminally.
func TestReboot(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, sshdtest.Options{})
	h := f.hosts[0]
	d := newDriver(t, f.key.PEM)
	d.rebootWait = 3 * time.Second
	node := "r" + randHex(4) // the marker lives in this machine's shared /run
	t.Cleanup(func() { _ = os.Remove(rebootMarker(node)) })
	created, _ := run(t, d, f.task("CREATE", node))
	mustSucceed(t, created)
	confirmed, _ := run(t, d, withFacts(f.task("CONFIRM", node), created))
	mustSucceed(t, confirmed)
	reboot := func(script string) drivers.Result {
		task := withFacts(f.task("REBOOT", node), confirmed)
		if script != "" {
			task.Provider.Provisioner["reboot_script"] = script
		}
		r, _ := run(t, d, task)
		return r
	}

	if r := reboot(""); r.Status == 0 || retryable(r) || !strings.Contains(r.Message, "no reboot_script") {
		t.Fatalf("REBOOT without reboot_script: status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}

	start := time.Now()
	r := reboot(`echo "$COOPR_NODE_ID of $COOPR_CLUSTER_ID as $(id -un)" > /var/lib/coopr/rebooted; rm -f "$COOPR_REBOOT_MARKER"`)
	mustSucceed(t, r)
	if got, err := os.ReadFile(h.Path("/var/lib/coopr/rebooted")); err != nil || strings.TrimSpace(string(got)) != node+" of "+f.id+" as root" {
		t.Fatalf("reboot_script's trace: %q %v", got, err)
	}
	if _, err := os.Stat(rebootMarker(node)); !os.IsNotExist(err) {
		t.Errorf("the marker is still there: %v", err)
	}
	t.Logf("rebooted (by a script removing the marker) in %s", time.Since(start).Round(10*time.Millisecond))

	// A script that reboots nothing: the host never comes back from a new boot.
	if r := reboot("true"); r.Status == 0 || retryable(r) || !strings.Contains(r.Message, "not back from its reboot") {
		t.Fatalf("REBOOT of a host that did not reboot: status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}
	_ = os.Remove(rebootMarker(node))

	// Another machine answers after the reboot.
	pinned := ssh.FingerprintSHA256(h.HostKey())
	d.rebootWait = 20 * time.Second
	rotated := make(chan struct{})
	go func() {
		defer close(rotated)
		time.Sleep(time.Second)
		h.RotateHostKey(t)
	}()
	r = reboot("sleep 60")
	<-rotated
	if r.Status == 0 || retryable(r) || !strings.Contains(r.Message, pinned) {
		t.Fatalf("REBOOT of a host that came back with another key: status %d retryable %v: %s", r.Status, retryable(r), r.Message)
	}
}
