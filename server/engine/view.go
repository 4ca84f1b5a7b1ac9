package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/cooprhq/coopr/macro"
	"github.com/jmoiron/sqlx"
)

// clusterView is what payloads carry of a cluster: its identity, its raw
// config and every node without its facts (docs/task-protocol.md#payload:
// facts are the task's own node's; all of them in every payload would grow
// with the square of the cluster's size).
type clusterView struct {
	key         string
	name, owner string
	config      any
	peers       map[string]*NodePayload
	macroNodes  []macro.Node
}

func (cv *clusterView) env(self string) *macro.Env {
	return macro.NewEnv(cv.macroNodes, self, cv.owner)
}

// viewKey is an expression over clusters cl that changes whenever anything
// a view is built from changes: a row version's xmin is new at every
// update, and the nodes' list of (id, xmin) changes with any node written,
// added or removed. It costs a scan of the cluster's node ids, not the
// building and decoding of every node that a view costs: a claim in a
// 1,000-node cluster took 80 ms when each one read the whole view.
const viewKey = `(cl.xmin::text || ':' || coalesce((SELECT md5(string_agg(n.id || ':' || n.xmin::text, ',' ORDER BY n.nodenum))
	FROM nodes n WHERE n.cluster_id = cl.id), ''))`

// viewSQL reads a cluster's view and its key in one snapshot; the automator
// types are read per service of the cluster's catalog snapshot, once.
const viewSQL = `SELECT ` + viewKey + ` AS view_key, cl.name, cl.owner, cl.config,
		(SELECT coalesce(jsonb_object_agg(s.key, (SELECT coalesce(jsonb_agg(DISTINCT a.value ->> 'type'), '[]')
				FROM jsonb_each(coalesce(s.value -> 'provisioner' -> 'actions', '{}')) a WHERE a.value ->> 'type' IS NOT NULL)), '{}')
			FROM jsonb_each(coalesce(cl.snapshot -> 'services', '{}')) s) AS automators,
		coalesce((SELECT jsonb_agg(jsonb_build_object('id', n.id, 'nodenum', n.nodenum, 'hostname', n.hostname,
				'ipaddresses', n.ipaddresses, 'services', n.services, 'leaving', n.leaving, 'sshuser', n.sshuser,
				'hardwaretype', n.hardwaretype, 'imagetype', n.imagetype, 'flavor', n.flavor, 'image', n.image) ORDER BY n.nodenum)
			FROM nodes n WHERE n.cluster_id = cl.id), '[]') AS nodes
	FROM clusters cl WHERE cl.id = $1`

// maxViews bounds the views kept: one per cluster with work under way is
// plenty.
const maxViews = 256

// views keeps the clusters' views by cluster, each under its key. A view
// is shared by every payload built from it and never changed.
type views struct {
	db *sqlx.DB
	mu sync.Mutex
	m  map[string]*clusterView
}

// get returns the cluster's view for key, read again if the kept one is
// older. The view read may be newer than key, which is as good: payloads
// carry the records as they are at claim time or later.
func (vs *views) get(ctx context.Context, cluster, key string) (*clusterView, error) {
	vs.mu.Lock()
	cv := vs.m[cluster]
	vs.mu.Unlock()
	if cv != nil && cv.key == key {
		return cv, nil
	}
	cv, err := vs.read(ctx, cluster)
	if err != nil {
		return nil, err
	}
	vs.mu.Lock()
	if len(vs.m) >= maxViews {
		for k := range vs.m { // any one: a cluster without work for a while
			delete(vs.m, k)
			break
		}
	}
	vs.m[cluster] = cv
	vs.mu.Unlock()
	return cv, nil
}

func (vs *views) read(ctx context.Context, cluster string) (*clusterView, error) {
	var r struct {
		Key        string `db:"view_key"`
		Name       string `db:"name"`
		Owner      string `db:"owner"`
		Config     []byte `db:"config"`
		Automators []byte `db:"automators"`
		Nodes      []byte `db:"nodes"`
	}
	if err := vs.db.GetContext(ctx, &r, viewSQL, cluster); err != nil {
		return nil, fmt.Errorf("read view: %w", err)
	}
	cv := &clusterView{key: r.Key, name: r.Name, owner: r.Owner}
	if err := json.Unmarshal(r.Config, &cv.config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var automators map[string][]string
	if err := json.Unmarshal(r.Automators, &automators); err != nil {
		return nil, fmt.Errorf("automators: %w", err)
	}
	var nodes []struct {
		NodePayload
		Leaving bool `json:"leaving"`
	}
	if err := json.Unmarshal(r.Nodes, &nodes); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	cv.peers = make(map[string]*NodePayload, len(nodes))
	cv.macroNodes = make([]macro.Node, 0, len(nodes))
	for _, n := range nodes {
		types := []string{}
		for _, s := range n.Services {
			types = append(types, automators[s]...)
		}
		slices.Sort(types)
		n.Automators = slices.Compact(types)
		cv.peers[n.ID] = &n.NodePayload
		if !n.Leaving { // nodes a scale-in removes are out of the macro view
			cv.macroNodes = append(cv.macroNodes, macro.Node{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname,
				IPs: n.IPAddresses, Services: n.Services})
		}
	}
	return cv, nil
}
