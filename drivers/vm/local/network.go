package local

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/cooprhq/coopr/internal/filelock"
)

// subnet is the nodes' network: the host's address on the bridge and the
// range nodes get theirs from.
type subnet struct {
	prefix netip.Prefix // masked
	host   netip.Addr
}

// parseSubnet reads "10.231.0.0/24" (the host takes the first address) or
// "10.231.0.1/24" (the host takes the one named).
func parseSubnet(s string) (subnet, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return subnet{}, fmt.Errorf("subnet %q: %w", s, err)
	}
	if !p.Addr().Is4() || p.Bits() < 16 || p.Bits() > 29 {
		return subnet{}, fmt.Errorf("subnet %q: want an IPv4 prefix from /16 to /29", s)
	}
	n := subnet{prefix: p.Masked(), host: p.Addr()}
	if n.host == n.prefix.Addr() {
		n.host = n.host.Next()
	}
	if n.host == n.broadcast() {
		return subnet{}, fmt.Errorf("subnet %q: the host address is the broadcast address", s)
	}
	return n, nil
}

func (n subnet) broadcast() netip.Addr {
	a := n.prefix.Addr().As4()
	host := uint32(1)<<(32-n.prefix.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// hostCIDR is the host's address on the bridge, with the prefix length.
func (n subnet) hostCIDR() string { return fmt.Sprintf("%s/%d", n.host, n.prefix.Bits()) }

// nodeAddrs are the addresses nodes may get, lowest first.
func (n subnet) nodeAddrs() []netip.Addr {
	var out []netip.Addr
	for a := n.prefix.Addr().Next(); a != n.broadcast(); a = a.Next() {
		if a != n.host {
			out = append(out, a)
		}
	}
	return out
}

// errNoAddress is a full subnet; the CREATE that meets it created nothing.
var errNoAddress = errors.New("no free address left")

// network is the bridge and the address book of one state dir.
type network struct {
	stateDir string
	bridge   string
	subnet   subnet
}

func (nw network) lockPath() string { return filepath.Join(nw.stateDir, "network.lock") }

// addrDir holds one file per allocated address naming its node: creating
// and removing files under the network lock is the allocation, shared by
// every agent using this state dir.
func (nw network) addrDir() string { return filepath.Join(nw.stateDir, "addrs", nw.bridge) }

// ensureBridgeLocked creates the bridge with the host's address when it
// is missing; the caller holds network.lock. Nodes get no default route
// and the host no NAT: node traffic stays on this machine.
func (nw network) ensureBridgeLocked(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", nw.bridge)); errors.Is(err, os.ErrNotExist) {
		if _, err := run(ctx, "ip", "link", "add", nw.bridge, "type", "bridge"); err != nil {
			return fmt.Errorf("create bridge: %w", err)
		}
	} else if _, err := os.Stat(filepath.Join("/sys/class/net", nw.bridge, "bridge")); err != nil {
		return fmt.Errorf("%s exists and is not a bridge", nw.bridge)
	}
	out, err := run(ctx, "ip", "-o", "-4", "addr", "show", "dev", nw.bridge)
	if err != nil {
		return fmt.Errorf("bridge address: %w", err)
	}
	if !strings.Contains(out, " "+nw.subnet.hostCIDR()+" ") {
		if _, err := run(ctx, "ip", "addr", "add", nw.subnet.hostCIDR(), "dev", nw.bridge); err != nil {
			return fmt.Errorf("bridge address: %w", err)
		}
	}
	if _, err := run(ctx, "ip", "link", "set", nw.bridge, "up"); err != nil {
		return fmt.Errorf("bridge up: %w", err)
	}
	return nil
}

// allocateLocked returns the node's address, the one it already has if
// any; the caller holds network.lock.
func (nw network) allocateLocked(node string) (netip.Addr, error) {
	if err := os.MkdirAll(nw.addrDir(), 0o755); err != nil {
		return netip.Addr{}, err
	}
	taken := map[netip.Addr]bool{}
	entries, err := os.ReadDir(nw.addrDir())
	if err != nil {
		return netip.Addr{}, err
	}
	for _, e := range entries {
		a, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue
		}
		owner, _ := os.ReadFile(filepath.Join(nw.addrDir(), e.Name()))
		if string(owner) == node {
			return a, nil
		}
		taken[a] = true
	}
	for _, a := range nw.subnet.nodeAddrs() {
		if !taken[a] {
			if err := writeFileAtomic(filepath.Join(nw.addrDir(), a.String()), []byte(node), 0o644); err != nil {
				return netip.Addr{}, err
			}
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("subnet %s: %w", nw.subnet.prefix, errNoAddress)
}

// release frees every address the node holds.
func (nw network) release(ctx context.Context, node string) error {
	unlock, err := filelock.Lock(ctx, nw.lockPath())
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := os.ReadDir(nw.addrDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(nw.addrDir(), e.Name())
		if owner, _ := os.ReadFile(p); string(owner) == node {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// netnsPath is where `ip netns` binds a node's network namespace.
func netnsPath(node string) string { return filepath.Join("/run/netns", node) }

// ensureNodeNet gives the node a network namespace holding one end of a
// veth pair (named eth0, with the node's address) whose other end is on
// the bridge. The namespace is configured from the host before boot, so the
// node has its address without any network manager inside.
func (nw network) ensureNodeNet(ctx context.Context, n *nodeState) error {
	ns := n.Name
	if _, err := os.Stat(netnsPath(ns)); errors.Is(err, os.ErrNotExist) {
		if _, err := run(ctx, "ip", "netns", "add", ns); err != nil {
			return fmt.Errorf("netns: %w", err)
		}
	}
	if _, err := run(ctx, "ip", "-n", ns, "link", "show", "eth0"); err != nil {
		// A half-made pair from an interrupted CREATE: start over.
		_, _ = run(ctx, "ip", "link", "del", n.Veth)
		_, _ = run(ctx, "ip", "-n", ns, "link", "del", n.vethPeer())
		if _, err := run(ctx, "ip", "link", "add", n.Veth, "type", "veth", "peer", "name", n.vethPeer(), "netns", ns); err != nil {
			return fmt.Errorf("veth: %w", err)
		}
		if _, err := run(ctx, "ip", "-n", ns, "link", "set", n.vethPeer(), "name", "eth0"); err != nil {
			return fmt.Errorf("veth: %w", err)
		}
	}
	steps := [][]string{
		{"ip", "link", "set", n.Veth, "master", nw.bridge},
		{"ip", "link", "set", n.Veth, "up"},
		{"ip", "-n", ns, "addr", "replace", fmt.Sprintf("%s/%d", n.Address, nw.subnet.prefix.Bits()), "dev", "eth0"},
		{"ip", "-n", ns, "link", "set", "eth0", "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if _, err := run(ctx, s[0], s[1:]...); err != nil {
			return fmt.Errorf("node network: %w", err)
		}
	}
	return nil
}

// removeNodeNet deletes the node's veth and namespace; either being gone
// already is fine.
func removeNodeNet(ctx context.Context, node, veth string) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", veth)); err == nil {
		if _, err := run(ctx, "ip", "link", "del", veth); err != nil {
			return fmt.Errorf("remove veth: %w", err)
		}
	}
	if _, err := os.Stat(netnsPath(node)); err == nil {
		if _, err := run(ctx, "ip", "netns", "del", node); err != nil {
			return fmt.Errorf("remove netns: %w", err)
		}
	}
	return nil
}
