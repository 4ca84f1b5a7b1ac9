// Package catalog holds the admin-published catalog of coopr: providers,
// hardware types, image types, services, cluster and partial templates and the
// driver descriptors (provider and automator types). It reads and writes
// Coopr's JSON layout unchanged and validates every entity, naming the file and
// the JSON path of each problem.
package catalog

import (
	"encoding/json"
	"sort"
)

// Kind names an entity kind exactly as Coopr's directory layout does.
type Kind string

// The entity kinds, in the order an export lists them.
const (
	KindProvider        Kind = "providers"
	KindHardwareType    Kind = "hardwaretypes"
	KindImageType       Kind = "imagetypes"
	KindService         Kind = "services"
	KindClusterTemplate Kind = "clustertemplates"
	KindPartialTemplate Kind = "partialtemplates"
	KindProviderType    Kind = "providertypes"
	KindAutomatorType   Kind = "automatortypes"
)

// Kinds lists every kind in dependency order: what a later kind refers to
// comes earlier.
var Kinds = []Kind{
	KindProviderType, KindAutomatorType, KindProvider, KindHardwareType,
	KindImageType, KindService, KindPartialTemplate, KindClusterTemplate,
}

// Shared reports whether entities of the kind belong to all tenants (the driver
// descriptors) rather than to one.
func (k Kind) Shared() bool { return k == KindProviderType || k == KindAutomatorType }

// Singular is the human name of one entity of the kind.
func (k Kind) Singular() string {
	switch k {
	case KindProvider:
		return "provider"
	case KindHardwareType:
		return "hardware type"
	case KindImageType:
		return "image type"
	case KindService:
		return "service"
	case KindClusterTemplate:
		return "cluster template"
	case KindPartialTemplate:
		return "partial template"
	case KindProviderType:
		return "provider type"
	case KindAutomatorType:
		return "automator type"
	}
	return string(k)
}

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, bool) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, true
		}
	}
	return "", false
}

// Base holds the fields every entity has.
type Base struct {
	Name        string `json:"name"`
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
	Icon        string `json:"icon,omitempty"`
	Version     int    `json:"version,omitempty"`
}

// Network names the network driver of a provider and its fields.
type Network struct {
	Type   string            `json:"type"`
	Fields map[string]string `json:"fields,omitempty"`
}

// Provider is a place machines come from.
type Provider struct {
	Base
	ProviderType string         `json:"providertype"`
	Provisioner  map[string]any `json:"provisioner,omitempty"`
	Network      *Network       `json:"network,omitempty"`
}

// MachineType is a hardware type or an image type: a name mapped, per
// provider, to the provider's own terms (flavor or image, sshuser, cost, ...).
type MachineType struct {
	Base
	ProviderMap map[string]map[string]string `json:"providermap"`
}

// HardwareType is a machine size.
type HardwareType = MachineType

// ImageType is an operating system image.
type ImageType = MachineType

// Flavor returns the machine size on provider p, or "" when the hardware type
// is not usable there.
func (m *MachineType) Flavor(p string) string { return m.ProviderMap[p]["flavor"] }

// Image returns the image id on provider p, or "" when the image type is not
// usable there.
func (m *MachineType) Image(p string) string { return m.ProviderMap[p]["image"] }

// SSHUser is the login user of the image type on provider p.
func (m *MachineType) SSHUser(p string) string {
	if u := m.ProviderMap[p]["sshuser"]; u != "" {
		return u
	}
	return "root"
}

// DepSet is one phase of a service's dependencies.
type DepSet struct {
	Requires []string `json:"requires,omitempty"`
	Uses     []string `json:"uses,omitempty"`
}

// Dependencies of a service.
type Dependencies struct {
	Provides  []string `json:"provides,omitempty"`
	Conflicts []string `json:"conflicts,omitempty"`
	Install   DepSet   `json:"install"`
	Runtime   DepSet   `json:"runtime"`
}

// Action is how an automator performs one lifecycle step of a service.
type Action struct {
	Type        string            `json:"type"`
	Fields      map[string]string `json:"fields,omitempty"`
	Timeout     Duration          `json:"timeout,omitempty"`
	MaxAttempts int               `json:"maxAttempts,omitempty"`
}

// ServiceProvisioner holds a service's actions by lowercase action name.
type ServiceProvisioner struct {
	Actions map[string]Action `json:"actions"`
}

// The service action names, in lifecycle order.
var ServiceActions = []string{"install", "remove", "initialize", "configure", "start", "stop", "status"}

// Link is a labelled URL shown to users; the URL may hold macros.
type Link struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Service is software that can be placed on nodes.
type Service struct {
	Base
	Dependencies Dependencies       `json:"dependencies"`
	Provisioner  ServiceProvisioner `json:"provisioner"`
	Links        []Link             `json:"links,omitempty"`
	// Units are the systemd units the service runs as (new in coopr,
	// optional): a check asks systemd about them when the service has no
	// status action (docs/catalog.md#systemd-units).
	Units []string `json:"units,omitempty"`
}

// CheckUnits are the systemd units a check asks about for the service:
// its units when it has no status action, which answers instead; nil
// when the check asks the status action, or nothing.
func (s *Service) CheckUnits() []string {
	if s.HasAction("status") {
		return nil
	}
	return s.Units
}

// Requires returns install.requires ∪ runtime.requires, sorted.
func (s *Service) Requires() []string {
	return SortedUnion(s.Dependencies.Install.Requires, s.Dependencies.Runtime.Requires)
}

// HasAction reports whether the service defines the (lowercase) action.
func (s *Service) HasAction(a string) bool { _, ok := s.Provisioner.Actions[a]; return ok }

