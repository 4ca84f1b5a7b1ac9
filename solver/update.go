package solver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cooprhq/coopr/catalog"
)

// ExistingNode is a node of a live cluster as the solver needs it.
type ExistingNode struct {
	ID           string   `json:"id"`
	NodeNum      int      `json:"nodenum"`
	Hostname     string   `json:"hostname,omitempty"`
	Services     []string `json:"services"`
	HardwareType string   `json:"hardwaretype"`
	ImageType    string   `json:"imagetype"`
}

// NodeChange is a node that gains services.
type NodeChange struct {
	NodeID  string   `json:"id"`
	NodeNum int      `json:"nodenum"`
	Add     []string `json:"add"`
}

// Update is the result of changing a live layout.
type Update struct {
	Layout   []LayoutEntry  `json:"layout"` // the whole cluster afterwards, in preference order
	Nodes    []ExistingNode `json:"nodes"`  // every node afterwards, by nodenum
	Changed  []NodeChange   `json:"changed,omitempty"`
	Added    []Node         `json:"added,omitempty"`
	Removed  []ExistingNode `json:"removed,omitempty"`
	Services []string       `json:"-"` // cluster.services afterwards
}

// group is the nodes sharing one node layout, in nodenum order.
type group struct {
	NodeLayout
	nodes []int // indexes into the node slice
}

func groupNodes(nodes []ExistingNode) []*group {
	by := map[string]*group{}
	var out []*group
	for i, n := range nodes {
		l := NodeLayout{Services: catalog.SortedUnion(n.Services), HardwareType: n.HardwareType, ImageType: n.ImageType}
		g, ok := by[l.key()]
		if !ok {
			g = &group{NodeLayout: l}
			by[l.key()] = g
			out = append(out, g)
		}
		g.nodes = append(g.nodes, i)
	}
	for _, g := range out {
		sort.Slice(g.nodes, func(a, b int) bool { return nodes[g.nodes[a]].NodeNum < nodes[g.nodes[b]].NodeNum })
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].NodeLayout.Less(out[j].NodeLayout) })
	return out
}

func layoutOfGroups(gs []*group) []LayoutEntry {
	out := make([]LayoutEntry, 0, len(gs))
	for _, g := range gs {
		if len(g.nodes) > 0 {
			out = append(out, LayoutEntry{NodeLayout: g.NodeLayout, Count: len(g.nodes)})
		}
	}
	return out
}

// AddRequest asks to add services to a live cluster (docs/solver.md#adding-services).
type AddRequest struct {
	Template *catalog.Template // the cluster's snapshot
	Catalog  Catalog
	Nodes    []ExistingNode
	Add      []string
	MaxSteps int
}

// queueOrder sorts services to add: constrained ones by (max ascending, min
// descending, name), then unconstrained ones by name.
func queueOrder(t *catalog.Template, add []string) []string {
	q := catalog.SortedUnion(add)
	sort.SliceStable(q, func(i, j int) bool {
		ci, cj := isConstrained(t, q[i]), isConstrained(t, q[j])
		if ci != cj {
			return ci
		}
		if !ci {
			return q[i] < q[j]
		}
		li, hi := quantities(t, q[i])
		lj, hj := quantities(t, q[j])
		if hi != hj {
			return hi < hj
		}
		if li != lj {
			return li > lj
		}
		return q[i] < q[j]
	})
	return q
}

// adder holds the backtracking state of AddServices.
type adder struct {
	p       *problem
	nodes   []ExistingNode
	sets    []mask // per node: constrained services held
	present mask   // constrained services on the cluster so far
	b       *budget
}

// nodeValid checks one node against the coexistence rules for the services
// present on the cluster, and against its whitelists.
func (a *adder) setValid(m mask, hw, img string) bool {
	for _, g := range a.p.cant {
		if m.hasAll(g) {
			return false
		}
	}
	for _, g := range a.p.must {
		var present []int
		for _, s := range g {
			if a.present.has(s) {
				present = append(present, s)
			}
		}
		if m.hasAny(present) && !m.hasAll(present) {
			return false
		}
	}
	return a.p.allows(m, hw, img)
}

