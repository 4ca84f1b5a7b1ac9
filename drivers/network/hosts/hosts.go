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

// update puts block in place of the cluster's block ("" removes it) and
// reports whether the file changed. One session reads the file and, once
// the new content is worked out here, writes it: a session costs a fork of
// sshd and a round trip, which a loaded host makes slow.
func (d *Driver) update(ctx context.Context, tg remote.Target, clusterID, block string) (bool, error) {
	marker := "coopr-hosts-" + randomHex()
	pr, pw := io.Pipe()
	defer pw.Close()
	var b64 strings.Builder
	var read, changed bool
	var decodeErr error
	err := d.pool.Run(ctx, tg, updateHosts, remote.RunOptions{
		Sudo:  true,
		Stdin: pr,
		Env:   map[string]string{"COOPR_HOSTS_MARKER": marker},
		Stdout: func(line string) {
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
				_ = pw.Close() // nothing to write: the command leaves the file alone
				return
			}
			next := Apply(string(cur), clusterID, block)
			if next == string(cur) {
				_ = pw.Close()
				return
			}
			changed = true
			// Not here: the command reads while its output is read.
			go func() {
				_, _ = io.WriteString(pw, "W\n"+next)
				_ = pw.Close()
			}()
		},
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

// updateHosts prints /etc/hosts in base64 and the marker, then reads the
// new content from stdin: nothing leaves the file as it is, a line "W"
// and the content replace it if it still has the content printed (when
// sha256sum is there to tell). The new content goes to a temporary file in
// /etc first; renaming it over /etc/hosts is atomic, but fails where
// /etc/hosts is a mount point (containers bind-mount it), and a symlink
// must stay one: then the prepared content is written in place.
//
// Each program is a fork and exec that a loaded host makes slow: the
// shell's read takes the "W" line (reading no further), the temporary
// file is made by the shell (noclobber, named by the random marker, mode
// 0644 by the umask), and nothing is made when nothing changes.
var updateHosts = fmt.Sprintf(`set -e
sum=
if command -v sha256sum >/dev/null 2>&1; then sum=$(sha256sum < /etc/hosts); fi
base64 < /etc/hosts
echo "$COOPR_HOSTS_MARKER"
IFS= read -r w || exit 0
[ "$w" = W ] || exit 0
umask 022
tmp="/etc/.hosts.$COOPR_HOSTS_MARKER"
trap '[ ! -e "$tmp" ] || rm -f "$tmp"' EXIT
set -C
cat > "$tmp"
set +C
if [ -n "$sum" ] && [ "$(sha256sum < /etc/hosts)" != "$sum" ]; then
  echo "/etc/hosts changed while being updated" >&2
  exit %d
fi
if [ -L /etc/hosts ] || ! mv -f "$tmp" /etc/hosts 2>/dev/null; then
  cat "$tmp" > /etc/hosts
fi
`, exitChanged)

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
