package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/server/servertest"
)

// examples/api.sh imports examples/catalog, previews and creates a cluster
// and watches it to ACTIVE, with curl and `coopr watch` only; an
// in-process agent does the tasks. The superadmin imports the catalog's
// driver types first, from `coopr catalog bundle --only shared`.
func TestAPIScript(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed: .ci/run installs it")
	}
	s := servertest.Start(t)
	bin := filepath.Join(t.TempDir(), "coopr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	types, err := exec.Command(bin, "catalog", "bundle", "--only", "shared", "../../examples/catalog").Output()
	if err != nil {
		t.Fatal(err)
	}
	var imp struct{ ImportCatalog struct{ Created int } }
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": json.RawMessage(types)}, &imp)
	if imp.ImportCatalog.Created != 5 {
		t.Fatalf("%d driver types imported, want examples/catalog's 5 (3 provider types, 2 automator types)", imp.ImportCatalog.Created)
	}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createTenant(input: {name: "demo"}) { id } }`, nil, &struct{}{})
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "script", tenant: "demo"}) { secret } }`, nil, &tok)
	var me struct {
		Me struct{ Tenant struct{ ID string } }
	}
	s.Must(tok.CreateAPIToken.Secret, `{ me { tenant { id } } }`, nil, &me)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	go func() {
		eng := s.Srv.Engine()
		for ctx.Err() == nil {
			a, err := eng.Claim(ctx, engine.ClaimRequest{TenantID: me.Me.Tenant.ID, AgentID: "script-agent", Wait: 200 * time.Millisecond})
			if err != nil || a == nil {
				continue
			}
			_ = eng.Finish(ctx, a.TaskID, a.Attempt, a.ClaimToken, engine.Result{IPAddresses: map[string]string{"bind_v4": "10.1.0.1"}})
		}
	}()
	cmd := exec.CommandContext(ctx, "../../examples/api.sh") // web-cluster, 3 nodes
	cmd.Env = append(cmd.Environ(), "COOPR_SERVER="+s.URL, "COOPR_TOKEN="+tok.CreateAPIToken.Secret, "COOPR="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("api.sh: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{`"created":`, `"planHash":"`, `"status":"PENDING"`, "SNAPSHOT", "TASK", "CLUSTER"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "CLUSTER") || !strings.Contains(last, "ACTIVE") {
		t.Errorf("last line %q, want the cluster ACTIVE", last)
	}
}
