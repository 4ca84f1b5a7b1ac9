package libvirt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// kvmProbeLimit is how long a probe guest gets to reach its kernel's
// panic under KVM; a working KVM takes a second or two.
const kvmProbeLimit = 20 * time.Second

// kvmProbes caches, per libvirt URI and kernel, whether KVM boots guests:
// once per agent process.
var kvmProbes sync.Map // string -> *kvmProbe

type kvmProbe struct {
	once sync.Once
	ok   bool
	err  error
}

// kvmWorks tells whether a guest boots under KVM on this libvirt. A host
// may offer KVM that does not run guests (nested virtualization whose
// guests hang right after their kernel starts): the probe boots the base
// image's kernel alone, with nothing to mount, under KVM; the kernel
// panics at once and reboots, which ends the transient domain. A domain
// still running after kvmProbeLimit is a KVM that does not work.
func (c *conn) kvmWorks(ctx context.Context, kernel string) (bool, error) {
	v, _ := kvmProbes.LoadOrStore(c.uri+"\x00"+kernel, &kvmProbe{})
	p := v.(*kvmProbe)
	p.once.Do(func() { p.ok, p.err = c.probeKVM(ctx, kernel) })
	if p.err != nil {
		// Try again next time: the probe itself failed, not KVM.
		kvmProbes.Delete(c.uri + "\x00" + kernel)
	}
	return p.ok, p.err
}

func (c *conn) probeKVM(ctx context.Context, kernel string) (bool, error) {
	var b [5]byte
	_, _ = rand.Read(b[:])
	name := "coopr-kvmprobe-" + hex.EncodeToString(b[:])
	def := fmt.Sprintf(`<domain type='kvm'>
  <name>%s</name>
  <title>coopr: does KVM boot guests here?</title>
  <memory unit='MiB'>128</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>%s</kernel><cmdline>panic=-1 console=ttyS0 quiet</cmdline></os>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>destroy</on_reboot>
  <on_crash>destroy</on_crash>
  <devices><memballoon model='none'/></devices>
</domain>`, name, xmlEscape(kernel))
	start := time.Now()
	dom, err := c.lv.DomainCreateXML(def, golibvirt.DomainNone)
	if err != nil {
		return false, fmt.Errorf("KVM probe: %w", err)
	}
	deadline := time.Now().Add(kvmProbeLimit)
	for time.Now().Before(deadline) {
		if _, err := c.lv.DomainLookupByName(name); notFound(err, golibvirt.ErrNoDomain) {
			c.log.Info("KVM boots guests", "uri", c.uri, "probe", time.Since(start).Round(time.Millisecond))
			return true, nil
		}
		select {
		case <-ctx.Done():
			_ = c.lv.DomainDestroy(dom)
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	_ = c.lv.DomainDestroy(dom)
	c.log.Warn("KVM is offered but a guest does not boot under it", "uri", c.uri, "waited", kvmProbeLimit)
	return false, nil
}