// ServiceRef is an entry of defaults.services: a bare name, or an object
// carrying the service's default config.
type ServiceRef struct {
	Name   string
	Config json.RawMessage // nil for the bare-name form
}

// MarshalJSON writes the form the entry was read in.
func (r ServiceRef) MarshalJSON() ([]byte, error) {
	if r.Config == nil {
		return json.Marshal(r.Name)
	}
	return json.Marshal(struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"config"`
	}{r.Name, r.Config})
}

// UnmarshalJSON accepts both forms.
func (r *ServiceRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*r = ServiceRef{Name: s}
		return nil
	}
	var o struct {
		Name   string          `json:"name"`
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	if o.Config == nil {
		o.Config = json.RawMessage("{}")
	}
	*r = ServiceRef{Name: o.Name, Config: o.Config}
	return nil
}

// Defaults of a template.
type Defaults struct {
	Services     []ServiceRef   `json:"services,omitempty"`
	Provider     string         `json:"provider,omitempty"`
	HardwareType string         `json:"hardwaretype,omitempty"`
	ImageType    string         `json:"imagetype,omitempty"`
	DNSSuffix    string         `json:"dnsSuffix,omitempty"`
	Config       map[string]any `json:"config,omitempty"`
}

// ServiceNames returns the names of defaults.services in order.
func (d *Defaults) ServiceNames() []string {
	out := make([]string, len(d.Services))
	for i, s := range d.Services {
		out[i] = s.Name
	}
	return out
}

// Compatibility whitelists; an empty list allows anything.
type Compatibility struct {
	Services      []string `json:"services,omitempty"`
	HardwareTypes []string `json:"hardwaretypes,omitempty"`
	ImageTypes    []string `json:"imagetypes,omitempty"`
}

// LayoutConstraints are per-node coexistence rules.
type LayoutConstraints struct {
	MustCoexist [][]string `json:"mustcoexist,omitempty"`
	CantCoexist [][]string `json:"cantcoexist,omitempty"`
}

// Quantities bound how many nodes carry a service; nil Max = unbounded.
type Quantities struct {
	Min int  `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

// ServiceConstraint restricts where a service may go and how often.
type ServiceConstraint struct {
	HardwareTypes []string    `json:"hardwaretypes,omitempty"`
	ImageTypes    []string    `json:"imagetypes,omitempty"`
	Quantities    *Quantities `json:"quantities,omitempty"`
}

// SizeConstraint bounds the cluster size; Min 0 means 1, nil Max unbounded.
type SizeConstraint struct {
	Min int  `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

// Constraints of a template.
type Constraints struct {
	Layout   LayoutConstraints            `json:"layout,omitzero"`
	Services map[string]ServiceConstraint `json:"services,omitempty"`
	Size     SizeConstraint               `json:"size,omitzero"`
}

// Empty reports whether no constraint at all is set.
func (c *Constraints) Empty() bool {
	return len(c.Layout.MustCoexist) == 0 && len(c.Layout.CantCoexist) == 0 &&
		len(c.Services) == 0 && c.Size.Min == 0 && c.Size.Max == nil
}

// Lease is a template's lease policy; zero durations mean unlimited.
type Lease struct {
	Initial Duration `json:"initial"`
	Max     Duration `json:"max"`
	Step    Duration `json:"step"`
}

// Administration of a template.
type Administration struct {
	LeaseDuration Lease `json:"leaseduration"`
	// CheckInterval, when not zero, has the leading server check each
	// cluster of the template this often (docs/operations.md#periodic-checks).
	CheckInterval Duration `json:"checkinterval,omitempty"`
}

// NameRef refers to another template by name.
type NameRef struct {
	Name string `json:"name"`
}

// Template is a cluster template or a partial template (which may set
// Immutable and must not set Extends or Includes).
type Template struct {
	Base
	Defaults       Defaults        `json:"defaults,omitzero"`
	Compatibility  Compatibility   `json:"compatibility,omitzero"`
	Constraints    Constraints     `json:"constraints,omitzero"`
	Administration *Administration `json:"administration,omitempty"`
	Links          []Link          `json:"links,omitempty"`
	Extends        *NameRef        `json:"extends,omitempty"`
	Includes       []NameRef       `json:"includes,omitempty"`
	Immutable      bool            `json:"immutable,omitempty"`
}

// FieldSchema describes one parameter of a driver descriptor.
type FieldSchema struct {
	Label     string   `json:"label"`
	Type      string   `json:"type"`
	Tip       string   `json:"tip,omitempty"`
	Options   []string `json:"options,omitempty"`
	Default   any      `json:"default,omitempty"`
	Override  bool     `json:"override,omitempty"`
	Sensitive bool     `json:"sensitive,omitempty"`
}

// ParameterSet is the admin or user section of a descriptor. Required holds
// alternatives: any one listed set, fully supplied, satisfies it.
type ParameterSet struct {
	Fields   map[string]FieldSchema `json:"fields,omitempty"`
	Required [][]string             `json:"required,omitempty"`
}

// ResourceType is a kind of plugin resource a driver uses.
type ResourceType struct {
	Format      string `json:"format"`
	Permissions string `json:"permissions,omitempty"`
}

// PluginType is a provider type or an automator type: a driver descriptor.
type PluginType struct {
	Base
	Parameters struct {
		Admin ParameterSet `json:"admin,omitzero"`
		User  ParameterSet `json:"user,omitzero"`
	} `json:"parameters"`
	ResourceTypes map[string]ResourceType `json:"resourceTypes,omitempty"`
}

// SortedUnion returns the sorted set union of the lists.
func SortedUnion(lists ...[]string) []string {
	set := map[string]struct{}{}
	for _, l := range lists {
		for _, s := range l {
			set[s] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
