package solver

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cooprhq/coopr/catalog"
)

// SyncRequest asks to move a live cluster to a newer version of its
// template (docs/catalog.md#template-sync).
type SyncRequest struct {
	Old *catalog.Template // the cluster's snapshot
	New *catalog.Template // the newest version, resolved
	// Catalog holds the cluster's own copies of its services and the
	// newest definitions of services the sync adds.
	Catalog  Catalog
	Nodes    []ExistingNode
	MaxSteps int
}

// TemplateChange is one difference between two versions of a template's
// constraints or compatibility lists. Old and New are compact JSON, "" when
// absent.
type TemplateChange struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Sync is what a template sync does to the layout.
type Sync struct {
	// Add lists the services the new version's defaults add and the
	// cluster lacks, and Update places them (nil when none).
	Add    []string `json:"add,omitempty"`
	Update *Update  `json:"update,omitempty"`
	// Kept lists services the new version's defaults no longer name: a
	// sync never removes a service, so they stay.
	Kept []string `json:"kept,omitempty"`
	// Changes lists the constraint and compatibility changes; the
	// cluster's layout satisfies every one of them.
	Changes []TemplateChange `json:"changes,omitempty"`
}

// SyncTemplate checks a live cluster against a new version of its template
// and places the services the version adds. The nodes stay where they are:
// no service moves, no node is added or removed, so a version whose
// constraints the current layout breaks is refused (KindNoLayout, one reason
// per broken rule) rather than laid out again.
func SyncTemplate(r SyncRequest) (*Sync, error) {
	if r.Old == nil || r.New == nil {
		return nil, errorf(KindInvalidCatalog, "no template given")
	}
	out := &Sync{Changes: TemplateChanges(r.Old, r.New)}
	existing := unionServices(r.Nodes, func(n ExistingNode) []string { return n.Services })
	oldDefaults, newDefaults := r.Old.Defaults.ServiceNames(), r.New.Defaults.ServiceNames()
	for _, s := range newDefaults {
		if !slices.Contains(oldDefaults, s) && !slices.Contains(existing, s) && !slices.Contains(out.Add, s) {
			out.Add = append(out.Add, s)
		}
	}
	slices.Sort(out.Add)
	for _, s := range oldDefaults {
		if !slices.Contains(newDefaults, s) && slices.Contains(existing, s) {
			out.Kept = append(out.Kept, s)
		}
	}
	slices.Sort(out.Kept)
	// The services the cluster has must still be allowed, satisfied and
	// free of conflicts under the new version.
	if err := checkServices(r.New, existing, nil, r.Catalog.Services); err != nil {
		return nil, &Error{Kind: err.Kind, Message: fmt.Sprintf("template %s: the cluster's services break the new version: %s", r.New.Name, err.Message),
			Reasons: err.Reasons}
	}
	if lines := ValidateLayout(r.New, layoutOfGroups(groupNodes(r.Nodes))); len(lines) > 0 {
		msg := fmt.Sprintf("template %s: the cluster's layout breaks the new version and a sync does not move services (%s)",
			r.New.Name, strings.Join(lines, "; "))
		return nil, &Error{Kind: KindNoLayout, Message: msg, Reasons: lines}
	}
	if len(out.Add) > 0 {
		u, err := AddServices(AddRequest{Template: r.New, Catalog: r.Catalog, Nodes: r.Nodes, Add: out.Add, MaxSteps: r.MaxSteps})
		if err != nil {
			return nil, err
		}
		out.Update = u
	}
	return out, nil
}

// TemplateChanges lists how the constraints and compatibility lists of two
// template versions differ, by path in a fixed order.
func TemplateChanges(old, new *catalog.Template) []TemplateChange {
	var out []TemplateChange
	add := func(path string, a, b any) {
		ja, jb := compactJSON(a), compactJSON(b)
		if ja != jb {
			out = append(out, TemplateChange{Path: path, Old: ja, New: jb})
		}
	}
	add("compatibility.services", old.Compatibility.Services, new.Compatibility.Services)
	add("compatibility.hardwaretypes", old.Compatibility.HardwareTypes, new.Compatibility.HardwareTypes)
	add("compatibility.imagetypes", old.Compatibility.ImageTypes, new.Compatibility.ImageTypes)
	add("constraints.layout.mustcoexist", old.Constraints.Layout.MustCoexist, new.Constraints.Layout.MustCoexist)
	add("constraints.layout.cantcoexist", old.Constraints.Layout.CantCoexist, new.Constraints.Layout.CantCoexist)
	names := slices.Sorted(maps.Keys(old.Constraints.Services))
	for n := range new.Constraints.Services {
		if _, ok := old.Constraints.Services[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		var a, b any
		if c, ok := old.Constraints.Services[n]; ok {
			a = c
		}
		if c, ok := new.Constraints.Services[n]; ok {
			b = c
		}
		add("constraints.services."+n, a, b)
	}
	add("constraints.size", sizeOrNil(old.Constraints.Size), sizeOrNil(new.Constraints.Size))
	return out
}

func sizeOrNil(s catalog.SizeConstraint) any {
	if s == (catalog.SizeConstraint{}) {
		return nil
	}
	return s
}

// compactJSON writes v as JSON; "" for nil and empty lists.
func compactJSON(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" || string(b) == "[]" {
		return ""
	}
	return string(b)
}
