package solver

import (
	"fmt"
	"slices"
	"sort"

	"github.com/cooprhq/coopr/catalog"
)

// The functions here expose single steps of the solver, for template authors'
// tools and for checking each rule on its own.

// UnconstrainedServices returns the cluster services the template does not
// constrain; they go on every node.
func UnconstrainedServices(t *catalog.Template, services []string) []string {
	return newProblem(t, services).unconstrained
}

// ValidServiceSets returns every valid service set
// (docs/solver.md#valid-service-sets), each with the unconstrained services
// added, sorted by the preference comparator of their names.
func ValidServiceSets(t *catalog.Template, services []string, maxSteps int) ([][]string, error) {
	p := newProblem(t, services)
	sets, ok := p.validSets(&budget{left: stepsOr(maxSteps)})
	if !ok {
		return nil, budgetError(stepsOr(maxSteps))
	}
	var out [][]string
	for _, m := range sets {
		out = append(out, p.names(m))
	}
	if len(p.unconstrained) > 0 {
		out = append(out, slices.Clone(p.unconstrained))
	}
	sort.Slice(out, func(i, j int) bool {
		return NodeLayout{Services: out[i]}.Less(NodeLayout{Services: out[j]})
	})
	return out, nil
}

func stepsOr(n int) int {
	if n <= 0 {
		return DefaultMaxSteps
	}
	return n
}

// IsValidServiceSet applies the coexistence rules to one set of services of
// a cluster holding clusterServices.
func IsValidServiceSet(t *catalog.Template, clusterServices, set []string) bool {
	p := newProblem(t, catalog.SortedUnion(clusterServices, set))
	m, _ := p.maskOf(set)
	return p.validSet(m)
}

// SatisfiesServiceConstraints checks a node layout against the hardware and
// image whitelists of its services.
func SatisfiesServiceConstraints(t *catalog.Template, l NodeLayout) bool {
	p := newProblem(t, l.Services)
	m, _ := p.maskOf(l.Services)
	return p.allows(m, l.HardwareType, l.ImageType)
}

