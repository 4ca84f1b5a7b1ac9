package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// missingToolError is a host that lacks what the driver needs; retrying
// cannot fix it, installing can.
type missingToolError struct {
	tools []string
	pkgs  []string
	extra string
}

func (e *missingToolError) Error() string {
	msg := "local vm driver needs " + strings.Join(e.tools, ", ")
	if len(e.pkgs) > 0 {
		msg += ": apt-get install " + strings.Join(e.pkgs, " ")
	}
	if e.extra != "" {
		msg += "; " + e.extra
	}
	return msg
}

// preflight checks what every action that touches a node needs. The
// image's debootstrap is checked only when an image must be built.
func preflight() error {
	if os.Geteuid() != 0 {
		return &missingToolError{tools: []string{"root"}, extra: "run the agent as root (it mounts, creates network devices and boots containers)"}
	}
	e := &missingToolError{}
	need := []struct{ tool, pkg string }{
		{"systemd-nspawn", "systemd-container"},
		{"ip", "iproute2"},
		{"nft", "nftables"},
		{"mount", "mount"},
		{"umount", "mount"},
	}
	for _, n := range need {
		if _, err := exec.LookPath(n.tool); err != nil {
			e.tools = append(e.tools, n.tool)
			if !contains(e.pkgs, n.pkg) {
				e.pkgs = append(e.pkgs, n.pkg)
			}
		}
	}
	if b, err := os.ReadFile("/proc/filesystems"); err != nil || !bytes.Contains(b, []byte("\toverlay\n")) {
		e.tools = append(e.tools, "overlayfs")
		e.extra = "load it with: modprobe overlay"
	}
	if len(e.tools) > 0 {
		return e
	}
	if err := raiseInotifyLimits(); err != nil {
		return fmt.Errorf("raise the host's inotify limits for the nodes' systemd: %w", err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// run runs a short host command; its output is in the error because ip and
// mount say what went wrong only there.
func run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// mountsUnder lists mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountAll unmounts everything at or below dir. A mount still busy (a
// process of a dying container holding it) is detached: it disappears
// from the tree now and from the kernel once released.
func unmountAll(dir string) error {
	mps, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	for _, mp := range mps {
		if err := syscall.Unmount(mp, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	left, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("still mounted under %s: %s", dir, strings.Join(left, ", "))
	}
	return nil
}

// removeTree removes dir and everything in it, never following a mount:
// a crashed debootstrap can leave the host's /proc, /sys or /dev mounted
// inside, and os.RemoveAll would walk into them.
func removeTree(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := unmountAll(dir); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// processAlive says whether pid runs and is the nspawn of machine, so
// neither a zombie nor a recycled pid counts.
func processAlive(pid int, machine string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself
	// contain spaces and parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte("systemd-nspawn")) && bytes.Contains(cmdline, []byte("\x00--machine="+machine+"\x00"))
}

// findNspawn returns the pid of the systemd-nspawn running machine, or 0.
func findNspawn(machine string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && processAlive(pid, machine) {
			return pid
		}
	}
	return 0
}

// liveMachines names the coopr containers whose nspawn runs, in any state
// dir.
func liveMachines() map[string]bool {
	out := map[string]bool{}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte("systemd-nspawn")) {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if name, ok := bytes.CutPrefix(arg, []byte("--machine=")); ok && nameRE.Match(name) {
				out[string(name)] = true
			}
		}
	}
	return out
}

// readPid reads a pid file; a missing or garbled one is pid 0.
func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// netnsProcesses lists the processes in the network namespace bound at
// path: a container's processes all live in its namespace, including any
// that survive their nspawn.
func netnsProcesses(path string) []int {
	var ns syscall.Stat_t
	if err := syscall.Stat(path, &ns); err != nil {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil && st.Ino == ns.Ino && st.Dev == ns.Dev {
			pids = append(pids, pid)
		}
	}
	return pids
}

// rootProcesses lists the processes whose root directory is dir (the same
// file: a container's processes see its mounted root as theirs). A dir
// that is not mounted is nobody's root.
func rootProcesses(dir string) []int {
	var root syscall.Stat_t
	if err := syscall.Stat(dir, &root); err != nil {
		return nil
	}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(fmt.Sprintf("/proc/%d/root", pid), &st) == nil && st.Ino == root.Ino && st.Dev == root.Dev {
			pids = append(pids, pid)
		}
	}
	return pids
}

// writeFileAtomic replaces path in one step, so a crash leaves the old
// content or the new, never half.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// inotifyLimits are what the host needs for many containers: every node's
// systemd takes inotify instances of the host's shared per-user budget
// (default 128, enough for a few dozen nodes before PID 1 fails to start
// with "Too many open files").
var inotifyLimits = []struct {
	path string
	min  int
}{
	{"/proc/sys/fs/inotify/max_user_instances", 8192},
	{"/proc/sys/fs/inotify/max_user_watches", 524288},
}

// raiseInotifyLimits raises, never lowers, the host's inotify limits.
func raiseInotifyLimits() error {
	for _, l := range inotifyLimits {
		b, err := os.ReadFile(l.path)
		if err != nil {
			return err
		}
		cur, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("%s: %w", l.path, err)
		}
		if cur >= l.min {
			continue
		}
		if err := os.WriteFile(l.path, []byte(strconv.Itoa(l.min)), 0o644); err != nil {
			return err
		}
	}
	return nil
}
