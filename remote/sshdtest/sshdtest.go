// Package sshdtest starts real OpenSSH sshd processes for tests. Each host
// listens on its own loopback address (127.0.1.N) and free port, has its own
// ed25519 host key, authorizes one client key for root and, optionally, for
// a non-root user with passwordless sudo.
//
// Each sshd runs in private UTS and mount namespaces with its own copies of
// /etc/hosts, /etc/hostname and /var/lib/coopr bind-mounted in, so drivers
// under test can set the hostname and rewrite /etc/hosts without touching
// the machine running the tests. A bind-mounted /etc/hosts is also what
// containers have, where rename(2) over it fails with EBUSY.
//
// sshd also reads the logging-in user's own ~/.ssh/authorized_keys, where
// BOOTSTRAP installs cluster owners' keys: a test of that uses the non-root
// user, whose home is the host's own.
package sshdtest

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/remote"
)

// SSHD is the server binary the hosts run.
const SSHD = "/usr/sbin/sshd"

// Key is a client key pair.
type Key struct {
	Signer        ssh.Signer
	PEM           []byte // OpenSSH private key, as coopr keeps it in secrets.ssh.privateKey
	AuthorizedKey string // public key in authorized_keys format
}

// NewKey generates an ed25519 client key.
func NewKey(t testing.TB) *Key {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "sshdtest")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{Signer: signer, PEM: pem.EncodeToMemory(block), AuthorizedKey: remote.AuthorizedKey(sshPub)}
}

// Options configure a host.
type Options struct {
	// Key is the authorized client key; nil generates one. Share a key
	// between hosts to model a cluster's per-cluster key.
	Key *Key
	// NonRoot also creates a non-root user (password field "*", so sshd
	// accepts key logins) with passwordless sudo.
	NonRoot bool
	// MaxSessions is sshd's MaxSessions (default 10, OpenSSH's default).
	MaxSessions int
	// Hostname is the host's initial hostname (default sshdtest-N).
	Hostname string
}

// Host is a running sshd.
type Host struct {
	IP   string
	Port int
	Key  *Key
	// User is the non-root user when Options.NonRoot, else "".
	User string
	Dir  string

	opts    Options
	mu      sync.Mutex
	hostKey ssh.Signer
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *Buffer
}

var seq atomic.Int32

// Start starts a host and stops it when the test ends. A missing sshd
// fails the test: these tests are the proof that drivers work over SSH.
func Start(t testing.TB, o Options) *Host {
	t.Helper()
	if _, err := os.Stat(SSHD); err != nil {
		t.Fatalf("%s not found: install openssh-server (apt-get install openssh-server)", SSHD)
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = 10
	}
	if o.Key == nil {
		o.Key = NewKey(t)
	}
	n := int(seq.Add(1))
	// Spread hosts of concurrently running test binaries over addresses;
	// ports are chosen free by the kernel anyway.
	ip := fmt.Sprintf("127.0.1.%d", 1+(os.Getpid()+n)%250)
	if o.Hostname == "" {
		o.Hostname = fmt.Sprintf("sshdtest-%d", n)
	}
	dir, err := os.MkdirTemp("", "sshdtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// sshd reads authorized_keys as the logging-in user: the non-root
	// user must be able to traverse to it.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &Host{IP: ip, Key: o.Key, Dir: dir, opts: o, log: &Buffer{}}
	h.newHostKey(t)
	h.prepareFiles(t)
	if o.NonRoot {
		h.addUser(t)
	}
	h.start(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sshd %s log:\n%s", h.Addr(), h.log.String())
		}
		h.Stop()
	})
	return h
}

// Addr is ip:port.
func (h *Host) Addr() string { return net.JoinHostPort(h.IP, strconv.Itoa(h.Port)) }

// HostKey is the host's current public host key.
func (h *Host) HostKey() ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hostKey.PublicKey()
}

// HostKeyLine is HostKey in authorized_keys format, as pins are kept.
func (h *Host) HostKeyLine() string { return remote.AuthorizedKey(h.HostKey()) }

