package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
)

// CapacityUse is a provider's room as its vm driver declares it
// (drivers.Capacity) and what a request would take of it.
type CapacityUse struct {
	Provider  string // the provider's name
	Pool      string // what its nodes take, e.g. "a /24 of 10.232.0.0/16 for each cluster"
	Nodes     int    // nodes it holds in all
	Used      int    // held by nodes of clusters not TERMINATED, any tenant's
	Requested int    // nodes the request adds
	// With a per-cluster capacity (drivers.Capacity.PerCluster): Nodes
	// and Used are the cluster's own, and a new cluster needs one of
	// Clusters (0: no limit), of which ClustersUsed are held.
	PerCluster   bool
	Clusters     int
	ClustersUsed int
}

// Free is how many more nodes fit.
func (u CapacityUse) Free() int { return max(0, u.Nodes-u.Used) }

// noClusterRoom says a new cluster would find no room of its own.
func (u CapacityUse) noClusterRoom() bool {
	return u.PerCluster && u.Clusters > 0 && u.Used == 0 && u.ClustersUsed >= u.Clusters
}

// CapacityError is a request for more nodes than its provider has room
// for: refused before anything is made.
type CapacityError struct{ CapacityUse }

func (e *CapacityError) Error() string {
	if e.noClusterRoom() {
		return fmt.Sprintf("provider %s cannot take another cluster: it has room for %d clusters at once (%s), all held by clusters "+
			"not TERMINATED; delete clusters or give the provider a larger range", e.Provider, e.Clusters, e.Pool)
	}
	if e.PerCluster {
		return fmt.Sprintf("provider %s cannot take %d more nodes in this cluster: it has room for %d (%s: %d nodes in each cluster, %d held by this one); "+
			"ask for fewer nodes, or give the provider's clusters larger subnets", e.Provider, e.Requested, e.Free(), e.Pool, e.Nodes, e.Used)
	}
	return fmt.Sprintf("provider %s cannot take %d more nodes: it has room for %d (%s: %d nodes in all, %d held by clusters "+
		"not TERMINATED); delete clusters, ask for fewer nodes, or give the provider more room",
		e.Provider, e.Requested, e.Free(), e.Pool, e.Nodes, e.Used)
}

// capacityLockClass namespaces the per-provider-type capacity lock.
const capacityLockClass = 0x63617061 // "capa"

