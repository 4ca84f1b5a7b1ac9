package planner

import "fmt"

// digraph is a compact directed graph over vertices 0..n-1.
type digraph struct {
	n          int
	succ, pred [][]int32
}

func newDigraph(n int, edges []edge) *digraph {
	g := &digraph{n: n, succ: make([][]int32, n), pred: make([][]int32, n)}
	outDeg := make([]int32, n)
	inDeg := make([]int32, n)
	for _, e := range edges {
		outDeg[e.from]++
		inDeg[e.to]++
	}
	// One backing array each keeps a 10^6-edge graph to two allocations.
	sb := make([]int32, len(edges))
	pb := make([]int32, len(edges))
	var so, po int32
	for v := range n {
		g.succ[v] = sb[so : so : so+outDeg[v]]
		g.pred[v] = pb[po : po : po+inDeg[v]]
		so += outDeg[v]
		po += inDeg[v]
	}
	for _, e := range edges {
		g.succ[e.from] = append(g.succ[e.from], e.to)
		g.pred[e.to] = append(g.pred[e.to], e.from)
	}
	return g
}

type edge struct{ from, to int32 }

// layers peels the graph round by round (docs/planner.md#stages, step 1):
// layer[v] is the number of vertices on the longest chain of predecessors
// ending at v. If some vertices remain on or behind a cycle, cycle holds one
// cycle.
func (g *digraph) layers() (layer []int32, count int, cycle []int32) {
	layer = make([]int32, g.n)
	indeg := make([]int32, g.n)
	var cur []int32
	for v := range g.n {
		indeg[v] = int32(len(g.pred[v]))
		if indeg[v] == 0 {
			cur = append(cur, int32(v))
		}
	}
	done := 0
	for len(cur) > 0 {
		var next []int32
		for _, v := range cur {
			layer[v] = int32(count)
			done++
			for _, w := range g.succ[v] {
				indeg[w]--
				if indeg[w] == 0 {
					next = append(next, w)
				}
			}
		}
		cur = next
		count++
	}
	if done == g.n {
		return layer, count, nil
	}
	// Every vertex left has a predecessor left, so walking predecessors from
	// any of them must come back to a vertex already seen.
	start := int32(-1)
	for v := range g.n {
		if indeg[v] > 0 {
			start = int32(v)
			break
		}
	}
	pos := map[int32]int{}
	var path []int32
	for v := start; ; {
		if i, ok := pos[v]; ok {
			cycle = path[i:]
			break
		}
		pos[v] = len(path)
		path = append(path, v)
		for _, p := range g.pred[v] {
			if indeg[p] > 0 {
				v = p
				break
			}
		}
	}
	// path runs against the edges; a cycle reads better along them.
	for i, j := 0, len(cycle)-1; i < j; i, j = i+1, j-1 {
		cycle[i], cycle[j] = cycle[j], cycle[i]
	}
	return layer, count, cycle
}

// Linearize layers an arbitrary DAG given as vertices and edges (either may
// name a vertex first): the layering of docs/planner.md#stages, step 1,
// without splitting. Each layer keeps the vertices in first-seen order. A
// cycle is an error wrapping ErrCycle.
func Linearize[T comparable](vertices []T, edges [][2]T) ([][]T, error) {
	idx := map[T]int32{}
	var order []T
	id := func(v T) int32 {
		if i, ok := idx[v]; ok {
			return i
		}
		idx[v] = int32(len(order))
		order = append(order, v)
		return idx[v]
	}
	for _, v := range vertices {
		id(v)
	}
	es := make([]edge, len(edges))
	for i, e := range edges {
		es[i] = edge{id(e[0]), id(e[1])}
	}
	g := newDigraph(len(order), es)
	layer, count, cycle := g.layers()
	if cycle != nil {
		names := make([]T, len(cycle))
		for i, v := range cycle {
			names[i] = order[v]
		}
		return nil, fmt.Errorf("%w: no vertex without predecessors is left among %v", ErrCycle, names)
	}
	out := make([][]T, count)
	for v, l := range layer {
		out[l] = append(out[l], order[v])
	}
	return out, nil
}
