package solver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
)

// shopCatalog is the shop of docs/solver.md#worked-examples.
func shopCatalog(t testing.TB) (*catalog.Template, Catalog) {
	t.Helper()
	var tmpl catalog.Template
	must(t, json.Unmarshal([]byte(`{
	  "name": "shop",
	  "defaults": {"services": ["base","lb","web","cache","db"], "provider": "p"},
	  "constraints": {
	    "layout": {"mustcoexist": [["web","cache"]], "cantcoexist": [["db","web"],["lb","db"]]},
	    "services": {
	      "lb": {"quantities": {"min": 1, "max": 1}},
	      "web": {"quantities": {"min": 2}},
	      "db": {"hardwaretypes": ["xlarge"], "quantities": {"min": 1, "max": 2}}
	    }
	  }
	}`), &tmpl))
	cat := Catalog{HardwareTypes: map[string]*catalog.MachineType{}, ImageTypes: map[string]*catalog.MachineType{}, Services: map[string]*catalog.Service{}}
	for _, h := range []string{"small", "xlarge"} {
		cat.HardwareTypes[h] = &catalog.MachineType{Base: catalog.Base{Name: h}, ProviderMap: map[string]map[string]string{"p": {"flavor": h + "-flavor"}}}
	}
	cat.ImageTypes["ubuntu22"] = &catalog.MachineType{Base: catalog.Base{Name: "ubuntu22"}, ProviderMap: map[string]map[string]string{"p": {"image": "img-22", "sshuser": "ubuntu"}}}
	for _, s := range tmpl.Defaults.ServiceNames() {
		cat.Services[s] = &catalog.Service{Base: catalog.Base{Name: s}}
	}
	return &tmpl, cat
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func layoutString(entries []LayoutEntry) string {
	var parts []string
	for _, e := range entries {
		parts = append(parts, fmt.Sprintf("%d×{%s}@%s/%s", e.Count, strings.Join(e.Services, ","), e.HardwareType, e.ImageType))
	}
	return strings.Join(parts, " ")
}

func TestShopWorkedExample(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	tests := []struct {
		n    int
		want string
	}{
		{5, "1×{base,cache,lb,web}@small/ubuntu22 3×{base,cache,web}@small/ubuntu22 1×{base,db}@xlarge/ubuntu22"},
		{3, "1×{base,cache,lb,web}@small/ubuntu22 1×{base,cache,web}@small/ubuntu22 1×{base,db}@xlarge/ubuntu22"},
		{20, "1×{base,cache,lb,web}@small/ubuntu22 18×{base,cache,web}@small/ubuntu22 1×{base,db}@xlarge/ubuntu22"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: tt.n}, Cluster{ID: "00000412", Name: "Web_Shop"})
			must(t, err)
			if got := layoutString(sol.Layout); got != tt.want {
				t.Errorf("layout = %s\nwant     %s", got, tt.want)
			}
			if len(sol.Nodes) != tt.n || sol.Nodes[0].Hostname != "web-shop-412-1000.local" || sol.Nodes[0].NodeNum != 1000 {
				t.Errorf("nodes = %+v", sol.Nodes[0])
			}
		})
	}
	_, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 2}, Cluster{ID: "1"})
	var se *Error
	if !errors.As(err, &se) || se.Kind != KindNoLayout || !strings.Contains(se.Message, "need at least 3") {
		t.Fatalf("N=2: err = %v", err)
	}
	t.Log(err)
}
