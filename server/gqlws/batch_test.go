package gqlws

import (
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// Writes while an operation holds reach the peer together, in order, when
// the last holder lets go; writes with no holder go straight through.
func TestBatchConnHoldsWrites(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	c := &batchConn{Conn: server}
	defer c.Close()
	got := make(chan string, 10)
	go func() {
		buf := make([]byte, 64)
		for {
			n, err := client.Read(buf)
			if err != nil {
				close(got)
				return
			}
			got <- string(buf[:n])
		}
	}()
	write := func(s string) {
		t.Helper()
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want string) {
		t.Helper()
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("peer read %q, want %q", g, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("peer read nothing, want %q", want)
		}
	}
	write("a")
	expect("a")

	a, b := &batch{conn: c, more: true}, &batch{conn: c, more: true}
	a.holdIfMore()
	b.holdIfMore()
	write("b")
	write("c")
	a.release()
	select {
	case g := <-got:
		t.Fatalf("peer read %q while another operation still held", g)
	case <-time.After(50 * time.Millisecond):
	}
	b.release()
	expect("bc")
	b.release() // not holding: nothing happens
	write("d")
	expect("d")

	// An Idle between a MoreReady and the operation's hold (a resolver in
	// a goroutine of its own) leaves nothing held.
	ctx := context.WithValue(context.Background(), batchKey{}, b)
	MoreReady(ctx)
	Idle(ctx)
	if b.holdIfMore() {
		t.Fatal("held after Idle")
	}
	write("e")
	expect("e")

	// Closing sends what is held and holds nothing more.
	a.more = true
	a.holdIfMore()
	write("f")
	c.stopHolding()
	expect("f")
	write("g")
	expect("g")
}

// An operation's value that says more is ready is held until the resolver
// is about to wait; Idle without a transport is a no-op.
func TestMoreReadyAndIdle(t *testing.T) {
	Idle(context.Background())
	MoreReady(context.Background())
	server, client := net.Pipe()
	defer client.Close()
	b := &batch{conn: &batchConn{Conn: server}}
	ctx := context.WithValue(context.Background(), batchKey{}, b)
	MoreReady(ctx)
	if !b.holdIfMore() {
		t.Fatal("MoreReady did not mark the operation")
	}
	go func() { _, _ = b.conn.Write([]byte("x")) }()
	time.Sleep(20 * time.Millisecond)
	done := make(chan string)
	go func() {
		buf := make([]byte, 8)
		n, _ := io.ReadAtLeast(client, buf, 1)
		done <- string(buf[:n])
	}()
	select {
	case g := <-done:
		t.Fatalf("peer read %q before Idle", g)
	case <-time.After(50 * time.Millisecond):
	}
	Idle(ctx)
	select {
	case g := <-done:
		if g != "x" {
			t.Fatalf("peer read %q", g)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Idle did not send what was held")
	}
}

// A peer that stops reading fails the write it blocks, directly or when
// held writes are sent, within the timeout; a failed send also closes the
// connection, so the read loop notices.
func TestBatchConnWriteTimeout(t *testing.T) {
	for _, held := range []bool{false, true} {
		server, client := net.Pipe() // unbuffered: a write waits for a read
		c := &batchConn{Conn: server, timeout: 100 * time.Millisecond}
		start := time.Now()
		var err error
		if held {
			b := &batch{conn: c, more: true}
			b.holdIfMore()
			if _, err := c.Write([]byte("held")); err != nil {
				t.Fatalf("held write: %v", err)
			}
			b.release()
			_, err = c.Write([]byte("after"))
		} else {
			_, err = c.Write([]byte("direct"))
		}
		took := time.Since(start)
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Errorf("held %v: write to a peer not reading: %v, want a timeout", held, err)
		}
		if took > 2*time.Second {
			t.Errorf("held %v: the write gave up after %s, want about 100ms", held, took)
		}
		if held {
			// The flush's failure closed the connection.
			if _, err := client.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("peer read after the failed flush: %v, want EOF", err)
			}
		}
		_ = client.Close()
		_ = c.Close()
	}
}
