package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	// macros indexes the nodes for macro expansion, once per view: each
	// service task's expansion then costs what its config holds, not what
	// the cluster does.
	macros *macro.Env

	// What a refresh builds on: the cluster row's version, the snapshot
	// the view was read in, the nodes with their view_seq, and the
	// automator types by service.
	xmin       string
	snapshot   string
	nodes      map[string]viewNode
	order      []string // the nodes' ids by nodenum
	automators map[string][]string
}

// viewNode is a node as a view keeps it.
type viewNode struct {
	NodePayload
	Leaving bool  `json:"leaving"`
	Seq     int64 `json:"view_seq"`
}

func (cv *clusterView) env(self string) *macro.Env { return cv.macros.At(self) }

// viewKey is an expression over clusters cl that changes whenever anything
// a view is built from changes: a row version's xmin is new at every
// update, and every node's view_seq is new at every change to what a view
// shows of it (a trigger numbers it; facts do not count). The key holds
// the nodes' count, the sum of their numbers and the highest; they come
// from the index on (cluster_id, view_seq) without reading the rows.
const viewKey = `(cl.xmin::text || ':' || (SELECT count(*) || ':' || coalesce(sum(n.view_seq), 0) || ':' || coalesce(max(n.view_seq), 0)
	FROM nodes n WHERE n.cluster_id = cl.id))`

// ContextKey is the SQL of the key under which the API keeps a cluster's
// claim context (its provider and decrypted secrets): the versions of the
// cluster's row and of each of its credential rows, over a row cl of
// clusters. The claim statement reads it beside the view's key, so that a
// claim learns in the same round trip whether the context kept is current.
const ContextKey = `(cl.xmin::text || '/' || coalesce((SELECT string_agg(c.namespace || ':' || c.xmin::text, ',' ORDER BY c.namespace)
	FROM credentials c WHERE c.cluster_id = cl.id), ''))`

// viewKeyParts splits a key into the cluster row's version, the nodes'
// count, the sum of their view_seq and the highest.
func viewKeyParts(key string) (xmin string, count, sum, top int64, ok bool) {
	f := strings.Split(key, ":")
	if len(f) != 4 {
		return "", 0, 0, 0, false
	}
	var err1, err2, err3 error
	count, err1 = strconv.ParseInt(f[1], 10, 64)
	sum, err2 = strconv.ParseInt(f[2], 10, 64)
	top, err3 = strconv.ParseInt(f[3], 10, 64)
	return f[0], count, sum, top, err1 == nil && err2 == nil && err3 == nil
}

// viewNodeJSON is a node as a view reads it.
const viewNodeJSON = `jsonb_build_object('id', n.id, 'nodenum', n.nodenum, 'hostname', n.hostname,
		'ipaddresses', n.ipaddresses, 'services', n.services, 'leaving', n.leaving, 'sshuser', n.sshuser,
		'hardwaretype', n.hardwaretype, 'imagetype', n.imagetype, 'flavor', n.flavor, 'image', n.image,
		'view_seq', n.view_seq)`

// viewSQL reads a cluster's view and its key in one snapshot; the automator
// types are read per service of the cluster's catalog snapshot, once.
const viewSQL = `SELECT ` + viewKey + ` AS view_key, cl.xmin::text AS xmin, pg_current_snapshot()::text AS snapshot,
		cl.name, cl.owner, cl.config,
		(SELECT coalesce(jsonb_object_agg(s.key, (SELECT coalesce(jsonb_agg(DISTINCT a.value ->> 'type'), '[]')
				FROM jsonb_each(coalesce(s.value -> 'provisioner' -> 'actions', '{}')) a WHERE a.value ->> 'type' IS NOT NULL)), '{}')
			FROM jsonb_each(coalesce(cl.snapshot -> 'services', '{}')) s) AS automators,
		coalesce((SELECT jsonb_agg(` + viewNodeJSON + `) FROM nodes n WHERE n.cluster_id = cl.id), '[]') AS nodes
	FROM clusters cl WHERE cl.id = $1`

// refreshSQL reads a key and, in the same snapshot, the nodes changed by
// transactions that snapshot $2 (a view's) could not see. Those have a
// view_xid at or above its xmin, which the index on (cluster_id,
// view_xid) finds without reading the cluster's other nodes.
const refreshSQL = `SELECT ` + viewKey + ` AS view_key, cl.xmin::text AS xmin, pg_current_snapshot()::text AS snapshot,
		coalesce((SELECT jsonb_agg(` + viewNodeJSON + `) FROM nodes n WHERE n.cluster_id = cl.id
			AND n.view_xid >= pg_snapshot_xmin($2::pg_snapshot) AND NOT pg_visible_in_snapshot(n.view_xid, $2::pg_snapshot)), '[]') AS nodes
	FROM clusters cl WHERE cl.id = $1`

