package solver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
)

// ruleCatalog builds a catalog from compact JSON: a template and services
// with dependencies; hardware small/large and image deb are mapped for
// provider p, plus "nomap" mapped for no provider.
func ruleCatalog(t *testing.T, tmplJSON string, services map[string]string) (*catalog.Template, Catalog) {
	t.Helper()
	var tmpl catalog.Template
	must(t, json.Unmarshal([]byte(tmplJSON), &tmpl))
	cat := Catalog{HardwareTypes: map[string]*catalog.MachineType{}, ImageTypes: map[string]*catalog.MachineType{}, Services: map[string]*catalog.Service{}}
	for _, h := range []string{"small", "large"} {
		cat.HardwareTypes[h] = &catalog.MachineType{Base: catalog.Base{Name: h}, ProviderMap: map[string]map[string]string{"p": {"flavor": h}}}
	}
	cat.HardwareTypes["nomap"] = &catalog.MachineType{Base: catalog.Base{Name: "nomap"}, ProviderMap: map[string]map[string]string{"q": {"flavor": "x"}}}
	cat.ImageTypes["deb"] = &catalog.MachineType{Base: catalog.Base{Name: "deb"}, ProviderMap: map[string]map[string]string{"p": {"image": "deb-12"}}}
	for name, deps := range services {
		s := &catalog.Service{Base: catalog.Base{Name: name}}
		if deps != "" {
			must(t, json.Unmarshal([]byte(deps), &s.Dependencies))
		}
		cat.Services[name] = s
	}
	return &tmpl, cat
}

func TestPreSolveChecks(t *testing.T) {
	svcs := map[string]string{
		"base": "", "db": `{"provides":["sql"]}`, "app": `{"runtime":{"requires":["sql"]},"install":{"requires":["base"]}}`,
		"legacy": `{"conflicts":["db"]}`, "needy": `{"install":{"requires":["queue"]},"runtime":{"requires":["cache"]}}`,
	}
	tests := []struct {
		name     string
		tmpl     string
		req      Request
		kind     Kind
		contains string
	}{
		{"required hw missing", `{"name":"t","defaults":{"services":["base"],"provider":"p","hardwaretype":"huge"}}`, Request{}, KindNoHardwareType, "huge does not exist"},
		{"required hw not compatible", `{"name":"t","defaults":{"services":["base"],"provider":"p","hardwaretype":"large"},"compatibility":{"hardwaretypes":["small"]}}`, Request{}, KindNoHardwareType, "not in template t's compatibility list"},
		{"required hw unmapped", `{"name":"t","defaults":{"services":["base"],"provider":"p"}}`, Request{HardwareType: "nomap"}, KindNoHardwareType, "not usable with provider p"},
		{"no hw for provider", `{"name":"t","defaults":{"services":["base"],"provider":"zz"}}`, Request{}, KindNoHardwareType, "provider zz"},
		{"no image", `{"name":"t","defaults":{"services":["base"],"provider":"p"},"compatibility":{"imagetypes":["centos"]}}`, Request{}, KindNoImageType, "no image types"},
		{"hardware before image", `{"name":"t","defaults":{"services":["base"],"provider":"zz"},"compatibility":{"imagetypes":["centos"]}}`, Request{}, KindNoHardwareType, ""},
		{"incompatible lists all", `{"name":"t","defaults":{"services":["base","db","app"],"provider":"p"},"compatibility":{"services":["base"]}}`, Request{}, KindIncompatibleServices, "app,db are not in"},
		{"incompatible before unknown", `{"name":"t","defaults":{"services":["ghost"],"provider":"p"},"compatibility":{"services":["base"]}}`, Request{}, KindIncompatibleServices, "ghost"},
		{"unknown", `{"name":"t","defaults":{"services":["base","ghost"],"provider":"p"}}`, Request{}, KindUnknownService, "service ghost does not exist"},
		{"missing dependency per line", `{"name":"t","defaults":{"services":["needy"],"provider":"p"}}`, Request{}, KindMissingDependency, "needy requires cache, which no service on the cluster provides; needy requires queue"},
		{"provides satisfies", `{"name":"t","defaults":{"services":["base","db","app","legacy"],"provider":"p"}}`, Request{}, KindConflict, "legacy conflicts with db"},
		{"request services replace defaults", `{"name":"t","defaults":{"services":["needy"],"provider":"p"}}`, Request{Services: []string{"app"}}, KindMissingDependency, "app requires base"},
		{"size below min", `{"name":"t","defaults":{"services":["base"],"provider":"p"},"constraints":{"size":{"min":2,"max":4}}}`, Request{Size: 1}, KindSizeConstraint, "numMachines must be in 2..4 (got 1)"},
		{"size above max", `{"name":"t","defaults":{"services":["base"],"provider":"p"},"constraints":{"size":{"min":2,"max":4}}}`, Request{Size: 5}, KindSizeConstraint, "2..4 (got 5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, cat := ruleCatalog(t, tt.tmpl, svcs)
			r := tt.req
			r.Template, r.Catalog = tmpl, cat
			if r.Size == 0 {
				r.Size = 2
			}
			_, err := Solve(r, Cluster{ID: "1", Name: "c"})
			var se *Error
			if !errors.As(err, &se) || se.Kind != tt.kind || !strings.Contains(se.Message, tt.contains) {
				t.Fatalf("err = %v (%T), want %s containing %q", err, err, tt.kind, tt.contains)
			}
		})
	}
}

