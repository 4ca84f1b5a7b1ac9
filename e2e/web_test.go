package e2e

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/server/credentials"
)

// The whole life of a web cluster on local nodes: create, serve through
// the balancer, reconfigure with restarts, add a service, scale out, a
// changed host key refused, delete with nothing left behind.
func TestWebClusterOnLocal(t *testing.T) {
	w := newWorld(t, 8)
	w.startAgent(t, "agent-1", 8)
	id := webFlow(t, w, "")

	t.Run("changed host key is refused", func(t *testing.T) {
		victim := withService(w.cluster(t, id), "web")[0]
		rekey(t, w, id, victim.Ipaddresses["access_v4"])
		w.operate(t, id, map[string]any{"operation": "RESTART_SERVICES", "services": []string{"web"}})
		status := w.settle(t, id, 3*time.Minute)
		if status != "INCONSISTENT" {
			t.Fatalf("after a host key change the restart left the cluster %s, want INCONSISTENT", status)
		}
		msg := w.failures(t, id)
		if !strings.Contains(msg, "host key mismatch") || strings.Count(msg, "SHA256:") < 2 {
			t.Errorf("the failure does not name the mismatch and both fingerprints:\n%s", msg)
		}
	})

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
	w.noTraces(t, id)
}

// webFlow creates a 3-node web-cluster on provider ("" for the template's)
// and takes it through the balancer check, configure with restarts, an
// added service and a scale out to 5; it returns the cluster, ACTIVE.
func webFlow(t *testing.T, w *world, provider string) string {
	t.Helper()
	id := w.create(t, "web-cluster", provider, 3)
	w.follow(t, id, "ACTIVE", 5*time.Minute)
	c := w.cluster(t, id)
	lbs, webs := withService(c, "lb"), withService(c, "web")
	if len(lbs) != 1 || len(webs) != 2 {
		t.Fatalf("layout: %d lb, %d web nodes, want 1 and 2: %+v", len(lbs), len(webs), c.Nodes)
	}
	lbURL := "http://" + lbs[0].Ipaddresses["access_v4"] + "/"
	for host, body := range answers(t, lbURL, hostnames(webs), 30*time.Second) {
		if body != host+" hello from coopr" {
			t.Errorf("web node %s answers %q", host, body)
		}
	}

	t.Run("configure with restart", func(t *testing.T) {
		var cfg struct {
			Cluster struct{ Config map[string]any }
		}
		w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { config } }`, map[string]any{"id": id}, &cfg)
		conf := cfg.Cluster.Config
		conf["web"] = map[string]any{"greeting": "reconfigured"}
		w.operate(t, id, map[string]any{"operation": "CONFIGURE_WITH_RESTART", "config": conf})
		w.follow(t, id, "ACTIVE", 3*time.Minute)
		for host, body := range answers(t, lbURL, hostnames(webs), 30*time.Second) {
			if body != host+" reconfigured" {
				t.Errorf("after configure, web node %s answers %q", host, body)
			}
		}
	})

	t.Run("add a service", func(t *testing.T) {
		w.operate(t, id, map[string]any{"operation": "ADD_SERVICES", "services": []string{"metrics"}})
		w.follow(t, id, "ACTIVE", 3*time.Minute)
		ms := withService(w.cluster(t, id), "metrics")
		if len(ms) == 0 {
			t.Fatal("no node has metrics after ADD_SERVICES")
		}
		for _, n := range ms {
			got := answers(t, "http://"+n.Ipaddresses["access_v4"]+":9100/", []string{"up"}, 20*time.Second)
			if got["up"] != "up "+n.Hostname {
				t.Errorf("metrics on %s answers %q", n.Hostname, got["up"])
			}
		}
	})

	t.Run("scale out to 5", func(t *testing.T) {
		w.operate(t, id, map[string]any{"operation": "SCALE", "numMachines": 5})
		w.follow(t, id, "ACTIVE", 5*time.Minute)
		c := w.cluster(t, id)
		webs := withService(c, "web")
		if len(c.Nodes) != 5 || len(webs) != 4 {
			t.Fatalf("after scale: %d nodes, %d web, want 5 and 4", len(c.Nodes), len(webs))
		}
		answers(t, lbURL, hostnames(webs), 30*time.Second)
	})
	if t.Failed() {
		t.FailNow()
	}
	return id
}

// settle waits for the cluster to leave PENDING and returns its status.
func (w *world) settle(t testing.TB, id string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c := w.cluster(t, id)
		if c.Status != "PENDING" && len(c.Jobs) > 0 && c.Jobs[0].State != "RUNNING" && c.Jobs[0].State != "NOT_SUBMITTED" {
			return c.Status
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("cluster %s still PENDING after %s", id, timeout)
	return ""
}

// rekey gives the node at addr new SSH host keys, as a reinstalled or
// impersonated machine would show.
func rekey(t testing.TB, w *world, cluster, addr string) {
	t.Helper()
	creds, err := credentials.New(w.s.Config.CredentialKey)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := creds.Get(context.Background(), w.s.Srv.Store().DB(), cluster)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := secrets["ssh"]["privateKey"].(string)
	signer, err := ssh.ParsePrivateKey([]byte(pem))
	if err != nil {
		t.Fatalf("cluster key: %v", err)
	}
	c, err := ssh.Dial("tcp", net.JoinHostPort(addr, "22"), &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// sshd keeps serving with the keys it loaded: restart it after the
	// swap, and end the connections it already had (the agent's too), as a
	// reinstalled machine would.
	if out, err := s.CombinedOutput(`rm -f /etc/ssh/ssh_host_* && ssh-keygen -A >/dev/null &&
		nohup sh -c 'sleep 0.3; systemctl restart ssh.service; pkill -f "^sshd: root"' >/dev/null 2>&1 &`); err != nil {
		t.Fatalf("rekey %s: %v: %s", addr, err, out)
	}
	// Wait for the new sshd to answer.
	time.Sleep(time.Second)
	for i := 0; i < 50; i++ {
		if conn, err := net.DialTimeout("tcp", net.JoinHostPort(addr, "22"), time.Second); err == nil {
			conn.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("sshd on %s did not come back", addr)
}
