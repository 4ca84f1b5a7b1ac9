package libvirt

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/vm/sshready"
	"github.com/cooprhq/coopr/internal/filelock"
)

// metaNS is the namespace of the metadata coopr writes into its domains:
// what cleanup reads to tell coopr's domains, and whose they are.
const metaNS = "https://github.com/cooprhq/coopr/libvirt/node/1"

// nodeMeta is a node as its domain's metadata records it.
type nodeMeta struct {
	XMLName     xml.Name `xml:"node"`
	Instance    string   `xml:"instance"`
	TenantID    string   `xml:"tenant"`
	ClusterID   string   `xml:"cluster"`
	NodeID      string   `xml:"nodeId"`
	Hostname    string   `xml:"hostname"`
	Address     string   `xml:"address"`
	Network     string   `xml:"network"`
	Pool        string   `xml:"pool"`
	Accelerator string   `xml:"accelerator"`
	HostKeys    []string `xml:"hostKey"`
}

// nodeName is the domain's name, from the ids CREATE tags it with, so that
// a retried CREATE finds the domain again. The agent's state dir is in the
// hash: two installations sharing a libvirt (coopr dev and a test run)
// both have a cluster 00000001 with the same node ids.
func nodeName(instance, clusterID, nodeID string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(instance) + "\x00" + clusterID + "\x00" + nodeID))
	var b strings.Builder
	for _, r := range strings.ToLower(clusterID) {
		if b.Len() >= 16 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		}
	}
	c := b.String()
	if c == "" {
		c = "x"
	}
	return "coopr-" + c + "-" + hex.EncodeToString(sum[:])[:10]
}

var nameRE = regexp.MustCompile(`^coopr-[a-z0-9-]{1,16}-[0-9a-f]{10}$`)

func diskVol(name string) string { return name + ".qcow2" }
func seedVol(name string) string { return name + "-seed.iso" }

func clusterID(t *drivers.Task) string {
	if t.ClusterID != "" {
		return t.ClusterID
	}
	return t.Cluster.ID
}

// targetName is the domain a task is about: the provider id CREATE
// reported or, without one, the name CREATE would have used.
func targetName(s settings, t *drivers.Task) (string, error) {
	if v, ok := t.Node.Facts["vm"].(map[string]any); ok {
		if id, ok := v["providerId"].(string); ok && id != "" {
			if !nameRE.MatchString(id) {
				return "", fmt.Errorf("providerId %q is not a libvirt domain coopr made", id)
			}
			return id, nil
		}
	}
	return nodeName(s.StateDir, clusterID(t), t.Node.ID), nil
}

func (m *nodeMeta) belongs(name string, t *drivers.Task) error {
	if m.ClusterID != clusterID(t) || m.NodeID != t.Node.ID {
		return terminal("domain %s belongs to cluster %s node %s, not to this task's", name, m.ClusterID, m.NodeID)
	}
	return nil
}

func (m *nodeMeta) facts(name string) map[string]any {
	return map[string]any{
		"providerId":  name,
		"hostKeys":    append([]string(nil), m.HostKeys...),
		"sshUser":     "root",
		"accelerator": m.Accelerator,
	}
}

func (m *nodeMeta) addresses() map[string]string {
	return map[string]string{"access_v4": m.Address, "bind_v4": m.Address}
}

// lookupDomain returns the domain and its coopr metadata; ok is false when
// there is no domain of that name.
func (c *conn) lookupDomain(name string) (golibvirt.Domain, *nodeMeta, bool, error) {
	dom, err := c.lv.DomainLookupByName(name)
	if notFound(err, golibvirt.ErrNoDomain) {
		return dom, nil, false, nil
	}
	if err != nil {
		return dom, nil, false, fmt.Errorf("domain %s: %w", name, err)
	}
	m, err := c.domainMeta(dom)
	if err != nil {
		return dom, nil, true, err
	}
	return dom, m, true, nil
}

// domainMeta reads coopr's metadata of a domain; a domain without it is
// not coopr's.
func (c *conn) domainMeta(dom golibvirt.Domain) (*nodeMeta, error) {
	text, err := c.lv.DomainGetMetadata(dom, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{metaNS}, 0)
	if err != nil {
		if strings.Contains(err.Error(), "metadata not found") || strings.Contains(err.Error(), "Requested metadata element is not present") {
			return nil, terminal("domain %s exists but coopr did not make it (it has no coopr metadata)", dom.Name)
		}
		return nil, fmt.Errorf("domain %s metadata: %w", dom.Name, err)
	}
	var m nodeMeta
	if err := xml.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("domain %s metadata: %w", dom.Name, err)
	}
	return &m, nil
}

