package uitest

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/remote/sshdtest"
)

// TestBrowserAdmin drives the admin views in headless Chromium against the
// same world as TestBrowser: tests/admin.mjs imports the example catalog
// through the import view, edits and diffs entities, builds a template
// with the live solve, and goes through resources, users and tokens,
// agents and tenants (as the superadmin); a plain user sees none of it.
func TestBrowserAdmin(t *testing.T) {
	node := prerequisites(t)
	w := newWorld(t)
	examples, err := filepath.Abs("../../examples/catalog")
	if err != nil {
		t.Fatal(err)
	}
	w.extra = func(action string) (bool, error) {
		switch action {
		case "template-version-adds-metrics":
			// A new web-cluster version: metrics by default, and a size
			// limit the cluster is within.
			return true, w.templateVersion(func(doc map[string]any) {
				d := doc["defaults"].(map[string]any)
				d["services"] = append(d["services"].([]any), "metrics")
				doc["constraints"].(map[string]any)["size"] = map[string]any{"min": 2, "max": 50}
			})
		case "template-versions-undone":
			// web-cluster as it was: the rest of the script edits its v1.
			for _, v := range []int{3, 2} {
				r, err := w.s.Request(w.admin, `mutation($v: Int) { deleteCatalogEntity(kind: CLUSTERTEMPLATES, name: "web-cluster", version: $v) }`, map[string]any{"v": v})
				if err == nil {
					err = r.Err()
				}
				if err != nil {
					return true, err
				}
			}
			return true, nil
		case "template-version-breaks-layout":
			// Two load balancers, where the cluster has one.
			return true, w.templateVersion(func(doc map[string]any) {
				doc["constraints"].(map[string]any)["services"].(map[string]any)["lb"] = map[string]any{"quantities": map[string]any{"min": 2}}
			})
		}
		return false, nil
	}
	runScript(t, w, node, "tests/admin.mjs", "COOPR_SUPER_TOKEN="+w.s.Super, "COOPR_TEST_SSH_KEY="+sshdtest.NewKey(t).AuthorizedKey, "COOPR_EXAMPLE_CATALOG="+examples)
}

// runScript runs a browser script with the world's address and tokens,
// answering its "@@ need ACTION" lines, and fails the test if it fails.
func runScript(t *testing.T, w *world, node, script string, env ...string) {
	t.Helper()
	shots, err := filepath.Abs("../test-results")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(),
		"COOPR_URL="+w.s.URL, "COOPR_CHROMIUM="+chromium(), "COOPR_SCREENSHOTS="+shots,
		"COOPR_ADMIN_TOKEN="+w.admin, "COOPR_ALICE_TOKEN="+w.alice, "COOPR_BOB_TOKEN="+w.bob)
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		line := lines.Text()
		action, ok := strings.CutPrefix(line, "@@ need ")
		if !ok {
			t.Log(line)
			continue
		}
		reply := "@@ done " + action
		if err := w.act(action); err != nil {
			reply = "@@ fail " + strings.ReplaceAll(err.Error(), "\n", " ")
		}
		if _, err := io.WriteString(stdin, reply+"\n"); err != nil {
			t.Errorf("answering %s: %v", action, err)
		}
	}
	err = cmd.Wait()
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Log(s)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("%s failed (%v); screenshots in %s", script, err, shots)
	case err != nil:
		t.Fatal(err)
	}
}

// templateVersion stores a new version of web-cluster, its newest changed
// by edit.
func (w *world) templateVersion(edit func(doc map[string]any)) error {
	var out struct {
		Catalog struct {
			Entity struct{ Document map[string]any }
		}
	}
	r, err := w.s.Request(w.admin, `{ catalog { entity(kind: CLUSTERTEMPLATES, name: "web-cluster") { document } } }`, nil)
	if err != nil {
		return err
	}
	if err := r.Decode(&out); err != nil {
		return err
	}
	doc := out.Catalog.Entity.Document
	edit(doc)
	delete(doc, "version")
	r, err = w.s.Request(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`, map[string]any{"e": doc})
	if err == nil {
		err = r.Err()
	}
	return err
}
