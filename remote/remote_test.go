package remote_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

func newPool(t testing.TB, o remote.Options) *remote.Pool {
	if tt, ok := t.(interface{ Output() io.Writer }); ok && o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(tt.Output(), nil))
	}
	p := remote.NewPool(o)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// lines records a command's output.
type lines struct {
	mu             sync.Mutex
	stdout, stderr []string
}

func (l *lines) opts() remote.RunOptions {
	return remote.RunOptions{
		Stdout: func(s string) { l.mu.Lock(); l.stdout = append(l.stdout, s); l.mu.Unlock() },
		Stderr: func(s string) { l.mu.Lock(); l.stderr = append(l.stderr, s); l.mu.Unlock() },
	}
}

func output(t *testing.T, p *remote.Pool, tg remote.Target, cmd string, o remote.RunOptions) string {
	t.Helper()
	out, err := p.Output(ctxT(t, 20*time.Second), tg, cmd, o)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return strings.TrimSpace(string(out))
}

func TestPinnedHostKeyAccepted(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	tg := h.Target("")
	tg.HostKeys = []string{h.HostKeyLine()}
	c, err := p.Dial(ctxT(t, 10*time.Second), tg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ssh.FingerprintSHA256(c.HostKey()), ssh.FingerprintSHA256(h.HostKey()); got != want {
		t.Fatalf("host key %s, want %s", got, want)
	}
	if got := output(t, p, tg, "echo ok", remote.RunOptions{}); got != "ok" {
		t.Fatalf("output %q", got)
	}
}

func TestFirstContactExposesHostKey(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	c, err := p.Dial(ctxT(t, 10*time.Second), h.Target(""))
	if err != nil {
		t.Fatal(err)
	}
	if got := remote.AuthorizedKey(c.HostKey()); got != h.HostKeyLine() {
		t.Fatalf("presented %s, want %s", got, h.HostKeyLine())
	}
}

func TestChangedHostKeyRefused(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	tg := h.Target("")
	tg.HostKeys = []string{h.HostKeyLine()}
	if err := p.Run(ctxT(t, 10*time.Second), tg, "true", remote.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	old := ssh.FingerprintSHA256(h.HostKey())
	h.RotateHostKey(t)
	err := p.Run(ctxT(t, 10*time.Second), tg, "true", remote.RunOptions{})
	var mm *remote.HostKeyMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("err %v (%T), want *HostKeyMismatchError", err, err)
	}
	want := fmt.Sprintf("host key mismatch for %s: pinned %s, host presented %s", h.Addr(), old, ssh.FingerprintSHA256(h.HostKey()))
	if err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
}

func TestPinCheckedOnReusedConnection(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	other := sshdtest.Start(t, sshdtest.Options{Key: h.Key})
	p := newPool(t, remote.Options{})
	if _, err := p.Dial(ctxT(t, 10*time.Second), h.Target("")); err != nil {
		t.Fatal(err)
	}
	tg := h.Target("")
	tg.HostKeys = []string{other.HostKeyLine()}
	_, err := p.Dial(ctxT(t, 10*time.Second), tg)
	var mm *remote.HostKeyMismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("err %v, want a mismatch", err)
	}
	if p.Dials() != 1 {
		t.Fatalf("%d dials, want the pooled connection checked without dialing", p.Dials())
	}
}

func TestWrongClientKeyFails(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	tg := h.Target("")
	tg.Signer = sshdtest.NewKey(t).Signer
	err := p.Run(ctxT(t, 10*time.Second), tg, "true", remote.RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Fatalf("err %v, want an authentication failure", err)
	}
}

