// Package hosts is the network driver "hosts": it makes the cluster's nodes
// find each other by name through every node's /etc/hosts.
//
// NETWORK_ALLOCATE and NETWORK_RELEASE succeed without doing anything: the
// addresses are the ones the vm driver's machines already have, so there is
// no pool to allocate from and nothing to give back.
//
// NETWORK_CONFIGURE writes one line per cluster node with an address,
// `address hostname shortname` (bind_v4, else access_v4), between
// `# BEGIN coopr <clusterId>` and `# END coopr <clusterId>` in the node's
// /etc/hosts, replacing that block if present and leaving every other line
// as it was. NETWORK_UNCONFIGURE removes the block; no block, or a node
// that was never given an address, is success. Writing is skipped when
// nothing would change.
//
// A node that does not answer, or whose address shows another host key
// than the pinned one (not the machine that was configured, whose
// /etc/hosts is not ours to edit), fails with Result.Unreachable and
// nothing run on it: the server skips a NETWORK_UNCONFIGURE so reported,
// so that a cluster whose machines are gone can still be deleted.
package hosts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// Descriptor is the driver's identity: role network, name hosts.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{Role: drivers.RoleNetwork, Name: "hosts", Version: "1"}
}

// Driver runs the network tasks.
type Driver struct {
	pool *remote.Pool
	log  *slog.Logger
	// afterRead, when set (by tests), runs once the file has been read
	// and before the rest of the script is sent: a writer coming between.
	afterRead func()
}

// New returns the driver; pool is shared with the agent's other SSH drivers.
func New(pool *remote.Pool, log *slog.Logger) drivers.Driver {
	if log == nil {
		log = slog.Default()
	}
	return &Driver{pool: pool, log: log}
}

const statusFailed = 1

// Run runs one network task.
func (d *Driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	switch t.TaskName {
	case "NETWORK_ALLOCATE", "NETWORK_RELEASE":
		return drivers.Result{Status: 0, Message: "hosts: nothing to " + strings.ToLower(strings.TrimPrefix(t.TaskName, "NETWORK_")) + ": nodes keep the addresses their machines have"}
	case "NETWORK_CONFIGURE", "NETWORK_UNCONFIGURE":
	default:
		return failure(fmt.Errorf("the hosts network driver does not run %s", t.TaskName), false)
	}
	if t.Node == nil {
		return failure(fmt.Errorf("%s task %s has no node", t.TaskName, t.TaskID), false)
	}
	clusterID := t.ClusterID
	if clusterID == "" {
		clusterID = t.Cluster.ID
	}
	if !validID.MatchString(clusterID) {
		return failure(fmt.Errorf("cluster id %q cannot mark a block in /etc/hosts", clusterID), false)
	}
	configure := t.TaskName == "NETWORK_CONFIGURE"
	var block string
	if configure {
		var err error
		if block, err = Block(clusterID, t.Nodes); err != nil {
			return failure(err, false)
		}
	}
	tg, err := drivers.TargetOf(t, t.Node)
	if err != nil {
		if !configure && errors.Is(err, remote.ErrNoAddress) {
			return drivers.Result{Status: 0, Message: "hosts: node was never reached: nothing to remove"}
		}
		return failure(err, false)
	}
	out.Status(strings.ToLower(t.TaskName)+" /etc/hosts on "+t.Node.Hostname, 0)

	// The write is a compare-and-swap on the content read; should another
	// writer come between, read again.
	for attempt := 1; ; attempt++ {
		changed, err := d.update(ctx, tg, clusterID, block)
		if errors.Is(err, errChanged) && attempt < 3 {
			continue
		}
		if err != nil {
			if remote.Unreachable(err) {
				d.log.Warn("hosts: node unreachable; /etc/hosts left alone", "task", t.TaskID, "node", t.Node.ID, "err", err)
			}
			return failure(err, !remote.Terminal(err))
		}
		msg := "hosts: /etc/hosts already up to date"
		if changed {
			msg = "hosts: /etc/hosts updated"
		}
		out.Status(msg, 100)
		d.log.Info(msg, "task", t.TaskID, "node", t.Node.ID, "target", tg.String())
		return drivers.Result{Status: 0, Message: msg}
	}
}

var errChanged = errors.New("/etc/hosts changed while being updated")

// hostsPath is the file NETWORK_CONFIGURE edits.
const hostsPath = "/etc/hosts"

