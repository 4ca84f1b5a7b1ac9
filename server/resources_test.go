package server_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/servertest"
)

const (
	uploadQuery = `mutation($in: ResourceUploadInput!) { uploadResource(input: $in) { version state digest size format permissions } }`
	stageQuery  = `mutation($in: ResourceVersionInput!) { stageResource(input: $in) { state } }`
	recallQuery = `mutation($in: ResourceVersionInput!) { recallResource(input: $in) { state } }`
	deleteQuery = `mutation($in: ResourceVersionInput!) { deleteResource(input: $in) }`
	syncQuery   = `mutation { syncResources }`
	listQuery   = `query($t: PluginType!, $p: String!) { resources(pluginType: $t, plugin: $p) { resourceType name version state digest size } }`
	contentQ    = `query($task: ID!, $tok: String!, $t: PluginType!, $p: String!, $rt: String!, $n: String!, $v: Int!) {
		resourceContent(taskId: $task, claimToken: $tok, pluginType: $t, plugin: $p, resourceType: $rt, name: $n, version: $v) { content digest } }`
)

func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}
		if strings.HasSuffix(n, "/") {
			h = &tar.Header{Name: n, Mode: 0o755, Typeflag: tar.TypeDir}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type resRow struct {
	ResourceType, Name, State, Digest string
	Version, Size                     int
}

func resKey(ptype, plugin, rtype, name string, version int) map[string]any {
	return map[string]any{"pluginType": ptype, "plugin": plugin, "resourceType": rtype, "name": name, "version": version}
}

func upload(t *testing.T, s *servertest.Server, token, ptype, plugin, rtype, name string, content []byte) int {
	t.Helper()
	var out struct{ UploadResource struct{ Version int } }
	s.Must(token, uploadQuery, map[string]any{"in": map[string]any{"pluginType": ptype, "plugin": plugin,
		"resourceType": rtype, "name": name, "content": base64.StdEncoding.EncodeToString(content)}}, &out)
	return out.UploadResource.Version
}

func states(t *testing.T, s *servertest.Server, token, ptype, plugin string) map[string]string {
	t.Helper()
	var out struct{ Resources []resRow }
	s.Must(token, listQuery, map[string]any{"t": ptype, "p": plugin}, &out)
	m := map[string]string{}
	for _, r := range out.Resources {
		m[fmt.Sprintf("%s/%s@%d", r.ResourceType, r.Name, r.Version)] = r.State
	}
	return m
}

func syncRes(t *testing.T, s *servertest.Server, token string) int {
	t.Helper()
	var out struct{ SyncResources int }
	s.Must(token, syncQuery, nil, &out)
	return out.SyncResources
}

func TestResourceLifecycle(t *testing.T) {
	w := newWorld(t)
	s, adm := w.s, w.admin
	const A, P = "AUTOMATORTYPES", "PROVIDERTYPES"

	// Upload: versions count up, digest and size of the bytes, format and
	// permissions from the descriptor.
	var up struct {
		UploadResource struct {
			Version       int
			State, Digest string
			Format        string
			Permissions   *string
			Size          int
		}
	}
	key := []byte("ssh-key-bytes")
	s.Must(adm, uploadQuery, map[string]any{"in": map[string]any{"pluginType": P, "plugin": "rackspace",
		"resourceType": "ssh_keys", "name": "k1", "content": base64.StdEncoding.EncodeToString(key)}}, &up)
	sum := sha256.Sum256(key)
	if u := up.UploadResource; u.Version != 1 || u.State != "INACTIVE" || u.Digest != "sha256:"+hex.EncodeToString(sum[:]) ||
		u.Size != len(key) || u.Format != "file" || u.Permissions == nil || *u.Permissions != "0400" {
		t.Fatalf("upload: %+v", u)
	}
	for i := 1; i <= 3; i++ {
		if v := upload(t, s, adm, A, "chef-solo", "roles", "web", []byte(fmt.Sprintf("role v%d", i))); v != i {
			t.Fatalf("roles/web upload %d got version %d", i, v)
		}
	}
	cookbook := tgz(t, map[string]string{"apache/": "", "apache/recipes/default.rb": "package 'httpd'"})
	if v := upload(t, s, adm, A, "chef-solo", "cookbooks", "apache", cookbook); v != 1 {
		t.Fatalf("cookbook version %d", v)
	}
	upload(t, s, adm, A, "shell", "scripts", "setup.sh", []byte("echo hi"))

	// Refusals name the field.
	b64 := base64.StdEncoding.EncodeToString
	for _, c := range []struct {
		name, token string
		in          map[string]any
		code, field string
	}{
		{"unknown plugin", adm, map[string]any{"pluginType": A, "plugin": "nope", "resourceType": "roles", "name": "x", "content": b64([]byte("x"))}, "NOT_FOUND", "input.plugin"},
		{"unknown resource type", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "nope", "name": "x", "content": b64([]byte("x"))}, "INVALID_INPUT", "input.resourceType"},
		{"bad base64", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "roles", "name": "x", "content": "%%%"}, "INVALID_INPUT", "input.content"},
		{"bad name", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "roles", "name": "../x", "content": b64([]byte("x"))}, "INVALID_INPUT", "input.name"},
		{"not an archive", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "cookbooks", "name": "apache", "content": b64([]byte("plain"))}, "INVALID_INPUT", "input.content"},
		{"wrong top directory", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "cookbooks", "name": "mysql", "content": b64(cookbook)}, "INVALID_INPUT", "input.content"},
		{"two top entries", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "cookbooks", "name": "apache",
			"content": b64(tgz(t, map[string]string{"apache/a": "1", "other/b": "2"}))}, "INVALID_INPUT", "input.content"},
		{"escaping entry", adm, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "cookbooks", "name": "apache",
			"content": b64(tgz(t, map[string]string{"apache/../../etc/x": "1"}))}, "INVALID_INPUT", "input.content"},
		{"plain user", w.alice, map[string]any{"pluginType": A, "plugin": "chef-solo", "resourceType": "roles", "name": "x", "content": b64([]byte("x"))}, "FORBIDDEN", ""},
	} {
		r := s.Do(c.token, uploadQuery, map[string]any{"in": c.in})
		if r.Code() != c.code || (c.field != "" && (len(r.Errors) == 0 || r.Errors[0].Extensions["field"] != c.field)) {
			t.Errorf("%s: %+v, want %s on %s", c.name, r.Errors, c.code, c.field)
		}
	}
	if r := s.Do(adm, stageQuery, map[string]any{"in": resKey(A, "chef-solo", "roles", "web", 9)}); r.Code() != "NOT_FOUND" {
		t.Errorf("stage of a missing version: %+v", r.Errors)
	}
	for _, q := range []string{syncQuery, `{ resources(pluginType: AUTOMATORTYPES, plugin: "chef-solo") { name } }`} {
		if r := s.Do(w.alice, q, nil); r.Code() != "FORBIDDEN" {
			t.Errorf("plain user %s: %+v", q, r.Errors)
		}
	}

	// The state table of docs/task-protocol.md#plugin-resources.
	web := func(v int) map[string]any { return resKey(A, "chef-solo", "roles", "web", v) }
	step := func(q string, v int) {
		t.Helper()
		s.Must(adm, q, map[string]any{"in": web(v)}, &struct{}{})
	}
	want := func(what string, w1, w2, w3 string) {
		t.Helper()
		st := states(t, s, adm, A, "chef-solo")
		if st["roles/web@1"] != w1 || st["roles/web@2"] != w2 || st["roles/web@3"] != w3 {
			t.Errorf("%s: %v, want %s %s %s", what, st, w1, w2, w3)
		}
	}
	want("uploaded", "INACTIVE", "INACTIVE", "INACTIVE")
	step(stageQuery, 1)
	want("stage 1", "STAGED", "INACTIVE", "INACTIVE")
	if g := syncRes(t, s, adm); g != 1 {
		t.Errorf("first sync: generation %d", g)
	}
	want("sync", "ACTIVE", "INACTIVE", "INACTIVE")
	step(stageQuery, 2)
	want("stage 2", "RECALLED", "STAGED", "INACTIVE")
	step(stageQuery, 1)
	want("stage 1 again", "ACTIVE", "INACTIVE", "INACTIVE")
	step(recallQuery, 1)
	want("recall 1", "RECALLED", "INACTIVE", "INACTIVE")
	step(stageQuery, 3)
	want("stage 3", "RECALLED", "INACTIVE", "STAGED")
	step(recallQuery, 3)
	want("recall 3", "RECALLED", "INACTIVE", "INACTIVE")
	// Only inactive versions may be deleted.
	if r := s.Do(adm, deleteQuery, map[string]any{"in": web(1)}); r.Code() != "CONFLICT" {
		t.Errorf("delete of a recalled version: %+v", r.Errors)
	}
	step(stageQuery, 3)
	if r := s.Do(adm, deleteQuery, map[string]any{"in": web(3)}); r.Code() != "CONFLICT" {
		t.Errorf("delete of a staged version: %+v", r.Errors)
	}
	if g := syncRes(t, s, adm); g != 2 {
		t.Errorf("second sync: generation %d", g)
	}
	want("sync 2", "INACTIVE", "INACTIVE", "ACTIVE")
	if r := s.Do(adm, deleteQuery, map[string]any{"in": web(3)}); r.Code() != "CONFLICT" {
		t.Errorf("delete of an active version: %+v", r.Errors)
	}
	s.Must(adm, deleteQuery, map[string]any{"in": web(2)}, &struct{}{})
	if r := s.Do(adm, deleteQuery, map[string]any{"in": web(2)}); r.Code() != "NOT_FOUND" {
		t.Errorf("second delete: %+v", r.Errors)
	}
	// Uploads continue from the highest version.
	if v := upload(t, s, adm, A, "chef-solo", "roles", "web", []byte("role v4")); v != 4 {
		t.Errorf("upload after delete: version %d", v)
	}
	// Stage the rest and sync them live together.
	s.Must(adm, stageQuery, map[string]any{"in": resKey(A, "chef-solo", "cookbooks", "apache", 1)}, &struct{}{})
	s.Must(adm, stageQuery, map[string]any{"in": resKey(P, "rackspace", "ssh_keys", "k1", 1)}, &struct{}{})
	s.Must(adm, stageQuery, map[string]any{"in": resKey(A, "shell", "scripts", "setup.sh", 1)}, &struct{}{})
	if g := syncRes(t, s, adm); g != 3 {
		t.Errorf("third sync: generation %d", g)
	}
	// Concurrent syncs serialize: each gets its own next generation.
	gens := make(chan int, 6)
	for range 6 {
		go func() {
			var out struct{ SyncResources int }
			if err := s.Do(adm, syncQuery, nil).Decode(&out); err != nil {
				t.Error(err)
			}
			gens <- out.SyncResources
		}()
	}
	var got []int
	for range 6 {
		got = append(got, <-gens)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{4, 5, 6, 7, 8, 9}) {
		t.Errorf("concurrent syncs got generations %v, want 4..9", got)
	}
	want("concurrent syncs", "INACTIVE", "", "ACTIVE")
	// Another tenant sees none of it.
	other, _ := tenantTokens(t, s, "globex")
	if st := states(t, s, other, A, "chef-solo"); len(st) != 0 {
		t.Errorf("other tenant lists %v", st)
	}

	// A job pins generation 3: roles/web@3, cookbooks/apache@1,
	// ssh_keys/k1@1 (and shell's script, which no lamp driver uses).
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent-r", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	agent := tok.CreateAPIToken.Secret
	s.Must(agent, `mutation($in: AgentRegistration!) { registerAgent(input: $in) { heartbeatIntervalSeconds } }`,
		map[string]any{"in": map[string]any{"agentId": "agent-r", "incarnation": "inc-1", "capacity": 1,
			"drivers": lampDrivers("rackspace")}}, &struct{}{})
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 1}) { id } }`, nil, &struct{}{})
	s.Must(agent, `mutation { agentHeartbeat(input: {agentId: "agent-r", incarnation: "inc-1"}) { assignments { slots } } }`, nil, &struct{}{})
	var cr struct{ CreateCluster struct{ ID string } }
	s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": map[string]any{
		"name": "res", "clusterTemplate": "lamp", "numMachines": 1}}, &cr)
	id := cr.CreateCluster.ID

	type ref struct {
		PluginType, Plugin, ResourceType, Name, Format, Permissions, Digest string
		Version                                                             int
	}
	type claimed struct {
		TaskID, ClaimToken string
		Attempt            int
		Payload            struct {
			TaskName  string
			Service   *struct{ Name string }
			Resources []ref
		}
	}
	claimIn := map[string]any{"agentId": "agent-r", "incarnation": "inc-1", "tenantId": w.tenantID, "slot": 0, "waitSeconds": 1}
	claim := func() *claimed {
		t.Helper()
		for range 20 {
			var got struct{ ClaimTask *claimed }
			s.Must(agent, claimQuery, map[string]any{"in": claimIn}, &got)
			if got.ClaimTask != nil {
				return got.ClaimTask
			}
		}
		t.Fatal("no task to claim")
		return nil
	}
	finish := func(a *claimed, result map[string]any) {
		t.Helper()
		s.Must(agent, finishQuery, map[string]any{"in": map[string]any{"taskId": a.TaskID, "attempt": a.Attempt,
			"claimToken": a.ClaimToken, "result": result}}, &struct{}{})
	}
	listed := func(a *claimed) []string {
		var out []string
		for _, r := range a.Payload.Resources {
			out = append(out, fmt.Sprintf("%s/%s/%s/%s@%d", r.PluginType, r.Plugin, r.ResourceType, r.Name, r.Version))
		}
		return out
	}
	chef := func(web int) []string {
		return []string{"automatortypes/chef-solo/cookbooks/apache@1", fmt.Sprintf("automatortypes/chef-solo/roles/web@%d", web)}
	}
	wantFor := func(a *claimed, web int) []string {
		switch a.Payload.TaskName {
		case "CREATE", "CONFIRM", "DELETE":
			return []string{"providertypes/rackspace/ssh_keys/k1@1"}
		}
		return chef(web)
	}
	content := func(token string, a *claimed, ptype, plugin, rtype, name string, v int) (*servertest.Response, string) {
		r := s.Do(token, contentQ, map[string]any{"task": a.TaskID, "tok": a.ClaimToken, "t": ptype, "p": plugin,
			"rt": rtype, "n": name, "v": v})
		var out struct {
			ResourceContent struct{ Content, Digest string }
		}
		if r.Code() == "" {
			if err := r.Decode(&out); err != nil {
				t.Fatal(err)
			}
		}
		return r, out.ResourceContent.Content
	}

	first := claim()
	if got, want := listed(first), wantFor(first, 3); !slices.Equal(got, want) {
		t.Errorf("%s payload resources %v, want %v", first.Payload.TaskName, got, want)
	}
	if r := first.Payload.Resources; len(r) == 1 && (r[0].Format != "file" || r[0].Permissions != "0400" ||
		r[0].Digest != "sha256:"+hex.EncodeToString(sum[:])) {
		t.Errorf("payload entry %+v", r[0])
	}
	// resourceContent serves what the payload lists, to the claim's holder.
	if r, c := content(agent, first, P, "rackspace", "ssh_keys", "k1", 1); r.Code() != "" || c != base64.StdEncoding.EncodeToString(key) {
		t.Errorf("content of k1: %+v %q", r.Errors, c)
	}
	if r, _ := content(agent, first, A, "shell", "scripts", "setup.sh", 1); r.Code() != "NOT_FOUND" {
		t.Errorf("content of an unlisted resource: %+v", r.Errors)
	}
	if r, _ := content(agent, first, P, "rackspace", "ssh_keys", "k1", 2); r.Code() != "NOT_FOUND" {
		t.Errorf("content of an unlisted version: %+v", r.Errors)
	}
	if r, _ := content(adm, first, P, "rackspace", "ssh_keys", "k1", 1); r.Code() != "FORBIDDEN" {
		t.Errorf("content for a user token: %+v", r.Errors)
	}
	stale := *first
	stale.ClaimToken = strings.Repeat("ab", 16)
	if r, _ := content(agent, &stale, P, "rackspace", "ssh_keys", "k1", 1); r.Code() != "STALE_CLAIM" {
		t.Errorf("content under a wrong token: %+v", r.Errors)
	}
	finish(first, map[string]any{"status": 0})
	if r, _ := content(agent, first, P, "rackspace", "ssh_keys", "k1", 1); r.Code() != "STALE_CLAIM" {
		t.Errorf("content after finish: %+v", r.Errors)
	}

	// A sync while the job runs changes nothing for it; the version it
	// pinned cannot be deleted while it runs.
	s.Must(adm, stageQuery, map[string]any{"in": web(4)}, &struct{}{})
	if g := syncRes(t, s, adm); g != 10 {
		t.Errorf("sync during the job: generation %d", g)
	}
	if r := s.Do(adm, deleteQuery, map[string]any{"in": web(3)}); r.Code() != "CONFLICT" {
		t.Errorf("delete of a version a running job pinned: %+v", r.Errors)
	}
	var failed *claimed
	sawChef := false
	for failed == nil {
		a := claim()
		if got, want := listed(a), wantFor(a, 3); !slices.Equal(got, want) {
			t.Errorf("%s payload resources %v, want %v (pinned generation)", a.Payload.TaskName, got, want)
		}
		if a.Payload.TaskName == "BOOTSTRAP" || a.Payload.Service != nil {
			sawChef = true
			if r, c := content(agent, a, A, "chef-solo", "cookbooks", "apache", 1); r.Code() != "" ||
				c != base64.StdEncoding.EncodeToString(cookbook) {
				t.Errorf("content of the cookbook: %+v", r.Errors)
			}
		}
		if a.Payload.Service != nil {
			// Fail the first service task for good: the job fails.
			finish(a, map[string]any{"status": 1, "retryable": false, "message": "broken"})
			failed = a
			break
		}
		result := map[string]any{"status": 0}
		if a.Payload.TaskName == "CONFIRM" {
			result["ipaddresses"] = map[string]any{"access_v4": "10.9.0.1", "bind_v4": "10.9.0.1"}
		}
		finish(a, result)
	}
	if !sawChef {
		t.Error("no task listed chef-solo's resources")
	}
	// retryJob pins the current generation.
	job := id + "-001"
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.Do(w.alice, `mutation($j: ID!) { retryJob(id: $j) { id } }`, map[string]any{"j": job})
		if r.Code() == "" {
			break
		}
		if r.Code() != "CONFLICT" || time.Now().After(deadline) {
			t.Fatalf("retry: %+v", r.Errors)
		}
		time.Sleep(100 * time.Millisecond)
	}
	deadline = time.Now().Add(60 * time.Second)
	for {
		var c struct{ Cluster struct{ Status string } }
		s.Must(w.alice, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": id}, &c)
		if c.Cluster.Status == "ACTIVE" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster %s after retry", c.Cluster.Status)
		}
		var got struct{ ClaimTask *claimed }
		s.Must(agent, claimQuery, map[string]any{"in": claimIn}, &got)
		a := got.ClaimTask
		if a == nil {
			continue
		}
		if got, want := listed(a), wantFor(a, 4); !slices.Equal(got, want) {
			t.Errorf("after retry: %s payload resources %v, want %v", a.Payload.TaskName, got, want)
		}
		finish(a, map[string]any{"status": 0})
	}
	// The job is over: the version it pinned may go.
	s.Must(adm, deleteQuery, map[string]any{"in": web(3)}, &struct{}{})
}

// TestResourceGeneration: the tenant's generation as syncs move it, per
// tenant, for its admins only.
func TestResourceGeneration(t *testing.T) {
	w := newWorld(t)
	s := w.s
	gen := func(token string) int {
		t.Helper()
		var out struct{ ResourceGeneration int }
		s.Must(token, `{ resourceGeneration }`, nil, &out)
		return out.ResourceGeneration
	}
	if g := gen(w.admin); g != 0 {
		t.Fatalf("before any sync: generation %d, want 0", g)
	}
	for want := 1; want <= 2; want++ {
		if g := syncRes(t, s, w.admin); g != want {
			t.Fatalf("sync %d returned %d", want, g)
		}
		if g := gen(w.admin); g != want {
			t.Errorf("after sync %d: generation %d", want, g)
		}
	}
	if g := gen(s.Super); g != 0 {
		t.Errorf("the superadmin tenant's generation moved with acme's: %d", g)
	}
	if r := s.Do(w.alice, `{ resourceGeneration }`, nil); len(r.Errors) != 1 || r.Errors[0].Code() != "FORBIDDEN" {
		t.Errorf("a user reads the generation: %+v", r.Errors)
	}
}
