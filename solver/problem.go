package solver

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/cooprhq/coopr/catalog"
)

// inf stands for an absent maximum. It is far below MaxInt so sums of a few
// caps cannot overflow.
const inf = math.MaxInt32

// NodeLayout is a (hardware type, image type, service set) shared by a group
// of nodes. Services are sorted.
type NodeLayout struct {
	Services     []string `json:"services"`
	HardwareType string   `json:"hardwaretype"`
	ImageType    string   `json:"imagetype"`
}

// LayoutEntry is a node layout with its node count.
type LayoutEntry struct {
	NodeLayout
	Count int `json:"count"`
}

// Less is the preference comparator (docs/solver.md#preference-order): more
// services first, then hardware type, image type and the sorted service names,
// ascending.
func (a NodeLayout) Less(b NodeLayout) bool { return compareLayouts(a, b, nil, nil) < 0 }

func compareLayouts(a, b NodeLayout, hwRank, imgRank func(string) int) int {
	if len(a.Services) != len(b.Services) {
		return len(b.Services) - len(a.Services)
	}
	// Preference lists (only Narrow's callers give them) outrank names: a
	// preferred image beats an alphabetically smaller hardware type.
	if hwRank != nil {
		if c := hwRank(a.HardwareType) - hwRank(b.HardwareType); c != 0 {
			return c
		}
	}
	if imgRank != nil {
		if c := imgRank(a.ImageType) - imgRank(b.ImageType); c != 0 {
			return c
		}
	}
	if c := strings.Compare(a.HardwareType, b.HardwareType); c != 0 {
		return c
	}
	if c := strings.Compare(a.ImageType, b.ImageType); c != 0 {
		return c
	}
	return slices.Compare(a.Services, b.Services)
}

func (a NodeLayout) key() string {
	k := a.HardwareType + "\x00" + a.ImageType
	for _, s := range a.Services {
		k += "\x00" + s
	}
	return k
}

// problem is a template compiled against one cluster's service set.
type problem struct {
	t             *catalog.Template
	services      []string // cluster services, sorted
	constrained   []string // K, sorted
	unconstrained []string // U, sorted
	idx           map[string]int
	must          [][]int // mustcoexist groups restricted to cluster services (G′), non-empty
	cant          [][]int // cantcoexist groups whose members are all on the cluster
	mustNames     [][]string
	cantNames     [][]string
	min, max      []int
	hwList        [][]string // whitelist per constrained service; nil = any
	imgList       [][]string
}

// isConstrained reports whether the template constrains s
// (docs/solver.md#constrained-services).
func isConstrained(t *catalog.Template, s string) bool {
	if _, ok := t.Constraints.Services[s]; ok {
		return true
	}
	for _, groups := range [][][]string{t.Constraints.Layout.MustCoexist, t.Constraints.Layout.CantCoexist} {
		for _, g := range groups {
			if slices.Contains(g, s) {
				return true
			}
		}
	}
	return false
}

func quantities(t *catalog.Template, s string) (lo, hi int) {
	hi = inf
	if sc, ok := t.Constraints.Services[s]; ok && sc.Quantities != nil {
		lo = sc.Quantities.Min
		if sc.Quantities.Max != nil {
			hi = *sc.Quantities.Max
		}
	}
	return lo, hi
}

func newProblem(t *catalog.Template, services []string) *problem {
	p := &problem{t: t, services: catalog.SortedUnion(services), idx: map[string]int{}}
	for _, s := range p.services {
		if isConstrained(t, s) {
			p.idx[s] = len(p.constrained)
			p.constrained = append(p.constrained, s)
		} else {
			p.unconstrained = append(p.unconstrained, s)
		}
	}
	for _, s := range p.constrained {
		lo, hi := quantities(t, s)
		p.min = append(p.min, lo)
		p.max = append(p.max, hi)
		sc := t.Constraints.Services[s]
		p.hwList = append(p.hwList, sc.HardwareTypes)
		p.imgList = append(p.imgList, sc.ImageTypes)
	}
	for _, g := range t.Constraints.Layout.MustCoexist {
		var ids []int
		var names []string
		for _, s := range catalog.SortedUnion(g) {
			if i, ok := p.idx[s]; ok {
				ids = append(ids, i)
				names = append(names, s)
			}
		}
		if len(ids) > 0 {
			p.must = append(p.must, ids)
			p.mustNames = append(p.mustNames, names)
		}
	}
	for _, g := range t.Constraints.Layout.CantCoexist {
		var ids []int
		all := true
		for _, s := range catalog.SortedUnion(g) {
			i, ok := p.idx[s]
			if !ok {
				all = false // an absent member means the group can never fire
				break
			}
			ids = append(ids, i)
		}
		if all && len(ids) > 0 {
			p.cant = append(p.cant, ids)
			p.cantNames = append(p.cantNames, catalog.SortedUnion(g))
		}
	}
	return p
}

// mask is a set of constrained-service indices.
type mask []uint64

func newMask(n int) mask { return make(mask, (n+63)/64) }

func (m mask) has(i int) bool { return m[i/64]&(1<<(i%64)) != 0 }
func (m mask) set(i int)      { m[i/64] |= 1 << (i % 64) }
func (m mask) clear(i int)    { m[i/64] &^= 1 << (i % 64) }

func (m mask) clone() mask { return slices.Clone(m) }

func (m mask) empty() bool {
	for _, w := range m {
		if w != 0 {
			return false
		}
	}
	return true
}

func (m mask) hasAll(ids []int) bool {
	for _, i := range ids {
		if !m.has(i) {
			return false
		}
	}
	return true
}