// holds checks the whole cluster after a change (docs/solver.md#adding-services).
func (a *adder) holds() bool {
	count := make([]int, len(a.p.constrained))
	for i, n := range a.nodes {
		if !a.setValid(a.sets[i], n.HardwareType, n.ImageType) {
			return false
		}
		for s := range a.p.constrained {
			if a.sets[i].has(s) {
				count[s]++
			}
		}
	}
	for s := range count {
		if a.present.has(s) && (count[s] < a.p.min[s] || count[s] > a.p.max[s]) {
			return false
		}
	}
	return true
}

// groups returns the cluster's current layouts, preference-ordered.
func (a *adder) groups(extra map[int][]string) []*group {
	cur := make([]ExistingNode, len(a.nodes))
	for i, n := range a.nodes {
		cur[i] = n
		cur[i].Services = append(slices.Clone(n.Services), extra[i]...)
	}
	return groupNodes(cur)
}

// Candidate is one way of adding a service: how many nodes of each expandable
// layout get it, layouts in preference order.
type Candidate []LayoutChange

// LayoutChange is part of a Candidate.
type LayoutChange struct {
	NodeLayout
	AddTo int `json:"add_to"`
}

// distributions lists every split of k nodes over layouts with the given
// capacities, in descending lexicographic order.
func distributions(caps []int, k int, yield func([]int) bool) bool {
	d := make([]int, len(caps))
	suffix := make([]int, len(caps)+1)
	for i := len(caps) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + caps[i]
	}
	var rec func(i, left int) bool
	rec = func(i, left int) bool {
		if i == len(caps) {
			return left != 0 || yield(d)
		}
		for v := min(caps[i], left); v >= max(0, left-suffix[i+1]); v-- {
			d[i] = v
			if !rec(i+1, left-v) {
				return false
			}
		}
		d[i] = 0
		return true
	}
	return rec(0, k)
}

// expandable returns the groups that may take s: the group's set with s added
// obeys the coexistence rules and whitelists.
func (a *adder) expandable(gs []*group, s int) []*group {
	var out []*group
	for _, g := range gs {
		m := a.sets[g.nodes[0]].clone()
		if s >= 0 { // unconstrained services (s < 0) fit every layout
			m.set(s)
		}
		if a.setValid(m, g.HardwareType, g.ImageType) {
			out = append(out, g)
		}
	}
	return out
}

// candidates yields the candidate changes for service s in the order
// docs/solver.md#adding-services tries them: as many nodes as possible,
// preferred layouts first.
func (a *adder) candidates(s int, yield func(gs []*group, d []int) bool) bool {
	gs := a.expandable(a.groups(nil), s)
	caps := make([]int, len(gs))
	total := 0
	for i, g := range gs {
		caps[i] = len(g.nodes)
		total += caps[i]
	}
	lo, hi := 0, inf
	if s >= 0 {
		lo, hi = a.p.min[s], a.p.max[s]
	}
	for k := min(total, hi); k >= max(lo, 1); k-- {
		if !distributions(caps, k, func(d []int) bool { return yield(gs, d) }) {
			return false
		}
	}
	return true
}

