package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/server/servertest"
)

// make dev's tenant has quotas one machine can hold, set again at every
// start: a create beyond them is refused up front, not by a full subnet
// after hundreds of containers.
func TestDevTenantQuotas(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	o := devOptions{catalog: "../../examples/catalog", tenant: "dev", capacity: 4, maxClusters: devMaxClusters, maxNodes: devMaxNodes}
	tokens, err := devBootstrap(ctx, s.Srv, s.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	var me struct {
		Me struct {
			Tenant struct{ MaxClusters, MaxNodes *int }
		}
	}
	s.Must(tokens.admin, `{ me { tenant { maxClusters maxNodes } } }`, nil, &me)
	if q := me.Me.Tenant; q.MaxClusters == nil || *q.MaxClusters != 10 || q.MaxNodes == nil || *q.MaxNodes != 50 {
		t.Fatalf("dev tenant quotas %+v, want 10 clusters and 50 nodes", q)
	}
	r := s.Do(tokens.admin, `mutation { createCluster(input: {name: "big", clusterTemplate: "web-cluster", numMachines: 10000}) { id } }`, nil)
	if r.Code() != "QUOTA_EXCEEDED" || !strings.Contains(r.Errors[0].Message, "maxNodes is 50") {
		t.Errorf("10,000 nodes on make dev: %+v, want QUOTA_EXCEEDED on maxNodes", r.Errors)
	}

	// A restart with other flags sets them; -1 lifts a quota.
	o.maxClusters, o.maxNodes = -1, 20
	if tokens, err = devBootstrap(ctx, s.Srv, s.URL, o); err != nil {
		t.Fatal(err)
	}
	me.Me.Tenant.MaxClusters, me.Me.Tenant.MaxNodes = nil, nil
	s.Must(tokens.admin, `{ me { tenant { maxClusters maxNodes } } }`, nil, &me)
	if q := me.Me.Tenant; q.MaxClusters != nil || q.MaxNodes == nil || *q.MaxNodes != 20 {
		t.Errorf("after a restart with --max-clusters -1 --max-nodes 20: %+v", q)
	}
	if got := devQuotas(o); got != "any number of clusters and 20 nodes (--max-clusters, --max-nodes)" {
		t.Errorf("devQuotas = %q", got)
	}
}
