package libvirt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// remoteURI says whether uri names a libvirt on another host: any URI
// with a host part, loopback included. The driver never reads or writes
// the pool's or the daemon's files for such a libvirt: volumes go up
// with StorageVolUpload, and only libvirt's answers say what is there.
func remoteURI(u *url.URL) bool { return u.Host != "" }

// defaultRemoteSocket is the libvirt socket on the far end of qemu+ssh.
const defaultRemoteSocket = "/var/run/libvirt/libvirt-sock"

// sshDialer is the qemu+ssh transport: an SSH connection to the libvirt
// host forwarding its libvirt socket (sshd's streamlocal forwarding, as
// libvirt's own "netcat" mode does without a netcat). go-libvirt has one
// too, but it never closes its SSH client (every task would leave one
// connection open to the host) and refuses known_hosts with this
// transport. The client stays for the conn's life: the host's routes are
// read over it (hostPrefixes).
type sshDialer struct {
	addr, socket string
	config       *ssh.ClientConfig

	mu     sync.Mutex
	client *ssh.Client
}

// newSSHDialer reads a qemu+ssh URI: user@host:port, and the query's
// keyfile (the private key; default ~/.ssh/id_ed25519, id_ecdsa, id_rsa,
// and the keys of SSH_AUTH_SOCK's agent), known_hosts (default
// ~/.ssh/known_hosts), no_verify=1 (any host key: for tests) and socket.
func newSSHDialer(u *url.URL) (*sshDialer, error) {
	q := u.Query()
	user := u.User.Username()
	if user == "" {
		user = "root"
	}
	port := u.Port()
	if port == "" {
		port = "22"
	}
	socket := q.Get("socket")
	if socket == "" {
		socket = defaultRemoteSocket
	}
	home, _ := os.UserHomeDir()
	var auth []ssh.AuthMethod
	var signers []ssh.Signer
	keyFiles := []string{q.Get("keyfile")}
	if keyFiles[0] == "" {
		keyFiles = nil
		for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			if p := filepath.Join(home, ".ssh", k); fileExists(p) {
				keyFiles = append(keyFiles, p)
			}
		}
	}
	for _, p := range keyFiles {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, terminal("provider field uri: keyfile: %v", err)
		}
		s, err := ssh.ParsePrivateKey(b)
		if err != nil {
			return nil, terminal("provider field uri: keyfile %s: %v (an unencrypted OpenSSH or PEM private key)", p, err)
		}
		signers = append(signers, s)
	}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		if ac, err := net.Dial("unix", sock); err == nil {
			if more, err := agent.NewClient(ac).Signers(); err == nil {
				signers = append(signers, more...)
			}
		}
	}
	if len(signers) == 0 {
		return nil, terminal("provider field uri %s: no SSH key to log in to the libvirt host with: add ?keyfile=/path/to/key", redactURI(u))
	}
	auth = append(auth, ssh.PublicKeys(signers...))
	var hostKey ssh.HostKeyCallback
	if nv, _ := strconv.Atoi(q.Get("no_verify")); nv != 0 {
		hostKey = ssh.InsecureIgnoreHostKey() //nolint:gosec // asked for by the URI
	} else {
		kh := q.Get("known_hosts")
		if kh == "" {
			kh = filepath.Join(home, ".ssh", "known_hosts")
		}
		cb, err := knownhosts.New(kh)
		if err != nil {
			return nil, terminal("provider field uri %s: known_hosts: %v: pin the libvirt host's key there (ssh-keyscan), or name a file with ?known_hosts=", redactURI(u), err)
		}
		hostKey = cb
	}
	return &sshDialer{
		addr:   net.JoinHostPort(u.Hostname(), port),
		socket: socket,
		config: &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: hostKey, Timeout: 20 * time.Second},
	}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Dial is go-libvirt's socket.Dialer: one SSH client, its forward of the
// libvirt socket as the connection. Closing the connection closes the
// client.
func (d *sshDialer) Dial() (net.Conn, error) {
	client, err := ssh.Dial("tcp", d.addr, d.config)
	if err != nil {
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) {
			return nil, terminal("ssh to libvirt host %s: its host key is not the one known_hosts pins (%v)", d.addr, err)
		}
		return nil, fmt.Errorf("ssh to libvirt host %s: %w", d.addr, err)
	}
	c, err := client.Dial("unix", d.socket)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("libvirt socket %s on %s (sshd must allow stream-local forwarding): %w", d.socket, d.addr, err)
	}
	d.mu.Lock()
	d.client = client
	d.mu.Unlock()
	return &clientConn{Conn: c, client: client}, nil
}

// close ends the SSH client, whatever go-libvirt did with the connection.
func (d *sshDialer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		d.client.Close()
		d.client = nil
	}
}

type clientConn struct {
	net.Conn
	client *ssh.Client
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	if cerr := c.client.Close(); err == nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	return err
}

// hostPrefixes are the IPv4 routes of the libvirt host at the far end of
// the SSH connection (`ip -4 route`): a cluster network must not take a
// subnet the host already reaches some other way. Other transports give
// no shell on the host; libvirt itself then refuses a network whose
// subnet is exactly one of the host's routes.
func (d *sshDialer) hostPrefixes(ctx context.Context) ([]netip.Prefix, error) {
	d.mu.Lock()
	client := d.client
	d.mu.Unlock()
	if client == nil {
		return nil, errors.New("no ssh connection")
	}
	s, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out bytes.Buffer
	s.Stdout = &out
	done := make(chan error, 1)
	go func() { done <- s.Run("ip -4 -o route show table all") }()
	select {
	case err = <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Second):
		return nil, errors.New("ip route: no answer in 10 s")
	}
	if err != nil {
		return nil, fmt.Errorf("ip route on the libvirt host: %w", err)
	}
	return parseRoutes(out.String()), nil
}

// parseRoutes reads `ip -4 -o route` lines: each one's destination, a
// prefix or one address; the default route and broadcast entries are no
// subnet of the host's.
func parseRoutes(text string) []netip.Prefix {
	var out []netip.Prefix
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		switch dst {
		case "local", "unicast":
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		case "default", "broadcast", "unreachable", "blackhole", "prohibit", "multicast", "throw", "nat", "anycast":
			continue
		}
		if p, err := netip.ParsePrefix(dst); err == nil && p.Addr().Is4() {
			if p.Bits() > 0 {
				out = append(out, p.Masked())
			}
			continue
		}
		if a, err := netip.ParseAddr(dst); err == nil && a.Is4() && !a.IsLoopback() {
			out = append(out, netip.PrefixFrom(a, 32))
		}
	}
	return out
}

// redactURI is the URI without a password, for messages.
func redactURI(u *url.URL) string { return u.Redacted() }
