package filelock_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cooprhq/coopr/internal/filelock"
)

// Holders that remove the lock file before they let go never overlap
// with the waiters that were queued on the old file or open the new one.
func TestRemovedWhileHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "node.lock")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var inside, overlaps atomic.Int32
	done := make(chan error)
	for range 8 {
		go func() {
			for range 20 {
				unlock, err := filelock.Lock(ctx, path)
				if err != nil {
					done <- err
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				filelock.Remove(path)
				unlock()
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d times two holders at once", n)
	}
}

// A wait ends with its context.
func TestLockWaitEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := filelock.Lock(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := filelock.Lock(ctx, path); err == nil {
		t.Fatal("a second holder got the lock")
	}
}