// update puts block in place of the cluster's block ("" removes it) and
// reports whether the file changed. One session reads the file and, once
// the new content is worked out here, writes it: a session costs a fork of
// sshd and a round trip, which a loaded host makes slow.
func (d *Driver) update(ctx context.Context, tg remote.Target, clusterID, block string) (bool, error) {
	return exchange(hostsPath, clusterID, block, d.afterRead, func(script io.Reader, stdout func(string)) error {
		return d.pool.Run(ctx, tg, "", remote.RunOptions{Sudo: true, Script: true, Stdin: script, Stdout: stdout})
	})
}

// exchange runs the shell script that updates the hosts file at path,
// through run, which feeds the script to a /bin/sh reading it as it goes
// and returns a *remote.ExitError for a non-zero exit. The script's first
// part prints the file in base64 and a marker; the rest is sent only once
// the new content is worked out here: none when nothing changes, else
// the commands that write it (writeScript).
func exchange(path, clusterID, block string, afterRead func(), run func(script io.Reader, stdout func(string)) error) (bool, error) {
	marker := "coopr-hosts-" + randomHex()
	pr, pw := io.Pipe()
	defer pw.Close()
	var b64 strings.Builder
	var read, changed bool
	var decodeErr error
	err := run(io.MultiReader(strings.NewReader(readScript(path, marker)), pr), func(line string) {
		if read {
			return
		}
		if line != marker {
			b64.WriteString(line)
			return
		}
		read = true
		cur, err := base64.StdEncoding.DecodeString(b64.String())
		if err != nil {
			decodeErr = err
			_ = pw.Close() // the script ends: the file is left alone
			return
		}
		next := Apply(string(cur), clusterID, block)
		if next == string(cur) {
			_ = pw.Close()
			return
		}
		changed = true
		if afterRead != nil {
			afterRead()
		}
		// Not here: the shell reads the script while its output is read.
		go func() {
			_, _ = io.WriteString(pw, writeScript(path, marker, string(cur), next))
			_ = pw.Close()
		}()
	})
	var ee *remote.ExitError
	switch {
	case errors.As(err, &ee) && ee.Code == exitChanged:
		return false, errChanged
	case err != nil:
		return false, fmt.Errorf("update /etc/hosts: %w", describe(err))
	case decodeErr != nil:
		return false, fmt.Errorf("read /etc/hosts: %w", decodeErr)
	case !read:
		return false, errors.New("read /etc/hosts: the node sent no content")
	}
	return changed, nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const exitChanged = 75

// readScript prints the file in base64, keeping that in $h for the
// compare-and-swap, then the marker. Closing its stdin then ends the shell
// with the file untouched.
//
// Each program the script runs is a fork and exec that a loaded host makes
// slow: base64 is the only one here, and writeScript adds mv, and base64
// again only for a large file.
func readScript(path, marker string) string {
	return fmt.Sprintf(`set -e
h=$(base64 < %s)
echo "$h"
echo %s
`, remote.Quote(path), marker)
}

// shellCompareMax is the largest content read with the shell's read for
// the compare-and-swap (which reads a byte a system call): past about
// 2 KiB that costs more than running base64 again.
const shellCompareMax = 2048

// writeScript replaces the file's content cur with next if the file still
// has it. The new content is a word of the script, so the shell writes it
// itself (printf, or print in mksh, whose printf is a program; only
// content with a NUL byte, which no shell word holds, goes through
// base64 -d), to a temporary file beside the file first (noclobber, named
// by the random marker, mode 0644 by the umask); renaming that over the
// file is atomic, but fails where the file is a mount point (containers
// bind-mount /etc/hosts), and a symlink must stay one: then the content is
// written in place.
//
// The check reads the file again just before the rename: a small file with
// the shell's read, compared with cur as a word of the script (no program;
// the shell's read drops NUL bytes, so cur must have none), a larger one
// with base64, compared with the output read first.
func writeScript(path, marker, cur, next string) string {
	p := remote.Quote(path)
	check := `[ "$(base64 < ` + p + `)" = "$h" ]`
	if len(cur) <= shellCompareMax && !strings.ContainsRune(cur, 0) {
		check = `c= l=
  while IFS= read -r l; do c="$c$l
"; done < ` + p + `
  [ "$c$l" = ` + remote.Quote(cur) + ` ]`
	}
	write := `n=` + remote.Quote(next) + `
if [ -n "${KSH_VERSION-}" ]; then w() { print -rn -- "$n"; }; else w() { printf %s "$n"; }; fi`
	if strings.ContainsRune(next, 0) {
		var b strings.Builder
		enc := base64.StdEncoding.EncodeToString([]byte(next))
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\n")
			enc = enc[76:]
		}
		b.WriteString(enc)
		write = "w() {\nbase64 -d <<'COOPR_EOF'\n" + b.String() + "\nCOOPR_EOF\n}"
	}
	return fmt.Sprintf(`%[1]s
same() {
  %[2]s && return
  echo %[4]s' changed while being updated' >&2
  exit %[3]d
}
umask 022
if [ -L %[4]s ]; then same; w > %[4]s; exit 0; fi
tmp=%[5]s
trap '[ ! -e "$tmp" ] || rm -f "$tmp"' EXIT
set -C
w > "$tmp"
set +C
same
mv -f "$tmp" %[4]s 2>/dev/null || w > %[4]s
`, write, check, exitChanged, p, remote.Quote(path[:strings.LastIndex(path, "/")+1]+".hosts."+marker))
}

