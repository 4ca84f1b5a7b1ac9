package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// The cluster commands show what a create or an operation would do
// (--dry-run), the room it takes on the provider, and a configure's
// changes before it runs; refusals say why.
func TestClusterPreviewsGolden(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	// No node quota: the provider's room is what refuses.
	tokens, err := devBootstrap(ctx, s.Srv, s.URL, devOptions{dir: t.TempDir(), catalog: "../../examples/catalog", tenant: "dev", capacity: 4,
		maxClusters: devMaxClusters, maxNodes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("COOPR_SERVER", s.URL)
	t.Setenv("COOPR_TOKEN", tokens.admin)
	dir := t.TempDir()
	id := "no cluster yet"
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
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

	cli("cluster-create-dry-run.txt", 0, "cluster", "create", "web-cluster", "--size", "3", "--name", "demo2", "--dry-run")
	cli("cluster-create-no-room.txt", 1, "cluster", "create", "web-cluster", "--size", "254", "--dry-run")
	cli("cluster-create-bad-name.txt", 1, "cluster", "create", "web-cluster", "--size", "3", "--name", "☃")
	// --config merges into the template's config (a partial one once
	// replaced it, and the lb lost its port and backends); the preview
	// shows the config the cluster gets.
	greeting := file("greeting.json", `{"web": {"greeting": "yo"}}`)
	cli("cluster-create-config-dry-run.txt", 0, "cluster", "create", "web-cluster", "--size", "2", "--name", "cfg", "--config", greeting, "--dry-run")
	cli("cluster-create-replace-config-dry-run.txt", 0, "cluster", "create", "web-cluster", "--size", "2", "--name", "cfg", "--config", greeting, "--replace-config", "--dry-run")
	cli("", 1, "cluster", "create", "web-cluster", "--size", "2", "--replace-config", "--dry-run")
	// Refused creates use up cluster numbers: take the one this gets.
	created := cli("", 0, "cluster", "create", "web-cluster", "--size", "3", "--name", "demo2", "--no-wait")
	if _, err := fmt.Sscanf(created, "cluster %s created", &id); err != nil {
		t.Fatalf("create said %q", created)
	}
	active(t, s, tokens.admin, id)

	cli("cluster-scale-dry-run.txt", 0, "cluster", "op", id, "scale", "--size", "5", "--dry-run")
	// Stopping web stops the lb that needs it: the preview says so.
	cli("cluster-stop-web-dry-run.txt", 0, "cluster", "op", id, "stop", "--services", "web", "--dry-run")
	cli("cluster-start-lb-dry-run.txt", 0, "cluster", "op", id, "start", "--services", "lb", "--dry-run")
	patch := file("patch.json", `{"web": {"greeting": "bonjour & bye"}, "lb": {"port": "8080"}, "extra": [1, 2], "gone": null}`)
	cli("cluster-configure-dry-run.txt", 0, "cluster", "op", id, "configure", "--config", patch, "--dry-run")
	cli("cluster-configure.txt", 0, "cluster", "op", id, "configure", "--config", patch, "--no-wait")
	active(t, s, tokens.admin, id)
	whole := file("whole.json", `{"web": {"greeting": "only this"}}`)
	cli("cluster-configure-replace-dry-run.txt", 0, "cluster", "op", id, "configure-with-restart", "--config", whole, "--replace", "--dry-run")
	cli("", 1, "cluster", "op", id, "scale", "--size", "4", "--replace")
	// The API's numMachines is the CLI's --size: the template's size rule
	// refusing it says so (told apart by the error's kind, not its text).
	cli("cluster-create-size-1.txt", 1, "cluster", "create", "web-cluster", "--size", "1")

	out := cli("", 0, "cluster", "create", "web-cluster", "--size", "2", "--name", "cfg", "--config", greeting, "--no-wait")
	var cfgID string
	if _, err := fmt.Sscanf(out, "cluster %s created", &cfgID); err != nil {
		t.Fatalf("create said %q", out)
	}
	var c struct{ Cluster struct{ Config any } }
	s.Must(tokens.admin, `query($id: ID!) { cluster(id: $id) { config } }`, map[string]any{"id": cfgID}, &c)
	want := `{"lb":{"backends":"%join(map(ip.service.web,'$:80'),' ')%","port":"80"},"web":{"greeting":"yo"}}`
	if got := jsonText(c.Cluster.Config); got != want {
		t.Errorf("create --config gave the config %s, want %s", got, want)
	}
}

// active completes the tenant's tasks until the cluster is ACTIVE.
func active(t *testing.T, s *servertest.Server, token, cluster string) {
	t.Helper()
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(token, `{ me { tenant { id } } }`, nil, &me)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var c struct{ Cluster struct{ Status string } }
		s.Must(token, `query($id: ID!) { cluster(id: $id) { status } }`, map[string]any{"id": cluster}, &c)
		if c.Cluster.Status == "ACTIVE" {
			return
		}
		a, err := s.Srv.Engine().Claim(ctx, engine.ClaimRequest{TenantID: me.Me.Tenant.ID, AgentID: "test-agent", Wait: 100 * time.Millisecond})
		if err != nil {
			t.Fatalf("cluster %s did not become ACTIVE: %v", cluster, err)
		}
		if a == nil {
			continue
		}
		res := engine.Result{}
		if a.TaskName == "CONFIRM" {
			res.IPAddresses = map[string]string{"access_v4": "10.231.0.2", "bind_v4": "10.231.0.2"}
		}
		if err := s.Srv.Engine().Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, res); err != nil {
			t.Fatal(err)
		}
	}
}
