// Package drivertest holds one conformance suite per driver role
// (docs/operations.md#idempotency, docs/drivers.md), run against every driver
// of the role.
package drivertest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
)

// VMTimeout bounds each task the vm suite runs; a CREATE may build a base
// image first.
var VMTimeout = 5 * time.Minute

// VM runs the conformance suite of role vm against drv. newTask returns a
// fresh payload for one node, the same node on every call (same cluster and
// node id, provider and secrets), with TaskName set to action and no facts:
// the suite carries facts, addresses and secrets from result to task as the
// server does (a result's secrets reach later tasks under secrets.vm). The
// node must not exist when VM starts; VM deletes it at the end.
//
// It checks: CREATE reports vm.providerId (and well-formed vm.hostKeys,
// vm.sshUser, vm.sshHost, vm.sshPort when present); CREATE again adopts
// (same providerId), with and without the first result's facts; CONFIRM
// reports an IPv4 access_v4 and is re-runnable; the machine answers SSH
// at the target docs/drivers.md names, with the key it names (the vm
// driver's secrets.vm.privateKey, else the cluster key), and shows a
// reported host key; DELETE and DELETE again succeed; DELETE with no
// providerId succeeds; no secret, the task's or one a result handed back,
// reaches a result message or the output.
func VM(t *testing.T, drv drivers.Driver, newTask func(action string) *drivers.Task) {
	t.Helper()
	s := &vmSuite{t: t, drv: drv, newTask: newTask, out: &vmOutput{}}
	facts := map[string]any{}
	addrs := map[string]string{}
	created := false
	defer func() {
		if created && t.Failed() {
			// Leave nothing behind for the next run.
			s.run("DELETE", facts, addrs)
		}
	}()

	t.Run("create", func(t *testing.T) {
		r := s.run("CREATE", facts, addrs)
		if r.Status != 0 {
			t.Fatalf("CREATE: status %d: %s", r.Status, r.Message)
		}
		created = true
		s.checkFacts(t, "CREATE", r.Facts)
		if id, _ := r.Facts["providerId"].(string); id == "" {
			t.Fatalf("CREATE reported no vm.providerId: %v", r.Facts)
		}
		merge(facts, addrs, r)
	})
	if t.Failed() {
		return
	}
	id := facts["providerId"].(string)

	t.Run("create again adopts", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			facts map[string]any
		}{
			{"with the first result's facts", maps.Clone(facts)},
			{"without facts, as when the first result was lost", map[string]any{}},
		} {
			r := s.run("CREATE", c.facts, maps.Clone(addrs))
			if r.Status != 0 {
				t.Errorf("CREATE %s: status %d: %s", c.name, r.Status, r.Message)
				continue
			}
			if got, _ := r.Facts["providerId"].(string); got != id {
				t.Errorf("CREATE %s: providerId %q, want the first CREATE's %q", c.name, got, id)
			}
			s.checkFacts(t, "CREATE", r.Facts)
		}
	})

	t.Run("confirm", func(t *testing.T) {
		var first string
		for i := range 2 {
			r := s.run("CONFIRM", facts, addrs)
			if r.Status != 0 {
				t.Fatalf("CONFIRM #%d: status %d: %s", i+1, r.Status, r.Message)
			}
			s.checkFacts(t, "CONFIRM", r.Facts)
			a := r.IPAddresses["access_v4"]
			if ip, err := netip.ParseAddr(a); err != nil || !ip.Is4() {
				t.Fatalf("CONFIRM #%d: ipaddresses.access_v4 %q is not an IPv4 address (%v)", i+1, a, r.IPAddresses)
			}
			if i == 0 {
				first = a
			} else if a != first {
				t.Errorf("CONFIRM again: access_v4 %s, first %s", a, first)
			}
			if got, _ := r.Facts["providerId"].(string); got != "" && got != id {
				t.Errorf("CONFIRM: providerId %q, CREATE said %q", got, id)
			}
			merge(facts, addrs, r)
		}
	})

	t.Run("ssh", func(t *testing.T) {
		if addrs["access_v4"] == "" && addrs["bind_v4"] == "" {
			t.Skip("no address: confirm failed")
		}
		s.checkSSH(t, facts, addrs)
	})

	t.Run("delete", func(t *testing.T) {
		for i := range 2 {
			r := s.run("DELETE", facts, addrs)
			if r.Status != 0 {
				t.Fatalf("DELETE #%d: status %d: %s", i+1, r.Status, r.Message)
			}
		}
		created = false
	})

	t.Run("delete without providerId", func(t *testing.T) {
		r := s.run("DELETE", map[string]any{}, map[string]string{})
		if r.Status != 0 {
			t.Fatalf("DELETE without providerId: status %d: %s", r.Status, r.Message)
		}
	})

	t.Run("no secret in output", func(t *testing.T) {
		task := s.task("CREATE")
		for ns, m := range task.Secrets {
			for k, v := range m {
				sv, _ := v.(string)
				for _, line := range strings.Split(strings.TrimSpace(sv), "\n") {
					// Public keys may be shown; every other secret line may not.
					if k == "publicKey" || len(strings.TrimSpace(line)) < 16 || strings.HasPrefix(line, "-----") {
						continue
					}
					if where := s.out.find(line); where != "" {
						t.Errorf("secret %s.%s appears in %s", ns, k, where)
					}
				}
			}
		}
	})
}

