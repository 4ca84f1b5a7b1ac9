package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cooprhq/coopr/internal/filelock"
)

// A cluster's network is a bridge of its own, with the host's address on
// it and a subnet carved from the configured range (Config.Subnet split
// into /Config.ClusterPrefix subnets). Nodes of different clusters share
// no link; the host routes nothing from one bridge to another (the
// coopr_local nftables table drops forwarded traffic in and out of every
// cluster bridge, whatever the host's ip_forward says), so a node reaches
// its own cluster's nodes and the host, and nothing else.
//
// Records live under the state dir, written under network.lock:
//
//	nets/<bridge>.json   the cluster, its bridge and its subnet

// clusterNet is one cluster's network as nets/<bridge>.json records it.
type clusterNet struct {
	ClusterID string    `json:"clusterId"`
	Bridge    string    `json:"bridge"`
	Subnet    string    `json:"subnet"` // the cluster's prefix, host first: 10.232.3.1/24
	Created   time.Time `json:"created"`
}

// bridgePrefix starts every cluster bridge's name; the nftables rules
// match it.
const bridgePrefix = "cpn"

// nftTable is the host's table that keeps cluster bridges apart.
const nftTable = "coopr_local"

// clusterBridge names a cluster's bridge: the state dir is in the hash for
// the reason it is in NodeName's (two installations, one cluster id).
func clusterBridge(stateDir, clusterID string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(stateDir) + "\x00net\x00" + clusterID))
	return bridgePrefix + hex.EncodeToString(sum[:])[:10]
}

func netsDir(stateDir string) string { return filepath.Join(stateDir, "nets") }

func netRecord(stateDir, bridge string) string {
	return filepath.Join(netsDir(stateDir), bridge+".json")
}

// netRange is where cluster subnets come from.
type netRange struct {
	prefix netip.Prefix // masked
	bits   int          // each cluster's prefix length
}

// parseRange reads the range and the cluster prefix length.
func parseRange(s string, bits int) (netRange, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netRange{}, fmt.Errorf("subnet %q: %w", s, err)
	}
	if !p.Addr().Is4() || p.Bits() < 8 || p.Bits() > 29 {
		return netRange{}, fmt.Errorf("subnet %q: want an IPv4 prefix from /8 to /29", s)
	}
	if bits < p.Bits() || bits < 16 || bits > 29 {
		return netRange{}, fmt.Errorf("clusterPrefix %d: want a prefix length from /%d (the subnet's) to /29, and at least /16", bits, max(p.Bits(), 16))
	}
	return netRange{prefix: p.Masked(), bits: bits}, nil
}

// clusters is how many cluster subnets the range holds.
func (r netRange) clusters() int { return 1 << (r.bits - r.prefix.Bits()) }

// nth is the range's i-th cluster subnet.
func (r netRange) nth(i int) netip.Prefix {
	a := r.prefix.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(i) << (32 - r.bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), r.bits)
}

// errNoNetwork is a range whose subnets are all taken; the CREATE or
// NETWORK_ALLOCATE that meets it created nothing.
var errNoNetwork = errors.New("no free cluster subnet left")

// loadNets reads every cluster network record of the state dir.
func loadNets(stateDir string) ([]clusterNet, error) {
	files, err := filepath.Glob(filepath.Join(netsDir(stateDir), bridgePrefix+"*.json"))
	if err != nil {
		return nil, err
	}
	var out []clusterNet
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		var n clusterNet
		if err := json.Unmarshal(b, &n); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, n)
	}
	return out, nil
}

// hostPrefixes are the IPv4 prefixes on this host's interfaces, by
// interface: a cluster subnet must not overlap one (another installation's
// bridge, a real network).
func hostPrefixes(ctx context.Context) (map[string][]netip.Prefix, error) {
	out, err := run(ctx, "ip", "-o", "-4", "addr", "show")
	if err != nil {
		return nil, fmt.Errorf("list host addresses: %w", err)
	}
	m := map[string][]netip.Prefix{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "inet" {
				if p, err := netip.ParsePrefix(f[i+1]); err == nil {
					m[strings.TrimSuffix(f[1], ":")] = append(m[strings.TrimSuffix(f[1], ":")], p.Masked())
				}
			}
		}
	}
	return m, nil
}

