package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// Options configure a Pool. Zero values take the defaults.
type Options struct {
	// DialTimeout bounds the TCP connect (default 10s).
	DialTimeout time.Duration
	// HandshakeTimeout bounds key exchange and authentication (default 15s).
	HandshakeTimeout time.Duration
	// MaxSessions bounds concurrent sessions per connection (default 8).
	// It must stay below the server's MaxSessions (OpenSSH: 10), which
	// refuses further channels rather than queueing them: one more session
	// is kept for stopping cancelled commands.
	MaxSessions int
	// IdleTimeout closes connections no session has used for this long
	// (default 5m).
	IdleTimeout time.Duration
	// ProbeAfter is how long a connection may sit unused before it is
	// probed with a keepalive before reuse (default 15s): a peer that
	// rebooted leaves a connection that looks open but never answers.
	ProbeAfter time.Duration
	// ReplyTimeout bounds how long an open connection may take to answer
	// a keepalive probe or a request for a session (default 5s). A live
	// sshd answers both in milliseconds; a host that vanished never does,
	// and TCP alone would wait many minutes before giving up on it.
	ReplyTimeout time.Duration
	Logger       *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 15 * time.Second
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 8
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 5 * time.Minute
	}
	if o.ProbeAfter <= 0 {
		o.ProbeAfter = 15 * time.Second
	}
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// ErrClosed is returned by a closed Pool.
var ErrClosed = errors.New("remote: pool closed")

// ErrConnBroken marks a failure of the connection itself (not of a
// command): the pool drops such a connection and dials anew.
var ErrConnBroken = errors.New("ssh connection broken")

// ErrUnreachable marks a host that did not answer: the TCP connect failed
// (refused, no route, timed out, name not found), the connection ended
// before any SSH banner (something other than an SSH server took it), or
// the SSH handshake got no reply in time. Nothing ran on the host. The error's message is the
// dial's, e.g. "ssh root@10.0.0.5:22: dial: dial tcp 10.0.0.5:22: connect:
// no route to host".
var ErrUnreachable = errors.New("host unreachable")

// unreachableError is an error of a dial that found no host.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string        { return e.err.Error() }
func (e *unreachableError) Unwrap() error        { return e.err }
func (e *unreachableError) Is(target error) bool { return target == ErrUnreachable }

// HostKeyMismatchError is a host that presented a key other than the pinned
// ones. A retry cannot fix it: callers report it as not retryable.
type HostKeyMismatchError struct {
	Addr      string
	Pinned    []string // SHA256 fingerprints of the pinned keys
	Presented string   // SHA256 fingerprint of the key the host presented
}

func (e *HostKeyMismatchError) Error() string {
	return fmt.Sprintf("host key mismatch for %s: pinned %s, host presented %s",
		e.Addr, strings.Join(e.Pinned, " "), e.Presented)
}

// Pool keeps one SSH connection per target (address, user and client key)
// and shares it between tasks. Safe for concurrent use.
type Pool struct {
	opts  Options
	log   *slog.Logger
	dials atomic.Int64

	mu     sync.Mutex
	conns  map[string]*entry
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

// entry is one pooled connection, or the dial that will produce it.
type entry struct {
	ready chan struct{} // closed when the dial ended
	conn  *Conn
	err   error
}

func (e *entry) isReady() bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// NewPool starts a pool; Close it to end its connections.
func NewPool(o Options) *Pool {
	o = o.withDefaults()
	p := &Pool{opts: o, log: o.Logger, conns: map[string]*entry{}, stop: make(chan struct{}), done: make(chan struct{})}
	go p.reapIdle()
	return p
}

// Dials counts the connections the pool has dialed, for tests and metrics.
func (p *Pool) Dials() int64 { return p.dials.Load() }

// Len is the number of open connections.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.conns {
		if e.isReady() && e.conn != nil {
			n++
		}
	}
	return n
}