var (
	validID   = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)
	validName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
)

func begin(clusterID string) string { return "# BEGIN coopr " + clusterID }
func end(clusterID string) string   { return "# END coopr " + clusterID }

// Block is the cluster's block for /etc/hosts: a line per node with an
// address (bind_v4, else access_v4) and a hostname, in node number order.
// An address or hostname that would corrupt the file is an error.
func Block(clusterID string, nodes map[string]drivers.Node) (string, error) {
	list := make([]drivers.Node, 0, len(nodes))
	for _, n := range nodes {
		list = append(list, n)
	}
	slices.SortFunc(list, func(a, b drivers.Node) int {
		if a.NodeNum != b.NodeNum {
			return a.NodeNum - b.NodeNum
		}
		return strings.Compare(a.ID, b.ID)
	})
	var b strings.Builder
	b.WriteString(begin(clusterID) + "\n")
	for _, n := range list {
		addr := n.IPAddresses["bind_v4"]
		if addr == "" {
			addr = n.IPAddresses["access_v4"]
		}
		if addr == "" || n.Hostname == "" {
			continue
		}
		if _, err := netip.ParseAddr(addr); err != nil {
			return "", fmt.Errorf("node %s: address %q: %w", n.ID, addr, err)
		}
		if !validName.MatchString(n.Hostname) {
			return "", fmt.Errorf("node %s: hostname %q is not a valid host name", n.ID, n.Hostname)
		}
		b.WriteString(addr + " " + n.Hostname)
		if short, _, ok := strings.Cut(n.Hostname, "."); ok {
			b.WriteString(" " + short)
		}
		b.WriteString("\n")
	}
	b.WriteString(end(clusterID) + "\n")
	return b.String(), nil
}

// Apply returns hosts with the cluster's block replaced by block, or
// removed when block is "". A new block goes at the end; every other line
// is kept byte for byte. A BEGIN marker whose END is missing takes the
// entry lines after it, up to a blank or comment line, as its block.
func Apply(hosts, clusterID, block string) string {
	lines := strings.SplitAfter(hosts, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	b, e := begin(clusterID), end(clusterID)
	var out []string
	at := -1
	for i := 0; i < len(lines); i++ {
		if strings.TrimRight(lines[i], "\r\n") != b {
			out = append(out, lines[i])
			continue
		}
		if at < 0 {
			at = len(out)
		}
		j := i + 1
		for j < len(lines) && strings.TrimRight(lines[j], "\r\n") != e {
			j++
		}
		if j == len(lines) { // unterminated
			j = i + 1
			for j < len(lines) {
				l := strings.TrimSpace(lines[j])
				if l == "" || strings.HasPrefix(l, "#") {
					break
				}
				j++
			}
			j--
		}
		i = j
	}
	if block == "" {
		return strings.Join(out, "")
	}
	if at < 0 {
		at = len(out)
		if at > 0 && !strings.HasSuffix(out[at-1], "\n") {
			out[at-1] += "\n"
		}
	}
	out = slices.Insert(out, at, block)
	return strings.Join(out, "")
}

func describe(err error) error {
	var ee *remote.ExitError
	if errors.As(err, &ee) && ee.Stderr != "" {
		return fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return err
}

func failure(err error, retryable bool) drivers.Result {
	r := drivers.Result{Status: statusFailed, Message: "hosts: " + err.Error(), Unreachable: remote.Unreachable(err)}
	if !retryable {
		r.Retryable = &retryable
	}
	return r
}
