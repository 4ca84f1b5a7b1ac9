package planner

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// unitFacts is node.check as CHECK records it: reachable, with the
// systemd states of the units it was asked about ("load active sub" each).
func unitFacts(job string, units map[string]string) map[string]any {
	ck := map[string]any{"job": job, "reachable": true, "hostname": "n.example"}
	if units == nil {
		ck["systemd"] = false
		return ck
	}
	asked := map[string]any{}
	for u, st := range units {
		f := strings.Fields(st)
		asked[u] = map[string]any{"load": f[0], "active": f[1], "sub": f[2]}
	}
	ck["units"] = asked
	ck["systemd"] = true
	return ck
}

// A service without a status action is checked through its systemd
// units, as CHECK found them; one with neither is listed as unchecked
// and is no finding. The whole report is compared with a golden file.
func TestDiagnoseUnits(t *testing.T) {
	probes := map[string]ServiceProbe{
		"web":     {Status: true, Units: []string{"coopr-web.service"}}, // the status action answers, not the unit
		"metrics": {Units: []string{"coopr-metrics.service"}},
		"pair":    {Units: []string{"a.service", "b.socket"}},
	}
	probeOf := func(s string) ServiceProbe { return probes[s] }
	webRunning := map[string]any{"check": map[string]any{"job": "j2", "state": "running"}}
	node := func(num int, svcs []string, ck map[string]any) Observed {
		return Observed{ID: fmt.Sprintf("n%d", num), NodeNum: num, Hostname: "n.example", Services: svcs,
			Facts: map[string]any{"node": map[string]any{"check": ck}, "service:web": webRunning}}
	}
	nodes := []Observed{
		node(1, []string{"base", "metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "loaded active running"})),
		node(2, []string{"base", "metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "loaded inactive dead"})),
		node(3, []string{"metrics", "base"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "not-found inactive dead"})),
		node(4, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "loaded failed failed"})),
		node(5, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "loaded activating auto-restart"})),
		node(6, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "masked inactive dead"})),
		node(7, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "bad-setting inactive dead"})),
		node(8, []string{"metrics"}, unitFacts("j2", nil)),
		node(9, []string{"metrics"}, unitFacts("j2", map[string]string{})),
		node(10, []string{"pair"}, unitFacts("j2", map[string]string{"a.service": "loaded inactive dead", "b.socket": "not-found inactive dead"})),
		node(11, []string{"pair"}, unitFacts("j2", map[string]string{"a.service": "loaded active running", "b.socket": "loaded active listening"})),
		node(12, []string{"web", "base"}, unitFacts("j2", map[string]string{"coopr-web.service": "loaded inactive dead"})),
		node(13, []string{"metrics", "base"}, map[string]any{"job": "j2", "reachable": false, "error": "connection refused"}),
		node(14, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "masked active running"})),
		node(15, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "loaded activating auto-restart-queued"})),
		node(16, []string{"metrics"}, unitFacts("j2", map[string]string{"coopr-metrics.service": "loaded refreshing running"})),
	}
	r := Diagnose("j2", nodes, probeOf)
	got, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "diagnose-units.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestDiagnoseUnits -update ./planner/ writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("Diagnose: got\n%s\nwant (%s)\n%s", got, golden, want)
	}
	// What the golden file must say, whatever it holds.
	kinds := map[int]FindingKind{2: FindingServiceStopped, 3: FindingServiceMissing, 4: FindingServiceStopped, 5: FindingServiceStopped,
		6: FindingServiceStopped, 7: FindingNotChecked, 8: FindingNotChecked, 9: FindingNotChecked, 10: FindingServiceMissing, 13: FindingUnreachable,
		15: FindingServiceStopped}
	for _, n := range r.Nodes {
		want, bad := kinds[n.NodeNum]
		switch {
		case !bad && len(n.Findings) != 0:
			t.Errorf("node %d: findings %+v, want none", n.NodeNum, n.Findings)
		case bad && (len(n.Findings) != 1 || n.Findings[0].Kind != want):
			t.Errorf("node %d: findings %+v, want one %s", n.NodeNum, n.Findings, want)
		}
	}
	if u := r.Nodes[0].Unchecked; len(u) != 1 || u[0] != "base" {
		t.Errorf("node 1 unchecked %v, want [base]", u)
	}
	if u := r.Nodes[3].Unchecked; len(u) != 0 {
		t.Errorf("node 4 unchecked %v, want none", u)
	}
	if r.Healthy {
		t.Error("healthy with findings")
	}
}
