package sdnotify_test

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/agent/sdnotify"
	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/server/servertest"
)

// hang is a driver whose tasks run until they are stopped, so slots stay
// busy.
type hang struct{ started chan string }

func (h hang) Run(ctx context.Context, t *drivers.Task, _ drivers.Output) drivers.Result {
	select {
	case h.started <- t.TaskID:
	default:
	}
	<-ctx.Done()
	return drivers.Result{Status: 1, Message: "stopped"}
}

// A real agent against a real server reports, over a real notification
// socket: READY=1 once registered, STATUS= with its busy slots out of the
// slots the server gave it, and STOPPING=1 when told to stop.
func TestAgentNotifiesSystemd(t *testing.T) {
	ch := listen(t)
	s := servertest.Start(t)
	for _, c := range []struct{ dir, tenant string }{
		{"../../testdata/catalog/types", "superadmin"},
		{"../../testdata/catalog/templates", "acme"},
	} {
		cat, is, err := catalog.LoadPath(c.dir)
		if err != nil || is.HasErrors() {
			t.Fatalf("%s: %v %v", c.dir, err, is.Errors())
		}
		if _, err := s.Srv.Store().EnsureTenant(context.Background(), c.tenant); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Srv.Store().ImportCatalog(context.Background(), c.tenant, cat); err != nil {
			t.Fatal(err)
		}
	}
	var tok struct{ CreateAPIToken struct{ Secret string } }
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "a", tenant: "acme"}) { secret } }`, nil, &tok)
	admin := tok.CreateAPIToken.Secret
	s.Must(s.Super, `mutation { createAPIToken(input: {name: "agent", kind: AGENT, agents: "*"}) { secret } }`, nil, &tok)
	s.Must(s.Super, `mutation { updateTenant(name: "acme", input: {name: "acme", workers: 3}) { id } }`, nil, &struct{}{})

	d := hang{started: make(chan string, 10)}
	reg := drivers.NewRegistry()
	reg.Register(drivers.Descriptor{Role: drivers.RoleVM, Name: "rackspace"}, d)
	reg.Register(drivers.Descriptor{Role: drivers.RoleNode, Name: "ssh"}, d)
	reg.Register(drivers.Descriptor{Role: drivers.RoleAutomator, Name: "chef-solo"}, d)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := agent.New(agent.Config{Server: s.URL, Token: tok.CreateAPIToken.Secret, ID: "notify-agent", Capacity: 4,
		Grace: 100 * time.Millisecond, Notify: sdnotify.New(quiet).Notify, Log: quiet}, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()

	if m := next(t, ch, 20*time.Second); m != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", m)
	}
	s.Must(admin, `mutation { createCluster(input: {name: "a", clusterTemplate: "lamp", numMachines: 2}) { id } }`, nil, &struct{}{})
	select {
	case <-d.started:
	case <-time.After(20 * time.Second):
		t.Fatal("no task started")
	}
	// STATUS follows heartbeats (every 10 s); the slots stay busy until
	// the agent stops.
	busy := regexp.MustCompile(`^STATUS=([1-3])/3 slots busy$`)
	for deadline := time.Now().Add(25 * time.Second); ; {
		m := next(t, ch, time.Until(deadline))
		if busy.MatchString(m) {
			break
		}
		if m != "STATUS=0/3 slots busy" {
			t.Fatalf("notification %q, want STATUS=n/3 slots busy", m)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil // for the deferred receive
	if m := next(t, ch, 5*time.Second); m != "STOPPING=1" {
		t.Fatalf("notification %q at stop, want STOPPING=1", m)
	}
}