// Target is the host as user ("" for root) with its client key and no pin.
func (h *Host) Target(user string) remote.Target {
	if user == "" {
		user = "root"
	}
	return remote.Target{Host: h.IP, Port: h.Port, User: user, Signer: h.Key.Signer}
}

// Log is what sshd logged so far.
func (h *Host) Log() string { return h.log.String() }

// Path maps a path of the host's private files to where it lies on this
// machine; other paths are shared with this machine and returned as is.
func (h *Host) Path(p string) string {
	switch {
	case p == "/etc/hosts":
		return filepath.Join(h.Dir, "etc", "hosts")
	case p == "/etc/hostname":
		return filepath.Join(h.Dir, "etc", "hostname")
	case p == "/var/lib/coopr" || strings.HasPrefix(p, "/var/lib/coopr/"):
		return filepath.Join(h.Dir, "varlib", strings.TrimPrefix(p, "/var/lib/coopr"))
	}
	return p
}

// Exec runs cmd with /bin/sh inside the host's namespaces, without SSH,
// and returns its stdout: an independent view for checking what drivers
// did.
func (h *Host) Exec(t testing.TB, cmd string) string {
	t.Helper()
	h.mu.Lock()
	pid := h.cmd.Process.Pid
	h.mu.Unlock()
	var stderr bytes.Buffer
	c := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", "-u", "--", "/bin/sh", "-c", cmd)
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("exec %q on %s: %v: %s", cmd, h.Addr(), err, stderr.String())
	}
	return string(out)
}

// Restart stops sshd, with every connection and command it serves, and
// starts it again on the same address with the same host key.
func (h *Host) Restart(t testing.TB) {
	t.Helper()
	h.Stop()
	h.start(t)
}

// RotateHostKey restarts the host with a newly generated host key, as a
// reinstalled machine or an impostor would present.
func (h *Host) RotateHostKey(t testing.TB) {
	t.Helper()
	h.Stop()
	h.newHostKey(t)
	h.start(t)
}

// Stop kills sshd and everything it started. It is safe to call twice.
func (h *Host) Stop() {
	h.mu.Lock()
	cmd, exited := h.cmd, h.exited
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	killTree(cmd.Process.Pid)
	<-exited
}

func (h *Host) newHostKey(t testing.TB) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "host_ed25519_key"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.hostKey = signer
	h.mu.Unlock()
}

