package sshready_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers/vm/sshready"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// Against a real sshd: its own host key and the authorized key are ready;
// another host key is a HostKeyError at once; a port nothing answers on
// waits until the context ends.
func TestWait(t *testing.T) {
	h := sshdtest.Start(t, sshdtest.Options{})
	other := sshdtest.Start(t, sshdtest.Options{})
	o := sshready.Options{Retry: 50 * time.Millisecond, Attempt: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sshready.Wait(ctx, h.Addr(), []string{h.HostKeyLine()}, string(h.Key.PEM), o); err != nil {
		t.Fatalf("ready host: %v", err)
	}
	err := sshready.Wait(ctx, h.Addr(), []string{other.HostKeyLine()}, string(h.Key.PEM), o)
	var hk *sshready.HostKeyError
	if !errors.As(err, &hk) || !strings.Contains(err.Error(), "host key mismatch") {
		t.Fatalf("another host key: %v, want a HostKeyError", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if err := sshready.Wait(short, addr, []string{h.HostKeyLine()}, "", o); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nothing listening: %v, want the context's end", err)
	}
}
