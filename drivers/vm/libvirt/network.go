package libvirt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/netip"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// Networks coopr defines have bridges named bridgePrefix + a hash of the
// network's name: that is how cleanup tells them from the host's own.
const bridgePrefix = "cooprv"

func bridgeOf(network string) string {
	sum := sha256.Sum256([]byte(network))
	return bridgePrefix + hex.EncodeToString(sum[:])[:8]
}

// netXML is the part of a network's XML the driver reads.
type netXML struct {
	Name   string `xml:"name"`
	Bridge struct {
		Name string `xml:"name,attr"`
	} `xml:"bridge"`
	Forward *struct {
		Mode string `xml:"mode,attr"`
	} `xml:"forward"`
	IPs []struct {
		Address string `xml:"address,attr"`
		Netmask string `xml:"netmask,attr"`
		Prefix  string `xml:"prefix,attr"`
		Family  string `xml:"family,attr"`
		DHCP    *struct {
			Hosts []dhcpHost `xml:"host"`
		} `xml:"dhcp"`
	} `xml:"ip"`
}

type dhcpHost struct {
	MAC  string `xml:"mac,attr"`
	Name string `xml:"name,attr"`
	IP   string `xml:"ip,attr"`
}

func (h dhcpHost) xml() string {
	return fmt.Sprintf("<host mac='%s' name='%s' ip='%s'/>", xmlEscape(h.MAC), xmlEscape(h.Name), xmlEscape(h.IP))
}

// lan is a libvirt network's IPv4 side: the host's address and prefix,
// and the reserved addresses (one per node).
type lan struct {
	net    golibvirt.Network
	name   string
	bridge string
	gw     netip.Addr
	prefix netip.Prefix
	hosts  []dhcpHost
	active bool
}

// Forward modes of the networks coopr defines (the provider's forward).
const (
	// ForwardIsolated: nodes reach each other and the libvirt host,
	// nothing else; only the libvirt host (the agent's, for a local
	// libvirt) reaches them.
	ForwardIsolated = "isolated"
	// ForwardRoute: libvirt forwards between the network and the rest
	// of the host's networks, unNATed: an agent on another host reaches
	// the nodes when its host routes the subnet (or the provider's
	// clusterRange) to the libvirt host. What a remote libvirt needs.
	ForwardRoute = "route"
)

// ensureNetwork returns the network, defining one on subnet (host at its
// first address) forwarding as forward says if there is none of that
// name, and starting it if it is stopped. A network that exists is used
// as it is.
func (c *conn) ensureNetwork(name string, subnet netip.Prefix, forward string) (*lan, error) {
	n, err := c.lv.NetworkLookupByName(name)
	if notFound(err, golibvirt.ErrNoNetwork) {
		gw := subnet.Addr().Next()
		last := lastAddr(subnet).Prev()
		fwd := ""
		if forward == ForwardRoute {
			fwd = "\n  <forward mode='route'/>"
		}
		def := fmt.Sprintf(`<network>
  <name>%s</name>%s
  <bridge name='%s' stp='off'/>
  <ip address='%s' prefix='%d'>
    <dhcp><range start='%s' end='%s'/></dhcp>
  </ip>
</network>`, xmlEscape(name), fwd, bridgeOf(name), gw, subnet.Bits(), gw.Next(), last)
		n, err = c.lv.NetworkDefineXML(def)
		if err != nil {
			n2, err2 := c.lv.NetworkLookupByName(name)
			if err2 != nil {
				return nil, fmt.Errorf("define network %s: %w", name, err)
			}
			n = n2
		} else {
			_ = c.lv.NetworkSetAutostart(n, 1)
			c.log.Info("defined libvirt network", "network", name, "subnet", subnet, "forward", forward)
		}
	} else if err != nil {
		return nil, fmt.Errorf("network %s: %w", name, err)
	}
	active, err := c.lv.NetworkIsActive(n)
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", name, err)
	}
	if active == 0 {
		if err := c.lv.NetworkCreate(n); err != nil {
			if a, _ := c.lv.NetworkIsActive(n); a == 0 {
				return nil, fmt.Errorf("start network %s: %w", name, err)
			}
		}
	}
	return c.readNetwork(n)
}

// lookupNetwork is the network if it exists.
func (c *conn) lookupNetwork(name string) (*lan, bool, error) {
	n, err := c.lv.NetworkLookupByName(name)
	if notFound(err, golibvirt.ErrNoNetwork) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("network %s: %w", name, err)
	}
	l, err := c.readNetwork(n)
	return l, err == nil, err
}

