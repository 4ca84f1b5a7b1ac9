package local

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cooprhq/coopr/internal/filelock"
)

// TestEnsureImageWaitsForBuilder: while another process holds the image's
// lock (building it), EnsureImage waits, then takes the finished image
// instead of building a second one.
func TestEnsureImageWaitsForBuilder(t *testing.T) {
	dir := t.TempDir()
	name := imageName + "-" + recipeHash()
	unlock, err := filelock.Lock(context.Background(), filepath.Join(dir, name+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		path string
		err  error
	}
	done := make(chan res, 1)
	go func() {
		p, err := EnsureImage(context.Background(), dir, nil)
		done <- res{p, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("EnsureImage returned while the builder held the lock: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	// The "other builder" finishes.
	rootfs := filepath.Join(dir, name, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	unlock()
	select {
	case r := <-done:
		if r.err != nil || r.path != rootfs {
			t.Fatalf("EnsureImage = %q, %v; want %q", r.path, r.err, rootfs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("EnsureImage still waits after the builder finished")
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(tmps) != 0 {
		t.Errorf("a waiter started its own build: %v", tmps)
	}
}

// TestEnsureImageHonoursContext: a waiter gives up when its task ends.
func TestEnsureImageHonoursContext(t *testing.T) {
	dir := t.TempDir()
	unlock, err := filelock.Lock(context.Background(), filepath.Join(dir, imageName+"-"+recipeHash()+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := EnsureImage(ctx, dir, nil); err == nil {
		t.Fatal("EnsureImage succeeded without an image and without the lock")
	}
}

// TestRemoveTreeNeverCrossesMounts: a crashed debootstrap leaves host file
// systems mounted in its tree; removing the tree must unmount them, not
// empty them.
func TestRemoveTreeNeverCrossesMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount")
	}
	precious := t.TempDir()
	if err := os.WriteFile(filepath.Join(precious, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	mp := filepath.Join(tree, "rootfs", "proc")
	if err := os.MkdirAll(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(precious, mp, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	defer syscall.Unmount(mp, syscall.MNT_DETACH)
	if err := removeTree(tree); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Errorf("%s still exists: %v", tree, err)
	}
	if _, err := os.Stat(filepath.Join(precious, "keep")); err != nil {
		t.Fatalf("removeTree went through the mount: %v", err)
	}
}
