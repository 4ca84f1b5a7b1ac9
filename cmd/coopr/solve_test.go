package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/internal/cooprcompat"
)

var update = flag.Bool("update", false, "rewrite golden files")

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n%s\nwant:\n%s", path, got, want)
	}
}

// templatesDir and pluginTypesDir are the two halves of the test catalog:
// the lamp and hadoop-distributed templates with what they need, and the
// driver types.
var (
	templatesDir   = filepath.Join("..", "..", "testdata", "catalog", "templates")
	pluginTypesDir = filepath.Join("..", "..", "testdata", "catalog", "types")
)

func TestSolveGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"hadoop-10.txt", []string{"solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "10"}, 0},
		{"hadoop-3.json", []string{"solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "3", "-o", "json"}, 0},
		{"hadoop-2.json", []string{"solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "2", "-o", "json"}, 1},
		{"lamp-unknown-hw.txt", []string{"solve", "--catalog", templatesDir, "--template", "lamp", "--size", "2", "--hardwaretype", "huge"}, 1},
		{"missing-template.json", []string{"solve", "--catalog", templatesDir, "--template", "nope", "--size", "2", "-o", "json"}, 1},
		{"size-0.txt", []string{"solve", "--catalog", templatesDir, "--template", "lamp"}, 1},
		{"no-hostname.txt", []string{"solve", "--catalog", templatesDir, "--template", "lamp", "--size", "2", "--name", "☃ 2024"}, 1},
		{"incompatible.json", []string{"solve", "--catalog", templatesDir, "--template", "lamp", "--size", "2", "--services", "base,hadoop-hdfs-namenode", "-o", "json"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			golden(t, tt.name, out)
		})
	}
}

func TestSolveExistingRoundTrip(t *testing.T) {
	dir := t.TempDir()
	out, _, code := runCLI(t, "solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "5", "-o", "json")
	if code != 0 {
		t.Fatal(out)
	}
	layout := filepath.Join(dir, "layout.json")
	if err := os.WriteFile(layout, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	// Grow: the first five nodes are untouched and two datanodes join.
	grown, stderr, code := runCLI(t, "solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--existing", layout, "--size", "7", "-o", "json")
	if code != 0 {
		t.Fatal(grown, stderr)
	}
	var before, after solveOutput
	must(t, json.Unmarshal([]byte(out), &before))
	must(t, json.Unmarshal([]byte(grown), &after))
	if len(after.Nodes) != 7 || len(after.Added) != 2 {
		t.Fatalf("grown = %+v", after)
	}
	for i, n := range before.Nodes {
		if after.Nodes[i].ID != n.ID || !slices.Equal(after.Nodes[i].Services, n.Services) {
			t.Errorf("node %d changed: %+v -> %+v", n.NodeNum, n, after.Nodes[i])
		}
	}
	if after.Nodes[5].NodeNum != 1005 || !slices.Contains(after.Nodes[5].Services, "hadoop-hdfs-datanode") {
		t.Errorf("new node = %+v", after.Nodes[5])
	}
	// The layout document alone (no nodes) is accepted too.
	onlyLayout, _ := json.Marshal(map[string]any{"layout": before.Layout})
	must(t, os.WriteFile(layout, onlyLayout, 0o644))
	added, stderr, code := runCLI(t, "solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--existing", layout, "--add-services", "hadoop-mapreduce-historyserver", "-o", "json")
	if code != 0 {
		t.Fatal(added, stderr)
	}
	var withHS solveOutput
	must(t, json.Unmarshal([]byte(added), &withHS))
	if len(withHS.Changed) != 1 || withHS.Changed[0].NodeNum != 1000 {
		t.Errorf("historyserver should go to the master node 1000 only: %+v", withHS.Changed)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Coopr's acceptance cases (COOPR_COMPAT_DIR) of kinds create and
// add_services, run through the CLI on a catalog directory written from
// each case.
type cliCase struct {
	Name               string            `json:"name"`
	Kind               string            `json:"kind"`
	Template           json.RawMessage   `json:"template"`
	ClusterSize        int               `json:"cluster_size"`
	Request            map[string]any    `json:"request"`
	Catalog            map[string][]any  `json:"catalog"`
	ServiceDefinitions []json.RawMessage `json:"service_definitions"`
	ExistingLayout     []layoutJSON      `json:"existing_layout"`
	ServicesToAdd      []string          `json:"services_to_add"`
	Expected           struct {
		Outcome string       `json:"outcome"`
		Layout  []layoutJSON `json:"layout"`
	} `json:"expected"`
}

type layoutJSON struct {
	Services     []string `json:"services"`
	HardwareType string   `json:"hardwaretype"`
	ImageType    string   `json:"imagetype"`
	Count        int      `json:"count"`
}

func layoutKeys(ls []layoutJSON) []string {
	var out []string
	for _, l := range ls {
		s := slices.Clone(l.Services)
		sort.Strings(s)
		b, _ := json.Marshal([]any{s, l.HardwareType, l.ImageType, l.Count})
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

func writeJSONFile(t *testing.T, dir, kind, name string, v any) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, kind), 0o755))
	b, err := json.Marshal(v)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, kind, name+".json"), b, 0o644))
}

func TestSolveAcceptanceCasesThroughCLI(t *testing.T) {
	ran := 0
	for _, f := range cooprcompat.Cases(t, "solver") {
		data, err := os.ReadFile(f)
		must(t, err)
		var c cliCase
		must(t, json.Unmarshal(data, &c))
		if c.Kind != "create" && c.Kind != "add_services" {
			continue
		}
		ran++
		t.Run(c.Name, func(t *testing.T) {
			dir := t.TempDir()
			var tmpl map[string]any
			must(t, json.Unmarshal(c.Template, &tmpl))
			name := tmpl["name"].(string)
			writeJSONFile(t, dir, "clustertemplates", name, tmpl)
			for kind, ents := range c.Catalog {
				for _, e := range ents {
					writeJSONFile(t, dir, kind, e.(map[string]any)["name"].(string), e)
				}
			}
			defined := map[string]bool{}
			for _, s := range c.ServiceDefinitions {
				var v map[string]any
				must(t, json.Unmarshal(s, &v))
				defined[v["name"].(string)] = true
				writeJSONFile(t, dir, "services", v["name"].(string), v)
			}
			args := []string{"solve", "--catalog", dir, "--template", name, "-o", "json", "--size", itoa(c.ClusterSize)}
			if c.Kind == "create" {
				for _, k := range []string{"provider", "hardwaretype", "imagetype"} {
					if v, ok := c.Request[k].(string); ok && v != "" {
						args = append(args, "--"+k, v)
					}
				}
				if svcs, ok := c.Request["services"].([]any); ok && len(svcs) > 0 {
					var names []string
					for _, s := range svcs {
						names = append(names, s.(string))
					}
					args = append(args, "--services", strings.Join(names, ","))
				}
			} else {
				// Layout-only cases name services without defining them.
				for _, l := range c.ExistingLayout {
					for _, s := range append(slices.Clone(l.Services), c.ServicesToAdd...) {
						if !defined[s] {
							defined[s] = true
							writeJSONFile(t, dir, "services", s, map[string]any{"name": s})
						}
					}
				}
				for _, s := range c.ServicesToAdd {
					if !defined[s] {
						writeJSONFile(t, dir, "services", s, map[string]any{"name": s})
					}
				}
				ex, _ := json.Marshal(map[string]any{"layout": c.ExistingLayout})
				exPath := filepath.Join(dir, "existing.json")
				must(t, os.WriteFile(exPath, ex, 0o644))
				args = append(args, "--existing", exPath, "--add-services", strings.Join(c.ServicesToAdd, ","))
			}
			out, errOut, code := runCLI(t, args...)
			switch c.Expected.Outcome {
			case "layout":
				if code != 0 {
					t.Fatalf("exit %d: %s %s", code, out, errOut)
				}
				var got solveOutput
				must(t, json.Unmarshal([]byte(out), &got))
				var gl []layoutJSON
				for _, e := range got.Layout {
					gl = append(gl, layoutJSON{e.Services, e.HardwareType, e.ImageType, e.Count})
				}
				if !slices.Equal(layoutKeys(gl), layoutKeys(c.Expected.Layout)) {
					t.Fatalf("layout = %v\nwant %v", layoutKeys(gl), layoutKeys(c.Expected.Layout))
				}
			default: // error or no_solution
				var e map[string]solveError
				if code != 1 || json.Unmarshal([]byte(out), &e) != nil || e["error"].Kind == "" {
					t.Fatalf("want exit 1 with an error document, got exit %d: %s %s", code, out, errOut)
				}
			}
		})
	}
	if ran < 8 {
		t.Fatalf("only %d create/add_services cases found", ran)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
