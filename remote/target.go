// Package remote is coopr's SSH layer: every host access of the node, network
// and automator drivers goes through it
// (docs/task-protocol.md#agents-and-slots). It pins and verifies host keys,
// keeps one pooled connection per target with a bounded number of sessions,
// runs commands through /bin/sh -c with a clean environment and writes files
// over SFTP.
package remote

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Target is where and how to reach a host.
type Target struct {
	Host   string
	Port   int
	User   string
	Signer ssh.Signer
	// HostKeys are the pinned host keys in authorized_keys format; empty
	// means trust on first use (the presented key is reported by
	// Conn.HostKey so that it can be pinned).
	HostKeys []string
}

// Addr is host:port.
func (t Target) Addr() string {
	port := t.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(port))
}

func (t Target) String() string { return t.User + "@" + t.Addr() }

// ErrTarget marks a node whose payload cannot name an SSH target: no
// address, no key, an unreadable key or pin. A retry with the same facts
// cannot fix it.
var ErrTarget = errors.New("no ssh target")

// ErrNoAddress is an ErrTarget for a node with no address yet: the machine
// was never confirmed (or never created), so nothing on it can need undoing.
var ErrNoAddress = errors.New("no address")

// NoAddress is an ErrNoAddress (and so an ErrTarget) saying why.
func NoAddress(msg string) error { return &targetError{kind: ErrNoAddress, msg: msg} }

// targetError is an ErrTarget of a particular kind.
type targetError struct {
	kind error
	msg  string
}

func (e *targetError) Error() string        { return ErrTarget.Error() + ": " + e.msg }
func (e *targetError) Is(target error) bool { return target == ErrTarget || target == e.kind }

// ParseHostKeys reads pinned keys in authorized_keys format (one key per
// entry; entries may hold several lines).
func ParseHostKeys(lines []string) ([]ssh.PublicKey, error) {
	var out []ssh.PublicKey
	for _, entry := range lines {
		for line := range strings.SplitSeq(entry, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
			if err != nil {
				return nil, fmt.Errorf("pinned host key %.40q: %w", line, err)
			}
			out = append(out, k)
		}
	}
	return out, nil
}

// AuthorizedKey formats k as one authorized_keys line without a newline.
func AuthorizedKey(k ssh.PublicKey) string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}
