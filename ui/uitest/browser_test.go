package uitest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/cooprhq/coopr/ui"
)

// chromium is Debian's; nothing here downloads a browser.
func chromium() string {
	if p := os.Getenv("COOPR_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// prerequisites skips the test, saying why in one line, unless the UI is
// built into this binary and node, playwright-core and Chromium are here.
func prerequisites(t *testing.T) string {
	t.Helper()
	if !ui.Built(ui.Dist()) {
		t.Skip("the web UI is not built into this test binary: run `make build` (or `make test`, which builds it) first")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node: install Node.js 20.19+ (scripts/test-prereqs does) to run the browser tests")
	}
	if _, err := os.Stat(chromium()); err != nil {
		t.Skipf("no Chromium at %s: apt-get install chromium (scripts/test-prereqs does) to run the browser tests", chromium())
	}
	if _, err := os.Stat("../node_modules/playwright-core/package.json"); err != nil {
		t.Skip("ui/node_modules has no playwright-core: run `npm ci` in ui/ (make test does)")
	}
	return node
}

// scripted is every driver the example catalog needs: it succeeds at once.
type scripted struct{}

func (scripted) Run(_ context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	out.Stdout("ran " + t.TaskName)
	if t.TaskName == "CONFIRM" {
		return drivers.Result{IPAddresses: map[string]string{"access_v4": "10.3.0.1", "bind_v4": "10.3.0.1"}}
	}
	return drivers.Result{}
}

// world is a server with the example catalog in tenant acme, its admin,
// two users with clusters, and an agent; acme has no workers until the
// browser asks for them, so the clusters stay PENDING until it watches.
type world struct {
	s                  *servertest.Server
	admin, alice, bob  string
	agentToken         string
	aliceClusters      int
	newestAliceCluster string
	stopAgentOnce      sync.Once
	agentStop          func()
	// extra, when set, answers actions of a test's own first: handled
	// says it knew the action.
	extra func(action string) (handled bool, err error)
}

func gql(t *testing.T, s *servertest.Server, token, query string, vars map[string]any, out any) {
	t.Helper()
	if out == nil {
		out = &struct{}{}
	}
	s.Must(token, query, vars, out)
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldWith(t, servertest.Config(t))
}

// newWorldWith is newWorld on a server configured by cfg.
func newWorldWith(t *testing.T, cfg server.Config) *world {
	t.Helper()
	s := servertest.StartWith(t, cfg)
	w := &world{s: s, aliceClusters: 30}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	gql(t, s, s.Super, `mutation { createTenant(input: {name: "acme"}) { id } }`, nil, nil)
	gql(t, s, s.Super, `mutation { createAPIToken(input: {name: "ui", tenant: "acme"}) { secret } }`, nil, &tok)
	w.admin = tok.CreateAPIToken.Secret
	for _, u := range []struct {
		name string
		dst  *string
	}{{"alice", &w.alice}, {"bob", &w.bob}} {
		gql(t, s, w.admin, `mutation($n: String!) { createUser(name: $n) { name } }`, map[string]any{"n": u.name}, nil)
		gql(t, s, w.admin, `mutation($n: String!) { createAPIToken(input: {name: "ui", user: $n}) { secret } }`, map[string]any{"n": u.name}, &tok)
		*u.dst = tok.CreateAPIToken.Secret
	}
	gql(t, s, s.Super, `mutation { createAPIToken(input: {name: "agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	w.agentToken = tok.CreateAPIToken.Secret

	// The example catalog: driver types are the superadmin's, the rest acme's.
	c, is, err := catalog.LoadPath("../../examples/catalog")
	if err != nil || is.HasErrors() {
		t.Fatalf("examples/catalog: %v %v", err, is.Errors())
	}
	b, err := c.Bundle()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	shared := map[string]any{}
	for _, k := range []string{"providertypes", "automatortypes"} {
		shared[k] = doc[k]
		delete(doc, k)
	}
	gql(t, s, s.Super, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": shared}, nil)
	gql(t, s, w.admin, `mutation($d: JSON!) { importCatalog(document: $d) { created } }`, map[string]any{"d": doc}, nil)

	create := func(token, name, template string, size int) string {
		var cr struct{ CreateCluster struct{ ID string } }
		gql(t, s, token, `mutation($n: String!, $t: String!, $s: Int!) { createCluster(input: {name: $n, clusterTemplate: $t, numMachines: $s}) { id } }`,
			map[string]any{"n": name, "t": template, "s": size}, &cr)
		return cr.CreateCluster.ID
	}
	create(w.admin, "admin-web", "web-cluster", 3)
	create(w.bob, "bob-single", "single", 1)
	for i := 1; i <= w.aliceClusters; i++ {
		tmpl, size := "single", 1
		if i%3 == 0 {
			tmpl, size = "web-cluster", 2+i%4
		}
		w.newestAliceCluster = create(w.alice, fmt.Sprintf("alice-%02d", i), tmpl, size)
	}

	reg := drivers.NewRegistry()
	for _, d := range []drivers.Descriptor{
		{Role: drivers.RoleVM, Name: "local"}, {Role: drivers.RoleNetwork, Name: "hosts"}, {Role: drivers.RoleNetwork, Name: "local"},
		{Role: drivers.RoleNode, Name: "ssh"}, {Role: drivers.RoleAutomator, Name: "shell"},
	} {
		reg.Register(d, scripted{})
	}
	a, err := agent.New(agent.Config{Server: s.URL, Token: w.agentToken, ID: "ui-agent", Capacity: 8, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ResourceDir: t.TempDir()}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	w.agentStop = func() { w.stopAgentOnce.Do(func() { cancel(); <-done }) }
	t.Cleanup(w.agentStop)
	return w
}

// act does what the browser script asks of the server side.
func (w *world) act(action string) error {
	s := w.s
	if w.extra != nil {
		if handled, err := w.extra(action); handled {
			return err
		}
	}
	switch action {
	case "activate":
		// The queued tasks go to the agent: the clusters come up.
		_, err := s.Request(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 8}) { id } }`, nil)
		return err
	case "stop-server":
		return s.Stop()
	case "start-server":
		s.Start()
		return nil
	case "delete-newest":
		r, err := s.Request(w.alice, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`, map[string]any{"id": w.newestAliceCluster})
		if err == nil {
			err = r.Err()
		}
		return err
	}
	return fmt.Errorf("unknown action %q", action)
}

// TestBrowser drives the UI in headless Chromium against a real server,
// Postgres, Redis and agent: tests/browser.mjs says what it checks; it
// asks this side to change things on the server (lines "@@ need ACTION"
// on its stdout, answered "@@ done ACTION" or "@@ fail MESSAGE" on its
// stdin) and saves a screenshot of every view in ui/test-results/.
func TestBrowser(t *testing.T) {
	node := prerequisites(t)
	w := newWorld(t)
	shots, err := filepath.Abs("../test-results")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "tests/browser.mjs")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(),
		"COOPR_URL="+w.s.URL, "COOPR_CHROMIUM="+chromium(), "COOPR_SCREENSHOTS="+shots,
		"COOPR_ADMIN_TOKEN="+w.admin, "COOPR_ALICE_TOKEN="+w.alice, "COOPR_BOB_TOKEN="+w.bob,
		fmt.Sprintf("COOPR_ALICE_CLUSTERS=%d", w.aliceClusters), "COOPR_NEWEST_ALICE_CLUSTER="+w.newestAliceCluster)
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
		t.Fatalf("tests/browser.mjs failed (%v); screenshots in %s", err, shots)
	case err != nil:
		t.Fatal(err)
	}
}