// ensureClusterNet returns the cluster's network, allocating a subnet and
// making the bridge when it has none: what NETWORK_ALLOCATE and every
// CREATE call, so that either may come first and a retry finds what the
// first made.
func ensureClusterNet(ctx context.Context, stateDir string, rng netRange, clusterID string) (network, error) {
	unlock, err := filelock.Lock(ctx, network{stateDir: stateDir}.lockPath())
	if err != nil {
		return network{}, err
	}
	defer unlock()
	return ensureClusterNetLocked(ctx, stateDir, rng, clusterID)
}

// ensureClusterAddr is ensureClusterNet and the node's address in one hold
// of network.lock: between the two a DELETE of the cluster's last other
// node would find the network unused and release it, leaving the node an
// address on a bridge that no longer exists.
func ensureClusterAddr(ctx context.Context, stateDir string, rng netRange, clusterID, node string) (network, netip.Addr, error) {
	unlock, err := filelock.Lock(ctx, network{stateDir: stateDir}.lockPath())
	if err != nil {
		return network{}, netip.Addr{}, err
	}
	defer unlock()
	nw, err := ensureClusterNetLocked(ctx, stateDir, rng, clusterID)
	if err != nil {
		return network{}, netip.Addr{}, err
	}
	addr, err := nw.allocateLocked(node)
	if err != nil {
		return network{}, netip.Addr{}, fmt.Errorf("address: %w", err)
	}
	return nw, addr, nil
}

// subnetLock orders subnet choices across every installation on the host:
// each state dir has a lock of its own, and a subnet recorded by one is
// seen by another only once its bridge carries the address.
const subnetLock = "/run/coopr-local/subnet.lock"

// ensureClusterNetLocked is ensureClusterNet for a caller holding
// network.lock.
func ensureClusterNetLocked(ctx context.Context, stateDir string, rng netRange, clusterID string) (network, error) {
	bridge := clusterBridge(stateDir, clusterID)
	cn, err := readNet(stateDir, bridge)
	if errors.Is(err, os.ErrNotExist) {
		// Chosen, recorded and put on the host's bridge under one
		// host-wide hold, so another installation choosing at the same
		// time sees it on the host and picks another.
		unlockHost, err := filelock.Lock(ctx, subnetLock)
		if err != nil {
			return network{}, err
		}
		defer unlockHost()
		if cn, err = allocateNet(ctx, stateDir, rng, clusterID, bridge); err != nil {
			return network{}, err
		}
	} else if err != nil {
		return network{}, err
	} else if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); errors.Is(err, os.ErrNotExist) {
		// Recorded, with no bridge (the host rebooted, or making it
		// failed): another installation may have taken the subnet since.
		unlockHost, err := filelock.Lock(ctx, subnetLock)
		if err != nil {
			return network{}, err
		}
		defer unlockHost()
		if err := subnetStillFree(ctx, cn); err != nil {
			return network{}, err
		}
	}
	sn, err := parseSubnet(cn.Subnet)
	if err != nil {
		return network{}, fmt.Errorf("%s: %w", netRecord(stateDir, bridge), err)
	}
	nw := network{stateDir: stateDir, bridge: cn.Bridge, subnet: sn}
	// The bridge first: a cleanup of another state dir drops the table
	// only when it finds no cluster bridge, so once this one is there the
	// rules written next stay. No node is on it before both are done.
	if err := nw.ensureBridgeLocked(ctx); err != nil {
		return network{}, err
	}
	if err := ensureIsolation(ctx, cn.Bridge); err != nil {
		return network{}, err
	}
	return nw, nil
}

