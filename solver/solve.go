package solver

// Solution is the layout of a new cluster.
type Solution struct {
	Layout   []LayoutEntry `json:"layout"` // preference order; only layouts with nodes
	Nodes    []Node        `json:"nodes"`
	Services []string      `json:"-"` // cluster.services
}

// Solve computes the layout of a new cluster (docs/solver.md). Failures are
// *Error values.
func Solve(r Request, cl Cluster) (*Solution, error) {
	if r.Template == nil {
		return nil, errorf(KindInvalidCatalog, "no template given")
	}
	r = r.effective()
	t := r.Template
	if err := checkSize(t, r.Size); err != nil {
		return nil, err
	}
	if r.Provider == "" {
		return nil, errorf(KindInvalidCatalog, "template %s names no provider and the request gives none", t.Name)
	}
	hw, err := buildTypeMap("hardware type", "flavor", r.HardwareType, t.Compatibility.HardwareTypes, r.Catalog.HardwareTypes, r.Provider, t.Name, KindNoHardwareType)
	if err != nil {
		return nil, err
	}
	img, err := buildTypeMap("image type", "image", r.ImageType, t.Compatibility.ImageTypes, r.Catalog.ImageTypes, r.Provider, t.Name, KindNoImageType)
	if err != nil {
		return nil, err
	}
	if err := checkServices(t, r.Services, nil, r.Catalog.Services); err != nil {
		return nil, err
	}
	entries, serr := solveLayouts(newProblem(t, r.Services), hw.names(), img.names(), r.Size, r.MaxSteps)
	if serr != nil {
		return nil, serr
	}
	nodes := materialize(entries, cl, FirstNodeNum, r.Provider, r.Catalog)
	return &Solution{Layout: entries, Nodes: nodes, Services: unionServices(entries, func(e LayoutEntry) []string { return e.Services })}, nil
}

func entriesOf(ls []layout, c []int) []LayoutEntry {
	var out []LayoutEntry
	for i, l := range ls {
		if c[i] > 0 {
			out = append(out, LayoutEntry{NodeLayout: l.NodeLayout, Count: c[i]})
		}
	}
	return out
}

// atomCandidates: for a create, the smallest set that can hold s is its
// mustcoexist atom; any other set holding s is a superset, so the atom's
// exclusion explains them all.
func (p *problem) atomCandidates(s int) []candidate {
	for _, a := range p.atoms() {
		m := newMask(len(p.constrained))
		for _, x := range a {
			m.set(x)
		}
		if m.has(s) {
			return []candidate{{m: m}}
		}
	}
	return nil
}

// solveLayouts runs the set enumeration, narrowing and count search
// (docs/solver.md#valid-service-sets to docs/solver.md#bounded-search) over
// the given hardware and image types.
func solveLayouts(p *problem, hws, imgs []string, n, maxSteps int) ([]LayoutEntry, error) {
	b := &budget{left: maxSteps}
	sets, ok := p.validSets(b)
	if !ok {
		return nil, budgetError(maxSteps)
	}
	ls := p.narrowed(sets, namesMap(hws), namesMap(imgs))
	k := newCounter(p, ls, nil, nil, b)
	c, out := k.greatest(n)
	switch out {
	case exhausted:
		return nil, budgetError(maxSteps)
	case none:
		k = newCounter(p, ls, nil, nil, &budget{left: maxSteps})
		return nil, p.explain(k, n, p.atomCandidates, hws, imgs)
	}
	return entriesOf(ls, c), nil
}

func namesMap(names []string) typeMap {
	m := typeMap{}
	for _, n := range names {
		m[n] = n
	}
	return m
}
