package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// A new version of a cluster's template reaches the live cluster: the
// service it adds runs on the node and its config change is served; a
// version whose constraints the node breaks is refused with the reason.
func TestSyncTemplateOnLocal(t *testing.T) {
	w := newWorld(t, 4)
	w.startAgent(t, "agent-1", 4)
	publish := func(edit func(doc map[string]any)) {
		t.Helper()
		b, err := os.ReadFile("../examples/catalog/clustertemplates/single.json")
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc)
		w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
			map[string]any{"e": doc}, &struct{}{})
	}
	id := w.create(t, "single", "", 1)
	w.follow(t, id, "ACTIVE", 5*time.Minute)
	n := w.cluster(t, id).Nodes[0]
	addr := n.Ipaddresses["access_v4"]
	if got := answers(t, "http://"+addr+"/", []string{n.Hostname}, 30*time.Second); got[n.Hostname] != n.Hostname+" hello from coopr" {
		t.Fatalf("before the sync the node answers %q", got)
	}

	publish(func(doc map[string]any) {
		d := doc["defaults"].(map[string]any)
		d["services"] = append(d["services"].([]any), "metrics")
		d["config"].(map[string]any)["web"] = map[string]any{"greeting": "hello from version 2"}
	})
	w.operate(t, id, map[string]any{"operation": "SYNC_TEMPLATE"})
	w.follow(t, id, "ACTIVE", 5*time.Minute)
	if !strings.Contains(strings.Join(w.cluster(t, id).Nodes[0].Services, ","), "metrics") {
		t.Errorf("node services after the sync: %v", w.cluster(t, id).Nodes[0].Services)
	}
	if got := answers(t, "http://"+addr+":9100/", []string{"up"}, 30*time.Second); got["up"] != "up "+n.Hostname {
		t.Errorf("metrics after the sync answers %q", got["up"])
	}
	if got := answers(t, "http://"+addr+"/", []string{n.Hostname}, 30*time.Second); got[n.Hostname] != n.Hostname+" hello from version 2" {
		t.Errorf("web after the sync answers %q", got[n.Hostname])
	}

	// metrics and web may no longer share a node, and the cluster has one.
	publish(func(doc map[string]any) {
		d := doc["defaults"].(map[string]any)
		d["services"] = append(d["services"].([]any), "metrics")
		doc["constraints"].(map[string]any)["layout"] = map[string]any{"cantcoexist": [][]string{{"web", "metrics"}}}
	})
	r := w.s.Do(w.admin, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: SYNC_TEMPLATE}) { id } }`,
		map[string]any{"id": id})
	if r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["kind"] != "no_layout" ||
		!strings.Contains(r.Errors[0].Message, "violates cantcoexist [metrics web]") {
		t.Errorf("a sync the layout breaks: %+v", r.Errors)
	}
	if c := w.cluster(t, id); c.Status != "ACTIVE" || len(c.Jobs) != 2 {
		t.Errorf("the refused sync left the cluster %s with %d jobs", c.Status, len(c.Jobs))
	}
	w.delete(t, id)
	w.follow(t, id, "TERMINATED", 3*time.Minute)
}
