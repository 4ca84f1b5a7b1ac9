package solver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cooprhq/coopr/catalog"
)

// bruteGreatest enumerates count vectors with Σc = n in descending
// lexicographic order and returns the first that meets every quantity.
func bruteGreatest(tmpl *catalog.Template, services []string, ls []NodeLayout, n int) []int {
	p := newProblem(tmpl, services)
	bound := p.bind(ls)
	c := make([]int, len(ls))
	var found []int
	var rec func(i, left int) bool
	rec = func(i, left int) bool {
		if i == len(ls)-1 {
			c[i] = left
			if validCounts(p, bound, c) {
				found = slices.Clone(c)
				return true
			}
			return false
		}
		for v := left; v >= 0; v-- {
			c[i] = v
			if rec(i+1, left-v) {
				return true
			}
		}
		return false
	}
	if len(ls) > 0 {
		rec(0, n)
	}
	return found
}

func randomTemplate(r *rand.Rand) (*catalog.Template, []string) {
	k := 2 + r.IntN(4)
	var svcs []string
	for i := range k {
		svcs = append(svcs, fmt.Sprintf("s%d", i))
	}
	if r.IntN(2) == 0 {
		svcs = append(svcs, "u") // unconstrained
	}
	t := &catalog.Template{Base: catalog.Base{Name: "rand"}, Constraints: catalog.Constraints{Services: map[string]catalog.ServiceConstraint{}}}
	pick := func() []string {
		a, b := r.IntN(k), r.IntN(k)
		if a == b {
			b = (a + 1) % k
		}
		return []string{svcs[a], svcs[b]}
	}
	for range r.IntN(3) {
		t.Constraints.Layout.CantCoexist = append(t.Constraints.Layout.CantCoexist, pick())
	}
	for range r.IntN(2) {
		t.Constraints.Layout.MustCoexist = append(t.Constraints.Layout.MustCoexist, pick())
	}
	for i := range k {
		sc := catalog.ServiceConstraint{}
		if r.IntN(3) > 0 {
			q := &catalog.Quantities{Min: r.IntN(3)}
			if r.IntN(2) == 0 {
				m := q.Min + r.IntN(3)
				q.Max = &m
			}
			sc.Quantities = q
		}
		if r.IntN(4) == 0 {
			sc.HardwareTypes = []string{[]string{"h1", "h2"}[r.IntN(2)]}
		}
		t.Constraints.Services[svcs[i]] = sc
	}
	return t, svcs
}

func TestCountsMatchBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checked, unsat := 0, 0
	for iter := range 400 {
		tmpl, svcs := randomTemplate(r)
		ls, err := PreferredNodeLayouts(tmpl, svcs, []string{"h1", "h2"}, []string{"i1"}, 0)
		must(t, err)
		if len(ls) > 10 {
			continue // keeps the brute force small
		}
		for n := 1; n <= 6; n++ {
			want := bruteGreatest(tmpl, svcs, ls, n)
			got, err := FindCounts(tmpl, svcs, ls, n, 0)
			if want == nil {
				var se *Error
				if !errors.As(err, &se) || se.Kind != KindNoLayout {
					t.Fatalf("iter %d n %d: got %v %v, want no layout\n%+v", iter, n, got, err, tmpl.Constraints)
				}
				unsat++
				continue
			}
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("iter %d n %d: got %v (%v), want %v\nlayouts %v\n%+v", iter, n, got, err, want, ls, tmpl.Constraints)
			}
			// The full search agrees and its result passes the rule checks.
			entries, err := SolveConstraints(tmpl, svcs, []string{"h1", "h2"}, []string{"i1"}, n, 0)
			must(t, err)
			if v := ValidateLayout(tmpl, entries); len(v) > 0 {
				t.Fatalf("iter %d n %d: invalid layout %v: %v", iter, n, entries, v)
			}
			checked++
		}
	}
	t.Logf("%d solvable and %d unsatisfiable instances agree with brute force", checked, unsat)
	if checked < 200 || unsat < 50 {
		t.Fatalf("generator too narrow: %d solvable, %d unsatisfiable", checked, unsat)
	}
}