// AddServices places new services on the existing nodes of a cluster. No
// node is added or removed and no hardware or image type changes.
func AddServices(r AddRequest) (*Update, error) {
	if r.Template == nil {
		return nil, errorf(KindInvalidCatalog, "no template given")
	}
	if r.MaxSteps <= 0 {
		r.MaxSteps = DefaultMaxSteps
	}
	if len(r.Add) == 0 {
		return nil, errorf(KindInvalidInput, "no services to add")
	}
	existing := unionServices(r.Nodes, func(n ExistingNode) []string { return n.Services })
	for _, s := range r.Add {
		if slices.Contains(existing, s) {
			return nil, errorf(KindInvalidInput, "service %s is already on the cluster", s)
		}
	}
	all := catalog.SortedUnion(existing, r.Add)
	if err := checkServices(r.Template, all, catalog.SortedUnion(r.Add), r.Catalog.Services); err != nil {
		return nil, err
	}
	p := newProblem(r.Template, all)
	a := &adder{p: p, nodes: slices.Clone(r.Nodes), b: &budget{left: r.MaxSteps}, present: newMask(len(p.constrained))}
	for _, n := range a.nodes {
		m, _ := p.maskOf(n.Services)
		a.sets = append(a.sets, m)
		a.present = orMask(a.present, m)
	}
	queue := queueOrder(r.Template, r.Add)
	added := make(map[int][]string) // node index -> services added
	var rec func(q int) outcome
	rec = func(q int) outcome {
		if q == len(queue) {
			return found
		}
		name := queue[q]
		s, constrained := p.idx[name]
		if !constrained {
			s = -1
		}
		if constrained {
			a.present.set(s)
		}
		res := none
		a.candidates(s, func(gs []*group, d []int) bool {
			if !a.b.step() {
				res = exhausted
				return false
			}
			var touched []int
			for gi, g := range gs {
				for _, ni := range g.nodes[:d[gi]] {
					touched = append(touched, ni)
					added[ni] = append(added[ni], name)
					if constrained {
						a.sets[ni].set(s)
					}
				}
			}
			if !constrained || a.holds() {
				if out := rec(q + 1); out != none {
					res = out
					return false
				}
			}
			for _, ni := range touched {
				added[ni] = added[ni][:len(added[ni])-1]
				if constrained {
					a.sets[ni].clear(s)
				}
			}
			return true
		})
		if res == none && constrained {
			a.present.clear(s)
		}
		return res
	}
	switch rec(0) {
	case exhausted:
		return nil, budgetError(r.MaxSteps)
	case none:
		return nil, a.explainAdd(queue)
	}
	u := &Update{}
	for i, n := range a.nodes {
		if len(added[i]) > 0 {
			n.Services = catalog.SortedUnion(n.Services, added[i])
			u.Changed = append(u.Changed, NodeChange{NodeID: n.ID, NodeNum: n.NodeNum, Add: catalog.SortedUnion(added[i])})
		}
		u.Nodes = append(u.Nodes, n)
	}
	sortExisting(u.Nodes)
	sort.Slice(u.Changed, func(i, j int) bool { return u.Changed[i].NodeNum < u.Changed[j].NodeNum })
	u.Layout = layoutOfGroups(groupNodes(u.Nodes))
	u.Services = unionServices(u.Nodes, func(n ExistingNode) []string { return n.Services })
	return u, nil
}

func orMask(a, b mask) mask {
	out := a.clone()
	for i := range out {
		out[i] |= b[i]
	}
	return out
}

func sortExisting(ns []ExistingNode) {
	sort.Slice(ns, func(i, j int) bool { return ns[i].NodeNum < ns[j].NodeNum })
}

// explainAdd says why no placement exists, over the layouts the update may
// use: the existing ones.
func (a *adder) explainAdd(queue []string) *Error {
	gs := a.groups(nil)
	for _, name := range queue {
		s, ok := a.p.idx[name]
		if !ok || a.p.min[s] < 1 {
			continue
		}
		a.present.set(s)
		if len(a.expandable(gs, s)) > 0 {
			continue
		}
		var why []string
		for _, g := range gs {
			m := a.sets[g.nodes[0]].clone()
			m.set(s)
			r := a.p.exclusion(candidate{m: m, hw: g.HardwareType, img: g.ImageType}, nil, nil)
			if r != "" && !slices.Contains(why, r) {
				why = append(why, r)
			}
		}
		line := fmt.Sprintf("%s: needs %s nodes, but every node layout that can hold it is excluded by %s", name, a.p.quantityText(s), joinReasons(why))
		return &Error{Kind: KindNoLayout, Message: line, Reasons: []string{line}}
	}
	var qs []string
	for _, name := range queue {
		if s, ok := a.p.idx[name]; ok {
			qs = append(qs, fmt.Sprintf("%s [%s]", name, a.p.quantityText(s)))
		} else {
			qs = append(qs, name)
		}
	}
	line := fmt.Sprintf("no placement of %s on the existing %d nodes satisfies the template's constraints", strings.Join(qs, ", "), len(a.nodes))
	return &Error{Kind: KindNoLayout, Message: line, Reasons: []string{line}}
}