type vmSuite struct {
	t       *testing.T
	drv     drivers.Driver
	newTask func(string) *drivers.Task
	out     *vmOutput

	mu      sync.Mutex
	secrets map[string]any // what results handed back, as the server keeps it
}

// task is newTask's payload carrying the secrets results handed back under
// secrets.vm, as the server injects them at claim.
func (s *vmSuite) task(action string) *drivers.Task {
	task := s.newTask(action)
	task.TaskName = action
	if task.Node == nil {
		s.t.Fatalf("newTask(%q) returned a task without a node", action)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.secrets) > 0 {
		sec := maps.Clone(task.Secrets)
		if sec == nil {
			sec = map[string]map[string]any{}
		}
		vm := maps.Clone(sec["vm"])
		if vm == nil {
			vm = map[string]any{}
		}
		maps.Copy(vm, s.secrets)
		sec["vm"] = vm
		task.Secrets = sec
	}
	return task
}

// run runs one task with the node's accumulated facts, addresses and
// secrets.
func (s *vmSuite) run(action string, facts map[string]any, addrs map[string]string) drivers.Result {
	task := s.task(action)
	if task.Node.Facts == nil {
		task.Node.Facts = map[string]any{}
	}
	task.Node.Facts["vm"] = maps.Clone(facts)
	if len(addrs) > 0 {
		task.Node.IPAddresses = maps.Clone(addrs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), VMTimeout)
	defer cancel()
	start := time.Now()
	r := s.drv.Run(ctx, task, s.out)
	s.out.add("result message of "+action, r.Message)
	if len(r.Secrets) > 0 {
		s.mu.Lock()
		if s.secrets == nil {
			s.secrets = map[string]any{}
		}
		maps.Copy(s.secrets, r.Secrets)
		s.mu.Unlock()
	}
	s.t.Logf("%s: status %d in %s: %s", action, r.Status, time.Since(start).Round(time.Millisecond), r.Message)
	return r
}

// merge does what the server does with a result: facts merge on success
// and failure, addresses replace on success.
func merge(facts map[string]any, addrs map[string]string, r drivers.Result) {
	maps.Copy(facts, r.Facts)
	if r.Status == 0 && len(r.IPAddresses) > 0 {
		clear(addrs)
		maps.Copy(addrs, r.IPAddresses)
	}
}

// checkFacts checks the vm facts docs/drivers.md defines are well formed.
func (s *vmSuite) checkFacts(t *testing.T, action string, f map[string]any) {
	t.Helper()
	for k, v := range f {
		switch k {
		case "providerId", "sshHost", "sshUser":
			if _, ok := v.(string); !ok {
				t.Errorf("%s: vm.%s is %T, want a string", action, k, v)
			}
		case "sshPort":
			if p, err := portOf(v); err != nil || p <= 0 || p > 65535 {
				t.Errorf("%s: vm.sshPort %v is not a port", action, v)
			}
		case "hostKeys":
			keys, err := hostKeysOf(v)
			if err != nil {
				t.Errorf("%s: vm.hostKeys: %v", action, err)
			} else if len(keys) == 0 {
				t.Errorf("%s: vm.hostKeys is present but empty", action)
			}
		}
	}
}

