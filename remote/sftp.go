package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/pkg/sftp"
)

// Upload writes r to path on the host over SFTP, as the SSH user: parent
// directories are created, the data goes to a temporary file beside path
// which is renamed over it, so readers see the old or the new file, never
// a part. Files only root may write need a root user or Run with Sudo and
// Stdin instead.
func (c *Conn) Upload(ctx context.Context, dst string, r io.Reader, mode os.FileMode) error {
	s, release, err := c.session(ctx, c.sem)
	if err != nil {
		return err
	}
	defer release()
	defer s.Close()
	fail := func(step string, err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("ssh %s: upload %s: %s: %w", c.target, dst, step, context.Cause(ctx))
		}
		return fmt.Errorf("ssh %s: upload %s: %s: %w", c.target, dst, step, err)
	}
	w, err := s.StdinPipe()
	if err != nil {
		return fail("stdin", err)
	}
	rd, err := s.StdoutPipe()
	if err != nil {
		return fail("stdout", err)
	}
	if err := s.RequestSubsystem("sftp"); err != nil {
		return fail("start sftp", err)
	}
	cl, err := sftp.NewClientPipe(rd, w)
	if err != nil {
		return fail("start sftp", err)
	}
	defer cl.Close()
	// SFTP calls take no context: closing the session unblocks them.
	stop := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stop()

	if err := cl.MkdirAll(path.Dir(dst)); err != nil {
		return fail("create directory", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(dst), "."+path.Base(dst)+".coopr-"+hex.EncodeToString(rnd[:]))
	f, err := cl.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return fail("create temporary file", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = cl.Remove(tmp)
		}
	}()
	// Restrict before writing so the data is never readable by others.
	if err := f.Chmod(mode.Perm()); err != nil {
		return fail("chmod", err)
	}
	if _, err := io.Copy(f, r); err != nil {
		return fail("write", err)
	}
	if err := f.Close(); err != nil {
		return fail("write", err)
	}
	if err := cl.PosixRename(tmp, dst); err != nil {
		return fail("rename", err)
	}
	ok = true
	return nil
}

// Upload writes r to path on t (see Conn.Upload).
func (p *Pool) Upload(ctx context.Context, t Target, dst string, r io.Reader, mode os.FileMode) error {
	return p.withConn(ctx, t, func(c *Conn) error { return c.Upload(ctx, dst, r, mode) })
}
