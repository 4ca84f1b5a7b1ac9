package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lampVersion publishes a new version of the lamp template: the imported
// one with edit applied.
func lampVersion(t *testing.T, w *world, edit func(map[string]any)) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(templatesDir, "clustertemplates", "lamp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	var out struct {
		PutCatalogEntity struct{ Entity struct{ Version int } }
	}
	w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
		map[string]any{"e": doc}, &out)
	return out.PutCatalogEntity.Entity.Version
}

type syncPreview struct {
	Action        string
	Changed       []struct{ Add []string }
	ConfigChanges []struct {
		Path     []string
		Old, New any
	}
	Tasks []struct{ Action, Service string }
	Sync  struct {
		FromVersion, ToVersion    int
		AddServices, KeptServices []string
		ConstraintChanges         []struct{ Path string }
	}
	PlanHash string
}

func TestSyncTemplate(t *testing.T) {
	w := newWorld(t)
	s := w.s
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation { createCluster(input: {name: "shop", clusterTemplate: "lamp", numMachines: 3}) { id } }`, nil, &cr)
	id := cr.CreateCluster.ID
	w.run(t, w.alice, id, "ACTIVE")
	type cluster struct {
		Services        []string
		Config          map[string]any
		TemplateVersion int
		Nodes           []struct{ Services []string }
	}
	get := func() cluster {
		var c struct{ Cluster cluster }
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { services config templateVersion nodes { services } } }`,
			map[string]any{"id": id}, &c)
		return c.Cluster
	}
	before := get()
	if before.TemplateVersion < 1 {
		t.Fatalf("templateVersion = %d after create, want the template's version", before.TemplateVersion)
	}
	preview := func() (syncPreview, string, string) {
		t.Helper()
		var out struct{ PreviewOperation syncPreview }
		r := s.Do(w.alice, `mutation($id: ID!) { previewOperation(clusterId: $id, input: {operation: SYNC_TEMPLATE}) {
			action changed { add } configChanges { path old new } tasks { action service } planHash
			sync { fromVersion toVersion addServices keptServices constraintChanges { path } } } }`, map[string]any{"id": id})
		if r.Code() != "" {
			kind, _ := r.Errors[0].Extensions["kind"].(string)
			return out.PreviewOperation, r.Code(), kind + ": " + r.Errors[0].Message
		}
		if err := r.Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.PreviewOperation, "", ""
	}
	if _, code, msg := preview(); code != "CONFLICT" || !strings.Contains(msg, "already at template lamp") {
		t.Errorf("sync with no new version: %s %s, want CONFLICT", code, msg)
	}

	// A version that adds haproxy (one node, runtime-using apache), moves
	// mysql's port and bounds haproxy's quantity.
	v := lampVersion(t, w, func(doc map[string]any) {
		d := doc["defaults"].(map[string]any)
		d["services"] = append(d["services"].([]any), "haproxy")
		d["config"].(map[string]any)["mysql"].(map[string]any)["port"] = "3307"
		doc["constraints"].(map[string]any)["services"].(map[string]any)["haproxy"] = map[string]any{"quantities": map[string]any{"min": 1, "max": 1}}
	})
	p, code, msg := preview()
	if code != "" {
		t.Fatalf("preview: %s %s", code, msg)
	}
	if p.Action != "SYNC_TEMPLATE" || p.Sync.FromVersion != before.TemplateVersion || p.Sync.ToVersion != v ||
		!slices.Equal(p.Sync.AddServices, []string{"haproxy"}) || len(p.Changed) != 1 || !slices.Equal(p.Changed[0].Add, []string{"haproxy"}) {
		t.Errorf("preview = %+v", p)
	}
	if len(p.Sync.ConstraintChanges) != 1 || p.Sync.ConstraintChanges[0].Path != "constraints.services.haproxy" {
		t.Errorf("constraint changes = %+v", p.Sync.ConstraintChanges)
	}
	if len(p.ConfigChanges) != 1 || strings.Join(p.ConfigChanges[0].Path, ".") != "mysql.port" || p.ConfigChanges[0].New != "3307" {
		t.Errorf("config changes = %+v", p.ConfigChanges)
	}
	var installs, configures int
	for _, task := range p.Tasks {
		switch {
		case task.Action == "INSTALL" && task.Service == "haproxy":
			installs++
		case task.Action == "CONFIGURE":
			configures++
		case task.Action == "INSTALL":
			t.Errorf("the sync installs %s again", task.Service)
		}
	}
	if installs != 1 || configures < 3 {
		t.Errorf("tasks: %d INSTALL haproxy, %d CONFIGURE; %+v", installs, configures, p.Tasks)
	}
	var job struct{ RunOperation struct{ Action string } }
	s.Must(w.alice, `mutation($id: ID!, $h: String) { runOperation(clusterId: $id, input: {operation: SYNC_TEMPLATE}, expectedPlanHash: $h) { action } }`,
		map[string]any{"id": id, "h": p.PlanHash}, &job)
	if job.RunOperation.Action != "SYNC_TEMPLATE" {
		t.Errorf("job action %q", job.RunOperation.Action)
	}
	w.run(t, w.alice, id, "ACTIVE")
	after := get()
	if after.TemplateVersion != v || !slices.Contains(after.Services, "haproxy") {
		t.Errorf("after the sync: version %d (want %d), services %v", after.TemplateVersion, v, after.Services)
	}
	if port := after.Config["mysql"].(map[string]any)["port"]; port != "3307" {
		t.Errorf("mysql port after the sync = %v", port)
	}
	if _, code, _ := preview(); code != "CONFLICT" {
		t.Errorf("a second sync: %s, want CONFLICT (up to date)", code)
	}

	// A version whose constraints the layout breaks: two databases, where
	// the cluster has one; the solver says why and nothing changes.
	lampVersion(t, w, func(doc map[string]any) {
		d := doc["defaults"].(map[string]any)
		d["services"] = append(d["services"].([]any), "haproxy")
		doc["constraints"].(map[string]any)["services"].(map[string]any)["mysql-server"] = map[string]any{"quantities": map[string]any{"min": 2}}
	})
	if _, code, msg := preview(); code != "INVALID_INPUT" || !strings.HasPrefix(msg, "no_layout: ") || !strings.Contains(msg, "mysql-server is on 1 nodes, outside 2..") {
		t.Errorf("refused sync preview: %s %q", code, msg)
	}
	r := s.Do(w.alice, `mutation($id: ID!) { runOperation(clusterId: $id, input: {operation: SYNC_TEMPLATE}) { id } }`, map[string]any{"id": id})
	if r.Code() != "INVALID_INPUT" {
		t.Errorf("refused sync: %+v", r.Errors)
	}
	if got := get(); got.TemplateVersion != v {
		t.Errorf("a refused sync moved the version to %d", got.TemplateVersion)
	}
}
