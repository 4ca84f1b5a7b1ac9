package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/internal/cooprcompat"
)

func TestPlanGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"plan-hadoop-3.txt", []string{"plan", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "3"}, 0},
		{"plan-restart-namenode.json", []string{"plan", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "3",
			"--action", "restart_services", "--services", "hadoop-hdfs-namenode", "-o", "json"}, 0},
		{"plan-bad-action.json", []string{"plan", "--catalog", templatesDir, "--template", "lamp", "--size", "2", "--action", "explode", "-o", "json"}, 1},
		{"plan-no-nodes.txt", []string{"plan", "--catalog", templatesDir}, 1},
		{"plan-unsolvable.json", []string{"plan", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "1", "-o", "json"}, 1},
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

func writeFile(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlanAcceptance runs Coopr's planner cases (COOPR_COMPAT_DIR) of
// cluster operations through the command: a catalog of only services/ and
// a nodes file.
func TestPlanAcceptance(t *testing.T) {
	ran := 0
	for _, f := range cooprcompat.Cases(t, "planner") {
		var c struct {
			ClusterAction      string            `json:"cluster_action"`
			ServiceDefinitions []json.RawMessage `json:"service_definitions"`
			Nodes              []planNode        `json:"nodes"`
			PlannedServices    []string          `json:"planned_services"`
			PlannedNodes       []string          `json:"planned_nodes"`
			Expected           struct {
				DagEdges [][2]struct{ Node, Action, Service string } `json:"dag_edges"`
			} `json:"expected"`
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
		if c.ClusterAction == "" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			dir := t.TempDir()
			for _, s := range c.ServiceDefinitions {
				var named struct{ Name string }
				_ = json.Unmarshal(s, &named)
				writeFile(t, filepath.Join(dir, "services", named.Name+".json"), s)
			}
			writeFile(t, filepath.Join(dir, "nodes.json"), map[string]any{"nodes": c.Nodes})
			args := []string{"plan", "--catalog", dir, "--nodes", filepath.Join(dir, "nodes.json"), "--action", c.ClusterAction, "-o", "json"}
			if c.PlannedServices != nil {
				args = append(args, "--services", strings.Join(c.PlannedServices, ","))
			}
			if c.PlannedNodes != nil {
				args = append(args, "--planned-nodes", strings.Join(c.PlannedNodes, ","))
			}
			out, errOut, code := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			var p planOutput
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			byID := map[string]planTask{}
			for _, task := range p.Tasks {
				byID[task.ID] = task
			}
			str := func(node, action, service string) string {
				return strings.TrimSpace(node + " " + action + " " + service)
			}
			var got, want []string
			for _, e := range p.Edges {
				a, b := byID[e[0]], byID[e[1]]
				got = append(got, str(a.Node, a.Action, a.Service)+" -> "+str(b.Node, b.Action, b.Service))
			}
			for _, e := range c.Expected.DagEdges {
				want = append(want, str(e[0].Node, e[0].Action, e[0].Service)+" -> "+str(e[1].Node, e[1].Action, e[1].Service))
			}
			sort.Strings(got)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("edges\n got: %q\nwant: %q", got, want)
			}
		})
		ran++
	}
	if ran < 5 {
		t.Errorf("only %d cases", ran)
	}
}

// TestPlanScaleFromSolve feeds 'coopr solve --existing' output to plan: its
// added and removed lists pick the nodes.
func TestPlanScaleFromSolve(t *testing.T) {
	dir := t.TempDir()
	out, _, code := runCLI(t, "solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--size", "4", "-o", "json")
	if code != 0 {
		t.Fatal(out)
	}
	layout := filepath.Join(dir, "layout.json")
	if err := os.WriteFile(layout, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		size, action     string
		created, deleted int
	}{
		{"6", "SCALE_OUT", 2, 0},
		{"3", "SCALE_IN", 0, 1},
	} {
		t.Run(tc.action, func(t *testing.T) {
			changed, _, code := runCLI(t, "solve", "--catalog", templatesDir, "--template", "hadoop-distributed", "--existing", layout, "--size", tc.size, "-o", "json")
			if code != 0 {
				t.Fatal(changed)
			}
			path := filepath.Join(dir, tc.action+".json")
			if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, "plan", "--catalog", templatesDir, "--nodes", path, "--action", tc.action, "-o", "json")
			if code != 0 {
				t.Fatalf("%s %s", out, errOut)
			}
			var p planOutput
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			for _, task := range p.Tasks {
				count[task.Action]++
			}
			if got := count["CREATE"]; got != tc.created {
				t.Errorf("CREATE x%d, want %d", got, tc.created)
			}
			if got := count["DELETE"]; got != tc.deleted {
				t.Errorf("DELETE x%d, want %d", got, tc.deleted)
			}
			// The server's scale-out reconfigures the nodes that stay
			// without stopping them; the offline plan must match it.
			if got := count["STOP"]; tc.action == "SCALE_OUT" && got != 0 {
				t.Errorf("STOP x%d in SCALE_OUT, want 0 (as the server plans it)", got)
			}
			if count["CONFIGURE"] == 0 {
				t.Error("the nodes that stay are not reconfigured")
			}
		})
	}
}

func TestPlanCycle(t *testing.T) {
	dir := t.TempDir()
	for _, s := range []map[string]any{
		{"name": "a", "dependencies": map[string]any{"runtime": map[string]any{"requires": []string{"b"}}}, "provisioner": map[string]any{"actions": map[string]any{"start": map[string]any{"type": "shell"}}}},
		{"name": "b", "dependencies": map[string]any{"runtime": map[string]any{"requires": []string{"a"}}}, "provisioner": map[string]any{"actions": map[string]any{"start": map[string]any{"type": "shell"}}}},
	} {
		writeFile(t, filepath.Join(dir, "services", s["name"].(string)+".json"), s)
	}
	writeFile(t, filepath.Join(dir, "nodes.json"), []planNode{{ID: "n1", Services: []string{"a", "b"}}})
	out, _, code := runCLI(t, "plan", "--catalog", dir, "--nodes", filepath.Join(dir, "nodes.json"), "--action", "START_SERVICES", "-o", "json")
	if code != 1 || !strings.Contains(out, `"code": "PLAN_CYCLE"`) || !strings.Contains(out, "a -> b -> a") {
		t.Errorf("exit %d: %s", code, out)
	}
	writeFile(t, filepath.Join(dir, "nodes.json"), []planNode{{ID: "n1", Services: []string{"a", "zzz"}}})
	out, _, code = runCLI(t, "plan", "--catalog", dir, "--nodes", filepath.Join(dir, "nodes.json"), "--action", "START_SERVICES")
	if code != 1 || !strings.Contains(out, "service zzz is not in") {
		t.Errorf("exit %d: %s", code, out)
	}
}