func TestConnectionReuse(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	p := newPool(t, remote.Options{})
	for range 5 {
		if err := p.Run(ctxT(t, 10*time.Second), h.Target(""), "true", remote.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.Dials(); got != 1 {
		t.Fatalf("%d dials for 5 commands, want 1", got)
	}
	// Another user is another connection.
	if err := p.Run(ctxT(t, 10*time.Second), h.Target(h.User), "true", remote.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := p.Dials(); got != 2 {
		t.Fatalf("%d dials, want 2", got)
	}
}

func TestBrokenConnectionRedialed(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	if err := p.Run(ctxT(t, 10*time.Second), h.Target(""), "true", remote.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	h.Restart(t)
	if got := output(t, p, h.Target(""), "echo again", remote.RunOptions{}); got != "again" {
		t.Fatalf("output %q", got)
	}
	if got := p.Dials(); got != 2 {
		t.Fatalf("%d dials, want 2 (one redial)", got)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{IdleTimeout: 100 * time.Millisecond})
	if err := p.Run(ctxT(t, 10*time.Second), h.Target(""), "true", remote.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for p.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle connection still open after 3s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.Run(ctxT(t, 10*time.Second), h.Target(""), "true", remote.RunOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := p.Dials(); got != 2 {
		t.Fatalf("%d dials, want 2", got)
	}
}

// 40 parallel commands on one connection against sshd's MaxSessions 10: all
// succeed and no more than the pool's bound run at once on the host.
func TestConcurrentSessionsBounded(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{MaxSessions: 10})
	const bound = 8
	p := newPool(t, remote.Options{MaxSessions: bound})
	dir := fmt.Sprintf("/tmp/coopr-sessions-%d", time.Now().UnixNano())
	t.Cleanup(func() { _ = exec.Command("rm", "-rf", dir).Run() })
	// Each command counts the commands running beside it, from files
	// they hold while running.
	cmd := `mkdir -p ` + dir + ` && touch ` + dir + `/$$ && ls ` + dir + ` | wc -l && sleep 0.2 && rm ` + dir + `/$$`
	var wg sync.WaitGroup
	var peak atomic.Int64
	errs := make(chan error, 40)
	for range 40 {
		wg.Go(func() {
			out, err := p.Output(ctxT(t, 60*time.Second), h.Target(""), cmd, remote.RunOptions{})
			if err != nil {
				errs <- err
				return
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				errs <- err
				return
			}
			for {
				cur := peak.Load()
				if int64(n) <= cur || peak.CompareAndSwap(cur, int64(n)) {
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := peak.Load(); got > bound || got < 2 {
		t.Fatalf("peak concurrent sessions %d, want 2..%d", got, bound)
	}
	if got := p.Dials(); got != 1 {
		t.Fatalf("%d dials, want 1", got)
	}
}

func TestLineStreaming(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	var l lines
	err := p.Run(ctxT(t, 10*time.Second), h.Target(""),
		`printf 'one\ntwo\r\n'; printf 'e1\n' >&2; printf '\nthree'; printf 'e2' >&2`, l.opts())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"one", "two", "", "three"}; !slices.Equal(l.stdout, want) {
		t.Errorf("stdout %q, want %q", l.stdout, want)
	}
	if want := []string{"e1", "e2"}; !slices.Equal(l.stderr, want) {
		t.Errorf("stderr %q, want %q", l.stderr, want)
	}

	// A line arrives while the command still runs.
	first := make(chan time.Time, 1)
	start := time.Now()
	err = p.Run(ctxT(t, 10*time.Second), h.Target(""), "echo first; sleep 1; echo second", remote.RunOptions{
		Stdout: func(s string) {
			if s == "first" {
				first <- time.Now()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	if got := (<-first).Sub(start); end.Sub(start)-got < 700*time.Millisecond {
		t.Fatalf("first line after %v of %v: not streamed", got, end.Sub(start))
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	for _, tc := range []struct {
		cmd    string
		code   int
		signal string
		stderr string
	}{
		{cmd: "exit 0"},
		{cmd: "echo bad >&2; exit 3", code: 3, stderr: "bad"},
		{cmd: "echo last >&2; echo >&2; exit 100", code: 100, stderr: "last"},
		{cmd: "false", code: 1},
		{cmd: "/no/such/command", code: 127, stderr: "/no/such/command: not found"},
		{cmd: "kill -KILL $$", code: 137, signal: "KILL"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			err := p.Run(ctxT(t, 10*time.Second), h.Target(""), tc.cmd, remote.RunOptions{})
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ee *remote.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("err %v (%T), want *ExitError", err, err)
			}
			if ee.Code != tc.code || ee.Signal != tc.signal || !strings.Contains(ee.Stderr, tc.stderr) {
				t.Fatalf("got code %d signal %q stderr %q, want %d %q %q", ee.Code, ee.Signal, ee.Stderr, tc.code, tc.signal, tc.stderr)
			}
		})
	}
}

func TestCancelStopsCommand(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	p := newPool(t, remote.Options{})
	for _, tc := range []struct {
		name string
		tg   remote.Target
		sudo bool
	}{
		{"root", h.Target(""), false},
		{"user", h.Target(h.User), false},
		{"sudo", h.Target(h.User), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A unique argument finds the process in the table.
			marker := sleepMarker(60)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			go func() {
				time.Sleep(300 * time.Millisecond)
				close(started)
				cancel()
			}()
			start := time.Now()
			// Not exec'd: the shell stays the parent, as in real scripts.
			err := p.Run(ctx, tc.tg, "sleep "+marker+"; echo done", remote.RunOptions{Sudo: tc.sudo})
			<-started
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("returned after %v", d)
			}
			waitSleepGone(t, marker, 2*time.Second)
			// The connection still serves.
			if err := p.Run(ctxT(t, 10*time.Second), tc.tg, "true", remote.RunOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDialTimeoutOnSilentPeer(t *testing.T) {
	t.Parallel()
	// A TCP server that accepts and never speaks SSH.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	addr := l.Addr().(*net.TCPAddr)
	key := sshdtest.NewKey(t)
	for _, tc := range []struct {
		name string
		opts remote.Options
		ctx  time.Duration
	}{
		{"ctx", remote.Options{}, 300 * time.Millisecond},
		{"handshake timeout", remote.Options{HandshakeTimeout: 300 * time.Millisecond}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, tc.opts)
			start := time.Now()
			err := p.Run(ctxT(t, tc.ctx), remote.Target{Host: "127.0.0.1", Port: addr.Port, User: "root", Signer: key.Signer}, "true", remote.RunOptions{})
			if err == nil {
				t.Fatal("no error from a silent peer")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("returned after %v: %v", d, err)
			}
		})
	}
}

func TestSudoAndCleanEnvironment(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	p := newPool(t, remote.Options{})
	env := map[string]string{"COOPR_X": `it's "quoted" $HOME`}
	for _, tc := range []struct {
		name string
		tg   remote.Target
		sudo bool
		want string
	}{
		{"root", h.Target(""), false, "root"},
		{"root with sudo flag", h.Target(""), true, "root"},
		{"user", h.Target(h.User), false, h.User},
		{"user with sudo", h.Target(h.User), true, "root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := remote.RunOptions{Sudo: tc.sudo, Env: env}
			if got := output(t, p, tc.tg, "id -un", o); got != tc.want {
				t.Fatalf("id -un = %q, want %q", got, tc.want)
			}
			if got := output(t, p, tc.tg, `printf %s "$COOPR_X"`, o); got != env["COOPR_X"] {
				t.Fatalf("COOPR_X = %q", got)
			}
			// Nothing of sshd's session environment leaks in.
			if got := output(t, p, tc.tg, `echo "${SSH_CONNECTION:-unset}"`, o); got != "unset" {
				t.Fatalf("SSH_CONNECTION = %q", got)
			}
			if got := output(t, p, tc.tg, `env | cut -d= -f1 | sort | tr '\n' ' '`, o); got != "COOPR_X HOME LOGNAME PATH PWD USER" && !tc.sudo {
				t.Errorf("environment %q", got)
			}
			wantHome, wantPath := "/root", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
			if tc.want != "root" {
				wantHome = strings.TrimSpace(h.Exec(t, "getent passwd "+tc.want+" | cut -d: -f6"))
			}
			if got, want := output(t, p, tc.tg, `printf '%s %s %s %s' "$HOME" "$USER" "$LOGNAME" "$PATH"`, o),
				wantHome+" "+tc.want+" "+tc.want+" "+wantPath; got != want {
				t.Errorf("HOME USER LOGNAME PATH = %q, want %q", got, want)
			}
		})
	}
	err := p.Run(ctxT(t, 10*time.Second), h.Target(""), "true", remote.RunOptions{Env: map[string]string{"BAD NAME": "x"}})
	if err == nil {
		t.Fatal("an invalid variable name was accepted")
	}
}

// TestLoginShells: a command runs alike, in the same clean environment,
// and can be stopped, whatever the SSH user's login shell: bash (cleared
// by exec -c), a POSIX sh, and zsh, which does not split an unquoted
// variable into words.
func TestLoginShells(t *testing.T) {
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	o := remote.RunOptions{Env: map[string]string{"COOPR_X": "x y"}}
	for _, shell := range []string{"/bin/bash", "/bin/sh", "/usr/bin/zsh"} {
		t.Run(shell, func(t *testing.T) {
			if _, err := os.Stat(shell); err != nil {
				t.Fatalf("%s: %v (scripts/test-prereqs installs it)", shell, err)
			}
			if out, err := exec.Command("usermod", "-s", shell, h.User).CombinedOutput(); err != nil {
				t.Fatalf("usermod: %v: %s", err, out)
			}
			// A new connection, so that the new login shell runs.
			p := newPool(t, remote.Options{})
			if got, want := output(t, p, h.Target(h.User), `env | cut -d= -f1 | sort | tr '\n' ' '; printf %s "$COOPR_X"`, o),
				"COOPR_X HOME LOGNAME PATH PWD USER x y"; got != want {
				t.Errorf("environment and COOPR_X %q, want %q", got, want)
			}
			marker := sleepMarker(120)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := remote.RunOptions{Stdout: func(s string) {
				if s == "started" {
					cancel()
				}
			}}
			if err := p.Run(ctx, h.Target(h.User), "echo started; exec sleep "+marker, started); !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want cancelled", err)
			}
			waitSleepGone(t, marker, 5*time.Second)
		})
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{})
	p := newPool(t, remote.Options{})
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, past one SSH window
	got, err := p.Output(ctxT(t, 20*time.Second), h.Target(""), "sha256sum | cut -d' ' -f1", remote.RunOptions{Stdin: bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	sum := fmt.Sprintf("%x", sha256.Sum256(data))
	if strings.TrimSpace(string(got)) != sum {
		t.Fatalf("remote sha256 %s, want %s", got, sum)
	}
}

func TestUpload(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	p := newPool(t, remote.Options{})
	for _, tc := range []struct {
		name string
		tg   remote.Target
		dir  string
	}{
		{"root", h.Target(""), fmt.Sprintf("/tmp/coopr-upload-%d", time.Now().UnixNano())},
		{"user", h.Target(h.User), h.Dir + "/home/" + h.User + "/up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Cleanup(func() { _ = exec.Command("rm", "-rf", tc.dir).Run() })
			dst := tc.dir + "/a/b/file.txt"
			for _, content := range []string{"first\n", "second, longer\n"} {
				if err := p.Upload(ctxT(t, 10*time.Second), tc.tg, dst, strings.NewReader(content), 0o640); err != nil {
					t.Fatal(err)
				}
				if got := output(t, p, tc.tg, "cat "+dst, remote.RunOptions{}); got != strings.TrimSpace(content) {
					t.Fatalf("read back %q, want %q", got, content)
				}
			}
			if got := output(t, p, tc.tg, "stat -c '%a %U' "+dst, remote.RunOptions{}); got != "640 "+tc.tg.User {
				t.Fatalf("mode and owner %q", got)
			}
			if got := output(t, p, tc.tg, "ls -A "+tc.dir+"/a/b", remote.RunOptions{}); got != "file.txt" {
				t.Fatalf("directory holds %q: temporary files left", got)
			}
		})
	}
	// A user cannot write where it has no permission; nothing is left.
	err := p.Upload(ctxT(t, 10*time.Second), h.Target(h.User), "/etc/coopr-denied.txt", strings.NewReader("x"), 0o644)
	if err == nil {
		t.Fatal("upload to /etc as a user succeeded")
	}
}

func benchRun(b *testing.B, fresh bool) {
	h := sshdtest.Start(b, sshdtest.Options{})
	p := newPool(b, remote.Options{})
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		pool := p
		if fresh {
			pool = remote.NewPool(remote.Options{})
		}
		if err := pool.Run(ctx, h.Target(""), "true", remote.RunOptions{}); err != nil {
			b.Fatal(err)
		}
		if fresh {
			_ = pool.Close()
		}
	}
}

func BenchmarkRunReusedConnection(b *testing.B) { benchRun(b, false) }
func BenchmarkRunFreshDial(b *testing.B)        { benchRun(b, true) }

// A host that is not there is classified unreachable, and fast: a stopped
// sshd refuses at once; a frozen one (the address takes connections, as
// the kernel answers, but nothing speaks SSH) fails the handshake within
// its bound; and a pooled connection to a host that froze after it was
// used, which TCP alone would keep waiting on for many minutes, gives up
// within the reply bound and dials again. Other failures are not
// unreachable.
func TestUnreachableHosts(t *testing.T) {
	t.Parallel()
	opts := remote.Options{HandshakeTimeout: time.Second, ReplyTimeout: 500 * time.Millisecond}
	cases := []struct {
		name        string
		break_      func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target)
		unreachable bool
		message     string
		within      time.Duration
	}{
		{"stopped sshd", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			h.Stop()
		}, true, "connection refused", 2 * time.Second},
		{"frozen host", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			h.Freeze()
			t.Cleanup(h.Thaw)
		}, true, "no SSH handshake", 3 * time.Second},
		{"pooled connection to a host that froze", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			if err := p.Run(ctxT(t, 10*time.Second), *tg, "true", remote.RunOptions{}); err != nil {
				t.Fatal(err)
			}
			h.Freeze()
			t.Cleanup(h.Thaw)
		}, true, "no SSH handshake", 4 * time.Second},
		{"address answered by no SSH server", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			// What some networks do for an address nobody has: take the
			// connection and close it.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			tg.Host, tg.Port = "127.0.0.1", l.Addr().(*net.TCPAddr).Port
		}, true, "no SSH server answered", 2 * time.Second},
		{"address answered by something else", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			// What a transparent HTTP proxy does for every address.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"))
					c.Close()
				}
			}()
			tg.Host, tg.Port = "127.0.0.1", l.Addr().(*net.TCPAddr).Port
		}, true, `no SSH server answered (it said "HTTP/1.1 400 Bad Request")`, 2 * time.Second},
		{"host key no longer the pinned one", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			tg.HostKeys = []string{h.HostKeyLine()}
			h.RotateHostKey(t)
		}, true, "host key mismatch", 2 * time.Second},
		{"client key refused", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {
			tg.Signer = sshdtest.NewKey(t).Signer
		}, false, "unable to authenticate", 2 * time.Second},
		{"command failed", func(t *testing.T, h *sshdtest.Host, p *remote.Pool, tg *remote.Target) {}, false, "exit status 3", 2 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := sshdtest.Start(t, sshdtest.Options{})
			p := newPool(t, opts)
			tg := h.Target("")
			tc.break_(t, h, p, &tg)
			start := time.Now()
			err := p.Run(ctxT(t, 30*time.Second), tg, "exit 3", remote.RunOptions{})
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("err %v, want one saying %q", err, tc.message)
			}
			if got := remote.Unreachable(err); got != tc.unreachable {
				t.Errorf("Unreachable(%v) = %v, want %v", err, got, tc.unreachable)
			}
			if took > tc.within {
				t.Errorf("failed after %s, want within %s: %v", took.Round(time.Millisecond), tc.within, err)
			}
		})
	}
}

