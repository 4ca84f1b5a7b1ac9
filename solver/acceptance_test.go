package solver

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/cooprcompat"
)

// acceptanceCase is one case of Coopr's solver suite, acceptance/solver of
// COOPR_COMPAT_DIR (format in its README).
type acceptanceCase struct {
	Name                string            `json:"name"`
	Kind                string            `json:"kind"`
	Template            catalog.Template  `json:"template"`
	Services            []string          `json:"services"`
	ClusterSize         int               `json:"cluster_size"`
	Request             caseRequest       `json:"request"`
	Catalog             caseCatalog       `json:"catalog"`
	ServiceDefinitions  []catalog.Service `json:"service_definitions"`
	AvailableHW         []string          `json:"available_hardwaretypes"`
	AvailableImg        []string          `json:"available_imagetypes"`
	LayoutsInPref       []NodeLayout      `json:"node_layouts_in_preference_order"`
	Counts              []int             `json:"counts"`
	InputNodeLayouts    []NodeLayout      `json:"input_node_layouts"`
	HardwarePreferences []string          `json:"hardware_preferences"`
	ImagePreferences    []string          `json:"image_preferences"`
	ServiceSet          []string          `json:"service_set"`
	NodeLayout          NodeLayout        `json:"node_layout"`
	ClusterLayout       []LayoutEntry     `json:"cluster_layout"`
	ExistingLayout      []LayoutEntry     `json:"existing_layout"`
	ServicesToAdd       []string          `json:"services_to_add"`
	ServiceToAdd        string            `json:"service_to_add"`
	Expected            caseExpected      `json:"expected"`
}

type caseRequest struct {
	Provider     string   `json:"provider"`
	HardwareType string   `json:"hardwaretype"`
	ImageType    string   `json:"imagetype"`
	Services     []string `json:"services"`
}

type caseCatalog struct {
	HardwareTypes []catalog.MachineType `json:"hardwaretypes"`
	ImageTypes    []catalog.MachineType `json:"imagetypes"`
}

type caseExpected struct {
	Outcome     string           `json:"outcome"`
	Layout      []LayoutEntry    `json:"layout"`
	ErrorKind   string           `json:"error_kind"`
	ErrorRef    string           `json:"error_message_reference"`
	Counts      []int            `json:"counts"`
	ServiceSets [][]string       `json:"service_sets"`
	NodeLayouts []NodeLayout     `json:"node_layouts"`
	Services    []string         `json:"services"`
	Changes     [][]LayoutChange `json:"changes"`
}

func loadCases(t *testing.T, suite string) []acceptanceCase {
	t.Helper()
	var out []acceptanceCase
	for _, f := range cooprcompat.Cases(t, suite) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c acceptanceCase
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, c)
	}
	return out
}

