package libvirt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/cooprhq/coopr/drivers"
)

// Defaults of the per-cluster networks' provider fields.
const (
	DefaultClusterRange  = "10.236.0.0/16"
	DefaultClusterPrefix = 24
)

// perCluster says whether the provider gives each cluster a network of its
// own: its network block names this driver.
func perCluster(t *drivers.Task) bool {
	typ, _ := t.Provider.Network["type"].(string)
	return typ == "libvirt"
}

// clusterNetName is the cluster's network, found again from the cluster
// id and the agent installation alone by ALLOCATE, CREATE and RELEASE.
func clusterNetName(instance, cluster string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(instance) + "\x00" + cluster))
	return "coopr-c-" + hex.EncodeToString(sum[:])[:10]
}

// clusterRange reads the provider's clusterRange and clusterPrefix.
func clusterRange(fields map[string]any) (netip.Prefix, int, error) {
	rs, bits := DefaultClusterRange, DefaultClusterPrefix
	if v, ok := fields["clusterRange"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return netip.Prefix{}, 0, fmt.Errorf("provider field clusterRange: want a string, got %T", v)
		}
		if s = strings.TrimSpace(s); s != "" {
			rs = s
		}
	}
	if v, ok := fields["clusterPrefix"]; ok && v != nil {
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
		case float64:
			s = strconv.Itoa(int(x))
		default:
			return netip.Prefix{}, 0, fmt.Errorf("provider field clusterPrefix: want a number, got %T", v)
		}
		if s != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(s, "/"))
			if err != nil {
				return netip.Prefix{}, 0, fmt.Errorf("provider field clusterPrefix %q: want a prefix length such as 24", s)
			}
			bits = n
		}
	}
	r, err := netip.ParsePrefix(rs)
	if err != nil || !r.Addr().Is4() || r.Bits() < 8 {
		return netip.Prefix{}, 0, fmt.Errorf("provider field clusterRange %q: want an IPv4 prefix such as %s", rs, DefaultClusterRange)
	}
	if bits < r.Bits() || bits < 16 || bits > 29 {
		return netip.Prefix{}, 0, fmt.Errorf("provider field clusterPrefix %d: want a length from /16 to /29, no shorter than clusterRange's /%d", bits, r.Bits())
	}
	return r.Masked(), bits, nil
}

// ensureClusterNetwork makes or finds the cluster's network: isolated (its
// nodes reach each other and the libvirt host; libvirt's firewall rejects
// what would go from one cluster's bridge to another's) or, with the
// provider's forward "route", routed (see ensureNetwork), on the first
// subnet of the range that usedPrefixes does not name.
func (c *conn) ensureClusterNetwork(ctx context.Context, s settings, cluster string, fields map[string]any) (*lan, error) {
	name := clusterNetName(s.StateDir, cluster)
	rng, bits, err := clusterRange(fields)
	if err != nil {
		return nil, terminal("%v", err)
	}
	if l, ok, err := c.lookupNetwork(name); err != nil {
		return nil, err
	} else if ok {
		return c.ensureNetwork(name, l.prefix, s.Forward)
	}
	used := c.usedPrefixes(ctx)
	step := uint32(1) << (32 - bits)
	first := addrUint(rng.Addr())
	count := uint32(1) << (bits - rng.Bits())
	for i := range count {
		p := netip.PrefixFrom(uintAddr(first+i*step), bits)
		if overlapsAny(p, used) {
			continue
		}
		l, err := c.ensureNetwork(name, p, s.Forward)
		if err == nil {
			if l.prefix != p {
				// Another agent made the cluster's network first.
				return l, nil
			}
			return l, nil
		}
		// The subnet is in use where this agent cannot see (a route on
		// the libvirt host): forget this definition, try the next.
		if n, lerr := c.lv.NetworkLookupByName(name); lerr == nil {
			if a, _ := c.lv.NetworkIsActive(n); a != 0 {
				return c.readNetwork(n)
			}
			_ = c.lv.NetworkUndefine(n)
		}
		c.log.Warn("cluster network subnet unusable, trying the next", "network", name, "subnet", p, "err", err)
		used = append(used, p)
	}
	return nil, fmt.Errorf("no free /%d subnet left in the provider's clusterRange %s for cluster %s's network", bits, rng, cluster)
}