func (m mask) hasAny(ids []int) bool {
	for _, i := range ids {
		if m.has(i) {
			return true
		}
	}
	return false
}

// maskOf returns the constrained part of a service list and whether every
// name was a cluster service.
func (p *problem) maskOf(services []string) (mask, bool) {
	m := newMask(len(p.constrained))
	ok := true
	for _, s := range services {
		if i, c := p.idx[s]; c {
			m.set(i)
		} else if !slices.Contains(p.unconstrained, s) {
			ok = false
		}
	}
	return m, ok
}

// names returns the full sorted service set of a constrained mask: its
// members plus every unconstrained service.
func (p *problem) names(m mask) []string {
	out := make([]string, 0, len(p.unconstrained)+8)
	for i, s := range p.constrained {
		if m.has(i) {
			out = append(out, s)
		}
	}
	out = append(out, p.unconstrained...)
	sort.Strings(out)
	return out
}

// validSet applies the coexistence rules (docs/solver.md#valid-service-sets)
// to a constrained mask.
func (p *problem) validSet(m mask) bool {
	for _, g := range p.cant {
		if m.hasAll(g) {
			return false
		}
	}
	for _, g := range p.must {
		if m.hasAny(g) && !m.hasAll(g) {
			return false
		}
	}
	return true
}

// allows reports whether a node of hardware hw and image img may hold every
// constrained service of m (the whitelists of docs/solver.md#node-layouts).
func (p *problem) allows(m mask, hw, img string) bool {
	for i := range p.constrained {
		if !m.has(i) {
			continue
		}
		if l := p.hwList[i]; len(l) > 0 && !slices.Contains(l, hw) {
			return false
		}
		if l := p.imgList[i]; len(l) > 0 && !slices.Contains(l, img) {
			return false
		}
	}
	return true
}

// atoms groups constrained services that mustcoexist ties together: a valid
// set holds each atom entirely or not at all.
func (p *problem) atoms() [][]int {
	parent := make([]int, len(p.constrained))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, g := range p.must {
		for _, x := range g[1:] {
			a, b := find(g[0]), find(x)
			if a != b {
				if a < b {
					parent[b] = a
				} else {
					parent[a] = b
				}
			}
		}
	}
	byRoot := map[int][]int{}
	var roots []int
	for i := range p.constrained {
		r := find(i)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], i)
	}
	out := make([][]int, len(roots))
	for i, r := range roots {
		out[i] = byRoot[r]
	}
	return out
}

// budget counts search steps against the limit.
type budget struct {
	left int
}

func (b *budget) step() bool {
	b.left--
	return b.left >= 0
}

// validSets enumerates the valid constrained sets
// (docs/solver.md#valid-service-sets) in a fixed order. It returns false when
// the budget ran out.
func (p *problem) validSets(b *budget) ([]mask, bool) {
	atoms := p.atoms()
	var out []mask
	cur := newMask(len(p.constrained))
	var rec func(i int) bool
	rec = func(i int) bool {
		if !b.step() {
			return false
		}
		if i == len(atoms) {
			if !cur.empty() {
				out = append(out, cur.clone())
			}
			return true
		}
		for _, s := range atoms[i] {
			cur.set(s)
		}
		ok := true
		for _, g := range p.cant {
			if cur.hasAll(g) {
				ok = false
				break
			}
		}
		if ok && !rec(i+1) {
			return false
		}
		for _, s := range atoms[i] {
			cur.clear(s)
		}
		return rec(i + 1)
	}
	if !rec(0) {
		return nil, false
	}
	return out, true
}

// layout is a node layout bound to the problem: its constrained mask and, for
// counting, the constrained services it holds.
type layout struct {
	NodeLayout
	m    mask
	held []int
}

func (p *problem) newLayout(m mask, hw, img string) layout {
	l := layout{NodeLayout: NodeLayout{Services: p.names(m), HardwareType: hw, ImageType: img}, m: m}
	for i := range p.constrained {
		if m.has(i) {
			l.held = append(l.held, i)
		}
	}
	return l
}

// narrowed returns, for each valid set, its preferred node layout (the
// smallest hardware and image type allowed, docs/solver.md#preference-order),
// sorted into the preference order. Sets that no hardware/image pair allows
// are dropped.
func (p *problem) narrowed(sets []mask, hw, img typeMap) []layout {
	hws, imgs := hw.names(), img.names()
	var out []layout
	for _, m := range sets {
		if l, ok := p.narrow(m, hws, imgs); ok {
			out = append(out, l)
		}
	}
	if len(p.unconstrained) > 0 {
		if l, ok := p.narrow(newMask(len(p.constrained)), hws, imgs); ok {
			out = append(out, l)
		}
	}
	sortLayouts(out)
	return out
}

func (p *problem) narrow(m mask, hws, imgs []string) (layout, bool) {
	// Whitelists restrict hardware and image independently, so the smallest
	// allowed of each is the narrowed pair.
	for _, h := range hws {
		if !p.allowsHW(m, h) {
			continue
		}
		for _, i := range imgs {
			if p.allows(m, h, i) {
				return p.newLayout(m, h, i), true
			}
		}
		// Image whitelists do not depend on the hardware type, so no later
		// hardware type can do better.
		return layout{}, false
	}
	return layout{}, false
}

func (p *problem) allowsHW(m mask, hw string) bool {
	for i := range p.constrained {
		if m.has(i) {
			if l := p.hwList[i]; len(l) > 0 && !slices.Contains(l, hw) {
				return false
			}
		}
	}
	return true
}

func sortLayouts(ls []layout) {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].NodeLayout.Less(ls[j].NodeLayout) })
}
