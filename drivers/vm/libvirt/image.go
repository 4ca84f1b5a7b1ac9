package libvirt

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cooprhq/coopr/internal/filelock"
)

// DefaultImageDir is where the agent builds and caches base images before
// they go to a libvirt storage pool.
const DefaultImageDir = "/var/lib/coopr/libvirt/images"

// BaseImage is the one image coopr builds; an image type naming anything
// else names an existing volume of the pool.
const BaseImage = "bookworm"

// imagePackages are what every node ships, what the local driver's nodes
// have: sshd, python3 for ansible and the example services, haproxy for
// the lb service.
var imagePackages = []string{
	"systemd", "systemd-sysv", "dbus", "openssh-server", "iproute2", "python3",
	"sudo", "haproxy", "curl", "ca-certificates", "procps", "iputils-ping",
}

// vmPackages go in with apt inside the debootstrapped tree (debootstrap
// fails configuring them in its own pass): the kernel and its initramfs,
// booted directly by libvirt (no boot loader); cloud-init, which takes
// the node's identity from its seed; ifupdown for the address cloud-init
// writes.
var vmPackages = []string{"linux-image-amd64", "initramfs-tools", "cloud-init", "ifupdown"}

// imageSizeGB is the root file system's size; the qcow2 holds only what is
// written, and every node's overlay starts empty.
const imageSizeGB = 4

// imageRecipeVersion changes whenever customizeImage changes what it writes.
const imageRecipeVersion = "1"

// cloudConfig is the image's cloud-init settings: the seed is the only
// source (no network probing for metadata services, which takes minutes
// when there are none), root logs in with the keys the seed gives, no
// default user, and the host keys are the ones the seed carries.
const cloudConfig = `# written by coopr
datasource_list: [NoCloud, None]
disable_root: false
users: []
ssh_pwauth: false
ssh_deletekeys: true
ssh_genkeytypes: []
manage_etc_hosts: false
preserve_hostname: false
system_info:
  network:
    renderers: ['eni']
`

// sshdImageConfig is read before Debian's sshd_config: its values win.
const sshdImageConfig = `# written by coopr: nodes are reached as root with the cluster key only
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
`

// maskedUnits only slow a small VM's boot.
var maskedUnits = []string{
	"apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_reap.service",
	"e2scrub_all.timer", "fstrim.timer", "man-db.timer", "getty@tty1.service",
	"systemd-networkd-wait-online.service",
}

// The kernel command line: the root is the overlay's whole disk (no
// partition table), the console a serial port libvirt logs, and eth0 the
// name cloud-init's network config uses.
const kernelCmdline = "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet"

func imageRecipeHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "debootstrap --variant=minbase %s\n%s\n%s\n%s\n%s\n%d\n%s\n%s\n",
		BaseImage, strings.Join(imagePackages, ",")+" "+strings.Join(vmPackages, ","), cloudConfig, sshdImageConfig,
		strings.Join(maskedUnits, ","), imageSizeGB, kernelCmdline, imageRecipeVersion)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// baseName names the base image's files and volumes.
func baseName() string { return "coopr-" + BaseImage + "-" + imageRecipeHash() }

// Image is a base image on the agent's disk.
type Image struct {
	Name   string // coopr-bookworm-<hash>
	Disk   string // qcow2
	Kernel string
	Initrd string
}

func imageFiles(dir string) Image {
	name := baseName()
	d := filepath.Join(dir, name)
	return Image{Name: name, Disk: filepath.Join(d, "disk.qcow2"),
		Kernel: filepath.Join(d, "vmlinuz"), Initrd: filepath.Join(d, "initrd.img")}
}