func (c *conn) running(dom golibvirt.Domain) (bool, error) {
	state, _, err := c.lv.DomainGetState(dom, 0)
	if err != nil {
		return false, fmt.Errorf("domain %s state: %w", dom.Name, err)
	}
	return golibvirt.DomainState(state) == golibvirt.DomainRunning, nil
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$`)

func (d *driver) create(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	pub, _ := t.Secrets["ssh"]["publicKey"].(string)
	if strings.TrimSpace(pub) == "" {
		return drivers.Result{Status: statusNothingCreated, Retryable: &no,
			Message: "libvirt: the task carries no secrets.ssh.publicKey (the cluster key to put in authorized_keys)"}
	}
	if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(pub)); err != nil {
		return drivers.Result{Status: statusNothingCreated, Retryable: &no, Message: "libvirt: secrets.ssh.publicKey: " + err.Error()}
	}
	name := nodeName(s.StateDir, clusterID(t), t.Node.ID)
	hostname := t.Node.Hostname
	if hostname == "" {
		hostname = name
	}
	if len(hostname) > 253 || !hostnameRE.MatchString(hostname) {
		return drivers.Result{Status: statusNothingCreated, Retryable: &no, Message: fmt.Sprintf("libvirt: hostname %q is not a valid host name", hostname)}
	}
	fl, err := s.flavorOf(t.Node.Flavor)
	if err != nil {
		return failure(statusNothingCreated, "hardware", terminal("%v", err))
	}
	c, err := connect(ctx, s.URI, d.log)
	if err != nil {
		return failure(statusNothingCreated, "libvirt", err)
	}
	defer c.close()
	domType, err := c.domainType(s.Accelerator)
	if err != nil {
		return failure(statusNothingCreated, "accelerator", err)
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(s.StateDir, "locks", name+".lock"))
	if err != nil {
		return failure(statusNothingCreated, "lock node", err)
	}
	defer unlock()

	// A domain of this name is this node made by an earlier attempt.
	if dom, m, ok, err := c.lookupDomain(name); err != nil {
		return failure(statusFailed, "adopt", err)
	} else if ok {
		if err := m.belongs(name, t); err != nil {
			return failure(statusFailed, "adopt", err)
		}
		out.Stdout("adopting existing domain " + name)
		if err := c.ensureRunning(dom); err != nil {
			r := failure(statusFailed, "start", err)
			r.Facts = m.facts(name)
			return r
		}
		msg := fmt.Sprintf("adopted domain %s at %s (%s)", name, m.Address, m.Accelerator)
		return drivers.Result{Message: msg, Hostname: m.Hostname, IPAddresses: m.addresses(), Facts: m.facts(name)}
	}

	out.Status("storage pool and network", 5)
	pool, err := c.ensurePool(s.Pool, s.PoolPath)
	if err != nil {
		return failure(statusNothingCreated, "storage pool", err)
	}
	var l *lan
	if perCluster(t) {
		l, err = c.ensureClusterNetwork(ctx, s, clusterID(t), t.Provider.Provisioner)
	} else {
		l, err = c.ensureNetwork(s.Network, s.Subnet, s.Forward)
	}
	if err != nil {
		return failure(statusNothingCreated, "network", err)
	}
	out.Status("base image", 10)
	var base baseVolumes
	if t.Node.Image == "" || t.Node.Image == BaseImage {
		base, err = c.ensureBase(ctx, pool, s, d.log)
	} else {
		base, err = c.existingBase(pool, t.Node.Image)
	}
	if err != nil {
		return failure(statusNothingCreated, "base image", err)
	}
	if domType == "kvm" && base.Kernel != "" {
		ok, err := c.kvmWorks(ctx, base.Kernel)
		if err != nil {
			return failure(statusNothingCreated, "accelerator", err)
		}
		if !ok {
			if s.Accelerator != AccelAuto {
				return failure(statusNothingCreated, "accelerator", terminal("libvirt at %s offers KVM but a guest does not boot under it (nested virtualization?): set the provider's accelerator to auto or tcg to run nodes emulated", s.URI))
			}
			out.Stdout("KVM does not boot guests on this libvirt: emulating (tcg)")
			domType = "qemu"
		}
	}
	addr, err := c.reserve(l, name)
	if err != nil {
		return failure(statusNothingCreated, "address", err)
	}
	// From here on something exists: failures name it so DELETE finds it.
	fail := func(step string, err error) drivers.Result {
		r := failure(statusFailed, step, err)
		r.Facts = map[string]any{"providerId": name}
		return r
	}
	keys, err := hostKeys(hostname)
	if err != nil {
		return fail("host keys", err)
	}
	accel := "kvm"
	if domType == "qemu" {
		accel = "tcg"
	}
	m := &nodeMeta{Instance: filepath.Clean(s.StateDir), TenantID: t.TenantID, ClusterID: clusterID(t), NodeID: t.Node.ID, Hostname: hostname,
		Address: addr.String(), Network: l.name, Pool: s.Pool, Accelerator: accel}
	for _, k := range keys {
		m.HostKeys = append(m.HostKeys, k.public)
	}
	out.Status("seed and disk", 30)
	seed, err := makeSeed(ctx, name, hostname, pub, macOf(name), addr, l, keys)
	if err != nil {
		return fail("seed", err)
	}
	defer os.RemoveAll(filepath.Dir(seed))
	seedV, err := c.uploadVolume(ctx, pool, seedVol(name), seed, "raw", 0)
	if err != nil {
		return fail("seed", err)
	}
	seedPath, err := c.volumePath(seedV)
	if err != nil {
		return fail("seed", err)
	}
	if err := c.deleteVolume(pool, diskVol(name)); err != nil {
		return fail("disk", err)
	}
	overlay := fmt.Sprintf(`<volume><name>%s</name><capacity unit='bytes'>%d</capacity>
  <target><format type='qcow2'/></target>
  <backingStore><path>%s</path><format type='%s'/></backingStore>
</volume>`, diskVol(name), base.Capacity, xmlEscape(base.Disk), base.DiskFormat)
	diskV, err := c.lv.StorageVolCreateXML(pool, overlay, 0)
	if err != nil {
		return fail("disk", fmt.Errorf("create overlay on %s: %w", base.Disk, err))
	}
	diskPath, err := c.volumePath(diskV)
	if err != nil {
		return fail("disk", err)
	}
	def, err := domainXML(name, domType, fl, m, base, diskPath, seedPath, l.name)
	if err != nil {
		return fail("define", err)
	}
	out.Status("booting", 50)
	dom, err := c.lv.DomainDefineXML(def)
	if err != nil {
		return fail("define", fmt.Errorf("define domain %s: %w", name, err))
	}
	if err := c.ensureRunning(dom); err != nil {
		r := fail("start", err)
		r.Facts = m.facts(name)
		return r
	}
	msg := fmt.Sprintf("created domain %s at %s (%d vCPU, %d MB, %s)", name, m.Address, fl.VCPUs, fl.MemoryMB, accel)
	d.log.Info(msg, "node", t.Node.ID, "cluster", clusterID(t))
	return drivers.Result{Message: msg, Hostname: m.Hostname, IPAddresses: m.addresses(), Facts: m.facts(name)}
}

func (c *conn) ensureRunning(dom golibvirt.Domain) error {
	up, err := c.running(dom)
	if err != nil || up {
		return err
	}
	if err := c.lv.DomainCreate(dom); err != nil {
		if up, _ := c.running(dom); up {
			return nil
		}
		return fmt.Errorf("start domain %s: %w", dom.Name, err)
	}
	return nil
}

// domainXML is the node's machine: direct kernel boot of coopr's image
// (no firmware or boot loader to emulate), or the volume's own boot loader
// for an image that names one; the overlay as its disk, the seed as a
// read-only second disk, one NIC on the network, a serial console libvirt
// logs, and an entropy source so first boot does not wait for one.
func domainXML(name, domType string, fl flavor, m *nodeMeta, base baseVolumes, disk, seed, network string) (string, error) {
	meta, err := xml.Marshal(m)
	if err != nil {
		return "", err
	}
	// The element goes in with the namespace prefix libvirt keeps.
	metaText := strings.Replace(string(meta), "<node>", fmt.Sprintf("<coopr:node xmlns:coopr=%q>", metaNS), 1)
	metaText = strings.TrimSuffix(metaText, "</node>") + "</coopr:node>"
	osXML := "<type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/>"
	if base.Kernel != "" {
		osXML = fmt.Sprintf("<type arch='x86_64' machine='pc'>hvm</type><kernel>%s</kernel><initrd>%s</initrd><cmdline>%s</cmdline>",
			xmlEscape(base.Kernel), xmlEscape(base.Initrd), kernelCmdline)
	}
	cpu := ""
	if domType == "kvm" {
		cpu = "<cpu mode='host-passthrough'/>"
	}
	return fmt.Sprintf(`<domain type='%s'>
  <name>%s</name>
  <title>coopr node %s</title>
  <metadata>%s</metadata>
  <memory unit='MiB'>%d</memory>
  <vcpu>%d</vcpu>
  <os>%s</os>
  <features><acpi/><apic/></features>
  %s
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'>
      <driver name='qemu' type='qcow2' discard='unmap'/>
      <source file='%s'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw'/>
      <source file='%s'/>
      <target dev='vdb' bus='virtio'/>
      <readonly/>
    </disk>
    <interface type='network'>
      <source network='%s'/>
      <mac address='%s'/>
      <model type='virtio'/>
    </interface>
    <serial type='pty'><log file='/var/log/libvirt/qemu/%s-console.log' append='off'/></serial>
    <console type='pty'/>
    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>
    <memballoon model='none'/>
  </devices>
</domain>`, domType, name, xmlEscape(m.Hostname), metaText, fl.MemoryMB, fl.VCPUs, osXML, cpu,
		xmlEscape(disk), xmlEscape(seed), xmlEscape(network), macOf(name), name), nil
}

type hostKey struct{ kind, private, public string }

// hostKeys makes the node's own ssh host keys; the seed gives them to
// cloud-init, and CONFIRM and every later connection verify them.
func hostKeys(hostname string) ([]hostKey, error) {
	_, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	ecPriv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	var out []hostKey
	for _, k := range []struct {
		kind string
		priv any
	}{{"ed25519", edPriv}, {"ecdsa", ecPriv}} {
		block, err := ssh.MarshalPrivateKey(k.priv, "root@"+hostname)
		if err != nil {
			return nil, fmt.Errorf("host key: %w", err)
		}
		signer, err := ssh.NewSignerFromKey(k.priv)
		if err != nil {
			return nil, fmt.Errorf("host key: %w", err)
		}
		pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
		out = append(out, hostKey{kind: k.kind, private: string(pem.EncodeToMemory(block)), public: pub})
	}
	return out, nil
}

// makeSeed writes the node's cloud-init NoCloud seed, an ISO 9660 image
// labelled cidata, into a new temporary directory: meta-data (instance id,
// host name), user-data (root's key, the host keys, no passwords) and
// network-config (the reserved address). JSON is YAML, so every file is
// JSON. It returns the image's path.
func makeSeed(ctx context.Context, name, hostname, pub, mac string, addr netip.Addr, l *lan, keys []hostKey) (string, error) {
	if err := needTools(tool{"genisoimage", "genisoimage"}); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "coopr-seed-")
	if err != nil {
		return "", err
	}
	// The files hold the node's private host keys: none stays behind a
	// seed that could not be made.
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	short, _, _ := strings.Cut(hostname, ".")
	meta := map[string]any{"instance-id": name, "local-hostname": short}
	sshKeys := map[string]string{}
	for _, k := range keys {
		sshKeys[k.kind+"_private"] = k.private
		sshKeys[k.kind+"_public"] = k.public
	}
	// The image has no /etc/hosts (debootstrap writes none): the node's
	// own, which the network driver later adds the cluster's names to.
	hosts := fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s", addr, hostname)
	if short != hostname {
		hosts += " " + short
	}
	user := map[string]any{
		"write_files":               []any{map[string]any{"path": "/etc/hosts", "content": hosts + "\n", "permissions": "0644", "owner": "root:root"}},
		"hostname":                  short,
		"fqdn":                      hostname,
		"prefer_fqdn_over_hostname": true,
		"disable_root":              false,
		// The image's sshd already refuses passwords; false here would
		// make cloud-init's config stage rewrite sshd_config and restart
		// sshd, refusing connections just after CONFIRM found it up.
		"ssh_pwauth":          "unchanged",
		"ssh_deletekeys":      true,
		"ssh_authorized_keys": []string{strings.TrimSpace(pub)},
		"ssh_keys":            sshKeys,
		// The image has no locales to generate: skip the step.
		"locale": "C.UTF-8",
	}
	network := map[string]any{
		"version": 2,
		"ethernets": map[string]any{
			"eth0": map[string]any{
				"match":     map[string]string{"macaddress": mac},
				"set-name":  "eth0",
				"addresses": []string{netip.PrefixFrom(addr, l.prefix.Bits()).String()},
				"routes":    []any{map[string]string{"to": "0.0.0.0/0", "via": l.gw.String()}},
			},
		},
	}
	files := map[string]any{"meta-data": meta, "user-data": user, "network-config": network}
	var args []string
	for fn, v := range files {
		var b []byte
		if b, err = json.MarshalIndent(v, "", "  "); err != nil {
			return "", err
		}
		if fn == "user-data" {
			b = append([]byte("#cloud-config\n"), b...)
		}
		if err = os.WriteFile(filepath.Join(dir, fn), append(b, '\n'), 0o600); err != nil {
			return "", err
		}
		args = append(args, filepath.Join(dir, fn))
	}
	iso := filepath.Join(dir, "seed.iso")
	args = append([]string{"-quiet", "-output", iso, "-volid", "cidata", "-joliet", "-rock"}, args...)
	if _, err = run(ctx, "genisoimage", args...); err != nil {
		return "", err
	}
	return iso, nil
}

func (d *driver) confirm(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	name, err := targetName(s, t)
	if err != nil {
		return drivers.Result{Status: statusFailed, Message: "libvirt: " + err.Error(), Retryable: &no}
	}
	c, err := connect(ctx, s.URI, d.log)
	if err != nil {
		return failure(statusFailed, "libvirt", err)
	}
	defer c.close()
	dom, m, ok, err := c.lookupDomain(name)
	if err != nil {
		return failure(statusFailed, "confirm", err)
	}
	if !ok {
		return drivers.Result{Status: statusFailed, Retryable: &no, Message: "libvirt: domain " + name + " does not exist"}
	}
	if err := m.belongs(name, t); err != nil {
		return failure(statusFailed, "confirm", err)
	}
	if up, err := c.running(dom); err != nil {
		return failure(statusFailed, "confirm", err)
	} else if !up {
		return drivers.Result{Status: statusFailed, Retryable: &no, Facts: m.facts(name),
			Message: "libvirt: domain " + name + " is not running (its console log: /var/log/libvirt/qemu/" + name + "-console.log on the libvirt host)"}
	}
	out.Status("waiting for ssh on "+m.Address+" ("+m.Accelerator+")", 10)
	start := time.Now()
	priv, _ := t.Secrets["ssh"]["privateKey"].(string)
	if err := waitSSH(ctx, m, priv); err != nil {
		var hk *sshready.HostKeyError
		if !errors.As(err, &hk) && c.remote {
			err = unreachableHint(err, m, s.URI)
		}
		r := failure(statusFailed, "ssh", err)
		if errors.As(err, &hk) {
			r.Retryable = &no
		}
		r.Facts = m.facts(name)
		return r
	}
	msg := fmt.Sprintf("domain %s answers ssh on %s (%s)", name, m.Address, m.Accelerator)
	d.log.Info(msg, "waited", time.Since(start).Round(time.Millisecond))
	return drivers.Result{Message: msg, Hostname: m.Hostname, IPAddresses: m.addresses(), Facts: m.facts(name)}
}

// unreachableHint says, to an SSH wait on a remote libvirt's node that
// ran out, what the agent needs to reach the node at all.
func unreachableHint(err error, m *nodeMeta, uri string) error {
	host := uri
	if u, perr := url.Parse(uri); perr == nil {
		host = u.Hostname()
	}
	return fmt.Errorf("%w; the agent reaches a remote libvirt's nodes at their addresses: route network %s's subnet to %s and set the provider's forward to route (docs/drivers.md, A remote libvirt)", err, m.Network, host)
}

// waitSSH waits until the node's sshd shows one of the node's own host
// keys and lets root in with the cluster key.
func waitSSH(ctx context.Context, m *nodeMeta, privateKey string) error {
	return sshready.Wait(ctx, net.JoinHostPort(m.Address, "22"), m.HostKeys, privateKey, sshready.Options{Retry: time.Second, Attempt: 10 * time.Second})
}
