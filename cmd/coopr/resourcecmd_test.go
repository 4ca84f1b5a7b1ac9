package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The resource commands take a plugin resource from upload through stage
// and sync to live, and back through recall to deletion.
func TestResourceCommands(t *testing.T) {
	w := newCLIWorld(t)
	w.s.Must(w.s.Super, `mutation($e: JSON!) { putCatalogEntity(kind: AUTOMATORTYPES, entity: $e) { entity { version } } }`,
		map[string]any{"e": map[string]any{"name": "files", "resourceTypes": map[string]any{"scripts": map[string]any{"format": "file", "permissions": "0755"}}}},
		&struct{}{})
	file := filepath.Join(t.TempDir(), "setup.sh")
	if err := os.WriteFile(file, []byte("echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const ref = "automatortypes/files/scripts/setup.sh"
	for i, want := range []string{"@1 (file, 8 bytes, sha256:", "@2 (file, 8 bytes, sha256:"} {
		out, errOut, code := w.cli(t, "resource", "upload", ref, file)
		if code != 0 || !strings.HasPrefix(out, "uploaded "+ref+want) || !strings.HasSuffix(out, "): INACTIVE\n") {
			t.Fatalf("upload %d: exit %d: %q%s", i+1, code, out, errOut)
		}
	}
	for _, step := range []struct{ args, want string }{
		{"stage " + ref + "@2", ref + "@2: STAGED\n"},
		{"sync", "resource generation 1\n"},
		{"recall " + ref + "@2", ref + "@2: RECALLED\n"},
		{"sync", "resource generation 2\n"},
		{"delete " + ref + "@1", "deleted " + ref + "@1\n"},
	} {
		if out, errOut, code := w.cli(t, append([]string{"resource"}, strings.Fields(step.args)...)...); code != 0 || out != step.want {
			t.Fatalf("resource %s: exit %d: %q%s, want %q", step.args, code, out, errOut, step.want)
		}
	}
	out, _, _ := w.cli(t, "resource", "list", "automatortypes/files", "-o", "json")
	var rs []shownResource
	if err := json.Unmarshal([]byte(out), &rs); err != nil || len(rs) != 1 || rs[0].Version != 2 || rs[0].State != "INACTIVE" ||
		rs[0].Permissions == nil || *rs[0].Permissions != "0755" {
		t.Errorf("resource list -o json: %v: %s", err, out)
	}
	out, _, _ = w.cli(t, "resource", "list", "automatortypes/files")
	if !strings.HasPrefix(out, "resource generation 2\n") || !strings.Contains(out, "scripts") {
		t.Errorf("resource list:\n%s", out)
	}
	for _, tc := range []struct{ args, want string }{
		{"stage " + ref, "no @VERSION"},
		{"list widgets/files", "TYPE is automatortypes or providertypes"},
		{"upload automatortypes/files " + file, "4 parts"},
		{"delete " + ref + "@9", "coopr: "},
	} {
		if _, errOut, code := w.cli(t, append([]string{"resource"}, strings.Fields(tc.args)...)...); code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("resource %s: exit %d: %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}
