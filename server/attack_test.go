package server_test

import (
	"encoding/json"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/queue/queuetest"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/store/storetest"
)

// attackWorld is a server with the example catalog (examples/catalog) and
// a tenant, acme, whose plain user alice has made some clusters: the
// setting of the request-path attacks (docs/api.md, Limits).
type attackWorld struct {
	s        *servertest.Server
	admin    string
	alice    string
	clusters []string
}

// newAttackWorld starts a server with the defaults that set adjusts (nil:
// none) and has alice create clusters web-clusters of 3 machines. Their
// jobs stay queued: no agent runs.
func newAttackWorld(tb testing.TB, clusters int, set func(*server.Config)) *attackWorld {
	tb.Helper()
	dsn, _ := storetest.NewDSN(tb)
	_, prefix := queuetest.New(tb)
	cfg := server.Defaults()
	cfg.DatabaseURL, cfg.RedisURL, cfg.RedisPrefix = dsn, queuetest.URL(), prefix
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.CredentialKey = servertest.Key()
	if set != nil {
		set(&cfg)
	}
	s := servertest.StartWith(tb, cfg)
	c, is, err := catalog.LoadPath("../examples/catalog")
	if err != nil || is.HasErrors() {
		tb.Fatalf("examples/catalog: %v %v", err, is.Errors())
	}
	b, err := c.Bundle()
	if err != nil {
		tb.Fatal(err)
	}
	var own map[string]any
	if err := json.Unmarshal(b, &own); err != nil {
		tb.Fatal(err)
	}
	shared := map[string]any{}
	for _, k := range []string{"providertypes", "automatortypes"} {
		shared[k] = own[k]
		delete(own, k)
	}
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, &struct{}{})
	w := &attackWorld{s: s}
	w.admin, w.alice = tenantTokens(tb, s, "acme")
	s.Must(w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": own}, &struct{}{})
	for range clusters {
		var cr struct{ CreateCluster struct{ ID string } }
		s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`,
			map[string]any{"in": map[string]any{"name": "web", "clusterTemplate": "web-cluster", "numMachines": 3}}, &cr)
		w.clusters = append(w.clusters, cr.CreateCluster.ID)
	}
	return w
}

// heap reads the runtime's own figures: bytes of heap objects (live, and
// dead ones not yet swept) and bytes allocated since the process began.
func heap() (inUse, allocated uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// liveHeap is the heap's live bytes after a forced collection.
func liveHeap() uint64 {
	runtime.GC()
	n, _ := heap()
	return n
}

// heapPeak samples the heap every millisecond until stop and returns the
// highest figure seen above base.
type heapPeak struct {
	base uint64
	stop chan struct{}
	done chan uint64
}

func watchHeap() *heapPeak {
	p := &heapPeak{base: liveHeap(), stop: make(chan struct{}), done: make(chan uint64, 1)}
	go func() {
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			n, _ := heap()
			peak = max(peak, n)
			select {
			case <-p.stop:
				p.done <- peak - min(peak, p.base)
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *heapPeak) Stop() uint64 {
	close(p.stop)
	return <-p.done
}
