package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// sshHandshake makes one SSH connection to addr. The host must show one of
// the known keys; with a signer, root must also be let in with it. Without
// one, a refused login after a verified host key is still a live sshd.
func sshHandshake(ctx context.Context, addr string, known map[string]bool, fps []string, signer ssh.Signer) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	verified := false
	cfg := &ssh.ClientConfig{
		User: "root",
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if !known[string(key.Marshal())] {
				return &hostKeyError{got: ssh.FingerprintSHA256(key), want: strings.Join(fps, ", ")}
			}
			verified = true
			return nil
		},
	}
	if signer != nil {
		cfg.Auth = []ssh.AuthMethod{ssh.PublicKeys(signer)}
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		var hk *hostKeyError
		if errors.As(err, &hk) {
			return hk
		}
		if verified && signer == nil {
			return nil
		}
		return fmt.Errorf("ssh %s: %w", addr, err)
	}
	client := ssh.NewClient(c, chans, reqs)
	return client.Close()
}
