package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ResolveError codes (docs/catalog.md#template-resolution).
const (
	CodeTemplateInvalid   = "TEMPLATE_INVALID"
	CodeTemplateImmutable = "TEMPLATE_IMMUTABLE"
	CodeNotFound          = "NOT_FOUND"
)

// ResolveError is a failure to resolve a cluster template.
type ResolveError struct {
	Code    string
	Message string
}

func (e *ResolveError) Error() string { return e.Message }

const maxTemplateDepth = 16

type seqElem struct {
	t       *Template
	partial bool
}

// Resolve folds a cluster template with its extends chain and includes into
// one template (docs/catalog.md#template-resolution) and validates the
// result. templates and partials
// are looked up by name.
func Resolve(name string, templates, partials map[string]*Template) (*Template, error) {
	out, err := Merge(name, templates, partials)
	if err != nil {
		return nil, err
	}
	if err := CheckResolved(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Merge folds a template like Resolve but does not validate the result, for
// callers that supply missing defaults (a provider, services) themselves.
func Merge(name string, templates, partials map[string]*Template) (*Template, error) {
	seq, err := sequence(name, templates, partials, nil)
	if err != nil {
		return nil, err
	}
	t := templates[name]
	out := &Template{Base: t.Base, Extends: t.Extends, Includes: slices.Clone(t.Includes)}
	out.Version = 0
	// Cluster and partial templates are separate name spaces, so the owner is
	// (partial?, name).
	type owner struct {
		partial bool
		name    string
	}
	var configOwner = map[string]owner{} // config key -> immutable partial that froze it
	var lastConstraintsTemplate *Template
	for _, el := range seq {
		e := el.t
		d := e.Defaults
		for _, s := range d.Services {
			if !slices.ContainsFunc(out.Defaults.Services, func(r ServiceRef) bool { return r.Name == s.Name }) {
				out.Defaults.Services = append(out.Defaults.Services, ServiceRef{Name: s.Name})
			}
		}
		if d.Provider != "" {
			out.Defaults.Provider = d.Provider
		}
		if d.HardwareType != "" {
			out.Defaults.HardwareType = d.HardwareType
		}
		if d.ImageType != "" {
			out.Defaults.ImageType = d.ImageType
		}
		if d.DNSSuffix != "" {
			out.Defaults.DNSSuffix = d.DNSSuffix
		}
		// The object form of defaults.services also sets that service's config.
		cfg := map[string]any{}
		for k, v := range d.Config {
			cfg[k] = v
		}
		for _, s := range d.Services {
			if s.Config != nil {
				var v any
				if err := json.Unmarshal(s.Config, &v); err == nil {
					cfg[s.Name] = v
				}
			}
		}
		for _, k := range sortedKeys(cfg) {
			if o, frozen := configOwner[k]; frozen && o != (owner{el.partial, e.Name}) {
				return nil, &ResolveError{Code: CodeTemplateImmutable, Message: fmt.Sprintf(
					"template %s: config key %q is set by immutable partial template %s and cannot be changed by %s",
					name, k, o.name, e.Name)}
			}
			if out.Defaults.Config == nil {
				out.Defaults.Config = map[string]any{}
			}
			out.Defaults.Config[k] = cfg[k]
			if el.partial && e.Immutable {
				configOwner[k] = owner{true, e.Name}
			}
		}
		c := e.Compatibility
		out.Compatibility.Services = unionKeepOrder(out.Compatibility.Services, c.Services)
		out.Compatibility.HardwareTypes = unionKeepOrder(out.Compatibility.HardwareTypes, c.HardwareTypes)
		out.Compatibility.ImageTypes = unionKeepOrder(out.Compatibility.ImageTypes, c.ImageTypes)
		if el.partial {
			continue
		}
		out.Constraints.Layout.MustCoexist = unionGroups(out.Constraints.Layout.MustCoexist, e.Constraints.Layout.MustCoexist)
		out.Constraints.Layout.CantCoexist = unionGroups(out.Constraints.Layout.CantCoexist, e.Constraints.Layout.CantCoexist)
		for s, sc := range e.Constraints.Services {
			if out.Constraints.Services == nil {
				out.Constraints.Services = map[string]ServiceConstraint{}
			}
			out.Constraints.Services[s] = sc
		}
		if !e.Constraints.Empty() {
			lastConstraintsTemplate = e
		}
		if e.Administration != nil && *e.Administration != (Administration{}) {
			a := *e.Administration
			out.Administration = &a
		}
		for _, l := range e.Links {
			if !slices.Contains(out.Links, l) {
				out.Links = append(out.Links, l)
			}
		}
	}
	if lastConstraintsTemplate != nil {
		out.Constraints.Size = lastConstraintsTemplate.Constraints.Size
	}
	return out, nil
}

// CheckResolved validates a resolved template: it needs services and a
// provider, and a valid dnsSuffix.
func CheckResolved(out *Template) error {
	name := out.Name
	var problems []string
	if len(out.Defaults.Services) == 0 {
		problems = append(problems, "defaults.services is empty: list at least one service")
	}
	if out.Defaults.Provider == "" {
		problems = append(problems, "defaults.provider is not set: name the provider to use")
	}
	if out.Defaults.DNSSuffix != "" {
		if err := CheckDNSSuffix(out.Defaults.DNSSuffix); err != nil {
			problems = append(problems, "defaults.dnsSuffix "+err.Error())
		}
	}
	if len(problems) > 0 {
		return &ResolveError{Code: CodeTemplateInvalid, Message: fmt.Sprintf("template %s: %s", name, strings.Join(problems, "; "))}
	}
	return nil
}

func sequence(name string, templates, partials map[string]*Template, chain []string) ([]seqElem, error) {
	if i := slices.Index(chain, name); i >= 0 {
		cycle := append(slices.Clone(chain[i:]), name)
		return nil, &ResolveError{Code: CodeTemplateInvalid, Message: "extends cycle: " + strings.Join(cycle, " → ")}
	}
	if len(chain) >= maxTemplateDepth {
		return nil, &ResolveError{Code: CodeTemplateInvalid, Message: fmt.Sprintf("extends chain deeper than %d: %s", maxTemplateDepth, strings.Join(chain, " → "))}
	}
	t, ok := templates[name]
	if !ok {
		msg := fmt.Sprintf("cluster template %s does not exist", name)
		if len(chain) > 0 {
			msg = fmt.Sprintf("cluster template %s extends %s, which does not exist", chain[len(chain)-1], name)
		}
		return nil, &ResolveError{Code: CodeNotFound, Message: msg}
	}
	chain = append(chain, name)
	var seq []seqElem
	if t.Extends != nil && t.Extends.Name != "" {
		parent, err := sequence(t.Extends.Name, templates, partials, chain)
		if err != nil {
			return nil, err
		}
		seq = parent
	}
	for _, inc := range t.Includes {
		p, ok := partials[inc.Name]
		if !ok {
			return nil, &ResolveError{Code: CodeNotFound, Message: fmt.Sprintf("cluster template %s includes partial template %s, which does not exist", name, inc.Name)}
		}
		seq = append(seq, seqElem{t: p, partial: true})
	}
	return append(seq, seqElem{t: t}), nil
}

func unionKeepOrder(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

func unionGroups(a, b [][]string) [][]string {
	for _, g := range b {
		if !slices.ContainsFunc(a, func(x []string) bool { return slices.Equal(SortedUnion(x), SortedUnion(g)) }) {
			a = append(a, g)
		}
	}
	return a
}
