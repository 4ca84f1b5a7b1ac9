package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/server/servertest"
)

// coopr cluster sync shows what a new template version changes, runs it,
// and refuses a version the layout breaks with the solver's reason.
func TestClusterSyncGolden(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	tokens, err := devBootstrap(ctx, s.Srv, s.URL, devOptions{dir: t.TempDir(), catalog: "../../examples/catalog", tenant: "dev", capacity: 8,
		maxClusters: devMaxClusters, maxNodes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COOPR_SERVER", s.URL)
	t.Setenv("COOPR_TOKEN", tokens.admin)
	dir := t.TempDir()
	id := "no cluster yet"
	cli := func(file string, wantCode int, args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, args...)
		if code != wantCode {
			t.Fatalf("%s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		if file != "" {
			golden(t, file, strings.ReplaceAll(out+errOut, id, "ID"))
		}
		return out
	}
	// version publishes web-cluster again with edit applied.
	version := func(edit func(doc map[string]any)) {
		t.Helper()
		b, err := os.ReadFile("../../examples/catalog/clustertemplates/web-cluster.json")
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc)
		if b, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "web-cluster.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cli("", 0, "catalog", "put", "clustertemplates", p)
	}
	created := cli("", 0, "cluster", "create", "web-cluster", "--size", "3", "--name", "synced", "--no-wait")
	if _, err := fmt.Sscanf(created, "cluster %s created", &id); err != nil {
		t.Fatalf("create said %q", created)
	}
	active(t, s, tokens.admin, id)
	cli("cluster-sync-up-to-date.txt", 1, "cluster", "sync", id)

	version(func(doc map[string]any) {
		d := doc["defaults"].(map[string]any)
		d["services"] = append(d["services"].([]any), "metrics")
		d["config"].(map[string]any)["web"] = map[string]any{"greeting": "hello from version 2"}
		doc["constraints"].(map[string]any)["size"] = map[string]any{"min": 2, "max": 6}
	})
	cli("cluster-sync-dry-run.txt", 0, "cluster", "sync", id, "--dry-run")
	cli("cluster-sync.txt", 0, "cluster", "sync", id, "--no-wait")
	active(t, s, tokens.admin, id)
	var c struct {
		Cluster struct {
			Services        []string
			TemplateVersion int
		}
	}
	s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { services templateVersion } }`, map[string]any{"id": id}, &c)
	if strings.Join(c.Cluster.Services, ",") != "base,lb,metrics,web" || c.Cluster.TemplateVersion != 2 {
		t.Errorf("after the sync: %+v", c.Cluster)
	}

	// A size the 3-node cluster is outside of: a sync adds or removes no
	// node, so it is refused with the reason.
	version(func(doc map[string]any) {
		doc["constraints"].(map[string]any)["size"] = map[string]any{"min": 2, "max": 2}
	})
	cli("cluster-sync-refused.txt", 1, "cluster", "sync", id)
}
