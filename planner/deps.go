package planner

import (
	"slices"

	"github.com/cooprhq/coopr/catalog"
)

// rule is one of the four cross-service ordering rules
// (docs/planner.md#cross-service-ordering): X of A waits for Y of B over A's
// dependencies of one kind, or its dependents.
type rule struct {
	x, y     Action
	install  bool // install dependencies, else runtime
	reversed bool // over dependents (STOP)
}

var rules = [...]rule{
	{x: Start, y: Start},
	{x: Initialize, y: Start},
	{x: Stop, y: Stop, reversed: true},
	{x: Install, y: Install, install: true},
}

// depGraph is the dependency resolution
// (docs/planner.md#dependency-resolution) over the services of one cluster,
// indexed by position in names (sorted).
type depGraph struct {
	names []string
	index map[string]int
	defs  []*catalog.Service
	// raw edges with provided names swapped for their providers, restricted
	// to cluster services: a name absent from the cluster is a dead end, so
	// it can neither be passed through nor reached.
	raw [2][][]int // [0] install, [1] runtime
	// reach[k][a] is the set of services reachable from a over raw[k].
	reach [2][]bitset
	min   [2][][]int // minimised (transitive reduction)
	rmin  [][]int    // reversed minimised runtime edges: dependents
	// waits[x][a] is what X of service a waits for: (Y, B) pairs with B
	// sorted by name.
	waits [numActions][][]int
}

type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }

func kindIndex(install bool) int {
	if install {
		return 0
	}
	return 1
}

// newDepGraph resolves the dependencies among the given services. defs must
// hold a definition for every name.
func newDepGraph(names []string, defs map[string]*catalog.Service) *depGraph {
	g := &depGraph{names: names, index: make(map[string]int, len(names)), defs: make([]*catalog.Service, len(names))}
	for i, n := range names {
		g.index[n] = i
		g.defs[i] = defs[n]
	}
	provides := map[string][]int{}
	for i, d := range g.defs {
		for _, p := range d.Dependencies.Provides {
			if p != d.Name && !slices.Contains(provides[p], i) {
				provides[p] = append(provides[p], i)
			}
		}
	}
	n := len(names)
	for k := range 2 {
		g.raw[k] = make([][]int, n)
		g.reach[k] = make([]bitset, n)
		g.min[k] = make([][]int, n)
	}
	for i, d := range g.defs {
		for k, set := range [2]catalog.DepSet{d.Dependencies.Install, d.Dependencies.Runtime} {
			var out []int
			add := func(j int) {
				if j != i && !slices.Contains(out, j) {
					out = append(out, j)
				}
			}
			for _, name := range slices.Concat(set.Requires, set.Uses) {
				if ps, ok := provides[name]; ok {
					for _, j := range ps {
						add(j)
					}
				} else if j, ok := g.index[name]; ok {
					add(j)
				}
			}
			slices.Sort(out)
			g.raw[k][i] = out
		}
	}
	for k := range 2 {
		for i := range n {
			g.reach[k][i] = g.reachFrom(k, i)
		}
		for i := range n {
			g.min[k][i] = g.minimise(k, i)
		}
	}
	g.rmin = make([][]int, n)
	for i, deps := range g.min[1] {
		for _, j := range deps {
			g.rmin[j] = append(g.rmin[j], i)
		}
	}
	for _, r := range rules {
		g.waits[r.x] = make([][]int, n)
		for i := range n {
			g.waits[r.x][i] = g.candidates(r, i)
		}
	}
	return g
}

func (g *depGraph) reachFrom(k, from int) bitset {
	seen := newBitset(len(g.names))
	stack := slices.Clone(g.raw[k][from])
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen.has(j) {
			continue
		}
		seen.set(j)
		stack = append(stack, g.raw[k][j]...)
	}
	return seen
}

// strictlyReaches reports whether b is reachable from a but not the other way round;
// services on a dependency cycle reach each other and neither hides the
// other (the cycle itself surfaces as PLAN_CYCLE when it orders tasks).
func (g *depGraph) strictlyReaches(k, a, b int) bool {
	return g.reach[k][a].has(b) && !g.reach[k][b].has(a)
}

// minimise drops a dependency reachable through another one
// (docs/planner.md#dependency-resolution, step 3).
func (g *depGraph) minimise(k, i int) []int {
	deps := g.raw[k][i]
	var out []int
	for _, d := range deps {
		hidden := false
		for _, o := range deps {
			if o != d && g.strictlyReaches(k, o, d) {
				hidden = true
				break
			}
		}
		if !hidden {
			out = append(out, d)
		}
	}
	return out
}

