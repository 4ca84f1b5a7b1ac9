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

	"github.com/cooprhq/coopr/drivers"
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

// TargetOf resolves the SSH target of node n in task t by the rules of
// docs/drivers.md: host, port and user from facts.vm when the vm driver
// reported them, else the node's addresses and sshuser; the vm driver's key
// before the cluster key; node.hostKeys before vm.hostKeys.
func TargetOf(t *drivers.Task, n *drivers.Node) (Target, error) {
	if n == nil {
		return Target{}, fmt.Errorf("%w: the task has no node", ErrTarget)
	}
	name := n.Hostname
	if name == "" {
		name = n.ID
	}
	vm := namespace(n.Facts, "vm")
	var tg Target

	tg.Host = str(vm["sshHost"])
	if tg.Host == "" {
		tg.Host = n.IPAddresses["access_v4"]
	}
	if tg.Host == "" {
		tg.Host = n.IPAddresses["bind_v4"]
	}
	if tg.Host == "" {
		return Target{}, &targetError{kind: ErrNoAddress, msg: fmt.Sprintf("node %s has no address: CONFIRM has not reported ipaddresses.access_v4", name)}
	}

	tg.Port = 22
	if p, ok := vm["sshPort"]; ok && p != nil {
		port, err := intOf(p)
		if err != nil || port <= 0 || port > 65535 {
			return Target{}, fmt.Errorf("%w: node %s: facts vm.sshPort %v is not a port", ErrTarget, name, p)
		}
		tg.Port = port
	}

	tg.User = str(vm["sshUser"])
	if tg.User == "" {
		tg.User = n.SSHUser
	}
	if tg.User == "" {
		tg.User = "root"
	}

	keyNS := "vm"
	pemKey := str(t.Secrets["vm"]["privateKey"])
	if pemKey == "" {
		keyNS, pemKey = "ssh", str(t.Secrets["ssh"]["privateKey"])
	}
	if pemKey == "" {
		return Target{}, fmt.Errorf("%w: node %s has no SSH key: the task carries neither secrets.vm.privateKey nor secrets.ssh.privateKey", ErrTarget, name)
	}
	signer, err := ssh.ParsePrivateKey([]byte(pemKey))
	if err != nil {
		// The parser's message never quotes the key, but say only which
		// secret was bad to be sure nothing of it reaches a log.
		return Target{}, fmt.Errorf("%w: node %s: secrets.%s.privateKey is not a usable private key", ErrTarget, name, keyNS)
	}
	tg.Signer = signer

	keys := strs(namespace(n.Facts, "node")["hostKeys"])
	if len(keys) == 0 {
		keys = strs(vm["hostKeys"])
	}
	if _, err := ParseHostKeys(keys); err != nil {
		return Target{}, fmt.Errorf("%w: node %s: %w", ErrTarget, name, err)
	}
	tg.HostKeys = keys
	return tg, nil
}

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

func namespace(facts map[string]any, ns string) map[string]any {
	m, _ := facts[ns].(map[string]any)
	return m
}

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

// strs accepts what JSON decoding and Go callers produce for a list of
// keys: []any, []string, or one string of lines.
func strs(v any) []string {
	switch v := v.(type) {
	case string:
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return []string{v}
	case []string:
		return v
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func intOf(v any) (int, error) {
	switch v := v.(type) {
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case float64:
		if v != float64(int(v)) {
			return 0, fmt.Errorf("%v is not an integer", v)
		}
		return int(v), nil
	case string:
		return strconv.Atoi(strings.TrimSpace(v))
	case interface{ Int64() (int64, error) }: // json.Number
		n, err := v.Int64()
		return int(n), err
	}
	return 0, fmt.Errorf("%T is not a number", v)
}
