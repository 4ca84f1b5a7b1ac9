package libvirt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/cooprhq/coopr/internal/filelock"
)

// conn is one connection to a libvirt daemon for one task.
type conn struct {
	lv     *golibvirt.Libvirt
	uri    string
	remote bool       // remoteURI: the libvirt host is not this one
	ssh    *sshDialer // qemu+ssh: the SSH connection to the libvirt host
	log    *slog.Logger
}

// connect opens uri. A local daemon that is not there is named with the
// packages that provide it and how to start it.
func connect(ctx context.Context, uri string, log *slog.Logger) (*conn, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u, err := url.Parse(uri)
	if err != nil {
		return nil, terminal("provider field uri %q: %v", uri, err)
	}
	local := !remoteURI(u) && !strings.Contains(u.Scheme, "+")
	var sshd *sshDialer
	if _, transport, _ := strings.Cut(u.Scheme, "+"); transport == "ssh" {
		if u.Host == "" {
			return nil, terminal("provider field uri %q: qemu+ssh needs the libvirt host: qemu+ssh://root@kvm1.example.com/system", uri)
		}
		if sshd, err = newSSHDialer(u); err != nil {
			return nil, err
		}
	}
	type res struct {
		lv  *golibvirt.Libvirt
		err error
	}
	ch := make(chan res, 1)
	go func() {
		if sshd == nil {
			lv, err := golibvirt.ConnectToURI(u)
			ch <- res{lv, err}
			return
		}
		lv := golibvirt.NewWithDialer(sshd)
		if err := lv.ConnectToURI(golibvirt.RemoteURI(u)); err != nil {
			sshd.close()
			ch <- res{nil, err}
			return
		}
		ch <- res{lv, nil}
	}()
	var r res
	select {
	case r = <-ch:
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.lv != nil {
				_ = r.lv.Disconnect()
			}
		}()
		return nil, fmt.Errorf("connect to %s: %w", uri, ctx.Err())
	case <-time.After(30 * time.Second):
		go func() {
			if r := <-ch; r.lv != nil {
				_ = r.lv.Disconnect()
			}
		}()
		return nil, fmt.Errorf("connect to %s: no answer in 30 s", uri)
	}
	if r.err != nil {
		if local {
			if _, err := exec.LookPath("libvirtd"); err != nil {
				if _, err2 := exec.LookPath("virtqemud"); err2 != nil {
					return nil, &missingError{what: []string{"libvirtd"}, pkgs: []string{"libvirt-daemon-system", "qemu-system-x86"}}
				}
			}
			if errors.Is(r.err, os.ErrNotExist) || strings.Contains(r.err.Error(), "no such file") || strings.Contains(r.err.Error(), "connection refused") {
				return nil, &missingError{what: []string{"a running libvirtd"},
					hint: "start it: systemctl start libvirtd (without systemd: virtlogd -d && libvirtd -d)"}
			}
		}
		var te *terminalError
		if errors.As(r.err, &te) {
			return nil, r.err
		}
		return nil, fmt.Errorf("connect to %s: %w", u.Redacted(), r.err)
	}
	return &conn{lv: r.lv, uri: uri, remote: remoteURI(u), ssh: sshd, log: log}, nil
}

func (c *conn) close() {
	_ = c.lv.Disconnect()
	if c.ssh != nil {
		c.ssh.close()
	}
}

func notFound(err error, code golibvirt.ErrorNumber) bool {
	var e golibvirt.Error
	return errors.As(err, &e) && e.Code == uint32(code)
}

// capabilities of the host's x86_64 guests.
type capsXML struct {
	Guests []struct {
		OSType string `xml:"os_type"`
		Arch   struct {
			Name    string `xml:"name,attr"`
			Domains []struct {
				Type string `xml:"type,attr"`
			} `xml:"domain"`
		} `xml:"arch"`
	} `xml:"guest"`
}

// domainType picks libvirt's domain type for the accelerator the provider
// allows: "kvm" or "qemu" (TCG).
func (c *conn) domainType(accel string) (string, error) {
	caps, err := c.lv.ConnectGetCapabilities()
	if err != nil {
		return "", fmt.Errorf("capabilities: %w", err)
	}
	return pickDomainType(caps, accel, c.uri)
}

