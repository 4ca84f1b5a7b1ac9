package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/vm/local"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// poolHosts boots n machines outside coopr, as an admin's existing fleet:
// containers with sshd that accept key, and returns their addresses.
func poolHosts(t testing.TB, w *world, n int, pub string) []string {
	t.Helper()
	drv := local.New(w.localCfg, w.log)
	addrs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task := func(action string) *drivers.Task {
				tk := &drivers.Task{TaskID: fmt.Sprintf("fleet-%d-%s", i, action), ClusterID: "fleet", TaskName: action,
					Node:    &drivers.Node{ID: fmt.Sprintf("fleet-%d", i), Hostname: fmt.Sprintf("fleet%d.example", i)},
					Secrets: map[string]map[string]any{"ssh": {"publicKey": pub}}}
				tk.Cluster.ID = "fleet"
				tk.Provider.ProviderType = "local"
				return tk
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			r := drv.Run(ctx, task("CREATE"), nopOutput{})
			if r.Status != 0 {
				errs[i] = fmt.Errorf("CREATE fleet host %d: %s", i, r.Message)
				return
			}
			c := task("CONFIRM")
			c.Node.Facts = map[string]any{"vm": r.Facts}
			r = drv.Run(ctx, c, nopOutput{})
			if r.Status != 0 {
				errs[i] = fmt.Errorf("CONFIRM fleet host %d: %s", i, r.Message)
				return
			}
			addrs[i] = r.IPAddresses["access_v4"]
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return addrs
}

type nopOutput struct{}

func (nopOutput) Stdout(string)          {}
func (nopOutput) Stderr(string)          {}
func (nopOutput) Status(string, float64) {}

// The same web cluster life on machines that already exist: the pool
// provider lends a host to each node (5 hosts for the scale out), the
// services are installed over SSH, and a delete wipes the hosts and gives
// them back.
func TestWebClusterOnPool(t *testing.T) {
	w := newWorld(t, 8)
	w.startAgent(t, "agent-1", 8)

	key := sshdtest.NewKey(t)
	hosts := poolHosts(t, w, 5, key.AuthorizedKey)

	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "pool", "providertype": "pool",
			"provisioner": map[string]any{"hosts": strings.Join(hosts, " "), "ssh_user": "root",
				"ssh_key": string(key.PEM), "wipe_script": "rm -rf /srv/coopr-web /srv/coopr-metrics"},
			"network": map[string]any{"type": "hosts", "fields": map[string]any{}}}}, &struct{}{})

	id := webFlow(t, w, "pool")
	used := map[string]bool{}
	for _, n := range w.cluster(t, id).Nodes {
		a := n.Ipaddresses["access_v4"]
		if !strings.Contains(" "+strings.Join(hosts, " ")+" ", " "+a+" ") || used[a] {
			t.Errorf("node %s got address %q: not a pool host, or one lent twice (%v)", n.Hostname, a, hosts)
		}
		used[a] = true
		// The key coopr shows is the one the host presents, and the
		// command logs in where the node is.
		shown := hostKeyOf(t, a)
		if len(n.HostKeys) != 1 || n.HostKeys[0].Fingerprint != ssh.FingerprintSHA256(shown) ||
			n.HostKeys[0].Key != strings.TrimSpace(string(ssh.MarshalAuthorizedKey(shown))) || n.HostKeys[0].Type != shown.Type() {
			t.Errorf("node %s: host keys %+v, the host presents %s", n.Hostname, n.HostKeys, ssh.FingerprintSHA256(shown))
		}
		if n.SSHCommand != "ssh root@"+a {
			t.Errorf("node %s: sshCommand %q, want %q", n.Hostname, n.SSHCommand, "ssh root@"+a)
		}
	}

	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
	// Every host is free again and wiped.
	for _, h := range hosts {
		out := sshRun(t, h, key.Signer, "test -e /var/lib/coopr/pool/lease && echo leased; test -e /srv/coopr-web && echo unwiped; true")
		if strings.TrimSpace(out) != "" {
			t.Errorf("pool host %s after the delete: %s", h, out)
		}
	}
}

func sshRun(t testing.TB, addr string, key ssh.Signer, cmd string) string {
	t.Helper()
	c, err := ssh.Dial("tcp", net.JoinHostPort(addr, "22"), &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
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
	out, err := s.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s on %s: %v: %s", cmd, addr, err, out)
	}
	return string(out)
}

// hostKeyOf is the host key addr's sshd presents.
func hostKeyOf(t testing.TB, addr string) ssh.PublicKey {
	t.Helper()
	var shown ssh.PublicKey
	c, err := ssh.Dial("tcp", net.JoinHostPort(addr, "22"), &ssh.ClientConfig{User: "nobody", Timeout: 10 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error { shown = k; return nil }})
	if err == nil {
		c.Close()
	}
	if shown == nil {
		t.Fatalf("no host key from %s: %v", addr, err)
	}
	return shown
}
