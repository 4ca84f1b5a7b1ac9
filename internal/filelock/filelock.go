// Package filelock is an exclusive lock between processes of one host: an
// flock on a file, which its holder may remove when what it guards is gone
// (a deleted node's lock) without letting two processes hold it at once.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// poll is how often a waiter tries again: flock has no wait with a
// deadline, and a context must be able to end the wait.
const poll = 50 * time.Millisecond

// Lock takes an exclusive lock on path, waiting until ctx ends. A waiter
// whose file its holder removed (Remove) has locked nothing: it notices
// the file it holds is no longer the one at path, and locks the new one.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) {
				break
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, fmt.Errorf("waiting for %s: %w", path, ctx.Err())
			case <-time.After(poll):
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		var held, now syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &held) == nil && syscall.Stat(path, &now) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
			return func() { f.Close() }, nil
		}
		f.Close()
	}
}

// Remove removes a lock file its caller holds, so that what it guarded
// leaves no file behind; waiters then lock a new file.
func Remove(path string) {
	_ = os.Remove(path)
}
