package e2e

import (
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/remote/sshdtest"
)

// A key put on the owner's profile reaches every node of a live cluster
// by itself, through an UPDATE_SSH_KEYS job, and logs in over real SSH;
// taken off, it no longer does.
func TestKeysReachLiveClusterOnLocal(t *testing.T) {
	w := newWorld(t, 4)
	w.startAgent(t, "agent-1", 4)
	id := w.create(t, "web-cluster", "", 2)
	w.follow(t, id, "ACTIVE", 5*time.Minute)
	nodes := w.cluster(t, id).Nodes
	owner := sshdtest.NewKey(t)
	logsIn := func(n node) bool {
		t.Helper()
		var pinned []ssh.PublicKey
		for _, k := range n.HostKeys {
			pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k.Type + " " + k.Key))
			if err != nil {
				t.Fatal(err)
			}
			pinned = append(pinned, pk)
		}
		c, err := ssh.Dial("tcp", net.JoinHostPort(n.Ipaddresses["access_v4"], "22"), &ssh.ClientConfig{User: "root",
			Auth: []ssh.AuthMethod{ssh.PublicKeys(owner.Signer)}, Timeout: 10 * time.Second,
			HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
				for _, p := range pinned {
					if string(p.Marshal()) == string(k.Marshal()) {
						return nil
					}
				}
				t.Fatalf("node %s shows a host key coopr did not pin", n.Hostname)
				return nil
			}})
		if err != nil {
			if !strings.Contains(err.Error(), "unable to authenticate") {
				t.Fatalf("ssh %s: %v", n.Hostname, err)
			}
			return false
		}
		c.Close()
		return true
	}
	latestJob := func() (action, state string) {
		var c struct {
			Cluster struct {
				LatestJob struct{ Action, State string }
			}
		}
		w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { latestJob { action state } } }`, map[string]any{"id": id}, &c)
		return c.Cluster.LatestJob.Action, c.Cluster.LatestJob.State
	}
	for _, n := range nodes {
		if logsIn(n) {
			t.Fatalf("the key logs in on %s before it is added", n.Hostname)
		}
	}

	var added struct{ AddSSHKey struct{ ID string } }
	w.s.Must(w.admin, `mutation($k: String!) { addSSHKey(publicKey: $k) { id } }`, map[string]any{"k": owner.AuthorizedKey + " me@laptop"}, &added)
	if a, _ := latestJob(); a != "UPDATE_SSH_KEYS" {
		t.Fatalf("after adding a key the latest job is %s", a)
	}
	w.follow(t, id, "ACTIVE", 3*time.Minute)
	if a, s := latestJob(); a != "UPDATE_SSH_KEYS" || s != "COMPLETE" {
		t.Fatalf("key job %s %s", a, s)
	}
	for _, n := range nodes {
		if !logsIn(n) {
			t.Errorf("the added key does not log in on %s", n.Hostname)
		}
	}

	w.s.Must(w.admin, `mutation($id: ID!) { removeSSHKey(id: $id) }`, map[string]any{"id": added.AddSSHKey.ID}, &struct{}{})
	w.follow(t, id, "ACTIVE", 3*time.Minute)
	if a, s := latestJob(); a != "UPDATE_SSH_KEYS" || s != "COMPLETE" {
		t.Fatalf("key job after the removal %s %s", a, s)
	}
	for _, n := range nodes {
		if logsIn(n) {
			t.Errorf("the removed key still logs in on %s", n.Hostname)
		}
	}
	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
}
