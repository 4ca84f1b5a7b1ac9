package graph

import (
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/graph/model"
	"github.com/cooprhq/coopr/server/control"
)

// hostKeys is a node's pinned host keys with their fingerprints.
func hostKeys(n *control.Node) ([]*model.HostKey, error) {
	lines, err := n.HostKeys()
	if err != nil {
		return nil, err
	}
	out := make([]*model.HostKey, 0, len(lines))
	for _, l := range lines {
		pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(l))
		if err != nil {
			return nil, fmt.Errorf("node %s: pinned host key %.40q: %w", n.ID, l, err)
		}
		key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk)))
		out = append(out, &model.HostKey{Type: pk.Type(), Key: key, Fingerprint: ssh.FingerprintSHA256(pk)})
	}
	return out, nil
}

// sshCommand is how a user logs in to a node: its SSH user at its access
// address (bind address when it has no other), or "" without an address.
func sshCommand(n *control.Node) (string, error) {
	if n.Deleted {
		return "", nil
	}
	ips, err := n.IPAddresses()
	if err != nil {
		return "", err
	}
	ip := ips["access_v4"]
	if ip == "" {
		ip = ips["bind_v4"]
	}
	if ip == "" {
		return "", nil
	}
	user := n.SSHUser
	if user == "" {
		user = "root"
	}
	return "ssh " + user + "@" + ip, nil
}
