package control

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/store"
)

// MissingFieldsError is a provider field set not fully given
// (docs/operations.md#provider-fields): one entry per unmet alternative,
// mapping each absent field to its schema.
type MissingFieldsError struct {
	Section string // "user" or "admin"
	Sets    []map[string]catalog.FieldSchema
}

func (e *MissingFieldsError) Error() string {
	var names [][]string
	for _, s := range e.Sets {
		names = append(names, slices.Sorted(maps.Keys(s)))
	}
	return fmt.Sprintf("providerFields: the provider type's %s fields need one of these sets, each missing %v", e.Section, names)
}

// providerFields is the outcome of filtering and checking a request's
// provider fields.
type providerFields struct {
	public, sensitive map[string]any
	warnings          []string
}

// applyProviderFields filters given against the provider type's
// descriptor, checks the required sets against the provider's admin
// values, the kept fields and (when none are given) the stored sensitive
// ones, and splits what is kept into sensitive and public values.
func applyProviderFields(pt *catalog.PluginType, prov *catalog.Provider, given, stored map[string]any) (providerFields, error) {
	out := providerFields{public: map[string]any{}, sensitive: map[string]any{}}
	schemas := map[string]catalog.FieldSchema{}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		if f, ok := pt.Parameters.User.Fields[k]; ok {
			schemas[k] = f
		} else if f, ok := pt.Parameters.Admin.Fields[k]; ok && f.Override {
			schemas[k] = f
		} else {
			out.warnings = append(out.warnings, fmt.Sprintf("providerFields.%s: not a user field of provider type %s (nor an admin field users may override): dropped", k, pt.Name))
			continue
		}
		if schemas[k].Sensitive {
			out.sensitive[k] = given[k]
		} else {
			out.public[k] = given[k]
		}
	}
	// An empty value is no value: it meets no requirement.
	have := map[string]bool{}
	for k, v := range prov.Provisioner {
		have[k] = hasValue(v)
	}
	for k := range schemas {
		have[k] = have[k] || hasValue(given[k])
	}
	if len(given) == 0 {
		for k, v := range stored {
			have[k] = have[k] || hasValue(v)
		}
	}
	for _, sec := range []struct {
		name string
		set  catalog.ParameterSet
	}{{"user", pt.Parameters.User}, {"admin", pt.Parameters.Admin}} {
		if len(sec.set.Required) == 0 {
			continue
		}
		var unmet []map[string]catalog.FieldSchema
		for _, alt := range sec.set.Required {
			missing := map[string]catalog.FieldSchema{}
			for _, f := range alt {
				if !have[f] {
					missing[f] = sec.set.Fields[f]
				}
			}
			if len(missing) == 0 {
				unmet = nil
				break
			}
			unmet = append(unmet, missing)
		}
		if len(unmet) > 0 {
			sort.SliceStable(unmet, func(i, j int) bool { return len(unmet[i]) < len(unmet[j]) })
			return out, &MissingFieldsError{Section: sec.name, Sets: unmet}
		}
	}
	return out, nil
}

// hasValue reports whether v is a value: not absent, null or blank.
func hasValue(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(v) != ""
	}
	return true
}

// withPublic returns a copy of p whose provisioner also holds the accepted
// public fields; p itself is left as it was.
func withPublic(p *catalog.Provider, public map[string]any) *catalog.Provider {
	if len(public) == 0 {
		return p
	}
	cp := *p
	cp.Provisioner = maps.Clone(cp.Provisioner)
	if cp.Provisioner == nil {
		cp.Provisioner = map[string]any{}
	}
	maps.Copy(cp.Provisioner, public)
	return &cp
}

// withoutLost returns p without the placeholders of sensitive admin values
// that have no stored value (a key change lost them), so the required
// check reports them missing (docs/operations.md#provider-fields); p itself
// is left as it was.
func withoutLost(p *catalog.Provider, stored map[string]any) *catalog.Provider {
	var lost []string
	for k, v := range p.Provisioner {
		if _, ok := stored[k]; !ok && v == store.Redacted {
			lost = append(lost, k)
		}
	}
	if len(lost) == 0 {
		return p
	}
	cp := *p
	cp.Provisioner = maps.Clone(p.Provisioner)
	for _, k := range lost {
		delete(cp.Provisioner, k)
	}
	return &cp
}
