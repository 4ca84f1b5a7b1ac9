package e2e

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkWebClusterOnVMs builds the example catalog's web-cluster at 4
// nodes (one lb, three web) on libvirt virtual machines and, with the same
// agent and catalog, on local containers, one after the other, and prints
// each's wall time from the create to ACTIVE and of the delete. Run it as
// root with libvirt started (scripts/test-prereqs):
//
//	flock /tmp/coopr-nspawn.lock go test -run '^$' -bench WebClusterOnVMs -benchtime 1x -timeout 60m ./e2e/
//
// COOPR_TEST_LIBVIRT_ACCEL picks the accelerator (tcg by default: KVM
// guests hang on the machines this was written on).
func BenchmarkWebClusterOnVMs(b *testing.B) {
	const size = 4
	w := newLibvirtWorld(b, size, fmt.Sprintf("10.239.%d.0/24", netIndex))
	accel := libvirtAccel()
	w.startAgent(b, "bench", size)

	type leg struct {
		name, template, provider string
		active, deleted          time.Duration
	}
	legs := []*leg{{name: "local containers", template: "web-cluster", provider: "local"},
		{name: "libvirt VMs (" + accel + ")", template: "libvirt-web-cluster"}}
	b.ResetTimer()
	for range b.N {
		for _, l := range legs {
			start := time.Now()
			id := w.create(b, l.template, l.provider, size)
			w.follow(b, id, "ACTIVE", 30*time.Minute)
			l.active = time.Since(start)
			start = time.Now()
			w.delete(b, id)
			w.follow(b, id, "TERMINATED", 10*time.Minute)
			l.deleted = time.Since(start)
		}
	}
	b.StopTimer()
	fmt.Printf("\nweb-cluster, %d nodes (1 lb, %d web)\n%-22s %12s %10s\n", size, size-1, "machines", "to ACTIVE", "delete")
	for _, l := range legs {
		fmt.Printf("%-22s %11.1fs %9.1fs\n", l.name, l.active.Seconds(), l.deleted.Seconds())
	}
	b.ReportMetric(legs[1].active.Seconds()/legs[0].active.Seconds(), "vm/local")
}
