package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What a new user mistypes is refused before anything runs, saying what
// was wrong: a flag given to an op it is not for, an empty cluster handle,
// a --config file that is not an object; the CLI's own not-found errors
// carry NOT_FOUND as the API's do; create without --size takes the
// template's least.
func TestCLIRefusals(t *testing.T) {
	w := newCLIWorld(t)
	w.startAgent(t)
	id := w.create(t, "web-cluster", "demo", 3)
	w.await(t, id, "ACTIVE")
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	obj, arr := file("c.json", `{"web": {"greeting": "hi"}}`), file("arr.json", `[1, 2]`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "op", "8", "scale", "--size", "4", "--config", obj}, "--config is for configure and configure-with-restart, not scale"},
		{[]string{"cluster", "op", "1", "restart", "--size", "9"}, "--size is for scale, not restart"},
		{[]string{"cluster", "op", "1", "restart", "--remove", "1000"}, "--remove is for scale, not restart"},
		{[]string{"cluster", "op", "1", "configure", "--config", obj, "--services", "web"}, "--services is for start, stop, restart and add-services, not configure"},
		{[]string{"cluster", "op", "1", "scale", "--size", "4", "--replace"}, "--replace is for configure and configure-with-restart, not scale"},
		{[]string{"cluster", "op", "1", "add-services", "--services", "metrics", "--size", "4"}, "--size is for scale, not add-services"},
		{[]string{"cluster", "show", ""}, "a cluster id, number or name is needed"},
		{[]string{"cluster", "show", "  "}, "a cluster id, number or name is needed"},
		{[]string{"cluster", "op", "", "restart"}, "a cluster id, number or name is needed"},
		{[]string{"cluster", "op", "1", "configure", "--config", arr}, "--config: " + arr + " must hold a JSON object, not an array"},
		{[]string{"cluster", "show", "99"}, `NOT_FOUND: cluster 99: not found: no cluster you can see has id 00000099 or name "99"`},
		{[]string{"job", "show", "00000001-099"}, "NOT_FOUND: job 00000001-099: not found"},
		{[]string{"known-hosts", "nosuch"}, "NOT_FOUND: cluster nosuch: not found"},
	} {
		out, errOut, code := w.cli(t, tc.args...)
		if code != 1 || !strings.HasPrefix(errOut, "coopr: "+tc.want) {
			t.Errorf("%q: exit %d:\n%s%s\nwant coopr: %s", tc.args, code, out, errOut, tc.want)
		}
	}

	// No --size: the template's least, said; --size 0 is still refused.
	out, errOut, code := w.cli(t, "cluster", "create", "web-cluster", "--dry-run")
	if code != 0 || !strings.Contains(out, `would create "web-cluster" from web-cluster on provider local: 2 nodes`) ||
		errOut != "no --size: 2 nodes, the fewest web-cluster takes\n" {
		t.Errorf("create web-cluster without --size: exit %d:\n%s%s", code, out, errOut)
	}
	out, errOut, code = w.cli(t, "cluster", "create", "single", "--dry-run")
	if code != 0 || !strings.Contains(out, ": 1 node (nothing made") || !strings.Contains(out, ": 1 more node of") || errOut != "" {
		t.Errorf("create single without --size: exit %d:\n%s%s", code, out, errOut)
	}
	if _, errOut, code := w.cli(t, "cluster", "create", "web-cluster", "--size", "0"); code != 1 || !strings.Contains(errOut, "--size must be at least 1") {
		t.Errorf("create --size 0: exit %d: %s", code, errOut)
	}
	if _, errOut, code := w.cli(t, "cluster", "create", "nosuch", "--dry-run"); code != 1 || !strings.Contains(errOut, "NOT_FOUND") {
		t.Errorf("create nosuch: exit %d: %s", code, errOut)
	}

	// lease's help says what it does; show says when the lease ends.
	out, _, _ = runCLI(t, "cluster", "lease", "--help")
	if strings.Contains(out, "Show or move") {
		t.Errorf("lease help promises a show:\n%s", out)
	}
	end := time.Now().Add(72 * time.Hour).Truncate(time.Second)
	w.s.Must(w.token, `mutation($id: ID!, $t: Time!) { setClusterExpireTime(id: $id, expireTime: $t) { id } }`,
		map[string]any{"id": id, "t": end.UTC().Format(time.RFC3339)}, &struct{}{})
	out, errOut, code = w.cli(t, "cluster", "show", id)
	if want := "lease ends " + end.Local().Format(time.DateTime); code != 0 || !strings.Contains(out, want) {
		t.Errorf("cluster show after a lease change: exit %d, want %q:\n%s%s", code, want, out, errOut)
	}
}