// NodeLayouts returns every candidate node layout
// (docs/solver.md#node-layouts) over the given hardware and image types,
// before narrowing, in preference order.
func NodeLayouts(t *catalog.Template, services, hws, imgs []string, maxSteps int) ([]NodeLayout, error) {
	p := newProblem(t, services)
	sets, ok := p.validSets(&budget{left: stepsOr(maxSteps)})
	if !ok {
		return nil, budgetError(stepsOr(maxSteps))
	}
	if len(p.unconstrained) > 0 {
		sets = append(sets, newMask(len(p.constrained)))
	}
	var out []NodeLayout
	for _, m := range sets {
		for _, h := range catalog.SortedUnion(hws) {
			for _, i := range catalog.SortedUnion(imgs) {
				if p.allows(m, h, i) {
					out = append(out, NodeLayout{Services: p.names(m), HardwareType: h, ImageType: i})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out, nil
}

// PreferredNodeLayouts returns the narrowed node layouts in preference order:
// the layouts a create would choose from.
func PreferredNodeLayouts(t *catalog.Template, services, hws, imgs []string, maxSteps int) ([]NodeLayout, error) {
	all, err := NodeLayouts(t, services, hws, imgs, maxSteps)
	if err != nil {
		return nil, err
	}
	return Narrow(all, nil, nil), nil
}

// Narrow keeps one layout per service set, the smallest under the comparator,
// and returns them in preference order. hwPref and imgPref, when given, rank
// types before their names do (listed types first, in list order); coopr's own
// create passes none, so names decide (docs/solver.md#preference-order).
func Narrow(layouts []NodeLayout, hwPref, imgPref []string) []NodeLayout {
	rank := func(pref []string) func(string) int {
		if len(pref) == 0 {
			return nil
		}
		return func(s string) int {
			if i := slices.Index(pref, s); i >= 0 {
				return i
			}
			return len(pref)
		}
	}
	hr, ir := rank(hwPref), rank(imgPref)
	best := map[string]NodeLayout{}
	for _, l := range layouts {
		l.Services = catalog.SortedUnion(l.Services)
		k := NodeLayout{Services: l.Services}.key()
		if b, ok := best[k]; !ok || compareLayouts(l, b, hr, ir) < 0 {
			best[k] = l
		}
	}
	out := make([]NodeLayout, 0, len(best))
	for _, l := range best {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return compareLayouts(out[i], out[j], hr, ir) < 0 })
	return out
}

// SolveConstraints runs the layout search over given hardware and image type
// names (no provider maps), for a cluster of n nodes.
func SolveConstraints(t *catalog.Template, services, hws, imgs []string, n, maxSteps int) ([]LayoutEntry, error) {
	return solveLayouts(newProblem(t, services), catalog.SortedUnion(hws), catalog.SortedUnion(imgs), n, stepsOr(maxSteps))
}

func (p *problem) bind(layouts []NodeLayout) []layout {
	ls := make([]layout, len(layouts))
	for i, l := range layouts {
		m, _ := p.maskOf(l.Services)
		ls[i] = p.newLayout(m, l.HardwareType, l.ImageType)
	}
	return ls
}

// FindCounts returns the lexicographically greatest count vector for the
// given node layouts, taken as already in preference order
// (docs/solver.md#counts).
func FindCounts(t *catalog.Template, services []string, layouts []NodeLayout, n, maxSteps int) ([]int, error) {
	p := newProblem(t, services)
	ls := p.bind(layouts)
	k := newCounter(p, ls, nil, nil, &budget{left: stepsOr(maxSteps)})
	c, out := k.greatest(n)
	switch out {
	case exhausted:
		return nil, budgetError(stepsOr(maxSteps))
	case none:
		k = newCounter(p, ls, nil, nil, &budget{left: stepsOr(maxSteps)})
		return nil, p.explain(k, n, p.atomCandidates, nil, nil)
	}
	return c, nil
}

// ValidCounts reports whether counts over the layouts meet every service's
// quantities.
func ValidCounts(t *catalog.Template, services []string, layouts []NodeLayout, counts []int) bool {
	p := newProblem(t, services)
	return len(counts) == len(layouts) && validCounts(p, p.bind(layouts), counts)
}

// ValidateLayout checks a whole cluster layout against the template: every
// node layout's coexistence rules and whitelists, every quantity, the size
// and the compatibility lists. It returns one line per violation.
func ValidateLayout(t *catalog.Template, entries []LayoutEntry) []string {
	var services [][]string
	total := 0
	for _, e := range entries {
		services = append(services, e.Services)
		total += e.Count
	}
	p := newProblem(t, catalog.SortedUnion(services...))
	var out []string
	if err := checkSize(t, total); err != nil {
		out = append(out, err.Message)
	}
	compat := t.Compatibility
	for _, e := range entries {
		m, _ := p.maskOf(e.Services)
		desc := fmt.Sprintf("node layout {%s} on %s/%s", joinNames(e.Services), e.HardwareType, e.ImageType)
		if r := p.exclusion(candidate{m: m, hw: e.HardwareType, img: e.ImageType}, nil, nil); r != "" {
			out = append(out, desc+" violates "+r)
		}
		if len(compat.HardwareTypes) > 0 && !slices.Contains(compat.HardwareTypes, e.HardwareType) {
			out = append(out, desc+": hardware type "+e.HardwareType+" is not in the compatibility list")
		}
		if len(compat.ImageTypes) > 0 && !slices.Contains(compat.ImageTypes, e.ImageType) {
			out = append(out, desc+": image type "+e.ImageType+" is not in the compatibility list")
		}
		for _, s := range e.Services {
			if len(compat.Services) > 0 && !slices.Contains(compat.Services, s) {
				out = append(out, desc+": service "+s+" is not in the compatibility list")
			}
		}
	}
	count := make([]int, len(p.constrained))
	for _, e := range entries {
		m, _ := p.maskOf(e.Services)
		for s := range p.constrained {
			if m.has(s) {
				count[s] += e.Count
			}
		}
	}
	for s, name := range p.constrained {
		if count[s] < p.min[s] || count[s] > p.max[s] {
			out = append(out, fmt.Sprintf("%s is on %d nodes, outside %s", name, count[s], p.quantityText(s)))
		}
	}
	return out
}

func joinNames(s []string) string {
	out := ""
	for i, n := range s {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}

// CheckServicesToAdd runs the pre-solve checks of an add-services request
// (docs/solver.md#pre-solve-checks) without searching.
func CheckServicesToAdd(t *catalog.Template, cat map[string]*catalog.Service, existing, add []string) error {
	for _, s := range add {
		if slices.Contains(existing, s) {
			return errorf(KindInvalidInput, "service %s is already on the cluster", s)
		}
	}
	if err := checkServices(t, catalog.SortedUnion(existing, add), catalog.SortedUnion(add), cat); err != nil {
		return err
	}
	return nil
}
