package sshnode_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers/drivertest"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// AUTHORIZE_KEYS changes the owner's keys on a bootstrapped node over real
// SSH, and only those: coopr's key and the node's own lines stay, the
// hostname and facts are left alone, and the pinned host key is checked.
func TestAuthorizeKeys(t *testing.T) {
	t.Parallel()
	c := drivertest.NewCluster(t, 1, sshdtest.Options{NonRoot: true})
	h := c.Hosts[0]
	drv := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := sshdtest.NewKey(t)
	logsIn := func(k *sshdtest.Key) bool {
		cl, err := ssh.Dial("tcp", h.Addr(), &ssh.ClientConfig{User: h.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(k.Signer)},
			HostKeyCallback: ssh.FixedHostKey(h.HostKey()), Timeout: 10 * time.Second})
		if err != nil {
			return false
		}
		cl.Close()
		return true
	}
	authorize := func(keys ...string) (status int, retryable bool, msg string) {
		t.Helper()
		task := c.Task("AUTHORIZE_KEYS", 0)
		task.AuthorizedKeys = keys
		r := drv.Run(ctx, task, &drivertest.Recorder{})
		if r.Facts != nil {
			t.Errorf("AUTHORIZE_KEYS reported facts %v", r.Facts)
		}
		return r.Status, r.Retryable == nil || *r.Retryable, r.Message
	}

	// Never bootstrapped: no pin to trust, so no keys, for good.
	if status, retryable, msg := authorize(owner.AuthorizedKey); status == 0 || retryable || !strings.Contains(msg, "no pinned host key") {
		t.Errorf("before BOOTSTRAP: status %d retryable %v: %s", status, retryable, msg)
	}
	r := drv.Run(ctx, c.Task("BOOTSTRAP", 0), &drivertest.Recorder{})
	if r.Status != 0 {
		t.Fatalf("BOOTSTRAP: %s", r.Message)
	}
	c.Merge(0, "node", r)
	home := h.Dir + "/home/" + h.User
	other := sshdtest.NewKey(t)
	h.Exec(t, `mkdir -p `+home+`/.ssh && printf '%s\n' '`+other.AuthorizedKey+` ops' > `+home+`/.ssh/authorized_keys && chown -R `+h.User+`: `+home+`/.ssh`)
	hostname := h.Exec(t, `cat /proc/sys/kernel/hostname 2>/dev/null || true`)
	if logsIn(owner) {
		t.Fatal("the owner's key logs in before AUTHORIZE_KEYS")
	}
	for range 2 { // running it again changes nothing
		if status, _, msg := authorize(owner.AuthorizedKey + " alice@laptop"); status != 0 {
			t.Fatalf("AUTHORIZE_KEYS: %s", msg)
		}
	}
	if !logsIn(owner) {
		t.Error("the owner's key does not log in after AUTHORIZE_KEYS")
	}
	if got := h.Exec(t, `grep -c ' `+sshnode.OwnerKeyMarker+`$' `+home+`/.ssh/authorized_keys`); got != "1\n" {
		t.Errorf("marked lines: %q, want 1", got)
	}
	if status, _, msg := authorize(); status != 0 {
		t.Fatalf("AUTHORIZE_KEYS without keys: %s", msg)
	}
	if logsIn(owner) {
		t.Error("a removed key still logs in after AUTHORIZE_KEYS")
	}
	if !logsIn(other) {
		t.Error("the node's own line no longer logs in")
	}
	if got := h.Exec(t, `cat /proc/sys/kernel/hostname 2>/dev/null || true`); got != hostname {
		t.Errorf("hostname changed from %q to %q", hostname, got)
	}

	// A host that shows another key gets no keys.
	h.RotateHostKey(t)
	if status, retryable, msg := authorize(owner.AuthorizedKey); status == 0 || retryable || !strings.Contains(msg, "host key mismatch") {
		t.Errorf("after the host key changed: status %d retryable %v: %s", status, retryable, msg)
	}
}