func entryKey(e LayoutEntry) string {
	return strings.Join(e.Services, ",") + "@" + e.HardwareType + "/" + e.ImageType + "×" + itoa(e.Count)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func sameLayout(got, want []LayoutEntry) bool {
	key := func(es []LayoutEntry) []string {
		var out []string
		for _, e := range es {
			e.Services = catalog.SortedUnion(e.Services)
			out = append(out, entryKey(e))
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(key(got), key(want))
}

// servicesFor makes a service map holding the case's definitions, plus empty
// definitions for names the case uses without defining (cases that test
// layout rules only).
func (c *acceptanceCase) servicesFor(names ...[]string) map[string]*catalog.Service {
	m := map[string]*catalog.Service{}
	for i := range c.ServiceDefinitions {
		s := c.ServiceDefinitions[i]
		m[s.Name] = &s
	}
	if len(c.ServiceDefinitions) == 0 {
		for _, n := range catalog.SortedUnion(names...) {
			m[n] = &catalog.Service{Base: catalog.Base{Name: n}}
		}
	}
	return m
}

func layoutServices(es []LayoutEntry) []string {
	var lists [][]string
	for _, e := range es {
		lists = append(lists, e.Services)
	}
	return catalog.SortedUnion(lists...)
}

func existingNodes(es []LayoutEntry) []ExistingNode {
	var nodes []ExistingNode
	num := FirstNodeNum
	for _, e := range es {
		for range e.Count {
			nodes = append(nodes, ExistingNode{ID: NodeID("case", num), NodeNum: num, Services: e.Services, HardwareType: e.HardwareType, ImageType: e.ImageType})
			num++
		}
	}
	return nodes
}

// expectedKind maps a case's paraphrased error to our error kind.
func expectedKind(ref string) Kind {
	switch {
	case strings.Contains(ref, "incompatible"):
		return KindIncompatibleServices
	case strings.Contains(ref, "hardware"):
		return KindNoHardwareType
	case strings.Contains(ref, "image"):
		return KindNoImageType
	case strings.Contains(ref, "does not exist"):
		return KindUnknownService
	}
	return ""
}

func TestAcceptanceSolver(t *testing.T) {
	for _, c := range loadCases(t, "solver") {
		t.Run(c.Name, func(t *testing.T) {
			tmpl := &c.Template
			exp := c.Expected
			switch c.Kind {
			case "create":
				cat := Catalog{HardwareTypes: map[string]*catalog.MachineType{}, ImageTypes: map[string]*catalog.MachineType{}, Services: c.servicesFor()}
				for i := range c.Catalog.HardwareTypes {
					h := c.Catalog.HardwareTypes[i]
					cat.HardwareTypes[h.Name] = &h
				}
				for i := range c.Catalog.ImageTypes {
					m := c.Catalog.ImageTypes[i]
					cat.ImageTypes[m.Name] = &m
				}
				req := Request{Template: tmpl, Catalog: cat, Provider: c.Request.Provider, HardwareType: c.Request.HardwareType,
					ImageType: c.Request.ImageType, Services: c.Request.Services, Size: c.ClusterSize}
				sol, err := Solve(req, Cluster{ID: "00000001", Name: c.Name})
				if exp.Outcome == "error" {
					var se *Error
					if !errors.As(err, &se) {
						t.Fatalf("want error %s (%s), got %v", exp.ErrorKind, exp.ErrorRef, sol)
					}
					if want := expectedKind(exp.ErrorRef); want != "" && se.Kind != want {
						t.Fatalf("error kind = %s (%v), want %s", se.Kind, se, want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !sameLayout(sol.Layout, exp.Layout) {
					t.Fatalf("layout = %s\nwant     %s", layoutString(sol.Layout), layoutString(exp.Layout))
				}
			case "solve_constraints":
				got, err := SolveConstraints(tmpl, c.Services, c.AvailableHW, c.AvailableImg, c.ClusterSize, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !sameLayout(got, exp.Layout) {
					t.Fatalf("layout = %s\nwant     %s", layoutString(got), layoutString(exp.Layout))
				}
			case "find_node_counts":
				got, err := FindCounts(tmpl, c.Services, c.LayoutsInPref, c.ClusterSize, 0)
				if exp.Outcome == "no_solution" {
					var se *Error
					if !errors.As(err, &se) || se.Kind != KindNoLayout {
						t.Fatalf("want no_layout, got %v %v", got, err)
					}
					return
				}
				if err != nil || !slices.Equal(got, exp.Counts) {
					t.Fatalf("counts = %v (%v), want %v", got, err, exp.Counts)
				}
			case "validate_counts":
				if got := ValidCounts(tmpl, c.Services, c.LayoutsInPref, c.Counts); got != (exp.Outcome == "valid") {
					t.Fatalf("valid = %v, want %s", got, exp.Outcome)
				}
			case "valid_service_sets":
				got, err := ValidServiceSets(tmpl, c.Services, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !sameSets(got, exp.ServiceSets) {
					t.Fatalf("sets = %v, want %v", got, exp.ServiceSets)
				}
			case "valid_node_layouts":
				got, err := NodeLayouts(tmpl, c.Services, c.AvailableHW, c.AvailableImg, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !sameNodeLayouts(got, exp.NodeLayouts, false) {
					t.Fatalf("layouts = %v\nwant %v", got, exp.NodeLayouts)
				}
			case "node_layout_preferences":
				got, err := PreferredNodeLayouts(tmpl, c.Services, c.AvailableHW, c.AvailableImg, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !sameNodeLayouts(got, exp.NodeLayouts, true) {
					t.Fatalf("layouts = %v\nwant %v", got, exp.NodeLayouts)
				}
			case "narrow_node_layouts":
				got := Narrow(c.InputNodeLayouts, c.HardwarePreferences, c.ImagePreferences)
				if !sameNodeLayouts(got, exp.NodeLayouts, true) {
					t.Fatalf("layouts = %v\nwant %v", got, exp.NodeLayouts)
				}
			case "unconstrained_services":
				if got := UnconstrainedServices(tmpl, c.Services); !slices.Equal(got, catalog.SortedUnion(exp.Services)) {
					t.Fatalf("unconstrained = %v, want %v", got, exp.Services)
				}
			case "is_valid_service_set":
				if got := IsValidServiceSet(tmpl, c.Services, c.ServiceSet); got != (exp.Outcome == "valid") {
					t.Fatalf("valid = %v, want %s", got, exp.Outcome)
				}
			case "satisfies_service_constraints":
				l := c.NodeLayout
				l.Services = catalog.SortedUnion(l.Services)
				if got := SatisfiesServiceConstraints(tmpl, l); got != (exp.Outcome == "valid") {
					t.Fatalf("valid = %v, want %s", got, exp.Outcome)
				}
			case "cluster_layout_valid":
				got := ValidateLayout(tmpl, c.ClusterLayout)
				if (len(got) == 0) != (exp.Outcome == "valid") {
					t.Fatalf("violations = %v, want %s", got, exp.Outcome)
				}
			case "add_services":
				nodes := existingNodes(c.ExistingLayout)
				u, err := AddServices(AddRequest{Template: tmpl, Catalog: Catalog{Services: c.servicesFor(layoutServices(c.ExistingLayout), c.ServicesToAdd)},
					Nodes: nodes, Add: c.ServicesToAdd})
				if exp.Outcome == "no_solution" {
					var se *Error
					if !errors.As(err, &se) || se.Kind != KindNoLayout {
						t.Fatalf("want no_layout, got %v", err)
					}
					t.Log(err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !sameLayout(u.Layout, exp.Layout) {
					t.Fatalf("layout = %s\nwant     %s", layoutString(u.Layout), layoutString(exp.Layout))
				}
			case "add_service_change_order":
				got := AddServiceChangeOrder(tmpl, existingNodes(c.ExistingLayout), c.ServiceToAdd)
				if len(got) != len(exp.Changes) {
					t.Fatalf("%d changes, want %d: %v", len(got), len(exp.Changes), got)
				}
				for i := range got {
					if !sameChange(got[i], exp.Changes[i]) {
						t.Fatalf("change %d = %v, want %v", i, got[i], exp.Changes[i])
					}
				}
			case "validate_services_to_add":
				err := CheckServicesToAdd(tmpl, c.servicesFor(), c.Services, c.ServicesToAdd)
				if (err == nil) != (exp.Outcome == "ok") {
					t.Fatalf("err = %v, want %s", err, exp.Outcome)
				}
			default:
				t.Fatalf("unknown case kind %q: teach this loader about it", c.Kind)
			}
		})
	}
}

func sameSets(got, want [][]string) bool {
	norm := func(ss [][]string) []string {
		var out []string
		for _, s := range ss {
			out = append(out, strings.Join(catalog.SortedUnion(s), ","))
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(norm(got), norm(want))
}

func sameNodeLayouts(got, want []NodeLayout, ordered bool) bool {
	norm := func(ls []NodeLayout) []string {
		var out []string
		for _, l := range ls {
			l.Services = catalog.SortedUnion(l.Services)
			out = append(out, l.key())
		}
		if !ordered {
			sort.Strings(out)
		}
		return out
	}
	return slices.Equal(norm(got), norm(want))
}

func sameChange(got, want Candidate) bool {
	norm := func(c Candidate) []string {
		var out []string
		for _, l := range c {
			l.Services = catalog.SortedUnion(l.Services)
			out = append(out, l.key()+"×"+itoa(l.AddTo))
		}
		sort.Strings(out)
		return out
	}
	return slices.Equal(norm(got), norm(want))
}