func (g *depGraph) has(i int, a Action) bool { return g.defs[i].HasAction(a.CatalogName()) }

// candidates walks service a's minimised dependencies breadth-first for a
// rule (docs/planner.md#dependency-resolution, step 4).
func (g *depGraph) candidates(r rule, a int) []int {
	if !g.has(a, r.x) {
		return nil
	}
	k := kindIndex(r.install)
	next := g.min[k]
	if r.reversed {
		next = g.rmin
	}
	seen := newBitset(len(g.names))
	seen.set(a)
	queue := slices.Clone(next[a])
	var found []int
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen.has(s) {
			continue
		}
		seen.set(s)
		if g.has(s, r.y) {
			found = append(found, s)
			continue
		}
		queue = append(queue, next[s]...)
	}
	var out []int
	for _, c := range found {
		hidden := false
		for _, o := range found {
			if o == c {
				continue
			}
			// Over dependents, o reaches c when c depends on o.
			if (!r.reversed && g.strictlyReaches(k, o, c)) || (r.reversed && g.strictlyReaches(k, c, o)) {
				hidden = true
				break
			}
		}
		if !hidden {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// closure adds to set every service the members runtime-depend on
// (dependents false) or that runtime-depend on them (dependents true),
// transitively.
func (g *depGraph) closure(set bitset, dependents bool) {
	n := len(g.names)
	members := []int{}
	for i := range n {
		if set.has(i) {
			members = append(members, i)
		}
	}
	for _, m := range members {
		for j := range n {
			if (!dependents && g.reach[1][m].has(j)) || (dependents && g.reach[1][j].has(m)) {
				set.set(j)
			}
		}
	}
}

func (g *depGraph) checkCycles() error {
	for k, kind := range []string{"install", "runtime"} {
		if c := g.cycle(k); c != nil {
			return &CycleError{Services: c, Kind: kind}
		}
	}
	return nil
}

// cycle returns one cycle of install (k 0) or runtime (k 1) dependencies
// among the cluster's services, or nil.
func (g *depGraph) cycle(k int) []string {
	for a := range g.names {
		if !g.reach[k][a].has(a) {
			continue
		}
		// Walk from a, always to a dependency that leads back to a.
		path := []string{g.names[a]}
		for v := a; ; {
			for _, w := range g.raw[k][v] {
				if w == a || g.reach[k][w].has(a) {
					v = w
					break
				}
			}
			if v == a {
				return path
			}
			path = append(path, g.names[v])
		}
	}
	return nil
}

// ActionDependency says that Action of Service waits for each of WaitsFor.
type ActionDependency struct {
	Action   Action       `json:"action"`
	Service  string       `json:"service"`
	WaitsFor []ServiceRef `json:"waits_for"`
}

// ServiceRef names an action of a service.
type ServiceRef struct {
	Action  Action `json:"action"`
	Service string `json:"service"`
}

// ActionDependencies resolves the cross-service ordering rules
// (docs/planner.md#dependency-resolution,
// docs/planner.md#cross-service-ordering) among services, all taken to be on
// the cluster, and lists every action that waits for another, sorted by
// service then action. A service named in a dependency but absent from
// services is a dead end.
func ActionDependencies(services []*catalog.Service) ([]ActionDependency, error) {
	defs := map[string]*catalog.Service{}
	var names []string
	for _, s := range services {
		if _, dup := defs[s.Name]; dup {
			return nil, &RequestError{Field: "services", Message: "service " + s.Name + " is given twice"}
		}
		defs[s.Name] = s
		names = append(names, s.Name)
	}
	slices.Sort(names)
	g := newDepGraph(names, defs)
	if err := g.checkCycles(); err != nil {
		return nil, err
	}
	var out []ActionDependency
	for i, name := range names {
		for _, x := range []Action{Install, Initialize, Start, Stop} {
			y := x
			if x == Initialize {
				y = Start
			}
			if len(g.waits[x][i]) == 0 {
				continue
			}
			d := ActionDependency{Action: x, Service: name}
			for _, b := range g.waits[x][i] {
				d.WaitsFor = append(d.WaitsFor, ServiceRef{Action: y, Service: names[b]})
			}
			out = append(out, d)
		}
	}
	return out, nil
}