// EnsureImage returns the base image under dir (DefaultImageDir when
// empty), building it first if it is not cached: debootstrap into a
// directory, an ext4 file system made from it (mkfs.ext4 -d, no loop
// device or mount), converted to qcow2, with the kernel and initramfs
// beside it. Several processes may call it at once: one builds (a few
// minutes), the others wait. A crashed build leaves a temporary directory
// that the next build removes.
func EnsureImage(ctx context.Context, dir string, log *slog.Logger) (Image, error) {
	if dir == "" {
		dir = DefaultImageDir
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	img := imageFiles(dir)
	final := filepath.Dir(img.Disk)
	if _, err := os.Stat(final); err == nil {
		return img, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Image{}, fmt.Errorf("image dir: %w", err)
	}
	// Said before the lock: a process waiting for another's build would
	// otherwise sit silent for minutes.
	log.Info("the libvirt base image is not cached: building it, or waiting for the process that is", "image", final)
	unlock, err := filelock.Lock(ctx, filepath.Join(dir, img.Name+".lock"))
	if err != nil {
		return Image{}, fmt.Errorf("lock image %s: %w", img.Name, err)
	}
	defer unlock()
	if _, err := os.Stat(final); err == nil {
		return img, nil
	}
	stale, _ := filepath.Glob(filepath.Join(dir, ".tmp-"+img.Name+"-*"))
	for _, s := range stale {
		log.Info("removing a crashed image build", "dir", s)
		if err := os.RemoveAll(s); err != nil {
			return Image{}, fmt.Errorf("remove crashed build: %w", err)
		}
	}
	if err := needTools(
		tool{"debootstrap", "debootstrap"}, tool{"mkfs.ext4", "e2fsprogs"}, tool{"qemu-img", "qemu-utils"},
	); err != nil {
		return Image{}, err
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-"+img.Name+"-")
	if err != nil {
		return Image{}, fmt.Errorf("image temp dir: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			if err := os.RemoveAll(tmp); err != nil {
				log.Warn("removing a failed image build", "dir", tmp, "err", err)
			}
		}
	}()
	start := time.Now()
	mirror := aptMirror()
	log.Info("building the libvirt base image (debootstrap, a few minutes)", "image", final, "mirror", mirror)
	root := filepath.Join(tmp, "rootfs")
	args := []string{"--variant=minbase", "--include=" + strings.Join(imagePackages, ","), BaseImage, root, mirror}
	if err := runLogged(ctx, log, "debootstrap", args...); err != nil {
		return Image{}, fmt.Errorf("debootstrap: %w", err)
	}
	if err := chrootInstall(ctx, log, root, vmPackages); err != nil {
		return Image{}, err
	}
	if err := customizeImage(root); err != nil {
		return Image{}, fmt.Errorf("customize image: %w", err)
	}
	// The kernel and initramfs boot the node directly; the image keeps
	// its own copies in /boot for the day it is booted otherwise.
	for _, f := range []struct{ glob, dst string }{
		{"boot/vmlinuz-*", "vmlinuz"}, {"boot/initrd.img-*", "initrd.img"},
	} {
		m, _ := filepath.Glob(filepath.Join(root, f.glob))
		if len(m) != 1 {
			return Image{}, fmt.Errorf("image has %d files %s, want one", len(m), f.glob)
		}
		if err := copyFile(m[0], filepath.Join(tmp, f.dst)); err != nil {
			return Image{}, err
		}
	}
	raw := filepath.Join(tmp, "disk.raw")
	if _, err := run(ctx, "mkfs.ext4", "-q", "-F", "-L", "coopr-root", "-E", "root_owner=0:0",
		"-d", root, raw, fmt.Sprintf("%dG", imageSizeGB)); err != nil {
		return Image{}, err
	}
	if _, err := run(ctx, "qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, filepath.Join(tmp, "disk.qcow2")); err != nil {
		return Image{}, err
	}
	if err := os.Remove(raw); err != nil {
		return Image{}, err
	}
	if err := os.RemoveAll(root); err != nil {
		return Image{}, err
	}
	recipe := fmt.Sprintf("debootstrap %s\nmirror %s\nbuilt %s\n", strings.Join(args, " "), mirror, time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(tmp, "recipe"), []byte(recipe), 0o644); err != nil {
		return Image{}, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return Image{}, fmt.Errorf("install image: %w", err)
	}
	ok = true
	log.Info("libvirt base image built", "image", final, "took", time.Since(start).Round(time.Second))
	return img, nil
}

// customizeImage makes a debootstrapped tree a node template: no identity
// of its own (host keys, machine id, hostname come per node), cloud-init
// reading only the seed, root's file system in fstab.
func customizeImage(root string) error {
	keys, _ := filepath.Glob(filepath.Join(root, "etc/ssh/ssh_host_*"))
	for _, k := range keys {
		if err := os.Remove(k); err != nil {
			return err
		}
	}
	for _, f := range []string{"etc/hostname", "var/lib/dbus/machine-id"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	// An empty machine-id makes systemd generate one at first boot.
	files := []struct {
		path, data string
		mode       os.FileMode
	}{
		{"etc/machine-id", "", 0o444},
		{"etc/fstab", "/dev/vda / ext4 defaults,errors=remount-ro 0 1\n", 0o644},
		{"etc/ssh/sshd_config.d/coopr.conf", sshdImageConfig, 0o644},
		{"etc/cloud/cloud.cfg.d/90-coopr.cfg", cloudConfig, 0o644},
		{"etc/network/interfaces", "source /etc/network/interfaces.d/*\nauto lo\niface lo inet loopback\n", 0o644},
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f.path)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, f.path), []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	sys := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(filepath.Join(sys, "multi-user.target.wants"), 0o755); err != nil {
		return err
	}
	wants := filepath.Join(sys, "multi-user.target.wants/ssh.service")
	if _, err := os.Lstat(wants); errors.Is(err, os.ErrNotExist) {
		if err := os.Symlink("/lib/systemd/system/ssh.service", wants); err != nil {
			return err
		}
	}
	// haproxy is for the lb service, which starts it itself.
	if err := os.Remove(filepath.Join(sys, "multi-user.target.wants/haproxy.service")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, u := range maskedUnits {
		p := filepath.Join(sys, u)
		_ = os.Remove(p)
		if err := os.Symlink("/dev/null", p); err != nil {
			return err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(root, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		_ = os.Remove(d)
	}
	return nil
}

// chrootInstall installs packages into root with its own apt, /proc and
// /sys mounted for their scripts (the kernel's initramfs needs them).
func chrootInstall(ctx context.Context, log *slog.Logger, root string, pkgs []string) error {
	for _, m := range []struct{ fs, dir string }{{"proc", "proc"}, {"sysfs", "sys"}} {
		dir := filepath.Join(root, m.dir)
		if err := syscall.Mount(m.fs, dir, m.fs, 0, ""); err != nil {
			return fmt.Errorf("mount %s in the image: %w", m.fs, err)
		}
		defer func() {
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				log.Warn("unmount in the image", "dir", dir, "err", err)
			}
		}()
	}
	args := append([]string{root, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q",
		"--no-install-recommends", "-o", "Dpkg::Use-Pty=0"}, pkgs...)
	if err := runLogged(ctx, log, "chroot", args...); err != nil {
		return fmt.Errorf("install %s in the image: %w", strings.Join(pkgs, " "), err)
	}
	if _, err := run(ctx, "chroot", root, "apt-get", "clean"); err != nil {
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// aptMirror is the Debian mirror this host's apt uses for the image's
// suite, so the image comes from where the host's packages come from.
func aptMirror() string {
	const fallback = "http://deb.debian.org/debian"
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, para := range strings.Split(string(b), "\n\n") {
			var uris, suites []string
			for _, line := range strings.Split(para, "\n") {
				k, v, ok := strings.Cut(line, ":")
				if !ok || strings.HasPrefix(line, "#") {
					continue
				}
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "uris":
					uris = strings.Fields(v)
				case "suites":
					suites = strings.Fields(v)
				}
			}
			for _, s := range suites {
				if s == BaseImage && len(uris) > 0 {
					return uris[0]
				}
			}
		}
	}
	files, _ = filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, f := range append([]string{"/etc/apt/sources.list"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 3 || fields[0] != "deb" {
				continue
			}
			fields = fields[1:]
			if strings.HasPrefix(fields[0], "[") {
				for len(fields) > 0 && !strings.HasSuffix(fields[0], "]") {
					fields = fields[1:]
				}
				if len(fields) > 0 {
					fields = fields[1:]
				}
			}
			if len(fields) >= 2 && fields[1] == BaseImage {
				return fields[0]
			}
		}
	}
	return fallback
}

// runLogged runs a command, logging the first line of each debootstrap
// step so a long build shows progress.
func runLogged(ctx context.Context, log *slog.Logger, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	done := make(chan struct{})
	var tail []string
	seen := map[string]bool{}
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, "I: "); ok {
				if verb, _, _ := strings.Cut(rest, " "); !seen[verb] {
					seen[verb] = true
					log.Info(name, "step", rest)
				}
			}
			tail = append(tail, line)
			if len(tail) > 20 {
				tail = tail[1:]
			}
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		return fmt.Errorf("%w: %s", err, strings.Join(tail, " | "))
	}
	return nil
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// missingError is a host that lacks what the driver needs: retrying cannot
// fix it, installing can.
type missingError struct {
	what []string
	pkgs []string
	hint string
}

func (e *missingError) Error() string {
	msg := "libvirt vm driver needs " + strings.Join(e.what, ", ")
	if len(e.pkgs) > 0 {
		msg += ": apt-get install " + strings.Join(e.pkgs, " ")
	}
	if e.hint != "" {
		msg += "; " + e.hint
	}
	return msg
}

type tool struct{ name, pkg string }

func needTools(tools ...tool) error {
	e := &missingError{}
	for _, t := range tools {
		if _, err := exec.LookPath(t.name); err != nil {
			e.what = append(e.what, t.name)
			e.pkgs = append(e.pkgs, t.pkg)
		}
	}
	if len(e.what) > 0 {
		return e
	}
	return nil
}
