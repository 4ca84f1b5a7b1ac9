package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Conn is one SSH connection of a Pool. Its sessions are bounded by the
// pool's MaxSessions; callers beyond the bound wait for a free session.
type Conn struct {
	target  Target
	client  *ssh.Client
	hostKey ssh.PublicKey
	sem     chan struct{}
	killSem chan struct{} // one session beyond sem for stopping a cancelled command
	active  atomic.Int32  // sessions running or waiting for a slot
	used    atomic.Int64  // unix nanoseconds of the last release
	broken  atomic.Bool
	reply   time.Duration // how long a session request may go unanswered
	log     *slog.Logger
}

// HostKey is the key the host presented on this connection: with no pin it
// is the key to pin.
func (c *Conn) HostKey() ssh.PublicKey { return c.hostKey }

// Target is what the connection was dialed for.
func (c *Conn) Target() Target { return c.target }

func (c *Conn) isBroken() bool { return c.broken.Load() }

func (c *Conn) touch() { c.used.Store(time.Now().UnixNano()) }

func (c *Conn) lastUsed() time.Time { return time.Unix(0, c.used.Load()) }

func (c *Conn) replyTimeout() time.Duration {
	if c.reply <= 0 {
		return 5 * time.Second
	}
	return c.reply
}

func (c *Conn) probe(ctx context.Context, timeout time.Duration) error {
	ch := make(chan error, 1)
	go func() {
		// OpenSSH answers unknown global requests with a failure reply,
		// which is all a liveness check needs.
		_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
		ch <- err
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-ch:
		return err
	case <-t.C:
		return errors.New("keepalive unanswered")
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Alive asks the peer for a reply on the connection, with no session and
// no program run, waiting at most the reply timeout: a caller about to
// trust what an earlier command on c showed checks first that the host is
// still there. A connection that fails it is closed (and so leaves the
// pool), so the next use dials anew.
func (c *Conn) Alive(ctx context.Context) error {
	err := c.probe(ctx, c.replyTimeout())
	if err == nil || ctx.Err() != nil {
		return err
	}
	c.broken.Store(true)
	_ = c.client.Close()
	return fmt.Errorf("ssh %s: %w: %w", c.target, ErrConnBroken, err)
}

// RunOptions tune one command.
type RunOptions struct {
	// Stdin feeds the command; it must reach EOF (a bytes.Reader does).
	Stdin io.Reader
	// Stdout and Stderr receive the output line by line, without the
	// newline. They are never called concurrently, nor after Run returns.
	Stdout, Stderr func(line string)
	// Env is exported to the command (names: [A-Za-z_][A-Za-z0-9_]*). It
	// travels on the command line (on stdin with Script), since sshd
	// refuses SetEnv by default: never put secrets in it.
	Env map[string]string
	// Script makes Stdin the shell script to run, read by /bin/sh -s; the
	// command Run is given must be "". The script may be of any size and
	// shows in no process list, and the shell reading it is the one sshd
	// started the command with (no further shell is executed to read it).
	// That shell reads the script as it goes, so a command in it that
	// reads stdin takes the rest of the script: redirect such commands'
	// stdin (</dev/null, or a file the script wrote).
	Script bool
	// Sudo runs the command as root through `sudo -n` when the SSH user is
	// not root.
	Sudo bool
	// KillGrace is how long a cancelled command has between SIGTERM and
	// SIGKILL (default 500ms).
	KillGrace time.Duration
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Code   int    // exit status; 128+n for a command killed by signal n
	Signal string // the signal's name when the command was killed
	Stderr string // the command's last non-empty stderr line
}

func (e *ExitError) Error() string {
	if e.Signal != "" {
		return fmt.Sprintf("killed by signal %s", e.Signal)
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// sessionError is a failure to open a session: nothing ran, so the pool may
// retry on a fresh connection.
type sessionError struct{ err error }

func (e *sessionError) Error() string { return e.err.Error() }
func (e *sessionError) Unwrap() error { return e.err }

// session opens a session holding a slot of sem (c.sem or c.killSem);
// the returned release must be called once the session is closed.
func (c *Conn) session(ctx context.Context, sem chan struct{}) (*ssh.Session, func(), error) {
	c.active.Add(1)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		c.active.Add(-1)
		return nil, nil, fmt.Errorf("ssh %s: waiting for a session: %w", c.target, context.Cause(ctx))
	}
	release := func() {
		c.touch()
		<-sem
		c.active.Add(-1)
	}
	type res struct {
		s   *ssh.Session
		err error
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		ch := make(chan res, 1)
		go func() {
			s, err := c.client.NewSession()
			ch <- res{s, err}
		}()
		// Keep the slot until a late session is closed, so the bound
		// holds on the server too.
		late := func() {
			go func() {
				if r := <-ch; r.s != nil {
					_ = r.s.Close()
				}
				release()
			}()
		}
		unanswered := time.NewTimer(c.replyTimeout())
		var r res
		select {
		case r = <-ch:
			unanswered.Stop()
		case <-ctx.Done():
			unanswered.Stop()
			late()
			return nil, nil, fmt.Errorf("ssh %s: open session: %w", c.target, context.Cause(ctx))
		case <-unanswered.C:
			// The peer vanished without closing the connection (power
			// lost, container removed, network cut): TCP would retry for
			// many minutes. Closing the connection ends the request; the
			// pool dials again, which fails fast if the host is gone.
			c.broken.Store(true)
			_ = c.client.Close()
			late()
			return nil, nil, &sessionError{fmt.Errorf("ssh %s: open session: %w: no answer in %s", c.target, ErrConnBroken, c.replyTimeout())}
		}
		if r.err == nil {
			return r.s, release, nil
		}
		var oce *ssh.OpenChannelError
		if !errors.As(r.err, &oce) {
			release()
			c.broken.Store(true)
			return nil, nil, &sessionError{fmt.Errorf("ssh %s: open session: %w: %w", c.target, ErrConnBroken, r.err)}
		}
		// sshd frees a closed session only on a later turn of its main
		// loop, so closes and opens arriving together can briefly count
		// more sessions than are open (measured: 40 commands through 8
		// slots against MaxSessions 10 meet this now and then). Such a
		// refusal passes; wait and open again.
		transient := oce.Reason == ssh.ConnectionFailed || oce.Reason == ssh.ResourceShortage
		if !transient || time.Since(start) > sessionRetryFor {
			release()
			return nil, nil, &sessionError{fmt.Errorf("ssh %s: open session: %w", c.target, r.err)}
		}
		t := time.NewTimer(min(5*time.Millisecond<<attempt, 200*time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			release()
			return nil, nil, fmt.Errorf("ssh %s: open session: %w", c.target, context.Cause(ctx))
		}
	}
}

// sessionRetryFor bounds how long a refused session is asked for again.
const sessionRetryFor = 5 * time.Second

// Run runs cmd through /bin/sh -c with a clean environment (no login
// shell profile, only PATH, HOME, USER, LOGNAME and o.Env; through sudo,
// what sudo's env_reset keeps, such as SHELL, TERM and SUDO_*). A non-zero
// exit is an *ExitError. When ctx ends the command's process group gets
// SIGTERM, then SIGKILL, the session is closed and Run returns ctx's cause.
func (c *Conn) Run(ctx context.Context, cmd string, o RunOptions) error {
	return c.run(ctx, cmd, o, nil)
}

// Output runs cmd like Run and returns its stdout (o.Stdout is not called).
func (c *Conn) Output(ctx context.Context, cmd string, o RunOptions) ([]byte, error) {
	var buf bytes.Buffer
	err := c.run(ctx, cmd, o, &buf)
	return buf.Bytes(), err
}

func (c *Conn) run(ctx context.Context, cmd string, o RunOptions, stdout io.Writer) error {
	token := newToken()
	line, err := c.commandLine(cmd, o, token)
	if err != nil {
		return err
	}
	stdin := o.Stdin
	if o.Script {
		// The prologue leads the script, where no process list shows its
		// exports.
		stdin = io.MultiReader(strings.NewReader(c.prologue(o)), o.Stdin)
	}
	s, release, err := c.session(ctx, c.sem)
	if err != nil {
		return err
	}
	defer release()
	defer s.Close()

	var mu sync.Mutex
	var lastErr string
	pgid := make(chan int, 1)
	marker := "coopr-pid-" + token + " "
	errW := &lineWriter{mu: &mu, emit: func(l string) {
		if rest, ok := strings.CutPrefix(l, marker); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 1 {
				select {
				case pgid <- n:
				default:
				}
				return
			}
		}
		if strings.TrimSpace(l) != "" {
			lastErr = l
		}
		if o.Stderr != nil {
			o.Stderr(l)
		}
	}}
	s.Stderr = errW
	outW := &lineWriter{mu: &mu, emit: o.Stdout}
	var raw *lockedWriter
	if stdout != nil {
		raw = &lockedWriter{mu: &mu, w: stdout}
		s.Stdout = raw
	} else {
		s.Stdout = outW
	}
	s.Stdin = stdin
	finish := func() {
		mu.Lock()
		defer mu.Unlock()
		outW.flush()
		errW.flush()
		outW.closed, errW.closed = true, true
		if raw != nil {
			raw.closed = true
		}
	}

	if err := s.Start(line); err != nil {
		finish()
		return fmt.Errorf("ssh %s: start command: %w", c.target, err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		c.stop(s, done, pgid, o)
		finish()
		return fmt.Errorf("ssh %s: command stopped: %w", c.target, context.Cause(ctx))
	}
	finish()
	if err == nil {
		return nil
	}
	var ee *ssh.ExitError
	if errors.As(err, &ee) {
		return &ExitError{Code: ee.ExitStatus(), Signal: ee.Signal(), Stderr: lastErr}
	}
	if c.isBroken() {
		return fmt.Errorf("ssh %s: %w: %w", c.target, ErrConnBroken, err)
	}
	return fmt.Errorf("ssh %s: %w", c.target, err)
}

// stop ends a cancelled command and everything it started. sshd makes each
// session's command a process group leader and the command announces its
// id, so a second session kills the group: SIGTERM, then SIGKILL after the
// grace. Closing the channel alone would leave the command running (and
// holding one of the server's sessions until it exits), and SSH signal
// requests reach neither root's sessions (sshd refuses them outside a
// privilege-separated child) nor commands running under sudo.
func (c *Conn) stop(s *ssh.Session, done <-chan error, pgid <-chan int, o RunOptions) {
	grace := o.KillGrace
	if grace <= 0 {
		grace = 500 * time.Millisecond
	}
	wait := time.NewTimer(time.Second)
	defer wait.Stop()
	select {
	case <-done:
		return
	case g := <-pgid:
		steps := max(1, int(grace/(100*time.Millisecond)))
		script := fmt.Sprintf(`kill -TERM -%[1]d 2>/dev/null || exit 0
i=0
while [ $i -lt %[2]d ]; do
  sleep 0.1
  kill -0 -%[1]d 2>/dev/null || exit 0
  i=$((i+1))
done
kill -KILL -%[1]d 2>/dev/null
exit 0`, g, steps)
		// The kill escalates on its own; Run returns as soon as the
		// command has ended, which SIGTERM usually achieves at once (an
		// exited group may linger as zombies, which kill -0 still sees).
		killed := make(chan struct{})
		go func() {
			defer close(killed)
			if err := c.kill(script, o.Sudo, grace+5*time.Second); err != nil {
				c.log.Warn("ssh: could not stop a cancelled command", "target", c.target.String(), "err", err)
			}
		}()
		select {
		case <-done:
			return
		case <-killed:
		}
	case <-wait.C:
		// The command never announced itself: closing is all there is.
	}
	_ = s.Close()
	wait.Reset(2 * time.Second)
	select {
	case <-done:
	case <-wait.C:
		c.log.Warn("ssh: a cancelled command did not end", "target", c.target.String())
	}
}

func (c *Conn) kill(script string, sudo bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s, release, err := c.session(ctx, c.killSem)
	if err != nil {
		return err
	}
	defer release()
	defer s.Close()
	line, err := c.commandLine(script, RunOptions{Sudo: sudo}, "")
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()
	if out, err := s.CombinedOutput(line); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func newToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cleanPath is the PATH commands get: sbin included, since drivers run
// administrative tools.
const cleanPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// commandLine builds what sshd hands to the user's login shell. exec
// replaces that shell at once, so its profile costs nothing further and
// the command starts from a known environment. Every program executed on
// the way costs a task milliseconds on a loaded host (a fork and an exec
// each), so there are as few as the clean environment allows: bash, the
// usual login shell, clears the environment itself (exec -c), any other
// shell through env -i, and sudo clears it itself; then the /bin/sh that
// runs the command, which sets the rest of the environment itself
// (prologue).
func (c *Conn) commandLine(cmd string, o RunOptions, token string) (string, error) {
	for k := range o.Env {
		if !envName.MatchString(k) {
			return "", fmt.Errorf("remote: environment variable name %q is not valid", k)
		}
	}
	if o.Script && cmd != "" {
		return "", errors.New("remote: a command run as a script on stdin takes no command line")
	}
	if o.Script && o.Stdin == nil {
		return "", errors.New("remote: a command run as a script on stdin needs the script")
	}
	var b strings.Builder
	if token != "" {
		// $$ is the login shell, which sshd made the session's process
		// group leader; stop kills that group.
		b.WriteString(`printf 'coopr-pid-` + token + ` %d\n' $$ >&2; `)
	}
	sh := " /bin/sh -s"
	if !o.Script {
		sh = " /bin/sh -c " + Quote(c.prologue(o)+cmd)
	}
	if c.sudo(o) {
		// sudo resets the environment itself (HOME, PATH from secure_path).
		b.WriteString("exec sudo -n -H --" + sh)
		return b.String(), nil
	}
	// The login shell's HOME, USER and LOGNAME go as arguments, which the
	// prologue exports.
	if !o.Script {
		sh += " /bin/sh"
	}
	// The words go through "$@", not an unquoted variable: zsh does not
	// split one into words, and a profile may have changed IFS.
	b.WriteString(`if [ -n "${BASH_VERSION-}" ]; then set -- -c; else set -- /usr/bin/env -i; fi; exec "$@"` + sh + ` "$HOME" "$USER" "$LOGNAME"`)
	return b.String(), nil
}

func (c *Conn) sudo(o RunOptions) bool { return o.Sudo && c.target.User != "root" }

// prologue is what the shell running a command does first: without sudo,
// make the environment from the login shell's HOME, USER and LOGNAME,
// which commandLine passes as its arguments, and the clean PATH; then
// export o.Env (its names already checked).
func (c *Conn) prologue(o RunOptions) string {
	var b strings.Builder
	if !c.sudo(o) {
		b.WriteString(`HOME=$1 USER=$2 LOGNAME=$3; shift 3; export HOME USER LOGNAME PATH=` + cleanPath + "\n")
	}
	for _, k := range slices.Sorted(maps.Keys(o.Env)) {
		b.WriteString("export " + k + "=" + Quote(o.Env[k]) + "\n")
	}
	return b.String()
}

// Quote quotes s as one word for a POSIX shell.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxLine bounds one emitted line; a longer line arrives in pieces.
const maxLine = 64 << 10

// lineWriter splits a stream into lines. Its mutex is shared between a
// command's stdout and stderr so callbacks never run concurrently.
type lineWriter struct {
	mu     *sync.Mutex
	buf    []byte
	emit   func(string)
	closed bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	start := 0
	for {
		i := bytes.IndexByte(w.buf[start:], '\n')
		if i < 0 {
			break
		}
		w.line(w.buf[start : start+i])
		start += i + 1
	}
	for len(w.buf)-start >= maxLine {
		w.line(w.buf[start : start+maxLine])
		start += maxLine
	}
	w.buf = append(w.buf[:0], w.buf[start:]...)
	return len(p), nil
}

// flush emits a last line that had no newline; the caller holds mu.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 && !w.closed {
		w.line(w.buf)
	}
	w.buf = nil
}

func (w *lineWriter) line(b []byte) {
	if w.emit != nil {
		w.emit(strings.TrimSuffix(string(b), "\r"))
	}
}

type lockedWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	closed bool
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.w.Write(p)
}
