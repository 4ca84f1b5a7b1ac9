package solver

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cooprhq/coopr/catalog"
)

// DefaultMaxSteps is the default search budget (docs/solver.md#bounded-search).
const DefaultMaxSteps = 1_000_000

// Catalog is what the solver needs of a tenant's catalog.
type Catalog struct {
	HardwareTypes map[string]*catalog.MachineType
	ImageTypes    map[string]*catalog.MachineType
	Services      map[string]*catalog.Service
}

// FromCatalog takes the solver's view of a loaded catalog.
func FromCatalog(c *catalog.Catalog) Catalog {
	return Catalog{HardwareTypes: c.HardwareTypes(), ImageTypes: c.ImageTypes(), Services: c.Services()}
}

// Request asks for the layout of a new cluster.
type Request struct {
	Template     *catalog.Template // resolved (catalog.Resolve)
	Catalog      Catalog
	Provider     string   // "" = template default
	HardwareType string   // "" = template default, then the solver's choice per layout
	ImageType    string   // "" = template default, then the solver's choice per layout
	Services     []string // empty = template defaults
	Size         int
	MaxSteps     int // 0 = DefaultMaxSteps
}

// effective applies template defaults to the request
// (docs/operations.md#create-request: request > template defaults).
func (r Request) effective() Request {
	t := r.Template
	if r.Provider == "" {
		r.Provider = t.Defaults.Provider
	}
	if r.HardwareType == "" {
		r.HardwareType = t.Defaults.HardwareType
	}
	if r.ImageType == "" {
		r.ImageType = t.Defaults.ImageType
	}
	if len(r.Services) == 0 {
		r.Services = t.Defaults.ServiceNames()
	}
	r.Services = catalog.SortedUnion(r.Services)
	if r.MaxSteps <= 0 {
		r.MaxSteps = DefaultMaxSteps
	}
	return r
}

// typeMap is the hardware or image map (docs/solver.md#pre-solve-checks): the
// usable types by name, with the provider-specific value (flavor or image).
type typeMap map[string]string

func (m typeMap) names() []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// buildTypeMap implements pre-solve checks 1 and 2.
func buildTypeMap(what, key string, required string, compat []string, types map[string]*catalog.MachineType, provider, template string, kind Kind) (typeMap, *Error) {
	value := func(t *catalog.MachineType) string { return t.ProviderMap[provider][key] }
	allowed := func(n string) bool { return len(compat) == 0 || slices.Contains(compat, n) }
	m := typeMap{}
	if required != "" {
		t, ok := types[required]
		switch {
		case !ok:
			return nil, errorf(kind, "required %s %s does not exist", what, required)
		case !allowed(required):
			return nil, errorf(kind, "required %s %s is not in template %s's compatibility list (%s)", what, required, template, strings.Join(compat, ", "))
		case value(t) == "":
			return nil, errorf(kind, "required %s %s is not usable with provider %s: its providermap has no %s for %s", what, required, provider, key, provider)
		}
		m[required] = value(t)
		return m, nil
	}
	for n, t := range types {
		if allowed(n) && value(t) != "" {
			m[n] = value(t)
		}
	}
	if len(m) == 0 {
		return nil, errorf(kind, "no %ss are available to use with template %s and provider %s: none is both in the template's compatibility list and mapped to a %s for %s", what, template, provider, key, provider)
	}
	return m, nil
}

// checkServices runs pre-solve checks 3-6 on the cluster's services. For
// add-services, added names the services being added: check 4 runs first and
// check 3 looks only at them.
func checkServices(t *catalog.Template, services []string, added []string, cat map[string]*catalog.Service) *Error {
	compatCheck := func(names []string) *Error {
		if len(t.Compatibility.Services) == 0 {
			return nil
		}
		var bad []string
		for _, s := range names {
			if !slices.Contains(t.Compatibility.Services, s) {
				bad = append(bad, s)
			}
		}
		if len(bad) > 0 {
			return errorf(KindIncompatibleServices, "%s %s not in template %s's compatibility list", strings.Join(bad, ","), isAre(len(bad)), t.Name)
		}
		return nil
	}
	unknownCheck := func() *Error {
		var bad []string
		for _, s := range services {
			if cat[s] == nil {
				bad = append(bad, s)
			}
		}
		if len(bad) == 1 {
			return errorf(KindUnknownService, "service %s does not exist", bad[0])
		}
		if len(bad) > 1 {
			return errorf(KindUnknownService, "services %s do not exist", strings.Join(bad, ", "))
		}
		return nil
	}
	if added == nil {
		if err := compatCheck(services); err != nil {
			return err
		}
		if err := unknownCheck(); err != nil {
			return err
		}
	} else {
		if err := unknownCheck(); err != nil {
			return err
		}
		if err := compatCheck(added); err != nil {
			return err
		}
	}
	provided := map[string]bool{}
	for _, s := range services {
		provided[s] = true
		for _, p := range cat[s].Dependencies.Provides {
			provided[p] = true
		}
	}
	var missing []string
	for _, s := range services {
		for _, r := range cat[s].Requires() {
			if !provided[r] {
				missing = append(missing, fmt.Sprintf("%s requires %s, which no service on the cluster provides", s, r))
			}
		}
	}
	if len(missing) > 0 {
		return errorLines(KindMissingDependency, missing)
	}
	var conflicts []string
	for _, s := range services {
		for _, c := range catalog.SortedUnion(cat[s].Dependencies.Conflicts) {
			if c != s && slices.Contains(services, c) {
				conflicts = append(conflicts, fmt.Sprintf("%s conflicts with %s", s, c))
			}
		}
	}
	if len(conflicts) > 0 {
		return errorLines(KindConflict, conflicts)
	}
	return nil
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// checkSize validates the requested size against the template
// (docs/catalog.md#size).
func checkSize(t *catalog.Template, n int) *Error {
	lo := max(t.Constraints.Size.Min, 1)
	hi := -1
	if t.Constraints.Size.Max != nil {
		hi = *t.Constraints.Size.Max
	}
	if n < lo || (hi >= 0 && n > hi) {
		r := fmt.Sprintf("%d..∞", lo)
		if hi >= 0 {
			r = fmt.Sprintf("%d..%d", lo, hi)
		}
		return errorf(KindSizeConstraint, "numMachines must be in %s (got %d)", r, n)
	}
	return nil
}
