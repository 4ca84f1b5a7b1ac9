package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers/vm/libvirt"
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
	accel := os.Getenv("COOPR_TEST_LIBVIRT_ACCEL")
	if accel == "" {
		accel = libvirt.AccelTCG
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	err := libvirt.Usable(ctx, libvirt.DefaultURI, accel)
	cancel()
	if err != nil {
		b.Skipf("libvirt is not usable here (%v): scripts/test-prereqs installs and starts it", err)
	}
	ictx, icancel := context.WithTimeout(context.Background(), 20*time.Minute)
	_, err = libvirt.EnsureImage(ictx, "", slog.New(slog.NewTextHandler(os.Stderr, nil)))
	icancel()
	if err != nil {
		b.Fatalf("libvirt base image: %v", err)
	}
	const size = 4
	w := newWorld(b, size)
	b.Cleanup(func() {
		if err := libvirt.Cleanup(context.Background(), libvirt.CleanupOptions{StateDir: w.libvirtCfg.StateDir, All: true, Log: w.log}); err != nil {
			b.Errorf("libvirt cleanup: %v", err)
		}
	})
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERS, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "libvirt", "providertype": "libvirt",
			"provisioner": map[string]any{"accelerator": accel, "pool": "coopr-test", "poolPath": "/var/lib/libvirt/coopr-test",
				"clusterRange": fmt.Sprintf("10.239.%d.0/24", netIndex), "clusterPrefix": "28"},
			"network": map[string]any{"type": "libvirt", "fields": map[string]any{}}}}, &struct{}{})
	w.startAgent(b, "bench", size)

	type leg struct {
		name, template, provider string
		active, deleted           time.Duration
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