func (c *conn) readNetwork(n golibvirt.Network) (*lan, error) {
	desc, err := c.lv.NetworkGetXMLDesc(n, 0)
	if err != nil {
		return nil, fmt.Errorf("network %s: %w", n.Name, err)
	}
	var x netXML
	if err := xml.Unmarshal([]byte(desc), &x); err != nil {
		return nil, fmt.Errorf("network %s: %w", n.Name, err)
	}
	active, _ := c.lv.NetworkIsActive(n)
	l := &lan{net: n, name: n.Name, bridge: x.Bridge.Name, active: active != 0}
	for _, ip := range x.IPs {
		if ip.Family != "" && ip.Family != "ipv4" {
			continue
		}
		a, err := netip.ParseAddr(ip.Address)
		if err != nil || !a.Is4() {
			continue
		}
		bits := -1
		if ip.Prefix != "" {
			fmt.Sscanf(ip.Prefix, "%d", &bits)
		} else if m, err := netip.ParseAddr(ip.Netmask); err == nil {
			bits = maskBits(m)
		}
		if bits < 0 {
			continue
		}
		l.gw, l.prefix = a, netip.PrefixFrom(a, bits).Masked()
		if ip.DHCP != nil {
			l.hosts = ip.DHCP.Hosts
		}
		break
	}
	if !l.gw.IsValid() {
		return nil, terminal("network %s has no IPv4 address on the host: give it one (<ip address=... prefix=...>) or name another network", n.Name)
	}
	return l, nil
}

func maskBits(m netip.Addr) int {
	b := m.As4()
	n := 0
	for _, x := range b {
		for i := 7; i >= 0; i-- {
			if x&(1<<i) == 0 {
				return n
			}
			n++
		}
	}
	return n
}

func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := 32 - p.Bits()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v |= (1 << host) - 1
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// macOf is a node's MAC address, from its name: the same on every retry.
func macOf(name string) string {
	sum := sha256.Sum256([]byte("mac\x00" + name))
	return fmt.Sprintf("52:54:00:%02x:%02x:%02x", sum[0], sum[1], sum[2])
}

func (l *lan) updateFlags() golibvirt.NetworkUpdateFlags {
	if l.active {
		return golibvirt.NetworkUpdateAffectLive | golibvirt.NetworkUpdateAffectConfig
	}
	return golibvirt.NetworkUpdateAffectConfig
}

// reserve gives the node an address of the network: the one a reservation
// of its name holds, else the lowest free one. The reservation (a DHCP
// host entry) is the address book: libvirt refuses a second entry with the
// same address, so agents sharing the network never hand out one twice.
func (c *conn) reserve(l *lan, name string) (netip.Addr, error) {
	for range 64 {
		for _, h := range l.hosts {
			if h.Name == name {
				a, err := netip.ParseAddr(h.IP)
				if err != nil {
					return netip.Addr{}, fmt.Errorf("network %s: reservation of %s: %w", l.name, name, err)
				}
				return a, nil
			}
		}
		used := map[netip.Addr]bool{l.gw: true}
		for _, h := range l.hosts {
			if a, err := netip.ParseAddr(h.IP); err == nil {
				used[a] = true
			}
		}
		last := lastAddr(l.prefix)
		var free netip.Addr
		for a := l.prefix.Addr().Next(); a.Less(last); a = a.Next() {
			if !used[a] {
				free = a
				break
			}
		}
		if !free.IsValid() {
			return netip.Addr{}, fmt.Errorf("network %s (%s) has no free address: %d are reserved", l.name, l.prefix, len(l.hosts))
		}
		h := dhcpHost{MAC: macOf(name), Name: name, IP: free.String()}
		err := c.lv.NetworkUpdateCompat(l.net, golibvirt.NetworkUpdateCommandAddLast, golibvirt.NetworkSectionIPDhcpHost, -1, h.xml(), l.updateFlags())
		if err == nil {
			return free, nil
		}
		if !strings.Contains(err.Error(), "existing dhcp host entry") {
			return netip.Addr{}, fmt.Errorf("network %s: reserve %s for %s: %w", l.name, free, name, err)
		}
		// Another node took it (or this one, from another agent): read again.
		fresh, err := c.readNetwork(l.net)
		if err != nil {
			return netip.Addr{}, err
		}
		*l = *fresh
	}
	return netip.Addr{}, fmt.Errorf("network %s: could not reserve an address for %s", l.name, name)
}

// release drops the node's reservations from the network.
func (c *conn) release(l *lan, name string) error {
	for _, h := range l.hosts {
		if h.Name != name {
			continue
		}
		err := c.lv.NetworkUpdateCompat(l.net, golibvirt.NetworkUpdateCommandDelete, golibvirt.NetworkSectionIPDhcpHost, -1, h.xml(), l.updateFlags())
		if err != nil && !strings.Contains(err.Error(), "couldn't locate") {
			return fmt.Errorf("network %s: release %s of %s: %w", l.name, h.IP, name, err)
		}
	}
	return nil
}
