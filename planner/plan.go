package planner

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"

	"github.com/cooprhq/coopr/catalog"
)

// Node is a node of the cluster as the planner sees it.
type Node struct {
	ID string `json:"id"`
	// NodeNum orders nodes in stages; when every node has 0, the order of
	// Request.Nodes is used.
	NodeNum  int      `json:"nodenum,omitempty"`
	Services []string `json:"services"`
}

// Request is a cluster operation to plan.
type Request struct {
	Action ClusterAction
	// Services holds the definition of every service on Nodes (it may hold
	// more).
	Services map[string]*catalog.Service
	// Nodes is every node of the cluster: for SCALE_OUT including the new
	// ones, for SCALE_IN including the ones to remove.
	Nodes []Node
	// PlannedServices filters the services acted on: nil means all. For
	// START_SERVICES it grows by what they runtime-depend on, for
	// STOP_SERVICES and RESTART_SERVICES by what runtime-depends on them.
	PlannedServices []string
	// PlannedNodes filters the nodes acted on: nil means all. For SCALE_OUT
	// and SCALE_IN it filters the nodes that stay.
	PlannedNodes []string
	// NewNodes are the nodes SCALE_OUT creates.
	NewNodes []string
	// RemovedNodes are the nodes SCALE_IN deletes.
	RemovedNodes []string
	// Network adds the network steps: the provider has a network block.
	Network bool
	// Restart makes SCALE_OUT stop and start the services of the nodes that
	// stay around their CONFIGURE.
	Restart bool
	// Missing (REPAIR) maps a node id to services it lacks: they are
	// installed, configured, initialised and started again.
	Missing map[string][]string
	// Stopped (REPAIR) maps a node id to services found stopped: they are
	// started.
	Stopped map[string][]string
	// Reconfigure makes SYNC_TEMPLATE bootstrap every node and configure
	// every service the sync does not add: the config changed.
	Reconfigure bool
}

// Task is one task of a plan.
type Task struct {
	Node    string `json:"node"` // "" for a cluster-scoped task
	NodeNum int    `json:"nodenum"`
	Action  Action `json:"action"`
	Service string `json:"service"` // "" for a node-level task
	Stage   int    `json:"stage"`
	// BestEffort marks the cleanup inside a node the operation removes
	// (NETWORK_UNCONFIGURE, STOP and REMOVE of CLUSTER_DELETE, and of the
	// nodes SCALE_IN removes): when the node cannot be reached, or the
	// task's attempts are used up, the engine skips it and the removal goes
	// on. The DELETE that frees the machine is never best-effort.
	BestEffort bool `json:"bestEffort,omitempty"`
}

// Ref names the task.
func (t Task) Ref() TaskRef { return TaskRef{Node: t.Node, Action: t.Action, Service: t.Service} }

// Plan is the DAG of an operation and its stage preview.
type Plan struct {
	// Tasks in (stage, nodenum, action name, service) order.
	Tasks []Task
	// Edges are (from, to) indexes into Tasks, sorted: to waits for from.
	// A service on every node of a 1,000-node cluster that depends on
	// another one gives 10^6 edges, hence int32.
	Edges [][2]int32
	// Stages[i] holds the indexes of the tasks of stage i; no two of a node.
	Stages [][]int
}