func poolKey(t Target) string {
	fp := ""
	if t.Signer != nil {
		fp = ssh.FingerprintSHA256(t.Signer.PublicKey())
	}
	return t.User + "@" + t.Addr() + " " + fp
}

// Dial returns the pooled connection to t, dialing it when there is none.
// A pooled connection is checked against t's pinned keys on every call,
// so a pin added after the first contact is enforced on reuse too.
func (p *Pool) Dial(ctx context.Context, t Target) (*Conn, error) {
	pins, err := ParseHostKeys(t.HostKeys)
	if err != nil {
		return nil, err
	}
	key := poolKey(t)
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		e, ok := p.conns[key]
		if !ok {
			e = &entry{ready: make(chan struct{})}
			p.conns[key] = e
			p.mu.Unlock()
			e.conn, e.err = p.dial(ctx, t, pins)
			p.mu.Lock()
			if e.err == nil && p.closed {
				// Close ran while we dialed: nobody will close this one.
				_ = e.conn.client.Close()
				e.conn, e.err = nil, ErrClosed
			}
			p.mu.Unlock()
			if e.err != nil {
				p.mu.Lock()
				if p.conns[key] == e {
					delete(p.conns, key)
				}
				p.mu.Unlock()
			} else {
				go p.watch(key, e)
			}
			close(e.ready)
			if e.err != nil {
				return nil, e.err
			}
			return e.conn, nil
		}
		p.mu.Unlock()

		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("ssh %s: %w", t, context.Cause(ctx))
		}
		if e.err != nil {
			// Another caller's dial failed; if only its context ended,
			// dial again under ours.
			if errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded) {
				if ctx.Err() == nil {
					continue
				}
			}
			return nil, e.err
		}
		c := e.conn
		if c.isBroken() {
			p.drop(key, c)
			continue
		}
		if err := verifyHostKey(t.Addr(), pins, c.hostKey); err != nil {
			return nil, err
		}
		if time.Since(c.lastUsed()) > p.opts.ProbeAfter && c.active.Load() == 0 {
			if err := c.probe(ctx, p.opts.ReplyTimeout); err != nil {
				if ctx.Err() != nil {
					// The caller gave up, not the host: the connection stays.
					return nil, fmt.Errorf("ssh %s: %w", t, err)
				}
				p.log.Debug("ssh: dropping connection that failed a keepalive", "target", t.String(), "err", err)
				p.drop(key, c)
				continue
			}
		}
		return c, nil
	}
}

