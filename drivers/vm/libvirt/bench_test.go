package libvirt

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
)

// BenchmarkBoot times n nodes made at once, from CREATE to SSH-ready
// (CREATE then CONFIRM, as the server runs them), and coopr's own share:
// the CREATE (pool, network, address, host keys, seed, overlay, domain
// definition and start), everything but the guest's boot, which CONFIRM
// waits out. The accelerator is the tests' (COOPR_TEST_LIBVIRT_ACCEL, tcg
// by default). COOPR_BENCH_LIBVIRT_VMS lists the node counts (default
// "1,2": the shared test machine runs at most two VMs at once). Run it
// once per count, under the VM lock:
//
//	flock /tmp/coopr-nspawn.lock go test -run '^$' -bench BenchmarkBoot -benchtime 1x ./drivers/vm/libvirt/
func BenchmarkBoot(b *testing.B) {
	counts := []int{1, 2}
	if v := os.Getenv("COOPR_BENCH_LIBVIRT_VMS"); v != "" {
		counts = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("COOPR_BENCH_LIBVIRT_VMS %q: want counts such as 1,4", v)
			}
			counts = append(counts, n)
		}
	}
	e := newTestEnv(b)
	key := newClusterKey(b)
	drv := New(e.cfg, nil)
	// The base image's upload to the pool is a first use's cost, not a
	// node's: do it before timing.
	warm := e.task(key, "benchwarm", "n", "warm", "CREATE")
	if r := drv.Run(context.Background(), warm, nil); r.Status != 0 {
		b.Fatalf("warm-up CREATE: %s", r.Message)
	} else {
		drv.Run(context.Background(), withFacts(e.task(key, "benchwarm", "n", "warm", "DELETE"), r), nil)
	}
	for _, n := range counts {
		b.Run(fmt.Sprintf("vms=%d", n), func(b *testing.B) {
			var createSum, readySum, readyMax time.Duration
			accel := ""
			for i := range b.N {
				cluster := fmt.Sprintf("bench%d-%d-%d", n, i, time.Now().UnixNano()%1e6)
				type res struct {
					create, ready time.Duration
					accel, err    string
				}
				out := make([]res, n)
				var wg sync.WaitGroup
				for j := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
						defer cancel()
						node := fmt.Sprintf("node%d", j)
						task := func(a string) *drivers.Task { return e.task(key, cluster, node, node, a) }
						start := time.Now()
						r := drv.Run(ctx, task("CREATE"), nil)
						out[j].create = time.Since(start)
						if r.Status != 0 {
							out[j].err = "CREATE: " + r.Message
							return
						}
						defer drv.Run(context.Background(), withFacts(task("DELETE"), r), nil)
						c := drv.Run(ctx, withFacts(task("CONFIRM"), r), nil)
						out[j].ready = time.Since(start)
						out[j].accel, _ = r.Facts["accelerator"].(string)
						if c.Status != 0 {
							out[j].err = "CONFIRM: " + c.Message
						}
					}()
				}
				wg.Wait()
				for j, o := range out {
					if o.err != "" {
						b.Fatalf("node %d: %s", j, o.err)
					}
					createSum += o.create
					readySum += o.ready
					readyMax = max(readyMax, o.ready)
					accel = o.accel
				}
			}
			nodes := float64(b.N * n)
			b.ReportMetric(readySum.Seconds()/nodes, "s-to-ssh/node")
			b.ReportMetric(readyMax.Seconds()/float64(b.N), "s-last-ssh")
			b.ReportMetric(float64(createSum.Milliseconds())/nodes, "ms-coopr/node")
			b.Logf("%d VM(s) at once with %s: SSH-ready after %.1f s on average, the last after %.1f s; coopr's own part (CREATE) %.0f ms a node",
				n, accel, readySum.Seconds()/nodes, readyMax.Seconds()/float64(b.N), float64(createSum.Milliseconds())/nodes)
		})
	}
}
