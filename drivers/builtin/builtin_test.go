package builtin

import (
	"io"
	"log/slog"
	"slices"
	"sort"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
)

// The example catalog's provider and automator types are what the drivers
// declare: the same names and parameters, sensitive where the driver says.
// A driver that grows a parameter the catalog does not show fails here.
func TestExampleCatalogMatchesDrivers(t *testing.T) {
	reg, closeDrivers, err := Registry(Config{WorkDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer closeDrivers()
	cat, is, err := catalog.LoadPath("../../examples/catalog")
	if err != nil || is.HasErrors() {
		t.Fatalf("example catalog: %v %v", err, is.Errors())
	}
	types := map[drivers.Role]catalog.Kind{drivers.RoleVM: catalog.KindProviderType, drivers.RoleAutomator: catalog.KindAutomatorType}
	seen := 0
	for _, d := range reg.Descriptors() {
		kind, ok := types[d.Role]
		if !ok {
			continue // node and network drivers have no catalog type
		}
		seen++
		v, ok := cat.Get(kind, d.Name)
		if !ok {
			t.Errorf("%s/%s: no %s %q in examples/catalog", d.Role, d.Name, kind, d.Name)
			continue
		}
		pt := v.Value.(*catalog.PluginType)
		var declared, shown []string
		for _, p := range d.Params {
			declared = append(declared, p.Name)
			if f, ok := pt.Parameters.Admin.Fields[p.Name]; ok && f.Sensitive != p.Sensitive {
				t.Errorf("%s/%s: parameter %s sensitive %v in the driver, %v in the catalog", d.Role, d.Name, p.Name, p.Sensitive, f.Sensitive)
			}
		}
		for name := range pt.Parameters.Admin.Fields {
			shown = append(shown, name)
		}
		sort.Strings(declared)
		sort.Strings(shown)
		if !slices.Equal(declared, shown) {
			t.Errorf("%s/%s: the driver declares %v, the catalog's %s shows %v", d.Role, d.Name, declared, kind, shown)
		}
	}
	if seen < 4 {
		t.Errorf("checked %d vm and automator drivers, want local, pool, shell and ansible", seen)
	}
}