func (h *Host) prepareFiles(t testing.TB) {
	for _, d := range []string{"etc", "varlib", "home"} {
		if err := os.MkdirAll(filepath.Join(h.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	// Name the host so sudo can resolve it, as on a provisioned machine.
	hosts = append(hosts, fmt.Sprintf("%s\t%s\n", h.IP, h.opts.Hostname)...)
	must(t, os.WriteFile(h.Path("/etc/hosts"), hosts, 0o644))
	must(t, os.WriteFile(h.Path("/etc/hostname"), []byte(h.opts.Hostname+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(h.Dir, "empty"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(h.Dir, "authorized_keys"), []byte(h.Key.AuthorizedKey+"\n"), 0o644))
	// sshd refuses to start without its privilege separation directory.
	must(t, os.MkdirAll("/run/sshd", 0o755))
	// The mount point of the host's private /var/lib/coopr (an empty
	// directory on this machine).
	must(t, os.MkdirAll("/var/lib/coopr", 0o755))
}

func (h *Host) addUser(t testing.TB) {
	if _, err := exec.LookPath("sudo"); err != nil {
		t.Fatal("sudo not found: install sudo (apt-get install sudo)")
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := "coopr" + hex.EncodeToString(rnd[:])
	home := filepath.Join(h.Dir, "home", name)
	// useradd takes a lock on /etc/passwd; tests in other packages may
	// hold it for a moment.
	var out []byte
	var err error
	for range 20 {
		out, err = exec.Command("useradd", "-M", "-d", home, "-s", "/bin/sh", "-p", "*", name).CombinedOutput()
		if err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	sudoers := "/etc/sudoers.d/" + name
	// Registered first, run last: after sshd and the user's processes
	// have stopped.
	t.Cleanup(func() {
		_ = os.Remove(sudoers)
		for range 20 {
			// userdel refuses while the user has processes; a test may
			// have left one (a daemon a script started, say).
			killUser(name)
			if exec.Command("userdel", name).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("sshdtest: could not delete user %s", name)
	})
	must(t, os.MkdirAll(home, 0o755))
	out, err = exec.Command("chown", name+":", home).CombinedOutput()
	if err != nil {
		t.Fatalf("chown %s: %v: %s", home, err, out)
	}
	must(t, os.WriteFile(sudoers, []byte(name+" ALL=(ALL:ALL) NOPASSWD: ALL\n"), 0o440))
	h.User = name
}

func (h *Host) writeConfig(t testing.TB) string {
	cfg := fmt.Sprintf(`ListenAddress %s
HostKey %s
PidFile none
AuthorizedKeysFile %s .ssh/authorized_keys
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
UseDNS no
PrintMotd no
MaxSessions %d
Subsystem sftp internal-sftp
LogLevel VERBOSE
`, h.Addr(), filepath.Join(h.Dir, "host_ed25519_key"), filepath.Join(h.Dir, "authorized_keys"), h.opts.MaxSessions)
	// sshd re-executes itself from /: the config path must be absolute.
	p := filepath.Join(h.Dir, "sshd_config")
	must(t, os.WriteFile(p, []byte(cfg), 0o644))
	return p
}

// setup runs inside the new namespaces before sshd replaces it.
const setup = `set -e
mount --bind "$1/etc/hosts" /etc/hosts
mount --bind "$1/etc/hostname" /etc/hostname
mount --bind "$1/varlib" /var/lib/coopr
# A fresh machine's root has no shell start-up files; this one's may
# take a second per command (sshd runs every command through the login
# shell, and bash reads ~/.bashrc when started by sshd).
if [ -e /root/.bashrc ]; then mount --bind "$1/empty" /root/.bashrc; fi
hostname "$2"
exec ` + SSHD + ` -D -e -f "$3"
`

func (h *Host) start(t testing.TB) {
	t.Helper()
	var lastErr error
	for i := range 5 {
		// A restart keeps the address (targets and pins refer to it)
		// unless another process took the port meanwhile.
		if h.Port == 0 || i > 0 {
			port, err := freePort(h.IP)
			if err != nil {
				t.Fatal(err)
			}
			h.Port = port
		}
		cfg := h.writeConfig(t)
		h.log.Reset()
		cmd := exec.Command("unshare", "--uts", "--mount", "--propagation", "private", "--",
			"/bin/sh", "-c", setup, "sshdtest", h.Dir, h.opts.Hostname, cfg)
		cmd.Stdout, cmd.Stderr = h.log, h.log
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
		// A command that escaped the kill could hold the log pipe open.
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatalf("start sshd: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		h.mu.Lock()
		h.cmd, h.exited = cmd, exited
		h.mu.Unlock()
		if lastErr = waitBanner(h.Addr(), exited); lastErr == nil {
			return
		}
		h.Stop()
		// Most likely another process took the port in between: retry.
	}
	t.Fatalf("sshd on %s did not start: %v\n%s", h.IP, lastErr, h.log.String())
}

func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitBanner(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("sshd exited")
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && strings.HasPrefix(line, "SSH-2.0-") {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no SSH banner within 10s")
}

// Freeze stops sshd and every process it started (SIGSTOP), as a host
// that vanished without closing anything would look: connects still
// complete, as the kernel answers them, but nothing speaks SSH, and open
// connections answer no request. Thaw resumes it; Stop kills it as usual.
func (h *Host) Freeze() { h.signalTree(syscall.SIGSTOP) }

// Thaw resumes a frozen host.
func (h *Host) Thaw() { h.signalTree(syscall.SIGCONT) }

func (h *Host) signalTree(sig syscall.Signal) {
	h.mu.Lock()
	cmd := h.cmd
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	for _, p := range stopTree(cmd.Process.Pid) {
		if sig != syscall.SIGSTOP {
			_ = syscall.Kill(p, sig)
		}
	}
}

// TraceExecs makes the host log every execution of the programs at paths
// (absolute; a symlink such as /bin/sh counts for its target): in the
// host's mount namespace only, each is replaced by a bash script that
// logs the path it stands for and runs a copy of the program under the
// same name. The returned function lists the paths executed since, in
// order: what a command costs in programs, each a fork and exec that a
// loaded host makes slow. Exec's own /bin/sh counts too.
func (h *Host) TraceExecs(t testing.TB, paths ...string) func() []string {
	t.Helper()
	dir := filepath.Join(h.Dir, "trace")
	must(t, os.MkdirAll(dir, 0o755))
	logf := filepath.Join(dir, "execs.log")
	must(t, os.WriteFile(logf, nil, 0o666))
	// Every user the host serves appends to the log.
	must(t, os.Chmod(logf, 0o666))
	var script strings.Builder
	script.WriteString("set -e\n")
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			t.Fatalf("TraceExecs: %q is no absolute path", p)
		}
		real := filepath.Join(dir, fmt.Sprintf("%d.real", i))
		wrapper := filepath.Join(dir, fmt.Sprintf("%d.wrapper", i))
		must(t, os.WriteFile(wrapper, fmt.Appendf(nil, "#!/bin/bash\nprintf '%%s\\n' %s >> %s\nexec -a \"$0\" %s \"$@\"\n",
			remote.Quote(p), remote.Quote(logf), remote.Quote(real)), 0o755))
		fmt.Fprintf(&script, "cp -p %s %s\nmount --bind %s %s\n", remote.Quote(p), remote.Quote(real), remote.Quote(wrapper), remote.Quote(p))
	}
	h.Exec(t, script.String())
	return func() []string {
		b, err := os.ReadFile(logf)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
}

// CPU is the processor time sshd and everything it started have used so
// far (user and system, with that of their reaped children): what the host
// spends serving connections, for benchmarks. Its resolution is the
// kernel's clock tick (usually 10ms): measure over many commands.
func (h *Host) CPU() time.Duration {
	h.mu.Lock()
	cmd := h.cmd
	h.mu.Unlock()
	if cmd == nil {
		return 0
	}
	kids := children()
	var ticks int64
	seen := map[int]bool{}
	frontier := []int{cmd.Process.Pid}
	for len(frontier) > 0 {
		p := frontier[0]
		frontier = frontier[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		ticks += cpuTicks(p)
		frontier = append(frontier, kids[p]...)
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return time.Duration(ticks) * (time.Second / 100)
}

// cpuTicks is utime+stime+cutime+cstime of pid from /proc/pid/stat.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	// After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0
	}
	var n int64
	for _, x := range f[11:15] {
		v, _ := strconv.ParseInt(x, 10, 64)
		n += v
	}
	return n
}

// killTree stops pid and its descendants before killing them, so that none
// can fork or be reparented out of reach in between. sshd's per-connection
// processes and the commands they run are all descendants of the listener.
func killTree(pid int) {
	for _, p := range stopTree(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// stopTree sends SIGSTOP to pid and its descendants and lists them.
func stopTree(pid int) []int {
	stopped := map[int]bool{}
	frontier := []int{pid}
	for len(frontier) > 0 {
		var next []int
		for _, p := range frontier {
			if stopped[p] {
				continue
			}
			_ = syscall.Kill(p, syscall.SIGSTOP)
			stopped[p] = true
		}
		kids := children()
		for p := range stopped {
			for _, k := range kids[p] {
				if !stopped[k] {
					next = append(next, k)
				}
			}
		}
		frontier = next
	}
	out := make([]int, 0, len(stopped))
	for p := range stopped {
		out = append(out, p)
	}
	return out
}

// killUser kills every process whose real or effective user is name.
func killUser(name string) {
	u, err := user.Lookup(name)
	if err != nil {
		return
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 2 && (f[0] == u.Uid || f[1] == u.Uid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				break
			}
		}
	}
}

// children maps each process id to its children's, from /proc.
func children() map[int][]int {
	out := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces: parse after it.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		out[ppid] = append(out[ppid], pid)
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Buffer is a bytes.Buffer that many writers may share, such as an SSH
// session's stdout and stderr, or a process's log written while a test
// reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