// checkCapacity tells whether requested more nodes fit on prov (the
// cluster's copy, with the accepted public fields) and returns its use;
// nil when its driver declares no capacity. Inside a transaction it first
// takes the lock of the provider's type, held until commit, so that two
// requests cannot both take the last room, whatever their tenants;
// callers hold the tenant's quota lock already, always in that order.
//
// Nodes of every cluster not TERMINATED whose provider shares a group
// with prov count, failed ones too (they may hold their places until
// deleted). A node is in a group when its provider has only that one, or
// when its vm.providerId is the group's key; a node its driver has not
// placed yet (no providerId) may take any of its provider's groups, and
// counts when any of them is prov's.
//
// With a per-cluster capacity only the nodes of cluster (the one growing;
// "" for a new cluster) count, and a new cluster also needs one of the
// provider's clusters' places (perClusterUse).
func (s *Service) checkCapacity(ctx context.Context, q sqlx.ExtContext, prov *catalog.Provider, cluster string, requested int) (*CapacityUse, error) {
	if prov == nil || s.Capacity[prov.ProviderType] == nil {
		return nil, nil
	}
	rule := s.Capacity[prov.ProviderType]
	netType := ""
	if prov.Network != nil {
		netType = prov.Network.Type
	}
	c, err := rule(prov.Provisioner, netType)
	if err != nil {
		return nil, invalid("provider", "provider %s cannot make nodes: %v", prov.Name, err)
	}
	if _, ok := q.(*sqlx.Tx); ok {
		if _, err := q.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, capacityLockClass, prov.ProviderType); err != nil {
			return nil, err
		}
	}
	if c.PerCluster {
		use, err := perClusterUse(ctx, q, rule, prov, c, cluster, requested)
		if err != nil {
			return nil, err
		}
		if requested > use.Free() || use.noClusterRoom() {
			return use, &CapacityError{*use}
		}
		return use, nil
	}
	ours := map[string]bool{}
	for _, g := range c.Groups {
		ours[g.Key] = true
	}
	rows, err := q.QueryxContext(ctx, `SELECT coalesce(c.snapshot->'provider'->'provisioner', '{}'),
			coalesce(c.snapshot->'provider'->'network'->>'type', ''), array_agg(coalesce(n.facts->'vm'->>'providerId', ''))
		FROM clusters c JOIN nodes n ON n.cluster_id = c.id
		WHERE c.status <> 'TERMINATED' AND c.snapshot->'provider'->>'providertype' = $1
		GROUP BY c.id`, prov.ProviderType)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// Clusters of one provider have the same fields: rule them once.
	rules := map[string]*drivers.Capacity{}
	used := 0
	for rows.Next() {
		var raw []byte
		var netType string
		var placed pq.StringArray
		if err := rows.Scan(&raw, &netType, &placed); err != nil {
			return nil, err
		}
		theirs, ok := rules[netType+"\x00"+string(raw)]
		if !ok {
			var fields map[string]any
			if json.Unmarshal(raw, &fields) == nil {
				// A provider its driver refuses made no nodes anywhere.
				if tc, err := rule(fields, netType); err == nil && !tc.PerCluster {
					theirs = &tc
				}
			}
			rules[netType+"\x00"+string(raw)] = theirs
		}
		if theirs == nil {
			continue
		}
		groups, shared := map[string]bool{}, false
		for _, g := range theirs.Groups {
			groups[g.Key] = true
			shared = shared || ours[g.Key]
		}
		if !shared {
			continue
		}
		for _, at := range placed {
			switch {
			case len(groups) == 1:
				used++ // in its only group, which is ours
			case groups[at]:
				if ours[at] {
					used++
				}
			default:
				used++ // not placed yet: it may take one of ours
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	use := &CapacityUse{Provider: prov.Name, Pool: c.Name, Nodes: c.Nodes(), Used: used, Requested: requested}
	if requested > use.Free() {
		return use, &CapacityError{*use}
	}
	return use, nil
}

// perClusterUse is a per-cluster capacity's use: the cluster's own nodes
// against its groups, and, for a new cluster, the clusters not TERMINATED
// whose providers' rules name the same ClusterKey.
func perClusterUse(ctx context.Context, q sqlx.ExtContext, rule drivers.NetworkCapacityFunc, prov *catalog.Provider, c drivers.Capacity,
	cluster string, requested int) (*CapacityUse, error) {
	use := &CapacityUse{Provider: prov.Name, Pool: c.Name, Nodes: c.Nodes(), Requested: requested, PerCluster: true, Clusters: c.Clusters}
	if cluster != "" {
		if err := sqlx.GetContext(ctx, q, &use.Used, `SELECT count(*) FROM nodes WHERE cluster_id = $1`, cluster); err != nil {
			return nil, err
		}
		return use, nil
	}
	if c.Clusters == 0 {
		return use, nil
	}
	rows, err := q.QueryxContext(ctx, `SELECT coalesce(c.snapshot->'provider'->'provisioner', '{}'),
			coalesce(c.snapshot->'provider'->'network'->>'type', ''), count(*)
		FROM clusters c
		WHERE c.status <> 'TERMINATED' AND c.snapshot->'provider'->>'providertype' = $1
		GROUP BY 1, 2`, prov.ProviderType)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var raw []byte
		var netType string
		var n int
		if err := rows.Scan(&raw, &netType, &n); err != nil {
			return nil, err
		}
		var fields map[string]any
		if json.Unmarshal(raw, &fields) != nil {
			continue
		}
		if tc, err := rule(fields, netType); err == nil && tc.PerCluster && tc.ClusterKey == c.ClusterKey {
			use.ClustersUsed += n
		}
	}
	return use, rows.Err()
}
