package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// recordCheck writes what a settled CLUSTER_CHECK job found into the
// cluster's last_check (docs/operations.md#checking-a-cluster) and returns
// a one-line summary for the cluster's event.
func recordCheck(ctx context.Context, tx *sqlx.Tx, cluster, job string) (string, error) {
	var rows []struct {
		ID       string         `db:"id"`
		NodeNum  int            `db:"nodenum"`
		Hostname string         `db:"hostname"`
		Services pq.StringArray `db:"services"`
		IPs      []byte         `db:"ipaddresses"`
		Facts    []byte         `db:"facts"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT id, nodenum, hostname, services, ipaddresses, facts
		FROM nodes WHERE cluster_id = $1 AND NOT leaving ORDER BY nodenum`, cluster); err != nil {
		return "", err
	}
	var rawSvcs []byte
	if err := tx.GetContext(ctx, &rawSvcs, `SELECT services FROM jobs WHERE id = $1`, job); err != nil {
		return "", err
	}
	var svcs map[string]*catalog.Service
	if err := json.Unmarshal(rawSvcs, &svcs); err != nil {
		return "", fmt.Errorf("job %s services: %w", job, err)
	}
	nodes := make([]planner.Observed, len(rows))
	for i, r := range rows {
		n := planner.Observed{ID: r.ID, NodeNum: r.NodeNum, Hostname: r.Hostname, Services: r.Services}
		if len(r.IPs) > 0 {
			if err := json.Unmarshal(r.IPs, &n.IPAddresses); err != nil {
				return "", fmt.Errorf("node %s addresses: %w", r.ID, err)
			}
		}
		if len(r.Facts) > 0 {
			if err := json.Unmarshal(r.Facts, &n.Facts); err != nil {
				return "", fmt.Errorf("node %s facts: %w", r.ID, err)
			}
		}
		nodes[i] = n
	}
	report := planner.Diagnose(job, nodes, func(s string) planner.ServiceProbe {
		if svcs[s] == nil {
			return planner.ServiceProbe{}
		}
		return planner.ServiceProbe{Status: svcs[s].HasAction("status"), Units: svcs[s].CheckUnits()}
	})
	b, err := json.Marshal(report)
	if err != nil {
		return "", err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE clusters SET last_check = $2, last_check_at = now() WHERE id = $1`, cluster, b); err != nil {
		return "", err
	}
	return CheckSummary(report), nil
}

// CheckSummary says in one line what a check found.
func CheckSummary(r planner.CheckReport) string {
	if r.Healthy {
		return fmt.Sprintf("check: all %d nodes healthy", len(r.Nodes))
	}
	bad, findings := 0, 0
	for _, n := range r.Nodes {
		if len(n.Findings) > 0 {
			bad++
			findings += len(n.Findings)
		}
	}
	return fmt.Sprintf("check: %d finding(s) on %d of %d nodes", findings, bad, len(r.Nodes))
}
