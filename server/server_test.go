package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/internal/cooprcompat"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEndpoints(t *testing.T) {
	s := servertest.Start(t)
	for _, tt := range []struct {
		path, want string
	}{
		{"/healthz", "ok"},
		{"/readyz", "ready"},
		{"/playground", `<div id="graphiql">`},
	} {
		code, body := get(t, s.URL+tt.path)
		if code != http.StatusOK || !strings.Contains(body, tt.want) {
			t.Errorf("GET %s = %d %.80q, want 200 with %q", tt.path, code, body, tt.want)
		}
	}
	s.Do(s.Super, `{ me { user } }`, nil)
	code, body := get(t, s.URL+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, `coopr_http_requests_total{code="200",endpoint="graphql"}`) {
		t.Errorf("GET /metrics = %d, no graphql request counter:\n%.400s", code, body)
	}
}

func TestAuthentication(t *testing.T) {
	s := servertest.Start(t)
	for _, token := range []string{"", "coopr_not-a-real-token", "garbage"} {
		if r := s.Do(token, `{ me { user } }`, nil); r.Code() != "UNAUTHENTICATED" {
			t.Errorf("token %q: %+v, want UNAUTHENTICATED", token, r.Errors)
		}
	}
	var me struct {
		Me struct {
			User       string
			Role       string
			Superadmin bool
			Tenant     struct{ Name string }
		}
	}
	s.Must(s.Super, `{ me { user role superadmin tenant { name } } }`, nil, &me)
	if me.Me.User != "admin" || me.Me.Role != "ADMIN" || !me.Me.Superadmin || me.Me.Tenant.Name != "superadmin" {
		t.Errorf("me = %+v", me.Me)
	}
	// A revoked token stops working at once.
	var tok struct {
		CreateAPIToken struct {
			Secret string
			Token  struct{ ID string }
		}
	}
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "short-lived"}) { secret token { id } } }`, nil, &tok)
	if r := s.Do(tok.CreateAPIToken.Secret, `{ me { user } }`, nil); r.Code() != "" {
		t.Fatalf("new token refused: %+v", r.Errors)
	}
	s.Must(tok.CreateAPIToken.Secret, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": tok.CreateAPIToken.Token.ID}, &struct{}{})
	if r := s.Do(tok.CreateAPIToken.Secret, `{ me { user } }`, nil); r.Code() != "UNAUTHENTICATED" {
		t.Errorf("revoked token: %+v, want UNAUTHENTICATED", r.Errors)
	}
}

// tenantTokens makes tenant name with an admin token and a user token.
func tenantTokens(t testing.TB, s *servertest.Server, name string) (adminTok, userTok string) {
	t.Helper()
	var out struct {
		CreateAPIToken struct{ Secret string }
	}
	s.Must(s.Super, `mutation($n: String!) { createTenant(input: {name: $n}) { id } }`, map[string]any{"n": name}, &struct{}{})
	s.Must(s.Super, `mutation($n: String!) { createAPIToken(input: {name: "admin", tenant: $n}) { secret } }`, map[string]any{"n": name}, &out)
	adminTok = out.CreateAPIToken.Secret
	s.Must(adminTok, `mutation { createUser(name: "alice") { name } }`, nil, &struct{}{})
	s.Must(adminTok, `mutation { createAPIToken(input: {name: "alice", user: "alice"}) { secret } }`, nil, &out)
	return adminTok, out.CreateAPIToken.Secret
}

func loadBundle(t testing.TB, dir string) map[string]any {
	t.Helper()
	c, is, err := catalog.LoadPath(dir)
	if err != nil || is.HasErrors() {
		t.Fatalf("load %s: %v %v", dir, err, is.Errors())
	}
	b, err := c.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// The test catalog's two halves, driver types and templates.
const (
	typesDir     = "../testdata/catalog/types"
	templatesDir = "../testdata/catalog/templates"
)

func TestCatalogOverGraphQL(t *testing.T) {
	catalogOverGraphQL(t, typesDir, templatesDir)
}

// TestCooprCatalogOverGraphQL: Coopr's whole published catalog goes in and
// comes out over the API as the test catalog does.
func TestCooprCatalogOverGraphQL(t *testing.T) {
	catalogOverGraphQL(t, cooprcompat.Catalog(t, "coopr-plugin-types"), cooprcompat.Catalog(t, "coopr-templates"))
}

// catalogOverGraphQL imports the driver types in typesDir and the
// templates in templatesDir, which hold hadoop-distributed, and reads,
// changes and exports them over GraphQL.
func catalogOverGraphQL(t *testing.T, typesDir, templatesDir string) {
	s := servertest.Start(t)
	// The shared driver descriptors go in as superadmin; a tenant imports
	// the templates.
	var imp struct{ ImportCatalog struct{ Created int } }
	s.Must(s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`,
		map[string]any{"d": loadBundle(t, typesDir)}, &imp)
	if imp.ImportCatalog.Created == 0 {
		t.Fatal("plugin types: nothing created")
	}
	adminTok, userTok := tenantTokens(t, s, "acme")
	doc := loadBundle(t, templatesDir)
	s.Must(adminTok, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc}, &imp)
	if imp.ImportCatalog.Created == 0 {
		t.Fatal("templates: nothing created")
	}

	// Everyone of the tenant reads it.
	var list struct {
		Catalog struct {
			Entities []struct {
				Name    string
				Version int
			}
			Entity struct {
				Name     string
				Versions []int
				Document map[string]any
			}
		}
	}
	s.Must(userTok, `{ catalog { entities(kind: CLUSTERTEMPLATES) { name version }
		entity(kind: CLUSTERTEMPLATES, name: "hadoop-distributed") { name versions document } } }`, nil, &list)
	if n := len(list.Catalog.Entities); n != len(doc["clustertemplates"].([]any)) {
		t.Errorf("%d templates listed, want %d", n, len(doc["clustertemplates"].([]any)))
	}
	if e := list.Catalog.Entity; e.Name != "hadoop-distributed" || len(e.Versions) != 1 || e.Document["name"] != "hadoop-distributed" {
		t.Errorf("entity = %+v", e)
	}

	// A new version through putCatalogEntity.
	svc := map[string]any{"name": "extra", "description": "added over the API",
		"provisioner": map[string]any{"actions": map[string]any{"install": map[string]any{"type": "shell", "fields": map[string]any{"script": "true"}}}}}
	var put struct {
		PutCatalogEntity struct{ Entity struct{ Version int } }
	}
	for want := 1; want <= 2; want++ {
		s.Must(adminTok, `mutation($e: JSON!) { putCatalogEntity(kind: SERVICES, entity: $e) { entity { version } } }`, map[string]any{"e": svc}, &put)
		if put.PutCatalogEntity.Entity.Version != want {
			t.Errorf("put %d: version %d", want, put.PutCatalogEntity.Entity.Version)
		}
		svc["description"] = "changed"
	}

	// Validation errors name the field.
	bad := map[string]any{"services": []any{map[string]any{"name": "broken", "provisioner": map[string]any{"actions": "nope"}}}}
	r := s.Do(adminTok, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": bad})
	if r.Code() != "INVALID_INPUT" {
		t.Fatalf("bad import: %+v, want INVALID_INPUT", r.Errors)
	}
	issues, _ := r.Errors[0].Extensions["issues"].([]any)
	if len(issues) == 0 || !strings.Contains(issues[0].(map[string]any)["path"].(string), "actions") {
		t.Errorf("issues %v do not name the bad field", issues)
	}

	// Export round-trips what was imported.
	var exp struct {
		Catalog struct{ Export map[string]any }
	}
	s.Must(userTok, `{ catalog { export } }`, nil, &exp)
	if got, want := len(exp.Catalog.Export["services"].([]any)), len(doc["services"].([]any))+1; got != want {
		t.Errorf("export has %d services, want %d", got, want)
	}
}

