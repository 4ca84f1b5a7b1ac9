package drivers

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/remote"
)

// TargetOf resolves the SSH target, for the drivers that log in to nodes, of node n in task t by the rules of
// docs/drivers.md: host, port and user from facts.vm when the vm driver
// reported them, else the node's addresses and sshuser; the vm driver's key
// before the cluster key; node.hostKeys before vm.hostKeys.
func TargetOf(t *Task, n *Node) (remote.Target, error) {
	if n == nil {
		return remote.Target{}, fmt.Errorf("%w: the task has no node", remote.ErrTarget)
	}
	name := n.Hostname
	if name == "" {
		name = n.ID
	}
	vm := namespace(n.Facts, "vm")
	var tg remote.Target

	tg.Host = str(vm["sshHost"])
	if tg.Host == "" {
		tg.Host = n.IPAddresses["access_v4"]
	}
	if tg.Host == "" {
		tg.Host = n.IPAddresses["bind_v4"]
	}
	if tg.Host == "" {
		return remote.Target{}, remote.NoAddress(fmt.Sprintf("node %s has no address: CONFIRM has not reported ipaddresses.access_v4", name))
	}

	tg.Port = 22
	if p, ok := vm["sshPort"]; ok && p != nil {
		port, err := intOf(p)
		if err != nil || port <= 0 || port > 65535 {
			return remote.Target{}, fmt.Errorf("%w: node %s: facts vm.sshPort %v is not a port", remote.ErrTarget, name, p)
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
		return remote.Target{}, fmt.Errorf("%w: node %s has no SSH key: the task carries neither secrets.vm.privateKey nor secrets.ssh.privateKey", remote.ErrTarget, name)
	}
	signer, err := ssh.ParsePrivateKey([]byte(pemKey))
	if err != nil {
		// The parser's message never quotes the key, but say only which
		// secret was bad to be sure nothing of it reaches a log.
		return remote.Target{}, fmt.Errorf("%w: node %s: secrets.%s.privateKey is not a usable private key", remote.ErrTarget, name, keyNS)
	}
	tg.Signer = signer

	keys := strs(namespace(n.Facts, "node")["hostKeys"])
	if len(keys) == 0 {
		keys = strs(vm["hostKeys"])
	}
	if _, err := remote.ParseHostKeys(keys); err != nil {
		return remote.Target{}, fmt.Errorf("%w: node %s: %w", remote.ErrTarget, name, err)
	}
	tg.HostKeys = keys
	return tg, nil
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