func TestUnsatisfiableExplanations(t *testing.T) {
	svcs := map[string]string{"a": "", "b": "", "lb": "", "db": "", "web": "", "base": ""}
	tests := []struct {
		name, tmpl string
		size       int
		want       string
	}{
		{"1 no home: cantcoexist inside a mustcoexist atom", `{"name":"t","defaults":{"services":["a","b"],"provider":"p"},
			"constraints":{"layout":{"mustcoexist":[["a","b"]],"cantcoexist":[["a","b"]]},"services":{"a":{"quantities":{"min":1}}}}}`, 2,
			"a: needs 1..∞ nodes, but every node layout that can hold it is excluded by cantcoexist [a b]"},
		{"1 no home: whitelist", `{"name":"t","defaults":{"services":["a","base"],"provider":"p"},
			"constraints":{"services":{"a":{"hardwaretypes":["huge"],"quantities":{"min":1}}}}}`, 2,
			"a: needs 1..∞ nodes, but every node layout that can hold it is excluded by the hardware type whitelist of a (allowed here: large, small)"},
		{"2 too few places", `{"name":"t","defaults":{"services":["lb","db"],"provider":"p"},
			"constraints":{"services":{"lb":{"quantities":{"max":1}},"db":{"quantities":{"max":2}}}}}`, 5,
			"size: 5 nodes requested, but at most 3 can be placed (db ≤ 2, lb ≤ 1)"},
		{"3 too many minimums", `{"name":"t","defaults":{"services":["lb","web","db","base"],"provider":"p"},
			"constraints":{"layout":{"cantcoexist":[["lb","web"],["lb","db"],["web","db"]]},"services":{"lb":{"quantities":{"min":1,"max":1}},"web":{"quantities":{"min":2}},"db":{"quantities":{"min":1}}}}}`, 3,
			"size: 3 nodes requested, but the service minimums need at least 4 (db ≥ 1, lb ≥ 1, web ≥ 2)"},
		{"4 contradiction", `{"name":"t","defaults":{"services":["a","b","base"],"provider":"p"},
			"constraints":{"layout":{"mustcoexist":[["a","b"]]},"services":{"a":{"quantities":{"min":3}},"b":{"quantities":{"max":2}}}}}`, 5,
			"a: needs at least 3 nodes, but every node layout that can hold it also holds b, which allows at most 2"},
		{"coopr vs greedy: (0,1,1)", `{"name":"t","defaults":{"services":["a","b"],"provider":"p"},
			"constraints":{"services":{"a":{"quantities":{"max":1}},"b":{"quantities":{"max":1}}}}}`, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, cat := ruleCatalog(t, tt.tmpl, svcs)
			sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: tt.size}, Cluster{ID: "1", Name: "c"})
			if tt.want == "" {
				must(t, err)
				if got := layoutString(sol.Layout); got != "1×{a}@large/deb 1×{b}@large/deb" {
					t.Fatalf("layout = %s", got)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Kind != KindNoLayout {
				t.Fatalf("err = %v, want no_layout", err)
			}
			if se.Message != tt.want {
				t.Fatalf("message = %q\nwant      %q", se.Message, tt.want)
			}
		})
	}
}