// Every call a role may not make is refused; another tenant's objects do
// not exist for the caller.
func TestAccessRefusals(t *testing.T) {
	s := servertest.Start(t)
	acmeAdmin, acmeUser := tenantTokens(t, s, "acme")
	globexAdmin, _ := tenantTokens(t, s, "globex")
	svc := `{name: "x", provisioner: {actions: {}}}`
	var alienToken struct {
		APITokens []struct{ ID string }
	}
	s.Must(globexAdmin, `{ apiTokens { id } }`, nil, &alienToken)
	cases := []struct {
		name, token, query, code string
	}{
		{"user lists tenants", acmeUser, `{ tenants { name } }`, "FORBIDDEN"},
		{"admin lists tenants", acmeAdmin, `{ tenants { name } }`, "FORBIDDEN"},
		{"admin creates a tenant", acmeAdmin, `mutation { createTenant(input: {name: "x"}) { id } }`, "FORBIDDEN"},
		{"admin updates its tenant", acmeAdmin, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 9}) { id } }`, "FORBIDDEN"},
		{"admin deletes a tenant", acmeAdmin, `mutation { deleteTenant(name: "globex") }`, "FORBIDDEN"},
		{"user reads its tenant", acmeUser, `{ tenant(name: "acme") { name } }`, "FORBIDDEN"},
		{"user lists users", acmeUser, `{ users { name } }`, "FORBIDDEN"},
		{"user adds a user", acmeUser, `mutation { createUser(name: "bob") { name } }`, "FORBIDDEN"},
		{"admin adds a user elsewhere", acmeAdmin, `mutation { createUser(name: "bob", tenant: "globex") { name } }`, "NOT_FOUND"},
		{"user imports", acmeUser, `mutation { importCatalog(document: {}) { created } }`, "FORBIDDEN"},
		{"user writes an entity", acmeUser, `mutation { putCatalogEntity(kind: SERVICES, entity: ` + svc + `) { warnings { path } } }`, "FORBIDDEN"},
		{"user deletes an entity", acmeUser, `mutation { deleteCatalogEntity(kind: SERVICES, name: "x") }`, "FORBIDDEN"},
		{"admin writes a shared kind", acmeAdmin, `mutation { putCatalogEntity(kind: PROVIDERTYPES, entity: {name: "x"}) { warnings { path } } }`, "FORBIDDEN"},
		{"admin imports a shared kind", acmeAdmin, `mutation { importCatalog(document: {providertypes: [{name: "x"}]}) { created } }`, "FORBIDDEN"},
		{"user makes a token for another", acmeUser, `mutation { createAPIToken(input: {name: "t", user: "admin"}) { secret } }`, "FORBIDDEN"},
		{"admin makes an agent token", acmeAdmin, `mutation { createAPIToken(input: {name: "t", kind: AGENT, agents: "*"}) { secret } }`, "FORBIDDEN"},
		{"admin makes a token elsewhere", acmeAdmin, `mutation { createAPIToken(input: {name: "t", tenant: "globex"}) { secret } }`, "NOT_FOUND"},
		{"admin revokes another tenant's token", acmeAdmin, `mutation { revokeAPIToken(id: "` + alienToken.APITokens[0].ID + `") }`, "NOT_FOUND"},
		{"user revokes the admin's token", acmeUser, `mutation { revokeAPIToken(id: "` + alienToken.APITokens[0].ID + `") }`, "NOT_FOUND"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if r := s.Do(c.token, c.query, nil); r.Code() != c.code {
				t.Errorf("%s: %+v, want %s", c.query, r.Errors, c.code)
			}
		})
	}
	// Reads of another tenant answer as if it did not exist.
	var other struct{ Tenant *struct{ Name string } }
	s.Must(acmeAdmin, `{ tenant(name: "globex") { name } }`, nil, &other)
	if other.Tenant != nil {
		t.Errorf("acme's admin sees tenant globex")
	}
	var entity struct {
		Catalog struct{ Entity *struct{ Name string } }
	}
	s.Must(globexAdmin, `mutation { putCatalogEntity(kind: SERVICES, entity: {name: "secret-sauce", provisioner: {actions: {}}}) { warnings { path } } }`, nil, &struct{}{})
	s.Must(acmeAdmin, `{ catalog { entity(kind: SERVICES, name: "secret-sauce") { name } } }`, nil, &entity)
	if entity.Catalog.Entity != nil {
		t.Errorf("acme reads globex's service")
	}
}

func TestTenantLifecycle(t *testing.T) {
	s := servertest.Start(t)
	var c struct {
		CreateTenant struct {
			Name                  string
			Workers               int
			MaxClusters, MaxNodes *int
		}
	}
	s.Must(s.Super, `mutation { createTenant(input: {name: "acme", workers: 4, maxClusters: 10}) { name workers maxClusters maxNodes } }`, nil, &c)
	if c.CreateTenant.Workers != 4 || c.CreateTenant.MaxClusters == nil || *c.CreateTenant.MaxClusters != 10 || c.CreateTenant.MaxNodes != nil {
		t.Errorf("created %+v", c.CreateTenant)
	}
	if r := s.Do(s.Super, `mutation { createTenant(input: {name: "acme"}) { id } }`, nil); r.Code() != "CONFLICT" {
		t.Errorf("second acme: %+v, want CONFLICT", r.Errors)
	}
	if r := s.Do(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: -1}) { id } }`, nil); r.Code() != "INVALID_INPUT" {
		t.Errorf("negative workers: %+v, want INVALID_INPUT", r.Errors)
	}
	if r := s.Do(s.Super, `mutation { deleteTenant(name: "acme") }`, nil); r.Code() != "CONFLICT" {
		t.Errorf("delete with workers: %+v, want CONFLICT", r.Errors)
	}
	var u struct{ UpdateTenant struct{ MaxClusters *int } }
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 0, maxClusters: -1}) { maxClusters } }`, nil, &u)
	if u.UpdateTenant.MaxClusters != nil {
		t.Errorf("maxClusters -1 left %v", *u.UpdateTenant.MaxClusters)
	}
	s.Must(s.Super, `mutation { deleteTenant(name: "acme") }`, nil, &struct{}{})
	if r := s.Do(s.Super, `mutation { deleteTenant(name: "superadmin") }`, nil); r.Code() != "CONFLICT" {
		t.Errorf("delete superadmin: %+v, want CONFLICT", r.Errors)
	}
	// bootstrap copies the superadmin catalog.
	s.Must(s.Super, `mutation { putCatalogEntity(kind: SERVICES, entity: {name: "base", provisioner: {actions: {}}}) { warnings { path } } }`, nil, &struct{}{})
	s.Must(s.Super, `mutation { createTenant(input: {name: "fresh"}, bootstrap: true) { id } }`, nil, &struct{}{})
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", tenant: "fresh"}) { secret } }`, nil, &tok)
	var e struct {
		Catalog struct{ Entity *struct{ Name string } }
	}
	s.Must(tok.CreateAPIToken.Secret, `{ catalog { entity(kind: SERVICES, name: "base") { name } } }`, nil, &e)
	if e.Catalog.Entity == nil {
		t.Error("bootstrapped tenant lacks the superadmin's service")
	}
}

