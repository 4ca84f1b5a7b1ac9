package catalog

import (
	"errors"
	"fmt"
)

// Check validates references across the catalog (docs/catalog.md#validation
// and issue #2): a service requirement nothing provides, a template default
// that does not exist, a missing parent or partial and an unresolvable
// template are errors; dangling names in conflicts, uses, compatibility lists
// and constraints are warnings, since Coopr's own public catalog has such
// names.
func (c *Catalog) Check() Issues {
	var issues Issues
	add := func(e *Entity, path string, sev Severity, format string, a ...any) {
		issues = append(issues, Issue{File: e.File, Path: path, Severity: sev, Message: fmt.Sprintf(format, a...)})
	}
	services := c.Services()
	provided := map[string]bool{}
	for n, s := range services {
		provided[n] = true
		for _, p := range s.Dependencies.Provides {
			provided[p] = true
		}
	}
	automators := c.AutomatorTypes()
	for _, e := range c.Entities(KindService) {
		s := e.Value.(*Service)
		deps := s.Dependencies
		for _, phase := range []struct {
			name string
			set  DepSet
		}{{"install", deps.Install}, {"runtime", deps.Runtime}} {
			for i, r := range phase.set.Requires {
				if !provided[r] {
					add(e, fmt.Sprintf("dependencies.%s.requires[%d]", phase.name, i), SeverityError,
						"%q is not a service and no service provides it: add that service or remove the requirement", r)
				}
			}
			for i, u := range phase.set.Uses {
				if !provided[u] {
					add(e, fmt.Sprintf("dependencies.%s.uses[%d]", phase.name, i), SeverityWarning, "%q is not a service and no service provides it", u)
				}
			}
		}
		for i, x := range deps.Conflicts {
			if !provided[x] {
				add(e, fmt.Sprintf("dependencies.conflicts[%d]", i), SeverityWarning, "%q is not a service and no service provides it", x)
			}
		}
		if len(automators) == 0 {
			continue
		}
		for _, an := range sortedKeys(s.Provisioner.Actions) {
			a := s.Provisioner.Actions[an]
			p := "provisioner.actions." + an
			at, ok := automators[a.Type]
			if !ok {
				add(e, p+".type", SeverityWarning, "automator type %q is not in the catalog", a.Type)
				continue
			}
			issues = append(issues, checkFields(e, p+".fields", a.Fields, &at.Parameters.Admin)...)
		}
	}
	if pts := c.ProviderTypes(); len(pts) > 0 {
		for _, e := range c.Entities(KindProvider) {
			p := e.Value.(*Provider)
			if _, ok := pts[p.ProviderType]; !ok {
				add(e, "providertype", SeverityWarning, "provider type %q is not in the catalog", p.ProviderType)
			}
		}
	}
	providers := c.Providers()
	for _, k := range []Kind{KindHardwareType, KindImageType} {
		for _, e := range c.Entities(k) {
			for _, pn := range sortedKeys(e.Value.(*MachineType).ProviderMap) {
				if _, ok := providers[pn]; !ok && len(providers) > 0 {
					add(e, "providermap."+pn, SeverityWarning, "provider %q is not in the catalog", pn)
				}
			}
		}
	}
	hw, img := c.HardwareTypes(), c.ImageTypes()
	templates, partials := c.ClusterTemplates(), c.PartialTemplates()
	for _, k := range []Kind{KindPartialTemplate, KindClusterTemplate} {
		for _, e := range c.Entities(k) {
			t := e.Value.(*Template)
			warnMissing := func(path string, names []string, exists func(string) bool, what string) {
				for i, n := range names {
					if !exists(n) {
						add(e, fmt.Sprintf("%s[%d]", path, i), SeverityWarning, "%s %q is not in the catalog", what, n)
					}
				}
			}
			isService := func(n string) bool { return services[n] != nil }
			warnMissing("compatibility.services", t.Compatibility.Services, isService, "service")
			warnMissing("compatibility.hardwaretypes", t.Compatibility.HardwareTypes, func(n string) bool { return hw[n] != nil }, "hardware type")
			warnMissing("compatibility.imagetypes", t.Compatibility.ImageTypes, func(n string) bool { return img[n] != nil }, "image type")
			for _, sn := range sortedKeys(t.Constraints.Services) {
				if !isService(sn) {
					add(e, "constraints.services."+sn, SeverityWarning, "service %q is not in the catalog", sn)
				}
			}
			checkDefault := func(path, name string, exists bool, what string) {
				if name != "" && !exists {
					add(e, path, SeverityError, "%s %q does not exist: add it to the catalog or change the default", what, name)
				}
			}
			checkDefault("defaults.provider", t.Defaults.Provider, providers[t.Defaults.Provider] != nil, "provider")
			checkDefault("defaults.hardwaretype", t.Defaults.HardwareType, hw[t.Defaults.HardwareType] != nil, "hardware type")
			checkDefault("defaults.imagetype", t.Defaults.ImageType, img[t.Defaults.ImageType] != nil, "image type")
			// A default service may dangle (docs/catalog.md#validation: a
			// template may name a service created later; Coopr's own
			// coopr-standalone-docker template does): creating a cluster
			// then fails with UNKNOWN_SERVICE, so it is a warning here.
			for i, s := range t.Defaults.Services {
				if !isService(s.Name) {
					add(e, fmt.Sprintf("defaults.services[%d]", i), SeverityWarning,
						"service %q is not in the catalog: clusters from this template will fail until it is added", s.Name)
				}
			}
			if k != KindClusterTemplate {
				continue
			}
			if t.Extends != nil && templates[t.Extends.Name] == nil {
				add(e, "extends.name", SeverityError, "cluster template %q does not exist", t.Extends.Name)
			}
			for i, inc := range t.Includes {
				if partials[inc.Name] == nil {
					add(e, fmt.Sprintf("includes[%d].name", i), SeverityError, "partial template %q does not exist", inc.Name)
				}
			}
			if _, err := Resolve(t.Name, templates, partials); err != nil {
				var re *ResolveError
				if errors.As(err, &re) && re.Code == CodeNotFound {
					continue // reported above with its path
				}
				add(e, "", SeverityError, "%v", err)
			}
		}
	}
	sortIssues(issues)
	return issues
}

// checkFields warns about action or provider fields the descriptor does not
// declare and about unmet required sets (warnings: the catalog check runs on
// imports, and single writes do not check references at all,
// docs/catalog.md#validation).
func checkFields(e *Entity, path string, fields map[string]string, ps *ParameterSet) Issues {
	var issues Issues
	for _, f := range sortedKeys(fields) {
		if _, ok := ps.Fields[f]; !ok {
			issues = append(issues, Issue{File: e.File, Path: path + "." + f, Severity: SeverityWarning, Message: "field is not declared by the automator type"})
		}
	}
	if len(ps.Required) == 0 {
		return issues
	}
	for _, set := range ps.Required {
		ok := true
		for _, f := range set {
			if fields[f] == "" {
				ok = false
				break
			}
		}
		if ok {
			return issues
		}
	}
	return append(issues, Issue{File: e.File, Path: path, Severity: SeverityWarning, Message: fmt.Sprintf("no required set of fields is complete; one of %v is needed", ps.Required)})
}