// AddServiceChangeOrder lists, in the order AddServices tries them, the
// candidate placements of one service on a live cluster, before the
// whole-cluster check.
func AddServiceChangeOrder(t *catalog.Template, nodes []ExistingNode, service string) []Candidate {
	existing := unionServices(nodes, func(n ExistingNode) []string { return n.Services })
	p := newProblem(t, catalog.SortedUnion(existing, []string{service}))
	a := &adder{p: p, nodes: nodes, present: newMask(len(p.constrained))}
	for _, n := range nodes {
		m, _ := p.maskOf(n.Services)
		a.sets = append(a.sets, m)
		a.present = orMask(a.present, m)
	}
	s, ok := p.idx[service]
	if !ok {
		s = -1
	} else {
		a.present.set(s)
	}
	var out []Candidate
	a.candidates(s, func(gs []*group, d []int) bool {
		var c Candidate
		for i, g := range gs {
			if d[i] > 0 {
				c = append(c, LayoutChange{NodeLayout: g.NodeLayout, AddTo: d[i]})
			}
		}
		out = append(out, c)
		return true
	})
	return out
}

// ScaleRequest asks to grow or shrink a live cluster (docs/solver.md#scaling).
type ScaleRequest struct {
	Template     *catalog.Template // the cluster's snapshot
	Catalog      Catalog
	Provider     string
	HardwareType string // the cluster's pinned types, if any
	ImageType    string
	Cluster      Cluster
	Nodes        []ExistingNode
	Size         int
	MaxSteps     int
	// NextNodeNum is the lowest number a new node may take: one past the
	// highest the cluster ever gave, so a number (and the node id made
	// from it) given up by a scale-in is never handed out again. Zero: one
	// past the highest among Nodes.
	NextNodeNum int
	// Remove, when shrinking, names nodes (by id) that must be among the
	// removed ones, instead of the highest numbers of their layouts; the
	// solver still checks that what stays is a valid layout and picks any
	// other nodes the new size needs (docs/solver.md#scaling).
	Remove []string
}

