package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server/servertest"
)

// make dev's tenant has quotas one machine can hold, set again at every
// start: a create beyond them is refused up front, not by a full subnet
// after hundreds of containers.
func TestDevTenantQuotas(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	o := devOptions{dir: t.TempDir(), catalog: "../../examples/catalog", tenant: "dev", capacity: 4, maxClusters: devMaxClusters, maxNodes: devMaxNodes}
	tokens, err := devBootstrap(ctx, s.Srv, s.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	var me struct {
		Me struct {
			Tenant struct{ MaxClusters, MaxNodes *int }
		}
	}
	s.Must(tokens.admin, `{ me { tenant { maxClusters maxNodes } } }`, nil, &me)
	if q := me.Me.Tenant; q.MaxClusters == nil || *q.MaxClusters != 10 || q.MaxNodes == nil || *q.MaxNodes != 50 {
		t.Fatalf("dev tenant quotas %+v, want 10 clusters and 50 nodes", q)
	}
	r := s.Do(tokens.admin, `mutation { createCluster(input: {name: "big", clusterTemplate: "web-cluster", numMachines: 10000}) { id } }`, nil)
	if r.Code() != "QUOTA_EXCEEDED" || !strings.Contains(r.Errors[0].Message, "maxNodes is 50") {
		t.Errorf("10,000 nodes on make dev: %+v, want QUOTA_EXCEEDED on maxNodes", r.Errors)
	}

	// A restart with other flags sets them; -1 lifts a quota.
	o.maxClusters, o.maxNodes = -1, 20
	if tokens, err = devBootstrap(ctx, s.Srv, s.URL, o); err != nil {
		t.Fatal(err)
	}
	me.Me.Tenant.MaxClusters, me.Me.Tenant.MaxNodes = nil, nil
	s.Must(tokens.admin, `{ me { tenant { maxClusters maxNodes } } }`, nil, &me)
	if q := me.Me.Tenant; q.MaxClusters != nil || q.MaxNodes == nil || *q.MaxNodes != 20 {
		t.Errorf("after a restart with --max-clusters -1 --max-nodes 20: %+v", q)
	}
	if got := devQuotas(o); got != "any number of clusters and 20 nodes (--max-clusters, --max-nodes)" {
		t.Errorf("devQuotas = %q", got)
	}
}

// devOpts are make dev's options with a private directory.
func devOpts(t *testing.T) devOptions {
	return devOptions{dir: t.TempDir(), catalog: "../../examples/catalog", tenant: "dev", capacity: 4, maxClusters: devMaxClusters, maxNodes: devMaxNodes}
}

// entityVersion is the newest version of a catalog entity the token sees
// and its description; 0 when there is none.
func entityVersion(t *testing.T, s *servertest.Server, token, kind, name string) (int, string) {
	t.Helper()
	var out struct {
		Catalog struct {
			Entity *struct {
				Version  int
				Document struct{ Description string }
			}
		}
	}
	s.Must(token, `query($k: CatalogKind!, $n: String!) { catalog { entity(kind: $k, name: $n) { version document } } }`,
		map[string]any{"k": kind, "n": name}, &out)
	if out.Catalog.Entity == nil {
		return 0, ""
	}
	return out.Catalog.Entity.Version, out.Catalog.Entity.Document.Description
}

// A restart of make dev keeps the tenant's catalog as the user left it:
// the example catalog goes only into a tenant that has none, and the
// shared driver descriptors are added when missing, never overwritten.
func TestDevKeepsCatalog(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	o := devOpts(t)
	boot, err := devBootstrap(ctx, s.Srv, s.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	if !boot.imported {
		t.Error("first start: the example catalog was not imported")
	}
	if v, _ := entityVersion(t, s, boot.admin, "CLUSTERTEMPLATES", "web-cluster"); v != 1 {
		t.Fatalf("first start: web-cluster version %d, want 1", v)
	}

	// The user adds a template and edits another; the superadmin edits a
	// driver descriptor and deletes another.
	var web struct {
		Catalog struct {
			Entity struct{ Document map[string]any }
		}
	}
	s.Must(boot.admin, `{ catalog { entity(kind: CLUSTERTEMPLATES, name: "web-cluster") { document } } }`, nil, &web)
	doc := web.Catalog.Entity.Document
	doc["description"] = "mine"
	s.Must(boot.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`, map[string]any{"e": doc}, &struct{}{})
	doc["name"] = "mytpl"
	s.Must(boot.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`, map[string]any{"e": doc}, &struct{}{})
	var local struct {
		Catalog struct {
			Entity struct{ Document map[string]any }
		}
	}
	s.Must(s.Super, `{ catalog { entity(kind: PROVIDERTYPES, name: "local") { document } } }`, nil, &local)
	local.Catalog.Entity.Document["description"] = "the superadmin's"
	s.Must(s.Super, `mutation($e: JSON!) { putCatalogEntity(kind: PROVIDERTYPES, entity: $e) { entity { version } } }`,
		map[string]any{"e": local.Catalog.Entity.Document}, &struct{}{})
	s.Must(s.Super, `mutation { deleteCatalogEntity(kind: PROVIDERTYPES, name: "pool") }`, nil, &struct{}{})

	for i := 0; i < 2; i++ {
		if boot, err = devBootstrap(ctx, s.Srv, s.URL, o); err != nil {
			t.Fatal(err)
		}
		if boot.imported {
			t.Errorf("restart %d: the example catalog was imported again", i+1)
		}
		if v, d := entityVersion(t, s, boot.admin, "CLUSTERTEMPLATES", "web-cluster"); v != 2 || d != "mine" {
			t.Errorf("restart %d: web-cluster version %d %q, want the user's version 2", i+1, v, d)
		}
		if v, _ := entityVersion(t, s, boot.admin, "CLUSTERTEMPLATES", "mytpl"); v != 1 {
			t.Errorf("restart %d: mytpl version %d, want it kept", i+1, v)
		}
		if v, d := entityVersion(t, s, s.Super, "PROVIDERTYPES", "local"); v != 2 || d != "the superadmin's" {
			t.Errorf("restart %d: providertype local version %d %q, want the superadmin's version 2", i+1, v, d)
		}
		if v, _ := entityVersion(t, s, s.Super, "PROVIDERTYPES", "pool"); v != 1 {
			t.Errorf("restart %d: providertype pool version %d, want it added back", i+1, v)
		}
	}

	// A tenant whose catalog was emptied gets the examples again.
	s.Must(boot.admin, `mutation { importCatalog(document: {clustertemplates: []}) { deleted } }`, nil, &struct{}{})
	if boot, err = devBootstrap(ctx, s.Srv, s.URL, o); err != nil {
		t.Fatal(err)
	}
	if v, d := entityVersion(t, s, boot.admin, "CLUSTERTEMPLATES", "web-cluster"); !boot.imported || v == 0 || d == "mine" {
		t.Errorf("start on an empty catalog: imported %v, web-cluster version %d %q, want the example", boot.imported, v, d)
	}
}

type devAPIToken struct {
	ID, Name, Kind string
	RevokedAt      *string
}

// devTokenList is the tokens of the token's tenant.
func devTokenList(t *testing.T, s *servertest.Server, token string) []devAPIToken {
	t.Helper()
	var out struct{ APITokens []devAPIToken }
	s.Must(token, `{ apiTokens { id name kind revokedAt } }`, nil, &out)
	return out.APITokens
}

// Restarts reuse make dev's tokens while they are valid: the tenant admin's
// (so that a CLI following a job across a restart goes on), the agent's
// and the superadmin's for the setup. A revoked one is replaced.
func TestDevReusesTokens(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	o := devOpts(t)
	var first devBootstrapped
	for i := 0; i < 4; i++ {
		boot, err := devBootstrap(ctx, s.Srv, s.URL, o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = boot
		} else if boot.admin != first.admin || boot.agent != first.agent {
			t.Errorf("start %d: new tokens, want the first start's", i+1)
		}
	}
	count := func(ts []devAPIToken) map[string]int {
		n := map[string]int{}
		for _, tk := range ts {
			n[tk.Name+"/"+tk.Kind]++
		}
		return n
	}
	if got := count(devTokenList(t, s, first.admin)); len(got) != 1 || got["coopr dev/USER"] != 1 {
		t.Errorf("dev tenant's tokens after 4 starts: %v, want one coopr dev", got)
	}
	// The servertest superadmin token is the test's own.
	if got := count(devTokenList(t, s, s.Super)); got["coopr dev/USER"] != 1 || got["dev-agent/AGENT"] != 1 {
		t.Errorf("superadmin's tokens after 4 starts: %v, want one coopr dev and one dev-agent", got)
	}
	fi, err := os.Stat(filepath.Join(o.dir, devTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", devTokenFile, fi.Mode().Perm())
	}

	// A revoked admin token is replaced, and only it.
	ts := devTokenList(t, s, first.admin)
	s.Must(first.admin, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": ts[0].ID}, &struct{}{})
	boot, err := devBootstrap(ctx, s.Srv, s.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	if boot.admin == first.admin || boot.agent != first.agent {
		t.Errorf("after revoking the admin's token: admin new %v, agent new %v; want only the admin's new", boot.admin != first.admin, boot.agent != first.agent)
	}
	var me struct {
		Me struct{ Tenant struct{ Name string } }
	}
	s.Must(boot.admin, `{ me { tenant { name } } }`, nil, &me)
	if me.Me.Tenant.Name != "dev" {
		t.Errorf("the new admin token is of tenant %q", me.Me.Tenant.Name)
	}
}

// A second make dev on the same directory stops at once, naming the one
// that runs; a lock file left by a killed run does not stop it.
func TestDevLock(t *testing.T) {
	dir := t.TempDir()
	// What a run killed with SIGKILL leaves: the file, no lock.
	if err := os.WriteFile(filepath.Join(dir, devLockFile), []byte("999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock, err := devLock(dir)
	if err != nil {
		t.Fatalf("with a stale lock file: %v", err)
	}
	_, err = devLock(dir)
	want := fmt.Sprintf("coopr dev is already running (pid %d, directory %s)", os.Getpid(), dir)
	if err == nil || err.Error() != want {
		t.Errorf("second lock: %v, want %q", err, want)
	}
	unlock()
	unlock, err = devLock(dir)
	if err != nil {
		t.Fatalf("after the first let go: %v", err)
	}
	unlock()
}

// Ctrl-C while a job runs waits for it to end and then deletes the cluster
// with one request: no refused deletes fill the audit log.
func TestDevDeleteWaitsForJob(t *testing.T) {
	s := servertest.Start(t)
	ctx := context.Background()
	boot, err := devBootstrap(ctx, s.Srv, s.URL, devOpts(t))
	if err != nil {
		t.Fatal(err)
	}
	// No agent: the create's job runs until aborted.
	var created struct{ CreateCluster struct{ ID string } }
	s.Must(boot.admin, `mutation { createCluster(input: {name: "c", clusterTemplate: "single", numMachines: 1}) { id } }`, nil, &created)
	id := created.CreateCluster.ID
	done := make(chan struct{})
	go func() {
		defer close(done)
		devDeleteAll(s.URL, boot.admin, 8*time.Second, io.Discard, slog.Default())
	}()
	time.Sleep(3 * time.Second)
	var job struct {
		Cluster struct{ LatestJob struct{ ID string } }
	}
	s.Must(boot.admin, `query($id: ID!) { cluster(id: $id) { latestJob { id } } }`, map[string]any{"id": id}, &job)
	s.Must(boot.admin, `mutation($id: ID!) { abortJob(id: $id) { id } }`, map[string]any{"id": job.Cluster.LatestJob.ID}, &struct{}{})
	<-done
	var audit struct {
		AuditLog []struct{ Outcome, Message string }
	}
	s.Must(boot.admin, `{ auditLog(operation: "deleteCluster") { outcome message } }`, nil, &audit)
	if len(audit.AuditLog) != 1 || audit.AuditLog[0].Outcome != "ok" {
		t.Errorf("deleteCluster audit entries %+v, want one, ok", audit.AuditLog)
	}
}