// pickDomainType reads libvirt's capabilities: KVM when the provider asks
// for it (kvm) or allows it (auto) and the host offers it, emulation when
// the provider allows it (auto, tcg), a clear refusal otherwise.
func pickDomainType(capsText, accel, uri string) (string, error) {
	var caps capsXML
	if err := xml.Unmarshal([]byte(capsText), &caps); err != nil {
		return "", fmt.Errorf("capabilities: %w", err)
	}
	has := map[string]bool{}
	for _, g := range caps.Guests {
		if g.OSType == "hvm" && g.Arch.Name == "x86_64" {
			for _, d := range g.Arch.Domains {
				has[d.Type] = true
			}
		}
	}
	if !has["qemu"] && !has["kvm"] {
		return "", &missingError{what: []string{"QEMU for x86_64 guests on the libvirt host"}, pkgs: []string{"qemu-system-x86"},
			hint: "then restart libvirtd"}
	}
	switch accel {
	case AccelTCG:
		return "qemu", nil
	case AccelAuto:
		if has["kvm"] {
			return "kvm", nil
		}
		return "qemu", nil
	}
	if !has["kvm"] {
		return "", terminal("libvirt at %s offers no KVM (no /dev/kvm, or no access to it): set the provider's accelerator to auto or tcg to run nodes emulated (several times slower)", uri)
	}
	return "kvm", nil
}

// ensurePool returns the storage pool, defining a directory pool at path
// if there is none of that name, and starting it if it is stopped.
func (c *conn) ensurePool(name, path string) (golibvirt.StoragePool, error) {
	p, err := c.lv.StoragePoolLookupByName(name)
	if notFound(err, golibvirt.ErrNoStoragePool) {
		def := fmt.Sprintf("<pool type='dir'><name>%s</name><target><path>%s</path></target></pool>", xmlEscape(name), xmlEscape(path))
		p, err = c.lv.StoragePoolDefineXML(def, 0)
		if err != nil {
			// Another agent defined it first.
			if p2, err2 := c.lv.StoragePoolLookupByName(name); err2 == nil {
				p, err = p2, nil
			} else {
				return p, fmt.Errorf("define storage pool %s: %w", name, err)
			}
		} else {
			if err := c.lv.StoragePoolBuild(p, golibvirt.StoragePoolBuildNew); err != nil {
				return p, fmt.Errorf("build storage pool %s at %s: %w", name, path, err)
			}
			_ = c.lv.StoragePoolSetAutostart(p, 1)
			c.log.Info("defined libvirt storage pool", "pool", name, "path", path)
		}
	} else if err != nil {
		return p, fmt.Errorf("storage pool %s: %w", name, err)
	}
	active, err := c.lv.StoragePoolIsActive(p)
	if err != nil {
		return p, fmt.Errorf("storage pool %s: %w", name, err)
	}
	if active == 0 {
		if err := c.lv.StoragePoolCreate(p, 0); err != nil {
			if a, _ := c.lv.StoragePoolIsActive(p); a == 0 {
				return p, fmt.Errorf("start storage pool %s: %w", name, err)
			}
		}
	}
	return p, nil
}

// volume returns the pool's volume of that name, and whether it exists.
func (c *conn) volume(pool golibvirt.StoragePool, name string) (golibvirt.StorageVol, bool, error) {
	v, err := c.lv.StorageVolLookupByName(pool, name)
	if notFound(err, golibvirt.ErrNoStorageVol) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("volume %s: %w", name, err)
	}
	return v, true, nil
}