// idsSQL lists a cluster's nodes, for a refresh that finds fewer nodes
// than its view holds.
const idsSQL = `SELECT id FROM nodes WHERE cluster_id = $1`

// maxViews bounds the views kept: one per cluster with work under way is
// plenty.
const maxViews = 256

// views keeps the clusters' views by cluster, each under its key. A view
// is shared by every payload built from it and never changed.
type views struct {
	db *sqlx.DB
	mu sync.Mutex
	m  map[string]*clusterView
	// reads and refreshes count the whole and the partial reads, and
	// current the views a claim found current (viewCurrent), for tests.
	reads, refreshes, current atomic.Int64
}

// get returns the cluster's view for key, read again if the kept one is
// older: only the nodes changed since, when the cluster row is the same.
// The view read may be newer than key, which is as good: payloads carry
// the records as they are at claim time or later.
func (vs *views) get(ctx context.Context, cluster, key string) (*clusterView, error) {
	vs.mu.Lock()
	cv := vs.m[cluster]
	vs.mu.Unlock()
	if cv != nil && cv.key == key {
		return cv, nil
	}
	var next *clusterView
	var err error
	if xmin, _, _, _, ok := viewKeyParts(key); cv != nil && ok && xmin == cv.xmin {
		next, err = vs.refresh(ctx, cluster, cv)
	}
	if next == nil && err == nil {
		next, err = vs.read(ctx, cluster)
	}
	if err != nil {
		return nil, err
	}
	vs.keep(cluster, next)
	return next, nil
}

// base returns a view of the cluster whose row is at version xmin, its
// nodes as they were at some point: for payloads that take the cluster's
// name, owner, config and automator types from it, and nothing of its
// nodes. The view kept serves while the row is unchanged.
func (vs *views) base(ctx context.Context, cluster, xmin string) (*clusterView, error) {
	vs.mu.Lock()
	cv := vs.m[cluster]
	vs.mu.Unlock()
	if cv != nil && cv.xmin == xmin {
		return cv, nil
	}
	next, err := vs.read(ctx, cluster)
	if err != nil {
		return nil, err
	}
	vs.keep(cluster, next)
	return next, nil
}

// kept lists the views kept, for the claim statement to find current
// without counting their clusters' nodes (viewCurrent): by cluster, and
// their clusters, row versions and snapshots as the statement's arguments.
func (vs *views) kept() (kept map[string]*clusterView, clusters, xmins, snaps []string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	kept = make(map[string]*clusterView, len(vs.m))
	for id, cv := range vs.m {
		kept[id] = cv
		clusters, xmins, snaps = append(clusters, id), append(xmins, cv.xmin), append(snaps, cv.snapshot)
	}
	return kept, clusters, xmins, snaps
}

// advance records that cv, a view kept, is current as of snapshot: the
// view kept from now on is cv under that snapshot, unless another took
// its place meanwhile.
func (vs *views) advance(cluster string, cv *clusterView, snapshot string) *clusterView {
	vs.current.Add(1)
	next := *cv
	next.snapshot = snapshot
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.m[cluster] == cv {
		vs.m[cluster] = &next
	}
	return &next
}

// keep stores a cluster's view.
func (vs *views) keep(cluster string, cv *clusterView) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if len(vs.m) >= maxViews {
		for k := range vs.m { // any one: a cluster without work for a while
			delete(vs.m, k)
			break
		}
	}
	vs.m[cluster] = cv
}