// usedPrefixes are the subnets a cluster network must not take: every
// libvirt network's; this host's interfaces' (for a remote libvirt too:
// the agent reaches the nodes at their addresses, which a subnet of its
// own would route elsewhere); and over qemu+ssh the libvirt host's routes.
func (c *conn) usedPrefixes(ctx context.Context) []netip.Prefix {
	var out []netip.Prefix
	if nets, _, err := c.lv.ConnectListAllNetworks(1, 0); err == nil {
		for _, n := range nets {
			if l, err := c.readNetwork(n); err == nil {
				out = append(out, l.prefix)
			}
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
				out = append(out, p.Masked())
			}
		}
	}
	if c.ssh != nil {
		routes, err := c.ssh.hostPrefixes(ctx)
		if err != nil {
			c.log.Warn("cannot read the libvirt host's routes: cluster networks avoid only the subnets libvirt and this host know", "uri", c.uri, "err", err)
		}
		out = append(out, routes...)
	}
	return out
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if p.Overlaps(u) {
			return true
		}
	}
	return false
}

func addrUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func uintAddr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// releaseClusterNetwork removes the cluster's network; one that is gone is
// released, one that still has nodes (reservations) is a retryable
// failure: their DELETEs come first.
func (c *conn) releaseClusterNetwork(name string) (bool, error) {
	l, ok, err := c.lookupNetwork(name)
	if err != nil || !ok {
		return false, err
	}
	if len(l.hosts) > 0 {
		var names []string
		for _, h := range l.hosts {
			names = append(names, h.Name+" "+h.IP)
		}
		return false, fmt.Errorf("network %s still has nodes: %s", name, strings.Join(names, ", "))
	}
	if l.active {
		if err := c.lv.NetworkDestroy(l.net); err != nil && !notFound(err, golibvirt.ErrNoNetwork) {
			return false, fmt.Errorf("stop network %s: %w", name, err)
		}
	}
	if err := c.lv.NetworkUndefine(l.net); err != nil && !notFound(err, golibvirt.ErrNoNetwork) {
		return false, fmt.Errorf("undefine network %s: %w", name, err)
	}
	return true, nil
}

// NetworkDescriptor is the network driver named "libvirt", for providers
// of the libvirt vm driver whose network block says {"type": "libvirt"}.
func NetworkDescriptor() drivers.Descriptor {
	return drivers.Descriptor{Role: drivers.RoleNetwork, Name: "libvirt", Version: "1",
		Params: []drivers.Param{{Name: "clusterRange", Type: "text"}, {Name: "clusterPrefix", Type: "text"}}}
}

// NewNetwork returns the network driver "libvirt": NETWORK_ALLOCATE gives
// the task's cluster a libvirt network of its own, NETWORK_RELEASE
// removes it, both finding it from the cluster id as the CREATEs do;
// NETWORK_CONFIGURE and NETWORK_UNCONFIGURE are names's (the hosts
// driver). It reads the provider's provisioner fields as the vm driver
// does, over cfg.
func NewNetwork(cfg Config, names drivers.Driver, log *slog.Logger) drivers.Driver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &netDriver{vm: &driver{cfg: cfg.withDefaults(), log: log}, names: names}
}

type netDriver struct {
	vm    *driver
	names drivers.Driver
}

func (d *netDriver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if out == nil {
		out = nopOutput{}
	}
	switch t.TaskName {
	case "NETWORK_CONFIGURE", "NETWORK_UNCONFIGURE":
		return d.names.Run(ctx, t, out)
	case "NETWORK_ALLOCATE", "NETWORK_RELEASE":
	default:
		return drivers.Result{Status: statusFailed, Message: "libvirt: the libvirt network driver does not run " + t.TaskName, Retryable: &no}
	}
	cluster := clusterID(t)
	if cluster == "" {
		return drivers.Result{Status: statusNothingCreated, Message: "libvirt: the task names no cluster", Retryable: &no}
	}
	s, err := d.vm.settingsFor(t)
	if err != nil {
		return drivers.Result{Status: statusNothingCreated, Message: "libvirt: " + err.Error(), Retryable: &no}
	}
	c, err := connect(ctx, s.URI, d.vm.log)
	if err != nil {
		return failure(statusNothingCreated, "libvirt", err)
	}
	defer c.close()
	name := clusterNetName(s.StateDir, cluster)
	if t.TaskName == "NETWORK_RELEASE" {
		out.Status("releasing the cluster network", 10)
		released, err := c.releaseClusterNetwork(name)
		if err != nil {
			return failure(statusFailed, "release network", err)
		}
		msg := "cluster network " + name + " is already gone"
		if released {
			msg = "released cluster network " + name
		}
		d.vm.log.Info(msg, "cluster", cluster)
		return drivers.Result{Message: msg}
	}
	out.Status("allocating the cluster network", 10)
	l, err := c.ensureClusterNetwork(ctx, s, cluster, t.Provider.Provisioner)
	if err != nil {
		return failure(statusNothingCreated, "allocate network", err)
	}
	msg := fmt.Sprintf("cluster network %s: subnet %s, host %s, bridge %s", name, l.prefix, l.gw, l.bridge)
	d.vm.log.Info(msg, "cluster", cluster)
	return drivers.Result{Message: msg}
}