// Hash identifies the plan: equal plans, and only they, hash alike.
func (p *Plan) Hash() string {
	h := sha256.New()
	var buf []byte
	for _, t := range p.Tasks {
		buf = buf[:0]
		buf = strconv.AppendQuote(buf, t.Node)
		buf = append(buf, ' ')
		buf = append(buf, t.Action.String()...)
		buf = append(buf, ' ')
		buf = strconv.AppendQuote(buf, t.Service)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, int64(t.Stage), 10)
		if t.BestEffort {
			buf = append(buf, " best-effort"...)
		}
		buf = append(buf, '\n')
		h.Write(buf)
	}
	for _, e := range p.Edges {
		buf = strconv.AppendInt(buf[:0], int64(e[0]), 10)
		buf = append(buf, '>')
		buf = strconv.AppendInt(buf, int64(e[1]), 10)
		buf = append(buf, '\n')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// group is a set of nodes that walk the same operation order.
type group struct {
	nodes     []int
	order     []Action
	lifecycle bool // the nodes come or go: node-level steps even without services
	filtered  bool // the service filter applies
	existing  bool // SCALE_OUT nodes that stay: they wait for the new nodes
	// only, when set, names the services (graph index) walked on each
	// node, instead of all of the node's (REPAIR).
	only   map[int][]int
	except bool // the services the filter holds are left out
}

type vkey struct {
	node   int32 // -1: the cluster
	action Action
	svc    int32 // -1: the node
}

type builder struct {
	req      *Request
	nodes    []Node
	nodeNums []int
	g        *depGraph
	svcOn    [][]int // services (graph index) of each node
	hosts    [][]int // nodes hosting each service
	filter   bitset  // nil: all services
	idx      map[vkey]int32
	verts    []vkey
	inChain  []bool
	edges    []edge
	nodeEdge map[[2]int32]bool // node-level chain edges already added
	heads    []int32           // first steps of the chains of SCALE_OUT's existing nodes
	removed  []bool            // by node: the operation removes it
}

// Build plans req (docs/planner.md).
func Build(req *Request) (*Plan, error) {
	b, groups, err := newBuilder(req)
	if err != nil {
		return nil, err
	}
	for _, gr := range groups {
		b.chains(gr)
	}
	b.crossEdges()
	b.operationEdges(groups)
	return b.plan()
}

func newBuilder(req *Request) (*builder, []group, error) {
	if !slices.Contains(ClusterActions, req.Action) {
		_, err := ParseClusterAction(string(req.Action))
		if err == nil {
			err = fmt.Errorf("cluster action %q must be upper case", req.Action)
		}
		return nil, nil, &RequestError{Field: "action", Message: err.Error()}
	}
	b := &builder{req: req, nodes: req.Nodes, idx: map[vkey]int32{}, nodeEdge: map[[2]int32]bool{}}
	nodeIdx := make(map[string]int, len(req.Nodes))
	allZero := true
	svcSet := map[string]bool{}
	for i, n := range req.Nodes {
		field := fmt.Sprintf("nodes[%d]", i)
		if n.ID == "" {
			return nil, nil, &RequestError{Field: field + ".id", Message: "is required"}
		}
		if _, dup := nodeIdx[n.ID]; dup {
			return nil, nil, &RequestError{Field: field + ".id", Message: fmt.Sprintf("node %q is listed twice", n.ID)}
		}
		nodeIdx[n.ID] = i
		if n.NodeNum != 0 {
			allZero = false
		}
		for _, s := range n.Services {
			if req.Services[s] == nil {
				return nil, nil, &RequestError{Field: field + ".services", Message: fmt.Sprintf("service %q has no definition; add it to the catalog or remove it from node %s", s, n.ID)}
			}
			svcSet[s] = true
		}
	}
	b.nodeNums = make([]int, len(req.Nodes))
	for i, n := range req.Nodes {
		b.nodeNums[i] = n.NodeNum
		if allZero {
			b.nodeNums[i] = i
		}
	}
	names := make([]string, 0, len(svcSet))
	for s := range svcSet {
		names = append(names, s)
	}
	slices.Sort(names)
	b.g = newDepGraph(names, req.Services)
	if err := b.g.checkCycles(); err != nil {
		return nil, nil, err
	}
	b.svcOn = make([][]int, len(req.Nodes))
	b.hosts = make([][]int, len(names))
	for i, n := range req.Nodes {
		for _, s := range n.Services {
			j := b.g.index[s]
			if !slices.Contains(b.svcOn[i], j) {
				b.svcOn[i] = append(b.svcOn[i], j)
				b.hosts[j] = append(b.hosts[j], i)
			}
		}
		slices.Sort(b.svcOn[i])
	}

	nodeList := func(field string, ids []string) ([]int, bool, error) {
		if ids == nil {
			return nil, false, nil
		}
		out := make([]int, 0, len(ids))
		seen := map[int]bool{}
		for _, id := range ids {
			i, ok := nodeIdx[id]
			if !ok {
				return nil, false, &RequestError{Field: field, Message: fmt.Sprintf("node %q is not a node of the cluster", id)}
			}
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
		slices.Sort(out)
		return out, true, nil
	}
	planned, filteredNodes, err := nodeList("plannedNodes", req.PlannedNodes)
	if err != nil {
		return nil, nil, err
	}
	newNodes, _, err := nodeList("newNodes", req.NewNodes)
	if err != nil {
		return nil, nil, err
	}
	removed, _, err := nodeList("removedNodes", req.RemovedNodes)
	if err != nil {
		return nil, nil, err
	}
	b.removed = make([]bool, len(req.Nodes))
	for i := range b.removed {
		b.removed[i] = req.Action == ClusterDelete
	}
	for _, i := range removed {
		b.removed[i] = true
	}
	scale := req.Action == ScaleOut || req.Action == ScaleIn || req.Action == Repair
	switch {
	case req.Action == ScaleOut && len(newNodes) == 0:
		return nil, nil, &RequestError{Field: "newNodes", Message: "SCALE_OUT needs at least one new node"}
	case req.Action == ScaleIn && len(removed) == 0:
		return nil, nil, &RequestError{Field: "removedNodes", Message: "SCALE_IN needs at least one node to remove"}
	case req.Action != ScaleOut && req.Action != Repair && len(newNodes) > 0:
		return nil, nil, &RequestError{Field: "newNodes", Message: "only SCALE_OUT and REPAIR create new nodes"}
	case req.Action != ScaleIn && req.Action != Repair && len(removed) > 0:
		return nil, nil, &RequestError{Field: "removedNodes", Message: "only SCALE_IN and REPAIR remove nodes"}
	case scale && req.PlannedServices != nil:
		return nil, nil, &RequestError{Field: "plannedServices", Message: string(req.Action) + " acts on every service of the nodes it touches"}
	}
	if !filteredNodes {
		planned = make([]int, len(req.Nodes))
		for i := range planned {
			planned[i] = i
		}
	}
	if req.PlannedServices != nil {
		b.filter = newBitset(len(names))
		for _, s := range req.PlannedServices {
			j, ok := b.g.index[s]
			if !ok {
				return nil, nil, &RequestError{Field: "plannedServices", Message: fmt.Sprintf("service %q is on no node of the cluster", s)}
			}
			b.filter.set(j)
		}
		switch req.Action {
		case StartServices:
			b.g.closure(b.filter, false)
		case StopServices, RestartServices:
			b.g.closure(b.filter, true)
		}
	}

	var unconfigure []Action
	createOrder := []Action{Create, Confirm}
	if req.Network {
		unconfigure = []Action{NetworkUnconfigure}
		createOrder = append(createOrder, NetworkConfigure)
	}
	createOrder = append(createOrder, Bootstrap, Install, Configure, Initialize, Start)
	one := func(order []Action, lifecycle bool) []group {
		return []group{{nodes: planned, order: order, lifecycle: lifecycle, filtered: true}}
	}
	var groups []group
	switch req.Action {
	case ClusterCreate:
		groups = one(createOrder, true)
	case ClusterDelete:
		groups = one(append(unconfigure, Delete), true)
	case ClusterConfigure:
		groups = one([]Action{Bootstrap, Configure}, false)
	case ClusterConfigureWithRestart:
		groups = one([]Action{Bootstrap, Stop, Configure, Start}, false)
	case StartServices:
		groups = one([]Action{Start}, false)
	case StopServices:
		groups = one([]Action{Stop}, false)
	case RestartServices:
		groups = one([]Action{Stop, Start}, false)
	case AddServices:
		groups = one([]Action{Bootstrap, Install, Configure, Initialize, Start}, false)
	case ScaleOut:
		stay := []Action{Configure}
		if req.Restart {
			stay = []Action{Stop, Configure, Start}
		}
		groups = []group{
			{nodes: newNodes, order: createOrder, lifecycle: true},
			{nodes: without(planned, newNodes), order: stay, existing: true},
		}
	case ScaleIn:
		groups = []group{
			{nodes: removed, order: slices.Concat([]Action{Stop}, unconfigure, []Action{Delete}), lifecycle: true},
			{nodes: without(planned, removed), order: []Action{Configure}},
		}
	case ClusterCheck:
		groups = one([]Action{Check, Status}, true)
	case RebootNodes:
		groups = one([]Action{Reboot, Bootstrap, Start}, true)
	case Repair:
		groups, err = b.repairGroups(planned, newNodes, removed, createOrder, unconfigure)
		if err != nil {
			return nil, nil, err
		}
	case SyncTemplate:
		groups = syncGroups(req, planned)
	case UpdateSSHKeys:
		// One task per node, services or not.
		groups = one([]Action{AuthorizeKeys}, true)
	}
	return b, groups, nil
}

func without(a, b []int) []int {
	var out []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func (b *builder) vertex(k vkey) int32 {
	if v, ok := b.idx[k]; ok {
		return v
	}
	v := int32(len(b.verts))
	b.idx[k] = v
	b.verts = append(b.verts, k)
	b.inChain = append(b.inChain, false)
	return v
}

// chains adds the chain of every planned service of every node of the group
// (docs/planner.md#building-the-dag, step 1).
func (b *builder) chains(gr group) {
	for _, n := range gr.nodes {
		var svcs []int
		for _, s := range b.svcOn[n] {
			switch {
			case gr.except:
				if b.filter == nil || !b.filter.has(s) {
					svcs = append(svcs, s)
				}
			case !gr.filtered || b.filter == nil || b.filter.has(s):
				svcs = append(svcs, s)
			}
		}
		if gr.only != nil {
			svcs = gr.only[n]
		}
		if gr.lifecycle {
			b.chain(gr, n, -1)
		}
		for _, s := range svcs {
			b.chain(gr, n, s)
		}
	}
}

// chain links the present steps of one (node, service) chain; svc -1 walks
// the node-level steps alone.
func (b *builder) chain(gr group, n, svc int) {
	prev := int32(-1)
	for _, a := range gr.order {
		k := vkey{node: int32(n), action: a, svc: int32(svc)}
		if a.NodeLevel() {
			k.svc = -1
		} else if svc < 0 || !b.g.has(svc, a) {
			continue
		}
		v := b.vertex(k)
		b.inChain[v] = true
		switch {
		case prev < 0:
			if gr.existing && svc >= 0 {
				b.heads = append(b.heads, v)
			}
		case b.verts[prev].svc < 0 && k.svc < 0:
			// Node-level steps are shared by every chain of the node.
			if !b.nodeEdge[[2]int32{prev, v}] {
				b.nodeEdge[[2]int32{prev, v}] = true
				b.edges = append(b.edges, edge{prev, v})
			}
		default:
			b.edges = append(b.edges, edge{prev, v})
		}
		prev = v
	}
}

// crossEdges adds the cross-service ordering edges
// (docs/planner.md#building-the-dag, step 2). They are unique by construction:
// each (rule, B, node) gives one source.
func (b *builder) crossEdges() {
	// Operations that create or remove nodes take only edges between
	// tasks of their own chains (docs/planner.md#scale-operations).
	scale := b.req.Action == ScaleOut || b.req.Action == ScaleIn || b.req.Action == Repair || b.req.Action == RebootNodes
	chainEnd := len(b.verts)
	// sources[(Y, B)] is the vertex of Y of B on every node hosting B: a
	// service on every node makes this the inner loop of a 10^6-edge plan.
	type yb struct {
		y Action
		b int
	}
	sources := map[yb][]int32{}
	sourcesOf := func(y Action, bs int) []int32 {
		if s, ok := sources[yb{y, bs}]; ok {
			return s
		}
		var out []int32
		for _, n2 := range b.hosts[bs] {
			src := vkey{node: int32(n2), action: y, svc: int32(bs)}
			if scale {
				if s, ok := b.idx[src]; ok && b.inChain[s] {
					out = append(out, s)
				}
			} else {
				out = append(out, b.vertex(src))
			}
		}
		sources[yb{y, bs}] = out
		return out
	}
	// Two passes: the first sizes the edge list so that a 10^6-edge plan
	// allocates it once.
	for pass := range 2 {
		total := 0
		for v := range chainEnd {
			k := b.verts[v]
			if k.svc < 0 || b.g.waits[k.action] == nil {
				continue
			}
			y := k.action
			if y == Initialize {
				y = Start
			}
			for _, bs := range b.g.waits[k.action][k.svc] {
				if k.action.installTime() && b.filter != nil && !b.filter.has(bs) {
					continue
				}
				srcs := sourcesOf(y, bs)
				if pass == 0 {
					total += len(srcs)
					continue
				}
				for _, s := range srcs {
					b.edges = append(b.edges, edge{s, int32(v)})
				}
			}
		}
		if pass == 0 {
			// Room for the network and scale edges too.
			b.edges = slices.Grow(b.edges, total+2*len(b.verts))
		}
	}
}

// operationEdges adds the network and scale edges (docs/planner.md#network-steps,
// docs/planner.md#scale-operations).
func (b *builder) operationEdges(groups []group) {
	var creates, deletes, newBoots, removedStops, remainingConfigures []int32
	for v, k := range b.verts {
		switch k.action {
		case Create:
			creates = append(creates, int32(v))
		case Delete:
			deletes = append(deletes, int32(v))
		}
	}
	if b.req.Network && b.req.Action == ClusterCreate && len(creates) > 0 {
		alloc := b.vertex(vkey{node: -1, action: NetworkAllocate, svc: -1})
		b.inChain[alloc] = true
		for _, c := range creates {
			b.edges = append(b.edges, edge{alloc, c})
		}
	}
	if b.req.Network && b.req.Action == ClusterDelete && len(deletes) > 0 {
		release := b.vertex(vkey{node: -1, action: NetworkRelease, svc: -1})
		b.inChain[release] = true
		for _, d := range deletes {
			b.edges = append(b.edges, edge{d, release})
		}
	}
	switch b.req.Action {
	case ScaleOut, Repair:
		for _, n := range groups[0].nodes {
			if v, ok := b.idx[vkey{node: int32(n), action: Bootstrap, svc: -1}]; ok {
				newBoots = append(newBoots, v)
			}
		}
		// Waiting at the head of each chain makes every task of the chain
		// wait, with one edge per chain instead of one per task.
		for _, h := range b.heads {
			for _, boot := range newBoots {
				b.edges = append(b.edges, edge{boot, h})
			}
		}
	case ScaleIn:
		removed := map[int32]bool{}
		for _, n := range groups[0].nodes {
			removed[int32(n)] = true
		}
		for v, k := range b.verts {
			switch {
			case k.action == Stop && removed[k.node] && b.inChain[v]:
				removedStops = append(removedStops, int32(v))
			case k.action == Configure && !removed[k.node] && b.inChain[v]:
				remainingConfigures = append(remainingConfigures, int32(v))
			}
		}
		for _, c := range remainingConfigures {
			for _, s := range removedStops {
				b.edges = append(b.edges, edge{s, c})
			}
		}
	}
}

// plan layers, splits and orders the DAG (docs/planner.md#stages).
func (b *builder) plan() (*Plan, error) {
	dg := newDigraph(len(b.verts), b.edges)
	layer, _, cycle := dg.layers()
	if cycle != nil {
		ce := &CycleError{}
		for _, v := range cycle {
			ce.Tasks = append(ce.Tasks, b.ref(v))
		}
		return nil, ce
	}
	// No service task whose service lacks the action needs dropping before
	// the split (docs/planner.md#stages): chains hold only present steps and
	// cross edges only name services having the action.
	order := make([]int32, len(b.verts))
	for i := range order {
		order[i] = int32(i)
	}
	num := func(v int32) int {
		if n := b.verts[v].node; n >= 0 {
			return b.nodeNums[n]
		}
		return -1 << 62 // cluster-scoped tasks first
	}
	svcName := func(v int32) string {
		if s := b.verts[v].svc; s >= 0 {
			return b.g.names[s]
		}
		return ""
	}
	byTask := func(x, y int32) int {
		kx, ky := b.verts[x], b.verts[y]
		return cmp.Or(
			cmp.Compare(num(x), num(y)),
			cmp.Compare(kx.node, ky.node),
			cmp.Compare(nameRank[kx.action], nameRank[ky.action]),
			cmp.Compare(svcName(x), svcName(y)),
		)
	}
	slices.SortFunc(order, func(x, y int32) int {
		return cmp.Or(cmp.Compare(layer[x], layer[y]), byTask(x, y))
	})
	// Split each layer first-fit (docs/planner.md#stages, step 2). Sorted by
	// node, the k-th task of a node in a layer lands in the layer's k-th
	// sub-stage.
	stageOf := make([]int, len(b.verts))
	perNode := make([]int, len(b.nodes))
	base := 0
	for i := 0; i < len(order); {
		j := i
		for j < len(order) && layer[order[j]] == layer[order[i]] {
			j++
		}
		width := 1
		for _, v := range order[i:j] {
			sub := 0
			if n := b.verts[v].node; n >= 0 {
				sub = perNode[n]
				perNode[n]++
				width = max(width, sub+1)
			}
			stageOf[v] = base + sub
		}
		for _, v := range order[i:j] {
			if n := b.verts[v].node; n >= 0 {
				perNode[n] = 0
			}
		}
		base += width
		i = j
	}
	slices.SortStableFunc(order, func(x, y int32) int {
		return cmp.Or(cmp.Compare(stageOf[x], stageOf[y]), byTask(x, y))
	})
	p := &Plan{Tasks: make([]Task, len(order)), Stages: make([][]int, base)}
	pos := make([]int, len(b.verts))
	for i, v := range order {
		pos[v] = i
		k := b.verts[v]
		t := Task{Action: k.action, Service: svcName(v), Stage: stageOf[v]}
		if k.node >= 0 {
			t.Node = b.nodes[k.node].ID
			t.NodeNum = b.nodeNums[k.node]
			t.BestEffort = (b.removed[k.node] && k.action.cleanup()) || k.action.probe()
		}
		p.Tasks[i] = t
		p.Stages[t.Stage] = append(p.Stages[t.Stage], i)
	}
	// Sorted edges without a sort: visiting targets in task order and
	// bucketing by source leaves every bucket sorted.
	start := make([]int, len(order)+1)
	for _, e := range b.edges {
		start[pos[e.from]+1]++
	}
	for i := range order {
		start[i+1] += start[i]
	}
	p.Edges = make([][2]int32, len(b.edges))
	for t, v := range order {
		for _, from := range dg.pred[v] {
			f := pos[from]
			p.Edges[start[f]] = [2]int32{int32(f), int32(t)}
			start[f]++
		}
	}
	return p, nil
}

func (b *builder) ref(v int32) TaskRef {
	k := b.verts[v]
	r := TaskRef{Action: k.action}
	if k.node >= 0 {
		r.Node = b.nodes[k.node].ID
	}
	if k.svc >= 0 {
		r.Service = b.g.names[k.svc]
	}
	return r
}
