package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/remote/sshdtest"
)

// Issue 19: a user who put a key on their profile logs in to the node of
// their cluster with coopr ssh (the real binary, the real ssh), the host
// key checked against coopr's pin; coopr's own key still works after, and
// the key leaves the pool host with the node.
func TestOwnerLogsInOnPool(t *testing.T) {
	w := newWorld(t, 2)
	w.startAgent(t, "agent-1", 2)
	key := sshdtest.NewKey(t)
	hosts := poolHosts(t, w, 1, key.AuthorizedKey)
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "pool", "providertype": "pool",
			"provisioner": map[string]any{"hosts": strings.Join(hosts, " "), "ssh_user": "root", "ssh_key": string(key.PEM)},
			"network":     map[string]any{"type": "hosts", "fields": map[string]any{}}}}, &struct{}{})

	owner := sshdtest.NewKey(t)
	w.s.Must(w.admin, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": owner.AuthorizedKey + " me@laptop"}, &struct{}{})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "id"), owner.PEM, 0o600); err != nil {
		t.Fatal(err)
	}

	id := w.create(t, "single", "pool", 1)
	w.follow(t, id, "ACTIVE", 5*time.Minute)
	cmd := exec.Command(coopr(t), "ssh", id, "--server", w.s.URL, "--token", w.admin, "--",
		"-i", filepath.Join(dir, "id"), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-F", "/dev/null", "echo", "in on", "$(hostname)")
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	c := w.cluster(t, id)
	if err != nil || string(out) != "in on "+c.Nodes[0].Hostname+"\n" {
		t.Fatalf("coopr ssh as the owner: %v: %q\n%s", err, out, stderr)
	}
	// coopr's own key still logs in.
	if got := sshRun(t, hosts[0], key.Signer, "grep -c coopr-owner-key /root/.ssh/authorized_keys"); strings.TrimSpace(got) != "1" {
		t.Errorf("owner keys on the node: %q, want 1", got)
	}
	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
	// The host went back to the pool without the owner's key.
	if got := sshRun(t, hosts[0], key.Signer, "grep -c coopr-owner-key /root/.ssh/authorized_keys || true"); strings.TrimSpace(got) != "0" {
		t.Errorf("owner keys on the pool host after DELETE: %q, want 0", got)
	}
}