func (p *Pool) dial(ctx context.Context, t Target, pins []ssh.PublicKey) (*Conn, error) {
	if t.Signer == nil {
		return nil, fmt.Errorf("ssh %s: %w: no client key", t, ErrTarget)
	}
	addr := t.Addr()
	p.dials.Add(1)
	d := net.Dialer{Timeout: p.opts.DialTimeout, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		err = fmt.Errorf("ssh %s: dial: %w", t, err)
		if ctx.Err() != nil {
			return nil, err // cut short by the caller, not by the host
		}
		return nil, &unreachableError{err}
	}
	began := time.Now()
	deadline := began.Add(p.opts.HandshakeTimeout)
	callersDeadline := false // the caller's deadline, not the host's silence, bounds the handshake
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline, callersDeadline = dl, true
	}
	_ = nc.SetDeadline(deadline)
	// The deadline covers a silent peer; this covers a cancelled ctx.
	stopWatch := context.AfterFunc(ctx, func() { _ = nc.Close() })
	hc := &bannerConn{Conn: nc}

	var presented ssh.PublicKey
	var mismatch *HostKeyMismatchError
	cfg := &ssh.ClientConfig{
		User: t.User,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(t.Signer)},
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			presented = k
			if err := verifyHostKey(addr, pins, k); err != nil {
				errors.As(err, &mismatch)
				return err
			}
			return nil
		},
		// Ask only for the pinned key types; else a host holding several
		// keys may show one we did not pin and look like an impostor.
		HostKeyAlgorithms: hostKeyAlgorithms(pins),
	}
	sc, chans, reqs, err := ssh.NewClientConn(hc, addr, cfg)
	stopped := stopWatch()
	if err == nil && !stopped {
		// ctx ended just as the handshake succeeded: the socket is closed.
		_ = sc.Close()
		return nil, fmt.Errorf("ssh %s: handshake: %w", t, context.Cause(ctx))
	}
	if err != nil {
		_ = nc.Close()
		if mismatch != nil {
			return nil, mismatch
		}
		if !stopped && ctx.Err() != nil {
			return nil, fmt.Errorf("ssh %s: handshake: %w", t, context.Cause(ctx))
		}
		var ne net.Error
		if callersDeadline && errors.As(err, &ne) && ne.Timeout() {
			// The socket's deadline was the caller's: it may fire a moment
			// before ctx says it is done, and the host may well be there.
			return nil, fmt.Errorf("ssh %s: handshake: %w: %w", t, context.DeadlineExceeded, err)
		}
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			// The port took the connection and nothing spoke SSH on it.
			return nil, &unreachableError{fmt.Errorf("ssh %s: no SSH handshake in %s: %w", t, time.Since(began).Round(time.Millisecond), err)}
		case !hc.banner.Load():
			// Closed or reset before any SSH banner: whatever took the
			// connection (a proxy or firewall answering for an address
			// nobody has, a host shutting down) is no SSH server.
			said := ""
			if first := hc.firstLine(); first != "" {
				said = fmt.Sprintf(" (it said %q)", first)
			}
			return nil, &unreachableError{fmt.Errorf("ssh %s: no SSH server answered%s: %w", t, said, err)}
		}
		return nil, fmt.Errorf("ssh %s: %w", t, err)
	}
	_ = nc.SetDeadline(time.Time{})
	c := &Conn{
		target:  t,
		client:  ssh.NewClient(sc, chans, reqs),
		hostKey: presented,
		sem:     make(chan struct{}, p.opts.MaxSessions),
		killSem: make(chan struct{}, 1),
		reply:   p.opts.ReplyTimeout,
		log:     p.log,
	}
	c.touch()
	p.log.Debug("ssh: connected", "target", t.String(), "hostKey", ssh.FingerprintSHA256(presented))
	return c, nil
}

// bannerConn records whether the peer sent an SSH banner ("SSH-" at the
// start of a line) and, until it does, the first bytes it sent.
type bannerConn struct {
	net.Conn
	banner atomic.Bool
	mu     sync.Mutex
	head   []byte
}

func (c *bannerConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.banner.Load() {
		c.mu.Lock()
		if len(c.head) < 4096 {
			c.head = append(c.head, b[:n]...)
		}
		if bytes.HasPrefix(c.head, []byte("SSH-")) || bytes.Contains(c.head, []byte("\nSSH-")) {
			c.banner.Store(true)
			c.head = nil
		}
		c.mu.Unlock()
	}
	return n, err
}

// firstLine is the start of what a peer that sent no banner sent.
func (c *bannerConn) firstLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	line, _, _ := bytes.Cut(c.head, []byte("\n"))
	line = bytes.TrimSpace(line)
	if len(line) > 60 {
		line = line[:60]
	}
	return string(line)
}

// watch drops a connection from the pool as soon as it dies, so the next
// task dials instead of failing on it.
func (p *Pool) watch(key string, e *entry) {
	_ = e.conn.client.Wait()
	e.conn.broken.Store(true)
	p.drop(key, e.conn)
}

func (p *Pool) drop(key string, c *Conn) {
	p.mu.Lock()
	// An entry still dialing is a newer one, and its fields are not ours
	// to read until it is ready.
	if e, ok := p.conns[key]; ok && e.isReady() && e.conn == c {
		delete(p.conns, key)
	}
	p.mu.Unlock()
	c.broken.Store(true)
	_ = c.client.Close()
}

