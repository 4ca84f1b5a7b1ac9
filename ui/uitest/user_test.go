package uitest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/agent"
	"github.com/cooprhq/coopr/drivers"
)

// paced runs the tasks of clusters named ui-… as a person can watch them:
// each takes a moment, INSTALL of web streams output for a few seconds,
// and the first attempt of every START of web fails with an error on
// stderr (the retry succeeds). The first CONFIGURE of web under the config
// {"web": {"greeting": "break once"}} fails for good: its job fails until
// retried. Other clusters' tasks succeed at once.
type paced struct{ broke atomic.Bool }

func (d *paced) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	service := ""
	if t.Service != nil {
		service = t.Service.Name
	}
	if strings.HasPrefix(t.Cluster.Name, "ui-") {
		wait := 250 * time.Millisecond
		steps := 1
		if t.TaskName == "INSTALL" && service == "web" {
			steps = 40
		}
		for i := 1; i <= steps; i++ {
			out.Stdout(fmt.Sprintf("%s %s: step %d of %d", strings.ToLower(t.TaskName), service, i, steps))
			select {
			case <-ctx.Done():
				return drivers.Result{Status: 1, Message: "cancelled"}
			case <-time.After(wait):
			}
		}
		web, _ := t.Cluster.Config["web"].(map[string]any)
		if t.TaskName == "CONFIGURE" && service == "web" && web["greeting"] == "break once" && d.broke.CompareAndSwap(false, true) {
			out.Stderr("web: greeting rejected")
			return drivers.Result{Status: 1, Message: "the web config is broken", Retryable: new(bool)}
		}
		if t.TaskName == "START" && service == "web" && t.Attempt == 1 {
			out.Stderr("web: bind 0.0.0.0:80: address already in use")
			return drivers.Result{Status: 1, Message: "web did not start: port 80 is taken"}
		}
	} else {
		out.Stdout("ran " + t.TaskName)
	}
	if t.TaskName == "CONFIRM" {
		return drivers.Result{IPAddresses: map[string]string{"access_v4": "10.3.0.1", "bind_v4": "10.3.0.1"}}
	}
	if t.TaskName == "CREATE" && strings.HasPrefix(t.Cluster.Name, "ui-") {
		// The host key a vm driver pins (vm.hostKeys): the cluster page
		// shows its fingerprint.
		return drivers.Result{Facts: map[string]any{"hostKeys": []any{uiHostKey}}}
	}
	return drivers.Result{}
}

// uiHostKey is the host key the paced driver's nodes have; its SHA-256
// fingerprint is uiHostKeyFingerprint.
const (
	uiHostKey            = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILaSl8EcrW7WKFTu/IbPVnvijBHf0Nn9s82R9rMlYURZ"
	uiHostKeyFingerprint = "SHA256:8BY8kYyDHMlOJT3KfYs+onLTKqw1EQko//ITTC2hGmo"
)

// TestBrowserUserFlows drives a plain user's work in the browser:
// tests/user-flows.mjs previews and creates a cluster, watches its job
// live (tasks changing state, a task's live output, a failed attempt's
// error), scales it and deletes it, each previewed; another user cannot
// see it. Screenshots land in ui/test-results/ beside TestBrowser's.
func TestBrowserUserFlows(t *testing.T) {
	node := prerequisites(t)
	w := newWorld(t)
	// The world's agent runs the scripted drivers; this test's runs paced ones.
	w.agentStop()
	reg := drivers.NewRegistry()
	driver := &paced{}
	for _, d := range []drivers.Descriptor{
		{Role: drivers.RoleVM, Name: "local"}, {Role: drivers.RoleNetwork, Name: "hosts"}, {Role: drivers.RoleNetwork, Name: "local"},
		{Role: drivers.RoleNode, Name: "ssh"}, {Role: drivers.RoleAutomator, Name: "shell"},
	} {
		reg.Register(d, driver)
	}
	a, err := agent.New(agent.Config{Server: w.s.URL, Token: w.agentToken, ID: "ui-paced-agent", Capacity: 8, Grace: time.Second,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ResourceDir: t.TempDir()}, reg)
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() { stop(); <-done })

	runScript(t, w, node, "tests/user-flows.mjs", "COOPR_HOST_KEY_FINGERPRINT="+uiHostKeyFingerprint)
}