// A node with no address is unreachable: nothing can have run on it. A
// dial the caller cut short is not: the host may well be there.
func TestUnreachableNotForCallersOwnEnd(t *testing.T) {
	t.Parallel()
	if err := remote.NoAddress("node n1 has no address"); !remote.Unreachable(err) {
		t.Errorf("no address: Unreachable(%v) = false", err)
	}
	h := sshdtest.Start(t, sshdtest.Options{})
	h.Freeze()
	t.Cleanup(h.Thaw)
	p := newPool(t, remote.Options{HandshakeTimeout: time.Minute})
	err := p.Run(ctxT(t, 300*time.Millisecond), h.Target(""), "true", remote.RunOptions{})
	if err == nil || remote.Unreachable(err) {
		t.Errorf("a dial cut short by its context: Unreachable(%v) = true", err)
	}
}

// A command costs as few programs as a clean environment allows, each a
// fork and exec that a loaded host makes slow: the shell alone when the
// login shell is bash (which clears the environment itself) or sudo
// (likewise), env and the shell after another login shell. A script on
// stdin runs in that shell.
func TestProgramsPerCommand(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	p := newPool(t, remote.Options{})
	execs := h.TraceExecs(t, "/usr/bin/env", "/bin/sh", "/usr/bin/sudo")
	env := map[string]string{"COOPR_X": "x"}
	for _, tc := range []struct {
		name string
		tg   remote.Target
		o    remote.RunOptions
		cmd  string
		want []string
	}{
		// root's login shell is bash.
		{"root", h.Target(""), remote.RunOptions{Env: env}, `test "$COOPR_X" = x`, []string{"/bin/sh"}},
		{"root script", h.Target(""), remote.RunOptions{Env: env, Script: true, Stdin: strings.NewReader(`test "$COOPR_X" = x`)}, "", []string{"/bin/sh"}},
		// The user's login shell is /bin/sh.
		{"user", h.Target(h.User), remote.RunOptions{Env: env}, `test "$COOPR_X" = x`, []string{"/bin/sh", "/usr/bin/env", "/bin/sh"}},
		{"user script", h.Target(h.User), remote.RunOptions{Env: env, Script: true, Stdin: strings.NewReader(`test "$COOPR_X" = x`)}, "", []string{"/bin/sh", "/usr/bin/env", "/bin/sh"}},
		{"sudo", h.Target(h.User), remote.RunOptions{Env: env, Sudo: true}, `test "$COOPR_X" = x`, []string{"/bin/sh", "/usr/bin/sudo", "/bin/sh"}},
		{"sudo script", h.Target(h.User), remote.RunOptions{Env: env, Sudo: true, Script: true, Stdin: strings.NewReader(`test "$COOPR_X" = x`)}, "", []string{"/bin/sh", "/usr/bin/sudo", "/bin/sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(execs())
			if err := p.Run(ctxT(t, 20*time.Second), tc.tg, tc.cmd, tc.o); err != nil {
				t.Fatal(err)
			}
			if got := execs()[before:]; !slices.Equal(got, tc.want) {
				t.Errorf("programs %q, want %q", got, tc.want)
			}
		})
	}
}

