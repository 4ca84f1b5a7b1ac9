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
	runScript(t, w, node, "tests/admin.mjs", "COOPR_SUPER_TOKEN="+w.s.Super, "COOPR_EXAMPLE_CATALOG="+examples)
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
