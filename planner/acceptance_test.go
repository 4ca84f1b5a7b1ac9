package planner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/cooprcompat"
)

// acceptanceCase is one case of Coopr's planner suite, acceptance/planner
// of COOPR_COMPAT_DIR (format in its README). Cases without a kind are
// cluster operations.
type acceptanceCase struct {
	Name               string            `json:"name"`
	Kind               string            `json:"kind"`
	ClusterAction      string            `json:"cluster_action"`
	ServiceDefinitions []catalog.Service `json:"service_definitions"`
	Nodes              []Node            `json:"nodes"`
	PlannedServices    []string          `json:"planned_services"`
	PlannedNodes       []string          `json:"planned_nodes"`
	DagEdges           [][2]caseRef      `json:"dag_edges"`
	Expected           struct {
		Outcome            string          `json:"outcome"`
		Error              string          `json:"error"`
		DagEdges           [][2]caseRef    `json:"dag_edges"`
		DagIsolatedTasks   []caseRef       `json:"dag_isolated_tasks"`
		LinearizedStages   [][]caseRef     `json:"linearized_stages"`
		ExecutableStages   [][]caseRef     `json:"executable_stages"`
		FinalStagesRef     [][]caseRef     `json:"final_stages_reference"`
		ActionDependencies []caseActionDep `json:"action_dependencies"`
	} `json:"expected"`
}

type caseRef struct {
	Node    string `json:"node"`
	Action  string `json:"action"`
	Service string `json:"service"`
}

func (r caseRef) String() string { return strings.TrimSpace(r.Node + " " + r.Action + " " + r.Service) }

type caseActionDep struct {
	Action   string `json:"action"`
	Service  string `json:"service"`
	WaitsFor []struct {
		Action  string `json:"action"`
		Service string `json:"service"`
	} `json:"waits_for"`
}

func loadCases(t *testing.T) []acceptanceCase {
	t.Helper()
	var out []acceptanceCase
	for _, f := range cooprcompat.Cases(t, "planner") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c acceptanceCase
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if c.Name == "" {
			c.Name = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		out = append(out, c)
	}
	return out
}

func refOf(t Task) caseRef {
	return caseRef{Node: t.Node, Action: t.Action.String(), Service: t.Service}
}

func sortedStrings[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	sort.Strings(out)
	return out
}

func stageSets(stages [][]caseRef) [][]string {
	out := make([][]string, len(stages))
	for i, s := range stages {
		out[i] = sortedStrings(s)
	}
	return out
}

func TestAcceptance(t *testing.T) {
	kinds := map[string]int{}
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			switch c.Kind {
			case "":
				kinds["cluster_action"]++
				runClusterActionCase(t, c)
			case "linearize":
				kinds[c.Kind]++
				runLinearizeCase(t, c)
			case "dependency_resolver":
				kinds[c.Kind]++
				runResolverCase(t, c)
			default:
				t.Fatalf("unknown case kind %q", c.Kind)
			}
		})
	}
	if kinds["cluster_action"] == 0 || kinds["linearize"] == 0 || kinds["dependency_resolver"] == 0 {
		t.Errorf("some kinds had no case: %v", kinds)
	}
}

func requestOf(t *testing.T, c acceptanceCase) *Request {
	t.Helper()
	action, err := ParseClusterAction(c.ClusterAction)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]*catalog.Service{}
	for i := range c.ServiceDefinitions {
		defs[c.ServiceDefinitions[i].Name] = &c.ServiceDefinitions[i]
	}
	return &Request{Action: action, Services: defs, Nodes: c.Nodes, PlannedServices: c.PlannedServices, PlannedNodes: c.PlannedNodes}
}

