package agent_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/drivers"
)

// fetcher fetches every listed resource from several goroutines at once
// and checks the bytes it gets.
type fetcher struct {
	scripted
	want map[string][]byte // name -> content
}

func (d *fetcher) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	no := false
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(t.Resources))
	for _, r := range t.Resources {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				path, err := t.FetchResource(ctx, r)
				if err != nil {
					errs <- err
					return
				}
				b, err := os.ReadFile(path)
				if err != nil || !bytes.Equal(b, d.want[r.Name]) {
					errs <- io.ErrUnexpectedEOF
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	if err, ok := <-errs; ok {
		return drivers.Result{Status: 1, Message: err.Error(), Retryable: &no}
	}
	return d.scripted.Run(ctx, t, out)
}

func archiveOf(t *testing.T, top string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Name: top + "/", Mode: 0o755, Typeflag: tar.TypeDir})
	_ = tw.WriteHeader(&tar.Header{Name: top + "/recipe.rb", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("abc"))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Tasks get their driver's resources fetched once per digest into the
// cache and verified; a digest that does not match fails the task, and
// the agent goes on.
func TestAgentFetchesResources(t *testing.T) {
	e := setup(t)
	role, cookbook := []byte("role web"), archiveOf(t, "apache")
	d := &fetcher{scripted: scripted{runs: map[string]int{}}, want: map[string][]byte{"web": role, "apache": cookbook}}
	for _, r := range []struct {
		rtype, name string
		content     []byte
	}{{"roles", "web", role}, {"cookbooks", "apache", cookbook}} {
		in := map[string]any{"pluginType": "AUTOMATORTYPES", "plugin": "chef-solo", "resourceType": r.rtype, "name": r.name}
		in["content"] = base64.StdEncoding.EncodeToString(r.content)
		e.s.Must(e.admin, `mutation($in: ResourceUploadInput!) { uploadResource(input: $in) { version } }`, map[string]any{"in": in}, &struct{}{})
		delete(in, "content")
		in["version"] = 1
		e.s.Must(e.admin, `mutation($in: ResourceVersionInput!) { stageResource(input: $in) { state } }`, map[string]any{"in": in}, &struct{}{})
	}
	e.s.Must(e.admin, `mutation { syncResources }`, nil, &struct{}{})

	dir := t.TempDir()
	a, err := agent.New(agent.Config{Server: e.s.URL, Token: e.agentToken, ID: "test-agent", Capacity: 4, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ResourceDir: dir}, registry(d))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	id := e.create(t)
	waitStatus(t, e, id, "ACTIVE")
	if n := a.ResourceFetches(); n != 2 {
		t.Errorf("%d fetches from the server, want 2 (one per digest)", n)
	}
	for _, b := range [][]byte{role, cookbook} {
		sum := sha256.Sum256(b)
		if got, err := os.ReadFile(dir + "/" + hex.EncodeToString(sum[:])); err != nil || !bytes.Equal(got, b) {
			t.Errorf("cache file of %x: %v", sum[:4], err)
		}
	}

	// A new version whose recorded digest is wrong: its tasks fail, the
	// agent does not.
	role2 := []byte("role web v2")
	d.want["web"] = role2
	in := map[string]any{"pluginType": "AUTOMATORTYPES", "plugin": "chef-solo", "resourceType": "roles", "name": "web",
		"content": base64.StdEncoding.EncodeToString(role2)}
	e.s.Must(e.admin, `mutation($in: ResourceUploadInput!) { uploadResource(input: $in) { version } }`, map[string]any{"in": in}, &struct{}{})
	delete(in, "content")
	in["version"] = 2
	e.s.Must(e.admin, `mutation($in: ResourceVersionInput!) { stageResource(input: $in) { state } }`, map[string]any{"in": in}, &struct{}{})
	e.s.Must(e.admin, `mutation { syncResources }`, nil, &struct{}{})
	db := e.s.Srv.Store().DB()
	bad := sha256.Sum256([]byte("something else"))
	if _, err := db.Exec(`UPDATE resources SET digest = $1 WHERE name = 'web' AND version = 2`, "sha256:"+hex.EncodeToString(bad[:])); err != nil {
		t.Fatal(err)
	}
	id2 := e.create(t)
	waitStatus(t, e, id2, "INCOMPLETE")
	var msg string
	if err := db.Get(&msg, `SELECT message FROM task_attempts WHERE message LIKE '%digest mismatch%' LIMIT 1`); err != nil {
		t.Fatalf("no attempt failed on the digest: %v", err)
	}
	if !strings.Contains(msg, "roles/web@2") {
		t.Errorf("attempt message %q", msg)
	}
	// Fixed, the retried job completes on the same, still running, agent.
	good := sha256.Sum256(role2)
	if _, err := db.Exec(`UPDATE resources SET digest = $1 WHERE name = 'web' AND version = 2`, "sha256:"+hex.EncodeToString(good[:])); err != nil {
		t.Fatal(err)
	}
	e.s.Must(e.admin, `mutation($id: ID!) { retryJob(id: $id) { id } }`, map[string]any{"id": id2 + "-001"}, &struct{}{})
	waitStatus(t, e, id2, "ACTIVE")
	select {
	case err := <-done:
		t.Fatalf("the agent stopped: %v", err)
	default:
	}
}