// subnetStillFree says whether a recorded network whose bridge is gone
// can have it again: no other interface of the host holds its subnet.
// Called under subnetLock.
func subnetStillFree(ctx context.Context, cn clusterNet) error {
	p, err := netip.ParsePrefix(cn.Subnet)
	if err != nil {
		return fmt.Errorf("cluster network %s: subnet %q: %w", cn.Bridge, cn.Subnet, err)
	}
	onHost, err := hostPrefixes(ctx)
	if err != nil {
		return err
	}
	for ifc, ps := range onHost {
		for _, q := range ps {
			if ifc != cn.Bridge && q.Overlaps(p.Masked()) {
				return fmt.Errorf("cluster network %s: its subnet %s is taken on this host by %s (%s) since its bridge went: free it there, or delete the cluster and create it again", cn.Bridge, p.Masked(), ifc, q)
			}
		}
	}
	return nil
}

func readNet(stateDir, bridge string) (clusterNet, error) {
	b, err := os.ReadFile(netRecord(stateDir, bridge))
	if err != nil {
		return clusterNet{}, err
	}
	var cn clusterNet
	if err := json.Unmarshal(b, &cn); err != nil {
		return clusterNet{}, fmt.Errorf("%s: %w", netRecord(stateDir, bridge), err)
	}
	return cn, nil
}

