// Package sshready waits for a machine a vm driver made to answer SSH as
// that machine: with one of the host keys the driver gave it, and letting
// root in with the cluster's key. The local and libvirt drivers' CONFIRM
// use it; it is not the SSH layer of tasks (remote/), which pins and pools.
package sshready

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// HostKeyError is the machine showing a host key it was not given: a
// retry will not change it.
type HostKeyError struct{ Got, Want string }

func (e *HostKeyError) Error() string {
	return fmt.Sprintf("host key mismatch: the node shows %s, its keys are %s", e.Got, e.Want)
}

// Options are how often Wait tries, and how long one try may take.
type Options struct {
	Retry   time.Duration
	Attempt time.Duration
}

// Wait tries addr until its sshd shows one of hostKeys (authorized_keys
// lines) and, given privateKey, lets root in with it; until ctx ends, or
// at once on a *HostKeyError. Without a private key, a refused login after
// a verified host key is still a live sshd.
func Wait(ctx context.Context, addr string, hostKeys []string, privateKey string, o Options) error {
	known := map[string]bool{}
	var fps []string
	for _, line := range hostKeys {
		k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil {
			return fmt.Errorf("recorded host key: %w", err)
		}
		known[string(k.Marshal())] = true
		fps = append(fps, ssh.FingerprintSHA256(k))
	}
	var signer ssh.Signer
	if privateKey != "" {
		s, err := ssh.ParsePrivateKey([]byte(privateKey))
		if err != nil {
			return fmt.Errorf("secrets.ssh.privateKey: %w", err)
		}
		signer = s
	}
	for {
		err := handshake(ctx, addr, known, fps, signer, o.Attempt)
		if err == nil {
			return nil
		}
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-time.After(o.Retry):
		}
	}
}

// handshake makes one SSH connection to addr.
func handshake(ctx context.Context, addr string, known map[string]bool, fps []string, signer ssh.Signer, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
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
				return &HostKeyError{Got: ssh.FingerprintSHA256(key), Want: strings.Join(fps, ", ")}
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
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return hk
		}
		if verified && signer == nil {
			return nil
		}
		return fmt.Errorf("ssh %s: %w", addr, err)
	}
	return ssh.NewClient(c, chans, reqs).Close()
}