// Scale grows or shrinks a cluster with minimal disruption: existing nodes
// keep their layouts; growth adds nodes, shrinking removes the highest
// nodenums of the least preferred layouts.
func Scale(r ScaleRequest) (*Update, error) {
	if r.Template == nil {
		return nil, errorf(KindInvalidCatalog, "no template given")
	}
	if r.MaxSteps <= 0 {
		r.MaxSteps = DefaultMaxSteps
	}
	t := r.Template
	if err := checkSize(t, r.Size); err != nil {
		return nil, err
	}
	nodes := slices.Clone(r.Nodes)
	sortExisting(nodes)
	u := &Update{Nodes: nodes}
	u.Services = unionServices(nodes, func(n ExistingNode) []string { return n.Services })
	gs := groupNodes(nodes)
	if r.Size == len(nodes) {
		u.Layout = layoutOfGroups(gs)
		return u, nil
	}
	p := newProblem(t, u.Services)
	b := &budget{left: r.MaxSteps}
	var ls []layout
	present := map[string]bool{}
	for _, g := range gs {
		m, _ := p.maskOf(g.Services)
		ls = append(ls, p.newLayout(m, g.HardwareType, g.ImageType))
		present[strings.Join(p.names(m), "\x00")] = true
	}
	grow := r.Size > len(nodes)
	var hws, imgs []string
	if grow {
		provider := r.Provider
		hw, err := buildTypeMap("hardware type", "flavor", r.HardwareType, t.Compatibility.HardwareTypes, r.Catalog.HardwareTypes, provider, t.Name, KindNoHardwareType)
		if err != nil {
			return nil, err
		}
		img, err := buildTypeMap("image type", "image", r.ImageType, t.Compatibility.ImageTypes, r.Catalog.ImageTypes, provider, t.Name, KindNoImageType)
		if err != nil {
			return nil, err
		}
		hws, imgs = hw.names(), img.names()
		sets, ok := p.validSets(b)
		if !ok {
			return nil, budgetError(r.MaxSteps)
		}
		for _, l := range p.narrowed(sets, hw, img) {
			if !present[strings.Join(l.Services, "\x00")] {
				ls = append(ls, l)
			}
		}
	}
	sortLayouts(ls)
	cur := make([]int, len(ls))
	byKey := map[string]*group{}
	for _, g := range gs {
		byKey[g.key()] = g
	}
	for i, l := range ls {
		if g := byKey[l.key()]; g != nil {
			cur[i] = len(g.nodes)
		}
	}
	chosen, err := chosenNodes(r, nodes, grow)
	if err != nil {
		return nil, err
	}
	lo, hi := cur, []int(nil)
	if !grow {
		lo, hi = nil, slices.Clone(cur)
		// Each chosen node lowers its layout's ceiling: it must go.
		for i, l := range ls {
			if g := byKey[l.key()]; g != nil {
				for _, ni := range g.nodes {
					if chosen[nodes[ni].ID] {
						hi[i]--
					}
				}
			}
		}
	}
	k := newCounter(p, ls, lo, hi, b)
	c, out := k.greatest(r.Size)
	switch out {
	case exhausted:
		return nil, budgetError(r.MaxSteps)
	case none:
		if len(chosen) > 0 {
			return nil, errorf(KindNoLayout, "removing %s leaves no valid layout at size %d: remove other nodes, or let the solver pick",
				nodeNames(nodes, r.Remove), r.Size)
		}
		k = newCounter(p, ls, lo, hi, &budget{left: r.MaxSteps})
		return nil, p.explain(k, r.Size, p.atomCandidates, hws, imgs)
	}
	next := max(FirstNodeNum, r.NextNodeNum)
	for _, n := range nodes {
		next = max(next, n.NodeNum+1)
	}
	h := hostnamerFor(r.Cluster, nodes)
	removed := map[int]bool{}
	for i, l := range ls {
		switch d := c[i] - cur[i]; {
		case d > 0:
			for range d {
				n := newNode(l.NodeLayout, r.Cluster, h, next, r.Provider, r.Catalog)
				next++
				u.Added = append(u.Added, n)
			}
		case d < 0:
			g := byKey[l.key()]
			// The chosen nodes first, then the highest numbers.
			left := -d
			for _, ni := range g.nodes {
				if chosen[nodes[ni].ID] && left > 0 {
					removed[ni] = true
					left--
				}
			}
			for j := len(g.nodes) - 1; j >= 0 && left > 0; j-- {
				if ni := g.nodes[j]; !removed[ni] {
					removed[ni] = true
					left--
				}
			}
		}
	}
	var after []ExistingNode
	for i, n := range nodes {
		if removed[i] {
			u.Removed = append(u.Removed, n)
		} else {
			after = append(after, n)
		}
	}
	slices.Reverse(u.Removed) // highest nodenum first, the removal order
	for _, n := range u.Added {
		after = append(after, ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	u.Nodes = after
	u.Layout = layoutOfGroups(groupNodes(after))
	u.Services = unionServices(after, func(n ExistingNode) []string { return n.Services })
	return u, nil
}
