package solver

// outcome of a bounded search.
type outcome int

const (
	found outcome = iota
	none
	exhausted
)

// counter searches count vectors over layouts in preference order
// (docs/solver.md#counts, docs/solver.md#bounded-search). lo and hi bound each
// layout's count (0 and inf for a create; the existing counts for scale-out
// and scale-in).
type counter struct {
	p          *problem
	ls         []layout
	lo, hi     []int
	b          *budget
	count      []int // per constrained service, for the current prefix
	lastHolder []int // per constrained service: the last layout holding it, -1 if none
	c          []int
	// Suffix facts, so feasible() costs O(services) rather than O(layouts).
	loSuffix   []int  // Σ lo[j] for j >= i
	hiSuffix   []int  // Σ hi[j] for j >= i, saturating at inf
	freeSuffix []bool // some layout j >= i holds no constrained service (its only cap is hi)
}

func newCounter(p *problem, ls []layout, lo, hi []int, b *budget) *counter {
	k := &counter{p: p, ls: ls, lo: lo, hi: hi, b: b, count: make([]int, len(p.constrained)), c: make([]int, len(ls))}
	if k.lo == nil {
		k.lo = make([]int, len(ls))
	}
	if k.hi == nil {
		k.hi = make([]int, len(ls))
		for i := range k.hi {
			k.hi[i] = inf
		}
	}
	k.lastHolder = make([]int, len(p.constrained))
	for s := range k.lastHolder {
		k.lastHolder[s] = -1
	}
	for j, l := range ls {
		for _, s := range l.held {
			k.lastHolder[s] = j
		}
	}
	m := len(ls)
	k.loSuffix = make([]int, m+1)
	k.hiSuffix = make([]int, m+1)
	k.freeSuffix = make([]bool, m+1)
	for j := m - 1; j >= 0; j-- {
		k.loSuffix[j] = k.loSuffix[j+1] + k.lo[j]
		k.hiSuffix[j] = min(inf, k.hiSuffix[j+1]+k.hi[j])
		k.freeSuffix[j] = k.freeSuffix[j+1] || len(ls[j].held) == 0
	}
	return k
}

// capOf is how many more nodes layout j can take given the current counts.
func (k *counter) capOf(j int) int {
	c := k.hi[j]
	for _, s := range k.ls[j].held {
		c = min(c, k.p.max[s]-k.count[s])
	}
	return c
}

func (k *counter) add(j, v int) {
	k.c[j] = v
	for _, s := range k.ls[j].held {
		k.count[s] += v
	}
}

// feasible prunes a prefix that cannot be completed (never one that can).
// Besides the checks of docs/solver.md#bounded-search it bounds the room left
// by the services' remaining maximums: every node of a layout holding
// constrained services uses up one unit of at least one of them.
func (k *counter) feasible(next, left int) bool {
	svcRoom := 0
	for s := range k.count {
		if k.count[s] > k.p.max[s] {
			return false
		}
		if need := k.p.min[s] - k.count[s]; need > 0 && (k.lastHolder[s] < next || need > left) {
			return false
		}
		if k.lastHolder[s] >= next {
			svcRoom = min(inf, svcRoom+k.p.max[s]-k.count[s])
		}
	}
	room := k.hiSuffix[next]
	if !k.freeSuffix[next] {
		room = min(room, svcRoom)
	}
	return room >= left && k.loSuffix[next] <= left
}

// greatest finds the lexicographically greatest vector with Σc = n meeting
// every quantity.
func (k *counter) greatest(n int) ([]int, outcome) {
	if len(k.ls) == 0 {
		return nil, none
	}
	if !k.feasible(0, n) {
		return nil, none
	}
	switch k.rec(0, n) {
	case found:
		return append([]int(nil), k.c...), found
	case exhausted:
		return nil, exhausted
	}
	return nil, none
}

func (k *counter) rec(i, left int) outcome {
	last := i == len(k.ls)-1
	upper := min(left, k.capOf(i))
	if !last {
		// Nodes that later layouts must take anyway cannot go here; cutting
		// those values early only skips prefixes feasible() would reject.
		upper = min(upper, left-k.loSuffix[i+1])
		for s := range k.count {
			if need := k.p.min[s] - k.count[s]; need > 0 && !k.ls[i].m.has(s) {
				upper = min(upper, left-need)
			}
		}
	}
	lower := k.lo[i]
	if last {
		if left > upper || left < lower {
			if !k.b.step() {
				return exhausted
			}
			return none
		}
		lower = left
	}
	for v := upper; v >= lower; v-- {
		if !k.b.step() {
			return exhausted
		}
		k.add(i, v)
		if last {
			if k.feasible(i+1, 0) {
				return found
			}
		} else if k.feasible(i+1, left-v) {
			switch k.rec(i+1, left-v) {
			case found:
				return found
			case exhausted:
				k.add(i, -v)
				k.c[i] = 0
				return exhausted
			}
		}
		k.add(i, -v)
		k.c[i] = 0
	}
	return none
}

// maxPlaceable is the largest Σc meeting every maximum (minimums ignored); inf
// when some layout is unbounded. ok is false when the budget ran out.
func (k *counter) maxPlaceable() (int, bool) {
	for j := range k.ls {
		if k.capOf(j) >= inf {
			return inf, true
		}
	}
	best := -1
	var rec func(i, sum int) bool
	rec = func(i, sum int) bool {
		if i == len(k.ls) {
			best = max(best, sum)
			return true
		}
		room := 0
		for j := i; j < len(k.ls); j++ {
			room += max(0, k.capOf(j))
		}
		if sum+room <= best {
			return true
		}
		for v := k.capOf(i); v >= k.lo[i]; v-- {
			if !k.b.step() {
				return false
			}
			k.add(i, v)
			ok := rec(i+1, sum+v)
			k.add(i, -v)
			k.c[i] = 0
			if !ok {
				return false
			}
		}
		return true
	}
	if !rec(0, 0) {
		return 0, false
	}
	return best, true
}

// minNeeded is the smallest Σc meeting every minimum within the maximums; -1
// when none exists. ok is false when the budget ran out.
func (k *counter) minNeeded() (int, bool) {
	best := -1
	var rec func(i, sum int) bool
	rec = func(i, sum int) bool {
		if best >= 0 && sum >= best {
			return true
		}
		if i == len(k.ls) {
			for s := range k.count {
				if k.count[s] < k.p.min[s] {
					return true
				}
			}
			best = sum
			return true
		}
		for s := range k.count {
			if k.count[s] < k.p.min[s] && k.lastHolder[s] < i {
				return true
			}
		}
		// No layout ever needs more nodes than the largest minimum it serves.
		limit := k.lo[i]
		for _, s := range k.ls[i].held {
			limit = max(limit, k.p.min[s]-k.count[s])
		}
		limit = min(limit, k.capOf(i))
		for v := k.lo[i]; v <= limit; v++ {
			if !k.b.step() {
				return false
			}
			k.add(i, v)
			ok := rec(i+1, sum+v)
			k.add(i, -v)
			k.c[i] = 0
			if !ok {
				return false
			}
		}
		return true
	}
	if !rec(0, 0) {
		return 0, false
	}
	return best, true
}

// validCounts reports whether a count vector meets every quantity.
func validCounts(p *problem, ls []layout, c []int) bool {
	count := make([]int, len(p.constrained))
	for j, l := range ls {
		for _, s := range l.held {
			count[s] += c[j]
		}
	}
	for s := range count {
		if count[s] < p.min[s] || count[s] > p.max[s] {
			return false
		}
	}
	return true
}