// allocateNet picks the lowest subnet of the range that no record of the
// state dir holds and no interface of the host overlaps, and records it.
// Called under network.lock.
func allocateNet(ctx context.Context, stateDir string, rng netRange, clusterID, bridge string) (clusterNet, error) {
	nets, err := loadNets(stateDir)
	if err != nil {
		return clusterNet{}, err
	}
	var taken []netip.Prefix
	for _, n := range nets {
		if p, err := netip.ParsePrefix(n.Subnet); err == nil {
			taken = append(taken, p.Masked())
		}
	}
	onHost, err := hostPrefixes(ctx)
	if err != nil {
		return clusterNet{}, err
	}
	for _, ps := range onHost {
		taken = append(taken, ps...)
	}
	for i := 0; i < rng.clusters(); i++ {
		p := rng.nth(i)
		free := true
		for _, t := range taken {
			if t.Overlaps(p) {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		cn := clusterNet{ClusterID: clusterID, Bridge: bridge, Subnet: netip.PrefixFrom(p.Addr().Next(), p.Bits()).String(), Created: time.Now().UTC()}
		b, err := json.MarshalIndent(cn, "", "  ")
		if err != nil {
			return clusterNet{}, err
		}
		if err := os.MkdirAll(netsDir(stateDir), 0o755); err != nil {
			return clusterNet{}, err
		}
		if err := writeFileAtomic(netRecord(stateDir, bridge), b, 0o644); err != nil {
			return clusterNet{}, err
		}
		return cn, nil
	}
	return clusterNet{}, fmt.Errorf("range %s (/%d per cluster, %d clusters): %w", rng.prefix, rng.bits, rng.clusters(), errNoNetwork)
}

// releaseClusterNet removes the cluster's bridge, its address book and its
// record. Nodes still on it are an error: their DELETEs come first. A
// network already gone is released.
func releaseClusterNet(ctx context.Context, stateDir, clusterID string) (released bool, err error) {
	nw := network{stateDir: stateDir}
	unlock, err := filelock.Lock(ctx, nw.lockPath())
	if err != nil {
		return false, err
	}
	defer unlock()
	released, err = removeNetLocked(ctx, stateDir, clusterBridge(stateDir, clusterID), false)
	if err != nil || !released {
		return released, err
	}
	// The host's isolation table goes with the last cluster bridge on it,
	// not only at cleanup.
	if err := removeIsolation(ctx); err != nil {
		return true, err
	}
	return true, nil
}

// removeNetLocked removes one cluster network under network.lock; with
// force it removes it whatever addresses its book still holds (the nodes
// are gone or being removed).
func removeNetLocked(ctx context.Context, stateDir, bridge string, force bool) (bool, error) {
	addrDir := filepath.Join(stateDir, "addrs", bridge)
	if !force {
		if held, _ := filepath.Glob(filepath.Join(addrDir, "*")); len(held) > 0 {
			var owners []string
			for _, h := range held {
				b, _ := os.ReadFile(h)
				owners = append(owners, string(b))
			}
			return false, fmt.Errorf("network %s still has nodes: %s", bridge, strings.Join(owners, ", "))
		}
	}
	existed := false
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
		existed = true
		if _, err := run(ctx, "ip", "link", "del", bridge); err != nil {
			return false, fmt.Errorf("remove bridge %s: %w", bridge, err)
		}
	}
	forgetBridge(ctx, bridge)
	if err := os.RemoveAll(addrDir); err != nil {
		return false, err
	}
	if err := os.Remove(netRecord(stateDir, bridge)); err == nil {
		existed = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	return existed, nil
}

// netInUse says whether any node of the state dir holds an address on the
// bridge.
func netInUse(stateDir, bridge string) bool {
	held, _ := filepath.Glob(filepath.Join(stateDir, "addrs", bridge, "*"))
	return len(held) > 0
}

// ensureIsolation makes the host's nftables table that drops every
// forwarded packet entering or leaving a cluster bridge, except those that
// stay on one bridge (the host passes bridged traffic through its forward
// hook when br_netfilter is loaded, as libvirt and docker hosts have it):
// the set "same" holds "bridge . bridge" for every cluster bridge. One
// table serves every installation on the host (the rules name the bridges
// by prefix); writing it again replaces the rules and keeps the set, in
// one transaction, so concurrent agents agree.
func ensureIsolation(ctx context.Context, bridge string) error {
	rules := fmt.Sprintf(`add table inet %[1]s
add set inet %[1]s same { type ifname . ifname; }
add chain inet %[1]s forward { type filter hook forward priority filter - 10; policy accept; }
flush chain inet %[1]s forward
add rule inet %[1]s forward iifname . oifname @same accept
add rule inet %[1]s forward iifname "%[2]s*" drop
add rule inet %[1]s forward oifname "%[2]s*" drop
add element inet %[1]s same { "%[3]s" . "%[3]s" }
`, nftTable, bridgePrefix, bridge)
	unlock, err := filelock.Lock(ctx, nftLock)
	if err != nil {
		return err
	}
	defer unlock()
	if err := nftScript(ctx, rules); err != nil {
		return fmt.Errorf("isolate cluster networks (nftables): %w", err)
	}
	return nil
}

// nftLock orders the isolation table's writes and its removal across
// every installation on the host (state dirs have locks of their own).
const nftLock = "/run/coopr-local/nft.lock"

// forgetBridge takes a removed bridge out of the isolation table's set;
// a table or element already gone is fine.
func forgetBridge(ctx context.Context, bridge string) {
	_, _ = run(ctx, "nft", "delete", "element", "inet", nftTable, "same", fmt.Sprintf(`{ "%[1]s" . "%[1]s" }`, bridge))
}

func nftScript(ctx context.Context, script string) error {
	f, err := os.CreateTemp("", "coopr-nft-*.conf")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(script); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	_, err = run(ctx, "nft", "-f", f.Name())
	return err
}

// removeIsolation drops the table once no cluster bridge is left on the
// host, whoever's.
func removeIsolation(ctx context.Context) error {
	unlock, err := filelock.Lock(ctx, nftLock)
	if err != nil {
		return err
	}
	defer unlock()
	left, _ := filepath.Glob(filepath.Join("/sys/class/net", bridgePrefix+"*"))
	if len(left) > 0 {
		return nil
	}
	if _, err := run(ctx, "nft", "list", "table", "inet", nftTable); err != nil {
		return nil // no table
	}
	if _, err := run(ctx, "nft", "delete", "table", "inet", nftTable); err != nil {
		return fmt.Errorf("remove nftables table %s: %w", nftTable, err)
	}
	return nil
}

// ClusterBridge is the bridge the cluster's network has, or would have,
// in stateDir.
func ClusterBridge(stateDir, clusterID string) string {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		abs = stateDir
	}
	return clusterBridge(abs, clusterID)
}

// ClusterNetwork is the cluster's network as stateDir records it: its
// bridge and its subnet with the host's address ("10.232.3.1/24");
// os.ErrNotExist when it has none.
func ClusterNetwork(stateDir, clusterID string) (bridge, hostCIDR string, err error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", "", err
	}
	cn, err := readNet(abs, clusterBridge(abs, clusterID))
	if err != nil {
		return "", "", err
	}
	return cn.Bridge, cn.Subnet, nil
}