// A script on stdin runs like a command line, of any size, with its
// environment shown in no process list, and stops when cancelled.
func TestScriptOnStdin(t *testing.T) {
	t.Parallel()
	h := sshdtest.Start(t, sshdtest.Options{NonRoot: true})
	p := newPool(t, remote.Options{})
	secret := "value-" + strings.Repeat("z", 8)
	env := map[string]string{"COOPR_X": `it's "quoted" $HOME ` + secret}
	big := strings.Repeat("# a script longer than any command line may be\n", 1<<13)
	for _, tc := range []struct {
		name string
		tg   remote.Target
		sudo bool
		want string
	}{
		{"root", h.Target(""), false, "root"},
		{"user", h.Target(h.User), false, h.User},
		{"user with sudo", h.Target(h.User), true, "root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := big + `id -un
printf '%s\n' "$COOPR_X"
echo "${SSH_CONNECTION:-unset}"
ps -eo args | grep -c '[v]alue-zzzzzzzz' || true
exit 7
`
			var l lines
			o := l.opts()
			o.Sudo, o.Env, o.Script, o.Stdin = tc.sudo, env, true, strings.NewReader(script)
			err := p.Run(ctxT(t, 20*time.Second), tc.tg, "", o)
			var ee *remote.ExitError
			if !errors.As(err, &ee) || ee.Code != 7 {
				t.Fatalf("err %v, want exit 7", err)
			}
			if want := []string{tc.want, env["COOPR_X"], "unset", "0"}; !slices.Equal(l.stdout, want) {
				t.Fatalf("stdout %q, want %q", l.stdout, want)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// A marker of its own: other tests run sleep 120 too.
		marker := sleepMarker(120)
		o := remote.RunOptions{Sudo: true, Script: true, Stdin: strings.NewReader("echo started\nsleep " + marker + "\n"),
			Stdout: func(s string) {
				if s == "started" {
					cancel()
				}
			}}
		began := time.Now()
		if err := p.Run(ctx, h.Target(h.User), "", o); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want cancelled", err)
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Fatalf("stopping took %s", d)
		}
		waitSleepGone(t, marker, 5*time.Second)
	})
	for _, tc := range []struct {
		name string
		cmd  string
		o    remote.RunOptions
	}{
		{"with a command line", "true", remote.RunOptions{Script: true, Stdin: strings.NewReader("true")}},
		{"without a script", "", remote.RunOptions{Script: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := p.Run(ctxT(t, 10*time.Second), h.Target(""), tc.cmd, tc.o); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// sleepMarker is a duration for sleep, of about secs seconds, that no
// other process's command line holds: pgrep finds the one sleep by it.
func sleepMarker(secs int) string {
	return fmt.Sprintf("%d.%d", secs, time.Now().UnixNano()%1_000_000)
}

// waitSleepGone fails t unless the sleep of marker has ended within d.
func waitSleepGone(t *testing.T, marker string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for exec.Command("pgrep", "-f", "sleep "+marker).Run() == nil {
		if time.Now().After(deadline) {
			t.Fatalf("sleep %s still runs %s after the cancel", marker, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