func runClusterActionCase(t *testing.T, c acceptanceCase) {
	p, err := Build(requestOf(t, c))
	if err != nil {
		t.Fatal(err)
	}
	// DAG: the exact edge set and the isolated tasks.
	var got []string
	linked := map[int]bool{}
	for _, e := range p.Edges {
		got = append(got, refOf(p.Tasks[e[0]]).String()+" -> "+refOf(p.Tasks[e[1]]).String())
		linked[int(e[0])], linked[int(e[1])] = true, true
	}
	sort.Strings(got)
	var want []string
	for _, e := range c.Expected.DagEdges {
		want = append(want, e[0].String()+" -> "+e[1].String())
	}
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("edges\n got: %q\nwant: %q", got, want)
	}
	var isolated []caseRef
	for i, task := range p.Tasks {
		if !linked[i] {
			isolated = append(isolated, refOf(task))
		}
	}
	if g, w := sortedStrings(isolated), sortedStrings(c.Expected.DagIsolatedTasks); !slices.Equal(g, w) {
		t.Errorf("isolated tasks: got %q, want %q", g, w)
	}

	// Stages: joined back per layer they must equal the executable stages;
	// no sub-stage may hold two tasks of one node.
	var vertices []caseRef
	var edges [][2]caseRef
	for _, task := range p.Tasks {
		vertices = append(vertices, refOf(task))
	}
	for _, e := range p.Edges {
		edges = append(edges, [2]caseRef{refOf(p.Tasks[e[0]]), refOf(p.Tasks[e[1]])})
	}
	layers, err := Linearize(vertices, edges)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := stageSets(layers), stageSets(c.Expected.LinearizedStages); !equalStages(g, w) {
		t.Errorf("linearized stages\n got: %q\nwant: %q", g, w)
	}
	layerOf := map[caseRef]int{}
	for i, l := range layers {
		for _, r := range l {
			layerOf[r] = i
		}
	}
	var joined [][]caseRef
	last := -1
	for si, stage := range p.Stages {
		nodes := map[string]bool{}
		for _, ti := range stage {
			task := p.Tasks[ti]
			if task.Stage != si {
				t.Errorf("task %v in stage %d says stage %d", refOf(task), si, task.Stage)
			}
			if task.Node != "" && nodes[task.Node] {
				t.Errorf("stage %d holds two tasks of node %s", si, task.Node)
			}
			nodes[task.Node] = true
			l := layerOf[refOf(task)]
			if l < last {
				t.Errorf("stage %d goes back to layer %d after %d", si, l, last)
			}
			if l != last {
				joined = append(joined, nil)
				last = l
			}
			joined[len(joined)-1] = append(joined[len(joined)-1], refOf(task))
		}
	}
	if g, w := stageSets(joined), stageSets(c.Expected.ExecutableStages); !equalStages(g, w) {
		t.Errorf("executable stages\n got: %q\nwant: %q", g, w)
	}
	// The split is first-fit over (nodenum, action, service), as the reference.
	var split [][]caseRef
	for _, stage := range p.Stages {
		var s []caseRef
		for _, ti := range stage {
			s = append(s, refOf(p.Tasks[ti]))
		}
		split = append(split, s)
	}
	if g, w := stageSets(split), stageSets(c.Expected.FinalStagesRef); !equalStages(g, w) {
		t.Errorf("final stages\n got: %q\nwant: %q", g, w)
	}
}

func equalStages(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

func runLinearizeCase(t *testing.T, c acceptanceCase) {
	stages, err := Linearize(nil, c.DagEdges)
	if c.Expected.Outcome == "error" {
		if !errors.Is(err, ErrCycle) {
			t.Fatalf("got %v, %v; want a cycle error (%s)", stages, err, c.Expected.Error)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if g, w := stageSets(stages), stageSets(c.Expected.LinearizedStages); !equalStages(g, w) {
		t.Errorf("stages\n got: %q\nwant: %q", g, w)
	}
}

func runResolverCase(t *testing.T, c acceptanceCase) {
	var svcs []*catalog.Service
	for i := range c.ServiceDefinitions {
		svcs = append(svcs, &c.ServiceDefinitions[i])
	}
	deps, err := ActionDependencies(svcs)
	if err != nil {
		t.Fatal(err)
	}
	// The case lists the rules of one kind: INSTALL for install
	// dependencies, START, INITIALIZE and STOP for runtime ones.
	install := strings.Contains(c.Name, "install")
	format := func(action, service string, waits []string) string {
		sort.Strings(waits)
		return action + " " + service + " <- " + strings.Join(waits, ", ")
	}
	var got, want []string
	for _, d := range deps {
		if (d.Action == Install) != install {
			continue
		}
		var w []string
		for _, x := range d.WaitsFor {
			w = append(w, x.Action.String()+" "+x.Service)
		}
		got = append(got, format(d.Action.String(), d.Service, w))
	}
	for _, d := range c.Expected.ActionDependencies {
		var w []string
		for _, x := range d.WaitsFor {
			w = append(w, x.Action+" "+x.Service)
		}
		want = append(want, format(d.Action, d.Service, w))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("action dependencies\n got: %q\nwant: %q", got, want)
	}
}
