package local

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
	"time"

	"github.com/cooprhq/coopr/internal/filelock"
)

// DefaultImageDir is where base images are cached unless Config says otherwise.
const DefaultImageDir = "/var/lib/coopr/local/images"

// imageName names the one base image coopr builds.
const imageName = "bookworm"

// packages are what every node ships: systemd to boot, sshd to be reached,
// python3 for ansible and the example web service, haproxy for the example
// lb service, and a few tools scripts and tests use.
var packages = []string{
	"systemd", "systemd-sysv", "dbus", "openssh-server", "iproute2", "python3",
	"sudo", "haproxy", "curl", "ca-certificates", "procps", "iputils-ping",
}

// recipeVersion changes whenever customize changes what it writes, so an
// image cached by an older build is never reused.
const recipeVersion = "3"

// sshdConfig replaces nothing in Debian's sshd_config: the drop-in is read
// first and its values win. The host keys are the ones each node gets at
// CREATE; the image itself ships none.
const sshdConfig = `# written by coopr: nodes are reached as root with the cluster key only
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
`

// masked units do nothing useful in a container and only slow its boot or
// leave it degraded.
var masked = []string{
	"console-getty.service", "getty@.service", "container-getty@.service",
	"getty.target", "systemd-networkd-wait-online.service",
	"apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_reap.service",
	"e2scrub_all.timer", "fstrim.timer", "systemd-binfmt.service",
	"proc-sys-fs-binfmt_misc.automount", "sys-kernel-debug.mount",
	"sys-kernel-tracing.mount", "systemd-remount-fs.service",
}

// recipeHash identifies what an image contains; the mirror is left out, any
// mirror of the suite gives the same image.
func recipeHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "debootstrap --variant=minbase %s\n%s\n%s\n%s\n%s\n",
		imageName, strings.Join(packages, ","), sshdConfig, strings.Join(masked, ","), recipeVersion)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// EnsureImage returns the root file system of the base image under dir
// (DefaultImageDir when empty), building it first if it is not cached. It
// is safe to call from several processes at once: one builds (~80 s), the
// others wait for it. A build crashed midway leaves only a temporary
// directory that the next build removes.
func EnsureImage(ctx context.Context, dir string, log *slog.Logger) (string, error) {
	if dir == "" {
		dir = DefaultImageDir
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	name := imageName + "-" + recipeHash()
	final := filepath.Join(dir, name)
	rootfs := filepath.Join(final, "rootfs")
	if _, err := os.Stat(rootfs); err == nil {
		return rootfs, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("image dir: %w", err)
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(dir, name+".lock"))
	if err != nil {
		return "", fmt.Errorf("lock image %s: %w", name, err)
	}
	defer unlock()
	if _, err := os.Stat(rootfs); err == nil {
		log.Info("base image built by another process", "image", final)
		return rootfs, nil
	}
	// Holding the lock, any temporary directory of this image is a
	// crashed build's.
	stale, _ := filepath.Glob(filepath.Join(dir, ".tmp-"+name+"-*"))
	for _, s := range stale {
		log.Info("removing a crashed image build", "dir", s)
		if err := removeTree(s); err != nil {
			return "", fmt.Errorf("remove crashed build: %w", err)
		}
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "", &missingToolError{tools: []string{"debootstrap"}, pkgs: []string{"debootstrap"}}
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("image temp dir: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			if err := removeTree(tmp); err != nil {
				log.Warn("removing a failed image build", "dir", tmp, "err", err)
			}
		}
	}()
	mirror := aptMirror()
	start := time.Now()
	log.Info("building base image with debootstrap (about 80 s)", "image", final, "mirror", mirror)
	root := filepath.Join(tmp, "rootfs")
	args := []string{"--variant=minbase", "--include=" + strings.Join(packages, ","), imageName, root, mirror}
	if err := runLogged(ctx, log, "debootstrap", args...); err != nil {
		return "", fmt.Errorf("debootstrap: %w", err)
	}
	if err := customize(root); err != nil {
		return "", fmt.Errorf("customize image: %w", err)
	}
	recipe := fmt.Sprintf("debootstrap %s\nmirror %s\nbuilt %s\n", strings.Join(args, " "), mirror, time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(filepath.Join(tmp, "recipe"), []byte(recipe), 0o644); err != nil {
		return "", fmt.Errorf("image recipe: %w", err)
	}
	// A rename is atomic: readers see no image or a whole one.
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("install image: %w", err)
	}
	ok = true
	log.Info("base image built", "image", final, "took", time.Since(start).Round(time.Second))
	return rootfs, nil
}

// customize makes a debootstrapped tree a node template: no identity of
// its own (host keys, hostname, machine id are per node), sshd accepting
// root's key, and nothing at boot that a container does not need.
func customize(root string) error {
	keys, _ := filepath.Glob(filepath.Join(root, "etc/ssh/ssh_host_*"))
	for _, k := range keys {
		if err := os.Remove(k); err != nil {
			return err
		}
	}
	for _, f := range []string{"etc/hostname", "etc/machine-id", "var/lib/dbus/machine-id"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/ssh/sshd_config.d"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "etc/ssh/sshd_config.d/coopr.conf"), []byte(sshdConfig), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "root/.ssh"), 0o700); err != nil {
		return err
	}
	sys := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(filepath.Join(sys, "multi-user.target.wants"), 0o755); err != nil {
		return err
	}
	// Debian enables ssh at install; make sure of it rather than trust it.
	wants := filepath.Join(sys, "multi-user.target.wants/ssh.service")
	if _, err := os.Lstat(wants); errors.Is(err, os.ErrNotExist) {
		if err := os.Symlink("/lib/systemd/system/ssh.service", wants); err != nil {
			return err
		}
	}
	// haproxy is in the image for the lb service, which starts it itself;
	// every other node would run an idle one.
	if err := os.Remove(filepath.Join(sys, "multi-user.target.wants/haproxy.service")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, u := range masked {
		p := filepath.Join(sys, u)
		_ = os.Remove(p)
		if err := os.Symlink("/dev/null", p); err != nil {
			return err
		}
	}
	// The apt cache is 40 MB nobody on an offline node can use.
	debs, _ := filepath.Glob(filepath.Join(root, "var/cache/apt/archives/*.deb"))
	for _, d := range debs {
		_ = os.Remove(d)
	}
	return nil
}

// aptMirror is the Debian mirror this host's apt uses, so the image comes
// from where the host's packages come from (a proxy or a snapshot).
func aptMirror() string {
	const fallback = "http://deb.debian.org/debian"
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		if m := mirrorFromDeb822(f); m != "" {
			return m
		}
	}
	files, _ = filepath.Glob("/etc/apt/sources.list.d/*.list")
	files = append([]string{"/etc/apt/sources.list"}, files...)
	for _, f := range files {
		if m := mirrorFromList(f); m != "" {
			return m
		}
	}
	return fallback
}

// mirrorFromDeb822 reads a deb822 .sources file for an entry serving the
// image's suite itself (not -security or -updates).
func mirrorFromDeb822(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
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
			if s == imageName && len(uris) > 0 {
				return uris[0]
			}
		}
	}
	return ""
}

// mirrorFromList reads one-line-style sources: "deb [opts] URI SUITE ...".
func mirrorFromList(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
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
		if len(fields) >= 2 && fields[1] == imageName {
			return fields[0]
		}
	}
	return ""
}

// runLogged runs a command, sending its output to log line by line so a
// long build shows progress.
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
			log.Debug(name, "line", line)
			// debootstrap says "I: <Verb> <what>" for every package:
			// the first line of each verb is progress, the rest noise.
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
