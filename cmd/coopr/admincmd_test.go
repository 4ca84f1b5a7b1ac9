package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// as runs the CLI against the world's server with another token.
func (w *cliWorld) as(t *testing.T, token string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLI(t, append(args, "--server", w.s.URL, "--token", token)...)
}

// The admin commands reach tenants, users, tokens, agents and the audit
// log through the API, as the superadmin and as a tenant admin.
func TestAdminCommands(t *testing.T) {
	t.Setenv("COOPR_DATABASE_URL", "") // token create goes over the API
	w := newCLIWorld(t)
	super := w.s.Super

	// Tenants (superadmin).
	out, errOut, code := w.as(t, super, "tenant", "create", "team2", "--workers", "2", "--max-nodes", "5", "--description", "second team")
	if code != 0 || !strings.HasPrefix(out, "tenant team2 created (id ") {
		t.Fatalf("tenant create: exit %d: %s%s", code, out, errOut)
	}
	out, _, _ = w.as(t, super, "tenant", "list")
	golden(t, "tenant-list.txt", out)
	out, _, _ = w.as(t, super, "tenant", "list", "-o", "json")
	var tenants []shownTenant
	if err := json.Unmarshal([]byte(out), &tenants); err != nil || len(tenants) != 3 || tenants[2].Name != "team2" ||
		tenants[2].MaxNodes == nil || *tenants[2].MaxNodes != 5 || tenants[2].MaxClusters != nil {
		t.Errorf("tenant list -o json: %v: %s", err, out)
	}
	if _, errOut, code := w.cli(t, "tenant", "list"); code != 1 || !strings.Contains(errOut, "FORBIDDEN") {
		t.Errorf("tenant list as a tenant admin: exit %d: %q, want FORBIDDEN", code, errOut)
	}
	if _, errOut, code := w.as(t, super, "tenant", "delete", "team2"); code != 1 || !strings.Contains(errOut, "workers") {
		t.Errorf("tenant delete of a tenant with workers: exit %d: %q", code, errOut)
	}
	out, errOut, code = w.as(t, super, "tenant", "update", "team2", "--workers", "0", "--max-nodes", "-1", "--max-clusters", "2")
	if want := "tenant team2: 0 workers, max clusters 2, max nodes -\n"; code != 0 || out != want {
		t.Errorf("tenant update: exit %d: %q%s, want %q", code, out, errOut, want)
	}
	if _, errOut, code := w.as(t, super, "tenant", "update", "team2"); code != 1 || !strings.Contains(errOut, "nothing to change") {
		t.Errorf("tenant update with no flag: exit %d: %q", code, errOut)
	}

	for _, tc := range []struct{ token, want string }{{super, "user admin (superadmin) of tenant superadmin at "}, {w.token, "user admin (admin) of tenant cli at "}} {
		if out, errOut, code := w.as(t, tc.token, "whoami"); code != 0 || out != tc.want+w.s.URL+"\n" {
			t.Errorf("whoami: exit %d: %q%s, want %q", code, out, errOut, tc.want+w.s.URL)
		}
	}

	// Users (tenant admin).
	if out, errOut, code := w.cli(t, "user", "create", "bob"); code != 0 || out != "user bob created (USER)\n" {
		t.Fatalf("user create: exit %d: %q%s", code, out, errOut)
	}
	out, _, _ = w.cli(t, "user", "list")
	golden(t, "user-list.txt", out)
	if _, errOut, code := w.cli(t, "user", "create", "eve", "--role", "root"); code != 1 || !strings.Contains(errOut, "--role") {
		t.Errorf("user create --role root: exit %d: %q", code, errOut)
	}

	// Tokens over the API: the admin makes bob one; bob sees only his
	// own; the admin revokes it and it stops working.
	out, errOut, code = w.cli(t, "token", "create", "--user", "bob", "--name", "bobs laptop")
	bob := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(bob, "coopr_") {
		t.Fatalf("token create --user bob: exit %d: %q%s", code, out, errOut)
	}
	out, _, _ = w.as(t, bob, "token", "list", "-o", "json")
	var tokens []shownToken
	if err := json.Unmarshal([]byte(out), &tokens); err != nil || len(tokens) != 1 || tokens[0].Name != "bobs laptop" ||
		tokens[0].User == nil || *tokens[0].User != "bob" || tokens[0].LastUsedAt == nil {
		t.Fatalf("bob's token list -o json: %v: %s", err, out)
	}
	if strings.Contains(out, bob) {
		t.Errorf("token list shows the secret: %s", out)
	}
	out, _, _ = w.cli(t, "token", "list")
	if !regexp.MustCompile(`(?m)^` + tokens[0].ID + ` +bobs laptop +USER +bob `).MatchString(out) {
		t.Errorf("the admin's token list lacks bob's token %s:\n%s", tokens[0].ID, out)
	}
	if out, errOut, code := w.cli(t, "token", "revoke", tokens[0].ID); code != 0 || out != "token "+tokens[0].ID+" revoked\n" {
		t.Fatalf("token revoke: exit %d: %q%s", code, out, errOut)
	}
	if _, errOut, code := w.as(t, bob, "cluster", "list"); code != 1 || !strings.Contains(errOut, "UNAUTHENTICATED") {
		t.Errorf("a revoked token: exit %d: %q, want UNAUTHENTICATED", code, errOut)
	}
	out, _, code = w.as(t, super, "token", "create", "--agent", "--agent-id", "web-*", "--name", "web agents", "-o", "json")
	var made struct {
		Token  shownToken
		Secret string
	}
	if err := json.Unmarshal([]byte(out), &made); code != 0 || err != nil || made.Token.Kind != "AGENT" ||
		made.Token.Agents == nil || *made.Token.Agents != "web-*" || !strings.HasPrefix(made.Secret, "coopr_") {
		t.Fatalf("agent token create -o json: exit %d, %v: %s", code, err, out)
	}

	// Agents (superadmin): one registered with that token.
	w.s.Must(made.Secret, `mutation { registerAgent(input: {agentId: "web-1", incarnation: "i1", version: "v9", host: "h1", capacity: 3}) {
		heartbeatIntervalSeconds } }`, nil, &struct{}{})
	out, errOut, _ = w.as(t, super, "agent", "list", "-o", "json")
	var agents []shownAgent
	if err := json.Unmarshal([]byte(out), &agents); err != nil || len(agents) != 1 || agents[0].ID != "web-1" ||
		agents[0].Capacity != 3 || agents[0].Host != "h1" || agents[0].Version != "v9" {
		t.Errorf("agent list -o json: %v: %s%s", err, out, errOut)
	}
	out, _, _ = w.as(t, super, "agent", "list")
	if !regexp.MustCompile(`(?m)^web-1 +h1 +v9 +3 `).MatchString(out) {
		t.Errorf("agent list:\n%s", out)
	}

	// The audit log: the tenant admin's own calls, and the refusals.
	out, errOut, code = w.cli(t, "audit", "--operation", "createUser", "--since", "1h", "-o", "json")
	var entries []shownAudit
	if err := json.Unmarshal([]byte(out), &entries); code != 0 || err != nil || len(entries) != 1 {
		t.Fatalf("audit --operation createUser -o json: exit %d, %v: %s%s; want bob's", code, err, out, errOut)
	}
	if entries[0].Outcome != "ok" || !strings.Contains(string(entries[0].Args), `"bob"`) || entries[0].User != "admin" || entries[0].Tenant != "cli" {
		t.Errorf("audit entries: %s", out)
	}
	out, _, _ = w.cli(t, "audit", "--operation", "createUser", "--failed")
	if out != "no audit entries match\n" {
		// eve never reached the server: the CLI refused --role root.
		t.Errorf("audit --failed: %q", out)
	}
	out, _, _ = w.as(t, super, "audit", "--failed", "--operation", "deleteTenant")
	if !regexp.MustCompile(`(?m)^\S+ +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +superadmin +admin +deleteTenant +\{"name":"team2"\} +\S+: .*workers`).MatchString(out) {
		t.Errorf("audit --failed as the superadmin:\n%s", out)
	}
	if out, errOut, code := w.as(t, super, "tenant", "delete", "team2"); code != 0 || out != "tenant team2 deleted\n" {
		t.Errorf("tenant delete team2 with no workers: exit %d: %q%s", code, out, errOut)
	}
	if _, errOut, code := w.cli(t, "audit", "--since", "yesterday"); code != 1 || !strings.Contains(errOut, "--since") {
		t.Errorf("audit --since yesterday: exit %d: %q", code, errOut)
	}
}
