package gqlws

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// A subscriber that falls behind a burst of changes finds several waiting
// when it next runs. Sending each in its own write costs a system call per
// message (the largest single cost of a fan-out, and on loopback the
// receiver's too); sending the ones already waiting together costs one.
// The resolver says when another value is ready (MoreReady) and when it is
// about to wait (Idle); the transport holds the connection's writes
// between the two. A resolver that says neither gets a write per message.

type batchKey struct{}

// batch is an operation's side of holding writes. The operation's
// goroutine holds and releases; the resolver marks and releases, perhaps
// from a goroutine of its own (so both go under mu, and a hold is taken
// only if no Idle came after the MoreReady it relies on).
type batch struct {
	conn *batchConn

	mu      sync.Mutex
	more    bool // the value being produced has another right behind it
	holding bool
}

// MoreReady tells the transport running ctx's operation that the value the
// resolver is about to return is followed by one it can return without
// waiting: the transport may hold the first until the second is written.
// A resolver that calls it must call Idle before it waits for a value.
func MoreReady(ctx context.Context) {
	if b, ok := ctx.Value(batchKey{}).(*batch); ok {
		b.mu.Lock()
		b.more = true
		b.mu.Unlock()
	}
}

// Idle tells the transport that the resolver is about to wait: what it
// holds is sent now.
func Idle(ctx context.Context) {
	if b, ok := ctx.Value(batchKey{}).(*batch); ok {
		b.mu.Lock()
		b.more = false
		b.mu.Unlock()
		b.release()
	}
}

// expect starts waiting for the next value: nothing said about it yet.
func (b *batch) expect() {
	b.mu.Lock()
	b.more = false
	b.mu.Unlock()
}

// holdIfMore holds the connection's writes if the value just produced has
// another right behind it, and reports whether it had.
func (b *batch) holdIfMore() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.more && !b.holding && b.conn != nil {
		b.holding = true
		b.conn.hold()
	}
	return b.more
}

func (b *batch) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holding {
		b.holding = false
		b.conn.release()
	}
}

// batchConn is a websocket's network connection whose writes can be held:
// while any operation holds, writes are collected, and the last release
// sends them in one write.
type batchConn struct {
	net.Conn
	timeout time.Duration // for one network write (none when zero)

	mu      sync.Mutex
	holds   int
	buf     []byte
	err     error
	stopped bool // closing: nothing is held any more
}

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.holds > 0 && !c.stopped {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.write(p)
}

// write writes to the network within the timeout. The websocket fails on
// the error and drops the connection.
func (c *batchConn) write(p []byte) (int, error) {
	if c.timeout > 0 {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

// stopHolding sends what is held, and everything after at once: the
// connection is closing, and its close frame must not wait for an
// operation to let go.
func (c *batchConn) stopHolding() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.flush()
}

func (c *batchConn) hold() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
}

func (c *batchConn) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds--
	if c.holds > 0 {
		return
	}
	c.flush()
}

func (c *batchConn) flush() {
	if len(c.buf) == 0 || c.err != nil {
		return
	}
	if _, err := c.write(c.buf); err != nil {
		// The websocket's next write reports it; closing makes sure the
		// read loop notices too.
		c.err = err
		_ = c.Conn.Close()
	}
	c.buf = c.buf[:0]
}

// hijackWriter hands the websocket library a batchConn for the request's
// connection.
type hijackWriter struct {
	http.ResponseWriter
	writeTimeout time.Duration
	conn         *batchConn
}

func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if brw.Writer.Buffered() > 0 {
		// The 101 response may still sit in the server's buffer.
		if err := brw.Writer.Flush(); err != nil {
			_ = nc.Close()
			return nil, nil, err
		}
	}
	w.conn = &batchConn{Conn: nc, timeout: w.writeTimeout}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(w.conn, brw.Writer.Size())), nil
}