// Internal errors reach clients as a reference, never as their text.
func TestInternalErrorsAreOpaque(t *testing.T) {
	s := servertest.Start(t)
	_, err := s.Srv.Store().DB().Exec(`DROP TABLE catalog_entities`)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Do(s.Super, `{ catalog { entities(kind: SERVICES) { name } } }`, nil)
	if r.Code() != "INTERNAL" || strings.Contains(r.Errors[0].Message, "catalog_entities") || !strings.Contains(r.Errors[0].Message, "ref ") {
		t.Errorf("%+v, want an opaque INTERNAL error with a reference", r.Errors)
	}
}

func TestGracefulShutdown(t *testing.T) {
	s := servertest.Start(t)
	// An open subscription ends cleanly, not with a reset connection.
	sub, err := s.Subscribe(s.Super, `subscription { agentEvents { kind } }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ended := make(chan error, 1)
	go func() {
		for {
			_, done, err := sub.Next(30 * time.Second)
			if done || err != nil {
				ended <- err
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- s.Stop() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown took more than 10 s")
	}
	if _, err := s.Request(s.Super, `{ me { user } }`, nil); err == nil {
		t.Error("the server still answers after shutdown")
	}
	select {
	case err := <-ended:
		if err != nil && !strings.Contains(err.Error(), "StatusGoingAway") && !strings.Contains(err.Error(), "StatusNormalClosure") &&
			!strings.Contains(err.Error(), "EOF") {
			t.Logf("subscription ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the subscription outlived the server")
	}
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "coopr.yaml")
	if err := os.WriteFile(file, []byte("listen: 0.0.0.0:9000\ndatabase_url: postgres://file\nshutdown_timeout: 3s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COOPR_DATABASE_URL": "postgres://env"}
	cfg, err := server.Load(file, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "0.0.0.0:9000" || cfg.DatabaseURL != "postgres://env" || cfg.ShutdownTimeout != 3*time.Second ||
		cfg.RedisURL != server.Defaults().RedisURL {
		t.Errorf("config %+v", cfg)
	}
	if err := os.WriteFile(file, []byte("listne: typo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Load(file, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "listne") {
		t.Errorf("unknown key: %v, want an error naming it", err)
	}
	if err := (server.Config{}).Check(); err == nil || !strings.Contains(err.Error(), "COOPR_DATABASE_URL") {
		t.Errorf("empty config: %v", err)
	}
	short := server.Defaults()
	short.DatabaseURL, short.WriteTimeout = "postgres://x", 10*time.Second
	if err := short.Check(); err == nil || !strings.Contains(err.Error(), "write_timeout") {
		t.Errorf("a write timeout shorter than a long poll: %v", err)
	}
}