// checkSSH reaches the node as docs/drivers.md says any driver will and
// runs a command; the host must show a reported key when keys were
// reported.
func (s *vmSuite) checkSSH(t *testing.T, facts map[string]any, addrs map[string]string) {
	task := s.task("CONFIRM")
	host, _ := facts["sshHost"].(string)
	if host == "" {
		host = addrs["access_v4"]
	}
	if host == "" {
		host = addrs["bind_v4"]
	}
	port := 22
	if p, ok := facts["sshPort"]; ok {
		port, _ = portOf(p)
	}
	user, _ := facts["sshUser"].(string)
	if user == "" {
		user = task.Node.SSHUser
	}
	if user == "" {
		user = "root"
	}
	pemKey, _ := task.Secrets["vm"]["privateKey"].(string)
	if pemKey == "" {
		pemKey, _ = task.Secrets["ssh"]["privateKey"].(string)
	}
	if pemKey == "" {
		t.Skip("the task carries no private key to log in with")
	}
	signer, err := ssh.ParsePrivateKey([]byte(pemKey))
	if err != nil {
		t.Fatalf("private key: %v", err)
	}
	pinned, err := hostKeysOf(facts["hostKeys"])
	if err != nil {
		t.Fatalf("vm.hostKeys: %v", err)
	}
	cfg := &ssh.ClientConfig{
		User:    user,
		Auth:    []ssh.AuthMethod{ssh.PublicKeys(signer)},
		Timeout: 10 * time.Second,
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if len(pinned) == 0 {
				return nil
			}
			for _, k := range pinned {
				if string(k.Marshal()) == string(key.Marshal()) {
					return nil
				}
			}
			return fmt.Errorf("host shows %s, not one of the reported vm.hostKeys", ssh.FingerprintSHA256(key))
		},
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	c, err := ssh.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("ssh %s@%s: %v", user, addr, err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatalf("ssh session: %v", err)
	}
	defer sess.Close()
	out, err := sess.CombinedOutput("echo coopr-vm-ok")
	if err != nil || strings.TrimSpace(string(out)) != "coopr-vm-ok" {
		t.Fatalf("ssh %s: echo: %v: %q", addr, err, out)
	}
}

func portOf(v any) (int, error) {
	switch p := v.(type) {
	case int:
		return p, nil
	case int64:
		return int(p), nil
	case float64:
		return int(p), nil
	case string:
		return strconv.Atoi(p)
	}
	return 0, fmt.Errorf("%T is not a port", v)
}

// hostKeysOf reads vm.hostKeys in the shapes results take: a list of
// authorized_keys lines (as []string, or []any after JSON) or one string
// of lines.
func hostKeysOf(v any) ([]ssh.PublicKey, error) {
	var lines []string
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		lines = strings.Split(x, "\n")
	case []string:
		lines = x
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("entry %T, want a string", e)
			}
			lines = append(lines, s)
		}
	default:
		return nil, fmt.Errorf("%T, want a list of authorized_keys lines", v)
	}
	var keys []ssh.PublicKey
	for _, l := range lines {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l))
		if err != nil {
			return nil, fmt.Errorf("%.40q: %w", l, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// vmOutput records what drivers write, to look for secrets in it.
type vmOutput struct {
	mu    sync.Mutex
	lines []string
}

func (o *vmOutput) add(where, line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, where+"\x00"+line)
}

func (o *vmOutput) Stdout(line string)                  { o.add("stdout", line) }
func (o *vmOutput) Stderr(line string)                  { o.add("stderr", line) }
func (o *vmOutput) Status(line string, percent float64) { o.add("status", line) }

// find names where s appears, or "".
func (o *vmOutput) find(s string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, l := range o.lines {
		where, line, _ := strings.Cut(l, "\x00")
		if strings.Contains(line, s) {
			return where
		}
	}
	return ""
}
