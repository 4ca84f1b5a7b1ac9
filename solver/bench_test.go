package solver

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cooprhq/coopr/catalog"
)

// BenchmarkHadoopDistributed solves the test catalog's hadoop-distributed
// template (testdata/catalog): a master node and workers under layout and
// quantity constraints.
func BenchmarkHadoopDistributed(b *testing.B) {
	c := testCatalog(b)
	cat := FromCatalog(c)
	tmpl, err := catalog.Resolve("hadoop-distributed", c.ClusterTemplates(), c.PartialTemplates())
	must(b, err)
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Solve(Request{Template: tmpl, Catalog: cat, Size: n}, Cluster{ID: "00000001", Name: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// twentyServices is a generated template with 20 constrained services: every
// service has quantities, neighbours cannot coexist, and pairs are tied by
// mustcoexist, so the search has real work to do.
func twentyServices() (*catalog.Template, Catalog) {
	t := &catalog.Template{Base: catalog.Base{Name: "twenty"}, Constraints: catalog.Constraints{Services: map[string]catalog.ServiceConstraint{}}}
	cat := Catalog{HardwareTypes: map[string]*catalog.MachineType{}, ImageTypes: map[string]*catalog.MachineType{}, Services: map[string]*catalog.Service{}}
	for _, h := range []string{"large", "medium", "small"} {
		cat.HardwareTypes[h] = &catalog.MachineType{Base: catalog.Base{Name: h}, ProviderMap: map[string]map[string]string{"p": {"flavor": h}}}
	}
	cat.ImageTypes["debian"] = &catalog.MachineType{Base: catalog.Base{Name: "debian"}, ProviderMap: map[string]map[string]string{"p": {"image": "d"}}}
	var names []string
	for i := range 20 {
		s := fmt.Sprintf("svc%02d", i)
		names = append(names, s)
		cat.Services[s] = &catalog.Service{Base: catalog.Base{Name: s}}
		maxQ := 2 + i*7
		sc := catalog.ServiceConstraint{Quantities: &catalog.Quantities{Min: 1 + i%3, Max: &maxQ}}
		if i%4 == 0 {
			sc.HardwareTypes = []string{"large", "medium"}
		}
		t.Constraints.Services[s] = sc
		if i > 0 && i%3 != 0 {
			t.Constraints.Layout.CantCoexist = append(t.Constraints.Layout.CantCoexist, []string{names[i-1], s})
		}
	}
	for i := 0; i+5 < 20; i += 6 {
		t.Constraints.Layout.MustCoexist = append(t.Constraints.Layout.MustCoexist, []string{names[i], names[i+5]})
	}
	t.Defaults.Services = nil
	for _, n := range names {
		t.Defaults.Services = append(t.Defaults.Services, catalog.ServiceRef{Name: n})
	}
	t.Defaults.Provider = "p"
	return t, cat
}

func BenchmarkTwentyConstrainedServices(b *testing.B) {
	t, cat := twentyServices()
	for b.Loop() {
		_, err := Solve(Request{Template: t, Catalog: cat, Size: 1000}, Cluster{ID: "1", Name: "bench"})
		var se *Error
		if err != nil && (!errors.As(err, &se) || se.Kind != KindBudgetExhausted) {
			b.Fatal(err)
		}
	}
}

func TestTwentyConstrainedServicesOutcome(t *testing.T) {
	tmpl, cat := twentyServices()
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 1000}, Cluster{ID: "1", Name: "bench"})
	if err != nil {
		var se *Error
		if !errors.As(err, &se) || se.Kind != KindBudgetExhausted {
			t.Fatal(err)
		}
		t.Logf("budget_exhausted: %v", err)
		return
	}
	if v := ValidateLayout(tmpl, sol.Layout); len(v) > 0 {
		t.Fatal(v)
	}
	t.Logf("%d layouts used", len(sol.Layout))
}
