package libvirt

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
)

func TestClusterRange(t *testing.T) {
	for _, tc := range []struct {
		fields map[string]any
		rng    string
		bits   int
		err    string
	}{
		{map[string]any{}, DefaultClusterRange, DefaultClusterPrefix, ""},
		{map[string]any{"clusterRange": "10.9.0.0/20", "clusterPrefix": "28"}, "10.9.0.0/20", 28, ""},
		{map[string]any{"clusterPrefix": 26.0}, DefaultClusterRange, 26, ""},
		{map[string]any{"clusterRange": "10.9.0.0/24", "clusterPrefix": "20"}, "", 0, "clusterPrefix"},
		{map[string]any{"clusterRange": "fd00::/48"}, "", 0, "clusterRange"},
		{map[string]any{"clusterPrefix": "/30"}, "", 0, "clusterPrefix"},
	} {
		r, bits, err := clusterRange(tc.fields)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want an error naming %s", tc.fields, err, tc.err)
			}
			continue
		}
		if err != nil || r.String() != tc.rng || bits != tc.bits {
			t.Errorf("%v: %s /%d %v, want %s /%d", tc.fields, r, bits, err, tc.rng, tc.bits)
		}
	}
}

// TestClusterNetworks: with the network type libvirt every cluster gets an
// isolated network of its own, made once however often ALLOCATE and
// CREATE ask; a node reaches the host but not another cluster's node;
// RELEASE refuses (retryably) while nodes are on the network, then removes
// it, and succeeds again when it is gone.
func TestClusterNetworks(t *testing.T) {
	e := newTestEnv(t)
	key := newClusterKey(t)
	e.fields["clusterRange"] = "10.237.0.0/20"
	e.fields["clusterPrefix"] = "28"
	nd := NewNetwork(e.cfg, nil, nil)
	drv := New(e.cfg, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	stamp := time.Now().UnixNano() % 1e6
	clusters := []string{fmt.Sprintf("lvneta%d", stamp), fmt.Sprintf("lvnetb%d", stamp)}
	task := func(cluster, action string) *drivers.Task {
		tk := e.task(key, cluster, "node-1", "n1-"+cluster, action)
		tk.Provider.Network = map[string]any{"type": "libvirt", "fields": map[string]any{}}
		if strings.HasPrefix(action, "NETWORK_") {
			tk.Node = nil
		}
		return tk
	}
	subnets := map[string]string{}
	for _, cl := range clusters {
		for i := range 2 {
			r := nd.Run(ctx, task(cl, "NETWORK_ALLOCATE"), nil)
			if r.Status != 0 {
				t.Fatalf("ALLOCATE %s #%d: %d %s", cl, i+1, r.Status, r.Message)
			}
			if i == 1 && r.Message != subnets[cl] {
				t.Errorf("ALLOCATE %s again: %q, first %q", cl, r.Message, subnets[cl])
			}
			subnets[cl] = r.Message
		}
	}
	if subnets[clusters[0]] == subnets[clusters[1]] {
		t.Fatalf("two clusters got one network: %s", subnets[clusters[0]])
	}

	results := make([]drivers.Result, 2)
	var wg sync.WaitGroup
	for i, cl := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := drv.Run(ctx, task(cl, "CREATE"), nil)
			if r.Status == 0 {
				r = drv.Run(ctx, withFacts(task(cl, "CONFIRM"), r), nil)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	for i, r := range results {
		defer drv.Run(context.Background(), withFacts(task(clusters[i], "DELETE"), r), nil)
		if r.Status != 0 {
			t.Fatalf("CREATE and CONFIRM in %s: %d %s", clusters[i], r.Status, r.Message)
		}
	}
	c, err := connect(ctx, DefaultURI, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	addrs := make([]netip.Addr, 2)
	gws := make([]netip.Addr, 2)
	for i, cl := range clusters {
		l, ok, err := c.lookupNetwork(clusterNetName(e.cfg.StateDir, cl))
		if err != nil || !ok {
			t.Fatalf("network of %s: %v %v", cl, ok, err)
		}
		addrs[i] = netip.MustParseAddr(results[i].IPAddresses["access_v4"])
		gws[i] = l.gw
		if !l.prefix.Contains(addrs[i]) || l.prefix.Bits() != 28 || !netip.MustParsePrefix("10.237.0.0/20").Contains(l.prefix.Addr()) {
			t.Errorf("node of %s at %s, its network %s: want a /28 of 10.237.0.0/20 holding it", cl, addrs[i], l.prefix)
		}
	}
	probe := fmt.Sprintf("ping -c1 -W2 %s >/dev/null && echo host-ok || echo host-no; ping -c1 -W2 %s >/dev/null && echo other-ok || echo other-no; timeout 3 bash -c 'echo >/dev/tcp/%s/22' 2>/dev/null && echo ssh-ok || echo ssh-no",
		gws[0], addrs[1], addrs[1])
	out := sshRun(t, addrs[0].String(), key, probe)
	if !strings.Contains(out, "host-ok") || !strings.Contains(out, "other-no") || !strings.Contains(out, "ssh-no") {
		t.Errorf("from %s's node: %q, want the host reached and the other cluster's node not", clusters[0], out)
	}

	r := nd.Run(ctx, task(clusters[0], "NETWORK_RELEASE"), nil)
	if r.Status == 0 || (r.Retryable != nil && !*r.Retryable) || !strings.Contains(r.Message, "still has nodes") {
		t.Errorf("RELEASE with a node on the network: %d retryable %v %q, want a retryable failure", r.Status, r.Retryable == nil, r.Message)
	}
	for i, cl := range clusters {
		if r := drv.Run(ctx, withFacts(task(cl, "DELETE"), results[i]), nil); r.Status != 0 {
			t.Fatalf("DELETE in %s: %s", cl, r.Message)
		}
		for j, want := range []string{"released", "already gone"} {
			r := nd.Run(ctx, task(cl, "NETWORK_RELEASE"), nil)
			if r.Status != 0 || !strings.Contains(r.Message, want) {
				t.Errorf("RELEASE %s #%d: %d %q, want %q", cl, j+1, r.Status, r.Message, want)
			}
		}
	}
}