func (p *Pool) reapIdle() {
	defer close(p.done)
	every := min(p.opts.IdleTimeout/2, time.Minute)
	tick := time.NewTicker(max(every, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		var idle []*Conn
		p.mu.Lock()
		for key, e := range p.conns {
			if !e.isReady() {
				continue
			}
			c := e.conn
			if c != nil && c.active.Load() == 0 && time.Since(c.lastUsed()) > p.opts.IdleTimeout {
				delete(p.conns, key)
				idle = append(idle, c)
			}
		}
		p.mu.Unlock()
		for _, c := range idle {
			p.log.Debug("ssh: closing idle connection", "target", c.target.String())
			c.broken.Store(true)
			_ = c.client.Close()
		}
	}
}

// Close closes every connection; running commands fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	for _, e := range conns {
		<-e.ready
		if e.conn != nil {
			e.conn.broken.Store(true)
			_ = e.conn.client.Close()
		}
	}
	return nil
}

// Run runs cmd on t over the pooled connection (see Conn.Run). A
// connection found broken before the command started is dropped and
// dialed once more; a command that had started is never run twice.
func (p *Pool) Run(ctx context.Context, t Target, cmd string, o RunOptions) error {
	return p.withConn(ctx, t, func(c *Conn) error { return c.Run(ctx, cmd, o) })
}

// Output runs cmd and returns its stdout (see Conn.Output).
func (p *Pool) Output(ctx context.Context, t Target, cmd string, o RunOptions) ([]byte, error) {
	var out []byte
	err := p.withConn(ctx, t, func(c *Conn) error {
		var err error
		out, err = c.Output(ctx, cmd, o)
		return err
	})
	return out, err
}

func (p *Pool) withConn(ctx context.Context, t Target, f func(*Conn) error) error {
	for attempt := 0; ; attempt++ {
		c, err := p.Dial(ctx, t)
		if err != nil {
			return err
		}
		err = f(c)
		var se *sessionError
		if attempt == 0 && errors.As(err, &se) && errors.Is(err, ErrConnBroken) {
			p.drop(poolKey(t), c)
			continue
		}
		return err
	}
}

func verifyHostKey(addr string, pins []ssh.PublicKey, k ssh.PublicKey) error {
	if len(pins) == 0 {
		return nil
	}
	raw := k.Marshal()
	fps := make([]string, 0, len(pins))
	for _, pin := range pins {
		if bytes.Equal(pin.Marshal(), raw) {
			return nil
		}
		fps = append(fps, ssh.FingerprintSHA256(pin))
	}
	return &HostKeyMismatchError{Addr: addr, Pinned: fps, Presented: ssh.FingerprintSHA256(k)}
}

// hostKeyAlgorithms lists the signature algorithms that can verify the
// pinned keys; nil (the library's defaults) when nothing is pinned.
func hostKeyAlgorithms(pins []ssh.PublicKey) []string {
	var algos []string
	for _, k := range pins {
		switch k.Type() {
		case ssh.KeyAlgoRSA:
			algos = append(algos, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			algos = append(algos, k.Type())
		}
	}
	slices.Sort(algos)
	return slices.Compact(algos)
}

// Terminal reports whether err is one a retry cannot fix: a host key that
// does not match its pin, or a node the payload gives no usable target.
func Terminal(err error) bool {
	var mm *HostKeyMismatchError
	return errors.As(err, &mm) || errors.Is(err, ErrTarget)
}

// Unreachable reports whether err says the node is not there to work on,
// so that nothing ran on it: the host did not answer (ErrUnreachable), the
// node has no address (ErrNoAddress), or what answers at its address is
// not the machine whose key was pinned (*HostKeyMismatchError: the address
// now belongs to another machine, or someone pretends it does). Drivers
// report such failures as drivers.Result.Unreachable.
func Unreachable(err error) bool {
	var mm *HostKeyMismatchError
	return errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNoAddress) || errors.As(err, &mm)
}