// deleteVolume removes a volume; one that is not there is deleted.
func (c *conn) deleteVolume(pool golibvirt.StoragePool, name string) error {
	v, ok, err := c.volume(pool, name)
	if err != nil || !ok {
		return err
	}
	if err := c.lv.StorageVolDelete(v, 0); err != nil && !notFound(err, golibvirt.ErrNoStorageVol) {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	return nil
}

// uploadVolume makes a volume of the file's bytes (replacing one of that
// name) in format ("raw" or "qcow2") and capacity (0: the file's size).
func (c *conn) uploadVolume(ctx context.Context, pool golibvirt.StoragePool, name, path, format string, capacity uint64) (golibvirt.StorageVol, error) {
	f, err := os.Open(path)
	if err != nil {
		return golibvirt.StorageVol{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return golibvirt.StorageVol{}, err
	}
	if capacity == 0 {
		capacity = uint64(st.Size())
	}
	if err := c.deleteVolume(pool, name); err != nil {
		return golibvirt.StorageVol{}, err
	}
	def := fmt.Sprintf("<volume><name>%s</name><capacity unit='bytes'>%d</capacity><target><format type='%s'/></target></volume>",
		xmlEscape(name), capacity, format)
	v, err := c.lv.StorageVolCreateXML(pool, def, 0)
	if err != nil {
		return v, fmt.Errorf("create volume %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.lv.StorageVolUpload(v, f, 0, uint64(st.Size()), 0) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = c.lv.StorageVolDelete(v, 0)
		return v, fmt.Errorf("upload volume %s: %w", name, err)
	}
	return v, nil
}

func (c *conn) volumePath(v golibvirt.StorageVol) (string, error) {
	p, err := c.lv.StorageVolGetPath(v)
	if err != nil {
		return "", fmt.Errorf("volume path: %w", err)
	}
	return p, nil
}

// baseVolumes are the base image's volumes in a pool.
type baseVolumes struct {
	Disk, Kernel, Initrd string // paths on the libvirt host
	DiskFormat           string
	Capacity             uint64
}

// readyMark is an empty volume written after the base image's others: a
// base without it is an upload that did not finish.
func readyMark(name string) string { return name + ".ready" }

// ensureBase puts the agent's base image into the pool once: disk,
// kernel and initramfs as volumes, then the ready mark.
func (c *conn) ensureBase(ctx context.Context, pool golibvirt.StoragePool, s settings, log *slog.Logger) (baseVolumes, error) {
	name := baseName()
	vols := map[string]string{name + ".qcow2": "", name + ".vmlinuz": "", name + ".initrd": ""}
	lookup := func() (baseVolumes, bool, error) {
		if _, ok, err := c.volume(pool, readyMark(name)); err != nil || !ok {
			return baseVolumes{}, false, err
		}
		for vn := range vols {
			v, ok, err := c.volume(pool, vn)
			if err != nil || !ok {
				return baseVolumes{}, false, err
			}
			p, err := c.volumePath(v)
			if err != nil {
				return baseVolumes{}, false, err
			}
			vols[vn] = p
		}
		v, _, _ := c.volume(pool, name+".qcow2")
		_, capacity, _, err := c.lv.StorageVolGetInfo(v)
		if err != nil {
			return baseVolumes{}, false, err
		}
		return baseVolumes{Disk: vols[name+".qcow2"], Kernel: vols[name+".vmlinuz"], Initrd: vols[name+".initrd"],
			DiskFormat: "qcow2", Capacity: capacity}, true, nil
	}
	if b, ok, err := lookup(); err != nil || ok {
		return b, err
	}
	img, err := EnsureImage(ctx, s.ImageDir, log)
	if err != nil {
		return baseVolumes{}, err
	}
	// One upload per agent and libvirt at a time (uploads to the hosts of
	// a rack go on side by side); agents sharing a remote libvirt may
	// both upload, the ready mark is written by the last.
	sum := sha256.Sum256([]byte(c.uri))
	unlock, err := filelock.Lock(ctx, fmt.Sprintf("%s/upload-%s-%s.lock", s.ImageDir, name, hex.EncodeToString(sum[:])[:8]))
	if err != nil {
		return baseVolumes{}, err
	}
	defer unlock()
	if b, ok, err := lookup(); err != nil || ok {
		return b, err
	}
	start := time.Now()
	virtual, err := qcow2VirtualSize(img.Disk)
	if err != nil {
		return baseVolumes{}, err
	}
	for _, u := range []struct{ vol, path, format string }{
		{name + ".qcow2", img.Disk, "qcow2"}, {name + ".vmlinuz", img.Kernel, "raw"}, {name + ".initrd", img.Initrd, "raw"},
	} {
		capacity := uint64(0)
		if u.format == "qcow2" {
			capacity = virtual
		}
		if _, err := c.uploadVolume(ctx, pool, u.vol, u.path, u.format, capacity); err != nil {
			return baseVolumes{}, err
		}
	}
	def := fmt.Sprintf("<volume><name>%s</name><capacity unit='bytes'>0</capacity><target><format type='raw'/></target></volume>", readyMark(name))
	if _, err := c.lv.StorageVolCreateXML(pool, def, 0); err != nil {
		if _, ok, _ := c.volume(pool, readyMark(name)); !ok {
			return baseVolumes{}, fmt.Errorf("mark base image ready: %w", err)
		}
	}
	log.Info("base image uploaded to the storage pool", "pool", s.Pool, "image", name, "took", time.Since(start).Round(time.Millisecond))
	b, ok, err := lookup()
	if err == nil && !ok {
		err = errors.New("base image volumes vanished right after their upload")
	}
	return b, err
}

// existingBase is an image type naming a volume already in the pool: the
// node boots it with its own boot loader.
func (c *conn) existingBase(pool golibvirt.StoragePool, name string) (baseVolumes, error) {
	v, ok, err := c.volume(pool, name)
	if err != nil {
		return baseVolumes{}, err
	}
	if !ok {
		return baseVolumes{}, terminal("image %q is neither %q (coopr's own) nor a volume of the storage pool", name, BaseImage)
	}
	p, err := c.volumePath(v)
	if err != nil {
		return baseVolumes{}, err
	}
	desc, err := c.lv.StorageVolGetXMLDesc(v, 0)
	if err != nil {
		return baseVolumes{}, fmt.Errorf("volume %s: %w", name, err)
	}
	var vx struct {
		Capacity uint64 `xml:"capacity"`
		Target   struct {
			Format struct {
				Type string `xml:"type,attr"`
			} `xml:"format"`
		} `xml:"target"`
	}
	if err := xml.Unmarshal([]byte(desc), &vx); err != nil {
		return baseVolumes{}, fmt.Errorf("volume %s: %w", name, err)
	}
	f := vx.Target.Format.Type
	if f == "" {
		f = "raw"
	}
	return baseVolumes{Disk: p, DiskFormat: f, Capacity: vx.Capacity}, nil
}

// qcow2VirtualSize reads the disk size a qcow2 file's header records.
func qcow2VirtualSize(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var h [32]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if string(h[:4]) != "QFI\xfb" {
		return 0, fmt.Errorf("%s is not a qcow2 file", path)
	}
	var size uint64
	for _, b := range h[24:32] {
		size = size<<8 | uint64(b)
	}
	return size, nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Usable says why the libvirt at uri cannot run nodes with the
// accelerator asked for, or nil: for tests and tools that skip or refuse
// before they start.
func Usable(ctx context.Context, uri, accel string) error {
	c, err := connect(ctx, uri, nil)
	if err != nil {
		return err
	}
	defer c.close()
	_, err = c.domainType(accel)
	return err
}

// UploadOptions says where UploadImage puts the base image.
type UploadOptions struct {
	URI      string // DefaultURI when empty
	Pool     string // DefaultPool when empty
	PoolPath string // DefaultPoolPath when empty: where a pool defined now lies on the libvirt host
	ImageDir string // DefaultImageDir when empty
	Log      *slog.Logger
}

// UploadImage builds the base image here if it is not cached and puts it
// into the storage pool of the libvirt at o.URI, local or remote, if it
// is not there yet, as a node's first CREATE would: `coopr libvirt image
// --uri` readies each host of a rack before its first node. It returns
// the disk volume's path on the libvirt host.
func UploadImage(ctx context.Context, o UploadOptions) (string, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	cfg := Config{URI: o.URI, ImageDir: o.ImageDir}.withDefaults()
	s := settings{Config: cfg, Pool: o.Pool, PoolPath: o.PoolPath}
	if s.Pool == "" {
		s.Pool = DefaultPool
	}
	if s.PoolPath == "" {
		s.PoolPath = DefaultPoolPath
	}
	c, err := connect(ctx, s.URI, o.Log)
	if err != nil {
		return "", err
	}
	defer c.close()
	pool, err := c.ensurePool(s.Pool, s.PoolPath)
	if err != nil {
		return "", err
	}
	b, err := c.ensureBase(ctx, pool, s, o.Log)
	if err != nil {
		return "", err
	}
	return b.Disk, nil
}