// refresh builds a view from cv and the nodes changed since cv was read.
// It returns nil when that cannot be the cluster as it is (the cluster row
// changed): the caller reads the whole view.
func (vs *views) refresh(ctx context.Context, cluster string, cv *clusterView) (*clusterView, error) {
	var r struct {
		Key      string `db:"view_key"`
		Xmin     string `db:"xmin"`
		Snapshot string `db:"snapshot"`
		Nodes    []byte `db:"nodes"`
	}
	if err := vs.db.GetContext(ctx, &r, refreshSQL, cluster, cv.snapshot); err != nil {
		return nil, fmt.Errorf("read view: %w", err)
	}
	xmin, count, sum, _, ok := viewKeyParts(r.Key)
	if !ok || xmin != cv.xmin || r.Xmin != cv.xmin {
		return nil, nil
	}
	var changed []viewNode
	if err := json.Unmarshal(r.Nodes, &changed); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	nodes := maps.Clone(cv.nodes)
	for _, n := range changed {
		nodes[n.ID] = n
	}
	if int64(len(nodes)) > count {
		// Nodes went (a DELETE completed): keep those still there.
		var ids []string
		if err := vs.db.SelectContext(ctx, &ids, idsSQL, cluster); err != nil {
			return nil, fmt.Errorf("read view: %w", err)
		}
		there := make(map[string]bool, len(ids))
		for _, id := range ids {
			there[id] = true
		}
		maps.DeleteFunc(nodes, func(id string, _ viewNode) bool { return !there[id] })
	}
	var have int64
	for _, n := range nodes {
		have += n.Seq
	}
	if int64(len(nodes)) != count || have != sum {
		// Not the nodes the key counts (the ids were read after the key):
		// read it all.
		return nil, nil
	}
	vs.refreshes.Add(1)
	next := &clusterView{key: r.Key, name: cv.name, owner: cv.owner, config: cv.config, xmin: cv.xmin, snapshot: r.Snapshot,
		automators: cv.automators}
	next.index(nodes, cv)
	return next, nil
}

func (vs *views) read(ctx context.Context, cluster string) (*clusterView, error) {
	var r struct {
		Key        string `db:"view_key"`
		Xmin       string `db:"xmin"`
		Snapshot   string `db:"snapshot"`
		Name       string `db:"name"`
		Owner      string `db:"owner"`
		Config     []byte `db:"config"`
		Automators []byte `db:"automators"`
		Nodes      []byte `db:"nodes"`
	}
	if err := vs.db.GetContext(ctx, &r, viewSQL, cluster); err != nil {
		return nil, fmt.Errorf("read view: %w", err)
	}
	cv := &clusterView{key: r.Key, xmin: r.Xmin, snapshot: r.Snapshot, name: r.Name, owner: r.Owner}
	if err := json.Unmarshal(r.Config, &cv.config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := json.Unmarshal(r.Automators, &cv.automators); err != nil {
		return nil, fmt.Errorf("automators: %w", err)
	}
	var list []viewNode
	if err := json.Unmarshal(r.Nodes, &list); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	nodes := make(map[string]viewNode, len(list))
	for _, n := range list {
		nodes[n.ID] = n
	}
	vs.reads.Add(1)
	cv.index(nodes, nil)
	return cv, nil
}

// index sets the view's nodes, its peers and its macro index. Nodes that
// prev holds unchanged keep prev's peer records, and prev's order stands
// when the same nodes are there.
func (cv *clusterView) index(nodes map[string]viewNode, prev *clusterView) {
	cv.nodes = nodes
	if prev != nil && len(prev.order) == len(nodes) && !slices.ContainsFunc(prev.order, func(id string) bool {
		_, ok := nodes[id]
		return !ok
	}) {
		cv.order = prev.order
	} else {
		cv.order = slices.SortedFunc(maps.Keys(nodes), func(a, b string) int {
			return cmp.Compare(nodes[a].NodeNum, nodes[b].NodeNum)
		})
	}
	cv.peers = make(map[string]*NodePayload, len(nodes))
	macroNodes := make([]macro.Node, 0, len(nodes))
	for _, id := range cv.order {
		n := nodes[id]
		if p, ok := prev.unchanged(n); ok {
			cv.peers[id] = p
		} else {
			cv.peers[id] = cv.peer(n)
		}
		if !n.Leaving { // nodes a scale-in removes are out of the macro view
			macroNodes = append(macroNodes, macro.Node{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname,
				IPs: n.IPAddresses, Services: n.Services})
		}
	}
	cv.macros = macro.NewEnv(macroNodes, "", cv.owner)
}

// peer is n's record in payloads, with the automator types of its services.
func (cv *clusterView) peer(n viewNode) *NodePayload {
	types := []string{}
	for _, s := range n.Services {
		types = append(types, cv.automators[s]...)
	}
	slices.Sort(types)
	p := n.NodePayload
	p.Automators = slices.Compact(types)
	return &p
}

// unchanged is the peer record of n in cv if cv holds n as it is.
func (cv *clusterView) unchanged(n viewNode) (*NodePayload, bool) {
	if cv == nil {
		return nil, false
	}
	if old, ok := cv.nodes[n.ID]; ok && old.Seq == n.Seq {
		return cv.peers[n.ID], true
	}
	return nil, false
}
