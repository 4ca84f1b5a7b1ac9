// Package sshnode is the node driver "ssh": BOOTSTRAP over SSH
// (docs/task-protocol.md#agents-and-slots). It waits until the node answers
// SSH, verifies the pinned host key (or pins the one the host shows at first
// contact), sets the hostname and gathers facts into the node namespace:
// hostKeys, os, arch, cpus, memoryMB, disks, interfaces and hostname
// (docs/drivers.md). Running it again verifies the pin, sets the same hostname
// and gathers facts anew.
package sshnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
)

// Descriptor is the driver's identity: role node, name ssh, no parameters.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{Role: drivers.RoleNode, Name: "ssh", Version: "1"}
}

// Driver runs BOOTSTRAP.
type Driver struct {
	pool *remote.Pool
	log  *slog.Logger
	// The wait for SSH backs off from minWait to maxWait between attempts.
	minWait, maxWait time.Duration
	// checkRetry bounds CHECK's retries of a node that does not answer.
	checkRetry time.Duration
}

// Options tune the driver; zero values are the defaults.
type Options struct {
	// CheckRetry bounds how long CHECK tries again a node that does not
	// answer SSH before reporting it unreachable (DefaultCheckRetry);
	// negative is a single attempt.
	CheckRetry time.Duration
}

// New returns the driver; pool is shared with the agent's other SSH drivers.
func New(pool *remote.Pool, log *slog.Logger) drivers.Driver { return NewWith(pool, log, Options{}) }

// NewWith returns the driver tuned by o.
func NewWith(pool *remote.Pool, log *slog.Logger, o Options) drivers.Driver {
	if log == nil {
		log = slog.Default()
	}
	if o.CheckRetry == 0 {
		o.CheckRetry = DefaultCheckRetry
	}
	return &Driver{pool: pool, log: log, minWait: 250 * time.Millisecond, maxWait: 5 * time.Second, checkRetry: max(o.CheckRetry, 0)}
}

// statusFailed is any failure: BOOTSTRAP creates nothing a retry would
// duplicate.
const statusFailed = 1

// Run bootstraps t.Node.
func (d *Driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	switch t.TaskName {
	case "CHECK":
		return d.check(ctx, t, out)
	case "AUTHORIZE_KEYS":
		return d.authorizeKeys(ctx, t, out)
	case "BOOTSTRAP":
	default:
		return failure(fmt.Errorf("the ssh node driver runs BOOTSTRAP, CHECK and AUTHORIZE_KEYS, not %s", t.TaskName), false, nil)
	}
	n := t.Node
	if n == nil {
		return failure(fmt.Errorf("BOOTSTRAP task %s has no node", t.TaskID), false, nil)
	}
	if n.Hostname != "" && !ValidHostname(n.Hostname) {
		return failure(fmt.Errorf("node %s: hostname %q is not a valid host name", n.ID, n.Hostname), false, nil)
	}
	tg, err := drivers.TargetOf(t, n)
	if err != nil {
		return failure(err, false, nil)
	}
	log := d.log.With("task", t.TaskID, "node", n.ID, "target", tg.String())

	out.Status("waiting for ssh on "+tg.String(), 0)
	// The first command on the node installs the owner's keys: that it
	// runs is the proof connect waits for, and a session of its own for
	// the proof would cost a round trip more.
	var keysRetryable bool
	var keysErr error
	// When no sudo stands between them (the login user is root, or there
	// is no host name to set), the keys, the host name and the facts share
	// that first session: each session costs a fork of sshd, a login and a
	// round trip, which a loaded host makes slow.
	var raw []byte
	var rawErr, firstErr error
	one := tg.User == "root" || n.Hostname == ""
	key, err := d.connect(ctx, tg, out, func(probe remote.Target) (bool, error) {
		if one {
			raw, keysRetryable, keysErr, rawErr = d.bootstrapOnce(ctx, probe, n.Hostname, t.AuthorizedKeys, out)
			var ee *remote.ExitError
			firstErr = keysErr
			if rawErr != nil {
				firstErr = rawErr
			}
			return (keysErr == nil && rawErr == nil) || !keysRetryable || errors.As(keysErr, &ee) || errors.As(rawErr, &ee), firstErr
		}
		keysRetryable, keysErr = InstallOwnerKeys(ctx, d.pool, probe, t.AuthorizedKeys)
		firstErr = keysErr
		// Done unless the node was not reached: the command ran (and
		// perhaps failed), or the keys were refused before any was sent.
		var ee *remote.ExitError
		return keysErr == nil || !keysRetryable || errors.As(keysErr, &ee), keysErr
	})
	if err != nil && err != firstErr {
		// connect gave up before a command ran.
		return failure(err, !remote.Terminal(err), nil)
	}
	// Never replace a pin: with pins, report them as they are (the host
	// just proved it holds one); without, pin what the host showed.
	hostKeys := tg.HostKeys
	if len(hostKeys) == 0 {
		hostKeys = []string{remote.AuthorizedKey(key)}
		log.Info("pinned host key at first contact", "hostKey", ssh.FingerprintSHA256(key))
	}
	tg.HostKeys = hostKeys
	// Facts merge on failure too (docs/task-protocol.md#facts): a pin taken
	// here holds even if a later step fails.
	facts := map[string]any{"hostKeys": hostKeys}

	if keysErr != nil {
		return failure(keysErr, keysRetryable, facts)
	}
	out.Status(fmt.Sprintf("installed %d SSH key(s) of the cluster's owner for %s", len(t.AuthorizedKeys), tg.User), 30)

	// The host name and the facts take one session: each session costs a
	// fork of sshd and a round trip, which a loaded host makes slow.
	script, what := factsScript(n.Hostname)
	if one {
		if rawErr != nil {
			return failure(fmt.Errorf("%s: %w", what, describe(rawErr)), !remote.Terminal(rawErr), facts)
		}
	} else {
		out.Status(what, 60)
		raw, err = d.pool.Output(ctx, tg, script, remote.RunOptions{Sudo: n.Hostname != "", Env: map[string]string{"COOPR_HOSTNAME": n.Hostname},
			Stderr: out.Stderr})
		if err != nil {
			return failure(fmt.Errorf("%s: %w", what, describe(err)), !remote.Terminal(err), facts)
		}
	}
	for k, v := range ParseFacts(string(raw)) {
		facts[k] = v
	}
	for i, r := range t.Resources {
		out.Status(fmt.Sprintf("installing resource %s/%s/%s", r.Plugin, r.ResourceType, r.Name), 70+20*float64(i)/float64(len(t.Resources)))
		if retryable, err := d.install(ctx, t, tg, r); err != nil {
			return failure(err, retryable, facts)
		}
	}
	out.Status("bootstrapped "+tg.String(), 100)
	log.Info("bootstrapped")
	return drivers.Result{Status: 0, Message: "bootstrapped " + n.Hostname, Facts: facts}
}

// factsScript sets the host name h, unless it is "", and prints the facts;
// what says what it does.
func factsScript(h string) (script, what string) {
	if h == "" {
		return gatherFacts, "gather facts"
	}
	return "if ! (\n" + setHostname + ") >&2; then echo \"coopr: setting the hostname failed\" >&2; exit 1; fi\n" + gatherFacts,
		"set hostname " + h + " and gather facts"
}

// keysFailed is the exit status of bootstrapOnce's command when the
// owner's keys could not be installed (nothing after them ran);
// keysFailedSays is on its stderr then.
const (
	keysFailed     = 97
	keysFailedSays = "coopr: installing the owner's keys failed"
)

// bootstrapOnce installs the owner's keys, sets the host name h and
// gathers the facts in one session, where no sudo is needed between them.
// It returns the facts' output, the keys' error (and whether a retry may
// fix it), and the error of what came after them.
func (d *Driver) bootstrapOnce(ctx context.Context, tg remote.Target, h string, keys []string, out drivers.Output) (
	raw []byte, keysRetryable bool, keysErr, err error) {
	lines, err := ownerKeyLines(keys)
	if err != nil {
		return nil, false, err, nil
	}
	rest, _ := factsScript(h)
	script := keysFirst(ownerKeysScript, rest)
	raw, err = d.pool.Output(ctx, tg, script, remote.RunOptions{Sudo: h != "", Stdin: strings.NewReader(lines),
		Env: map[string]string{"COOPR_MARKER": OwnerKeyMarker, "COOPR_HOSTNAME": h}, Stderr: out.Stderr})
	var ee *remote.ExitError
	switch {
	case err == nil:
		return raw, true, nil, nil
	case errors.As(err, &ee) && ee.Code == keysFailed && ee.Signal == "" && ee.Stderr == keysFailedSays:
		return nil, true, fmt.Errorf("install the owner's SSH keys for %s: %w", tg.User, describe(err)), nil
	case errors.As(err, &ee):
		return nil, true, nil, err
	default:
		// Not run, or cut short: connect tries again, as it would the keys.
		return nil, !remote.Terminal(err), fmt.Errorf("install the owner's SSH keys for %s: %w", tg.User, describe(err)), nil
	}
}

// ResourceDir is where BOOTSTRAP puts the payload's plugin resources:
// <ResourceDir>/<plugin>/<resourceType>/<name>, a file or, for archives,
// the extracted top directory.
const ResourceDir = "/var/lib/coopr/resources"

var segmentRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// install copies one resource to the node as root, replacing what a
// previous BOOTSTRAP put there.
// A resource that cannot be fetched or named fails for good.
func (d *Driver) install(ctx context.Context, t *drivers.Task, tg remote.Target, r drivers.Resource) (retryable bool, err error) {
	what := fmt.Sprintf("resource %s/%s/%s@%d", r.Plugin, r.ResourceType, r.Name, r.Version)
	for _, seg := range []string{r.Plugin, r.ResourceType, r.Name} {
		if !segmentRE.MatchString(seg) {
			return false, fmt.Errorf("%s: %q cannot name a directory", what, seg)
		}
	}
	local, err := t.FetchResource(ctx, r)
	if err != nil {
		return false, err
	}
	f, err := os.Open(local)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	env := map[string]string{"COOPR_DIR": ResourceDir + "/" + r.Plugin + "/" + r.ResourceType, "COOPR_NAME": r.Name,
		"COOPR_MODE": "0644"}
	if r.Permissions != "" {
		env["COOPR_MODE"] = r.Permissions
	}
	script := `set -e
umask 022
mkdir -p "$COOPR_DIR"
cat > "$COOPR_DIR/.$COOPR_NAME.tmp"
chmod "$COOPR_MODE" "$COOPR_DIR/.$COOPR_NAME.tmp"
rm -rf -- "$COOPR_DIR/$COOPR_NAME"
mv -f "$COOPR_DIR/.$COOPR_NAME.tmp" "$COOPR_DIR/$COOPR_NAME"`
	if r.Format == "archive" {
		script = `set -e
umask 022
mkdir -p "$COOPR_DIR"
tmp="$COOPR_DIR/.$COOPR_NAME.tmp"
rm -rf -- "$tmp"
mkdir "$tmp"
tar -xzf - -C "$tmp" --no-same-owner --no-same-permissions
[ -d "$tmp/$COOPR_NAME" ] || { echo "the archive has no top directory $COOPR_NAME" >&2; rm -rf -- "$tmp"; exit 1; }
rm -rf -- "$COOPR_DIR/$COOPR_NAME"
mv "$tmp/$COOPR_NAME" "$COOPR_DIR/$COOPR_NAME"
rm -rf -- "$tmp"`
	}
	if err := d.pool.Run(ctx, tg, script, remote.RunOptions{Sudo: true, Stdin: f, Env: env}); err != nil {
		return !remote.Terminal(err), fmt.Errorf("%s: install: %w", what, describe(err))
	}
	return true, nil
}

// OwnerKeyMarker ends each line BOOTSTRAP writes into the SSH user's
// authorized_keys: the lines so marked are the owner's keys as of the last
// BOOTSTRAP, replaced as a whole by the next one. Every other line, coopr's
// own cluster key among them, stays as it is.
const OwnerKeyMarker = "coopr-owner-key"

// InstallOwnerKeys makes the marked lines of tg's user's authorized_keys
// keys: keys added since are installed, keys removed since are taken out,
// and no keys takes them all out (the pool driver does so before a host
// goes back to the pool). Nothing is written when nothing changes (so a
// node without owner keys keeps its file untouched), and the new file
// replaces the old by a rename, so that coopr's own key never goes missing
// mid-write.
func InstallOwnerKeys(ctx context.Context, p *remote.Pool, tg remote.Target, keys []string) (retryable bool, err error) {
	lines, err := ownerKeyLines(keys)
	if err != nil {
		return false, err
	}
	err = p.Run(ctx, tg, ownerKeysScript, remote.RunOptions{Stdin: strings.NewReader(lines),
		Env: map[string]string{"COOPR_MARKER": OwnerKeyMarker}})
	if err != nil {
		return !remote.Terminal(err), fmt.Errorf("install the owner's SSH keys for %s: %w", tg.User, describe(err))
	}
	return true, nil
}

// ownerKeyLines are the authorized_keys lines of keys, marked as the
// owner's.
func ownerKeyLines(keys []string) (string, error) {
	var lines strings.Builder
	for i, k := range keys {
		// The server validated them; a line that is no plain public key
		// would be a new authorized_keys entry of someone's choosing.
		pk, _, options, rest, err := ssh.ParseAuthorizedKey([]byte(k))
		if err != nil || len(options) > 0 || strings.TrimSpace(string(rest)) != "" {
			return "", fmt.Errorf("authorizedKeys[%d]: not one plain SSH public key", i)
		}
		lines.WriteString(remote.AuthorizedKey(pk) + " " + OwnerKeyMarker + "\n")
	}
	return lines.String(), nil
}

// keysFirst runs keys (a script reading the keys on stdin) and then rest,
// which gets no stdin; a failure of keys exits with keysFailed. keys runs
// in a shell of its own, not a subshell: inside an if (or an && list) a
// subshell's set -e does nothing, and a failed write would be moved over
// authorized_keys as if it had worked.
func keysFirst(keys, rest string) string {
	return "if ! sh -c " + remote.Quote(keys) + " >&2; then echo \"" + keysFailedSays + "\" >&2; exit " + fmt.Sprint(keysFailed) + "; fi\n" +
		"exec </dev/null\n" + rest
}

// ownerKeysScript makes the marked lines of the login user's
// authorized_keys the lines on its stdin (InstallOwnerKeys).
const ownerKeysScript = `set -e
umask 077
keys=
# read, a builtin, where $(cat) would cost a program.
while IFS= read -r l || [ -n "$l" ]; do keys="${keys:+$keys
}$l"; done
d="$HOME/.ssh"
f="$d/authorized_keys"
if [ ! -e "$f" ]; then
  [ -n "$keys" ] || exit 0
  mkdir -p "$d"
  : > "$f"
fi
if [ -z "$keys" ] && ! grep -q " $COOPR_MARKER\$" "$f"; then exit 0; fi
tmp="$f.coopr.$$"
{ grep -v " $COOPR_MARKER\$" "$f" || true; [ -z "$keys" ] || printf '%s\n' "$keys"; } > "$tmp"
if cmp -s "$tmp" "$f"; then rm -f "$tmp"; exit 0; fi
mv -f "$tmp" "$f"`

// connect waits for the node to answer SSH and run a command, backing off
// between attempts until ctx ends: a machine CONFIRM just reported may
// still be booting, and a pooled connection may have died with a reboot.
// It returns the host key the node showed. A host key mismatch ends the
// wait at once.
func (d *Driver) connect(ctx context.Context, tg remote.Target, out drivers.Output, first func(probe remote.Target) (done bool, err error)) (ssh.PublicKey, error) {
	wait := d.minWait
	for attempt := 1; ; attempt++ {
		c, err := d.pool.Dial(ctx, tg)
		if err == nil {
			key := c.HostKey()
			probe := tg
			if len(probe.HostKeys) == 0 {
				// Should the pool redial, it must reach the same host.
				probe.HostKeys = []string{remote.AuthorizedKey(key)}
			}
			var done bool
			if done, err = first(probe); done {
				return key, err
			}
		}
		if remote.Terminal(err) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("ssh %s not reachable after %d attempts: %w", tg, attempt, err)
		}
		out.Status(fmt.Sprintf("ssh %s not answering yet (attempt %d): %v", tg, attempt, err), 0)
		// Jitter keeps a cluster's nodes from retrying in lockstep.
		sleep := wait/2 + rand.N(wait/2+1)
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("ssh %s not reachable after %d attempts (last: %v): %w", tg, attempt, err, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, d.maxWait)
	}
}

// setHostname does nothing when the static and the kernel's host name are
// already h (a machine made with its name); else it writes /etc/hostname in
// place (it may be a bind mount in a container) and sets the kernel's name,
// each only when it would change. It never asks systemd-hostnamed, not even
// where systemd runs: hostnamectl's D-Bus round trip starts the daemon on
// demand, which took 450 ms of a 10-node fleet's BOOTSTRAPs (p50; 75 ms
// with the name already set), and the daemon reads the static name from
// /etc/hostname whenever it is asked, so writing the file tells it the
// same. A host whose hostnamed is masked or whose D-Bus is down is named
// all the same.
const setHostname = `h=$COOPR_HOSTNAME
static= kernel=
# read, a builtin, where $(cat) would cost a program each.
IFS= read -r static 2>/dev/null </etc/hostname || true
IFS= read -r kernel </proc/sys/kernel/hostname || true
if [ "$static" != "$h" ]; then
  printf '%s\n' "$h" > /etc/hostname
fi
if [ "$kernel" != "$h" ]; then
  hostname "$h" 2>/dev/null || printf '%s' "$h" > /proc/sys/kernel/hostname
fi
`

// gatherFacts prints key=value lines that ParseFacts reads. It uses only
// what a minimal image has: sh, /proc, /sys, uname, getconf; ip when there.
// Files are read with the shell's read, not $(cat), and getconf runs only
// where /sys does not tell: each program costs milliseconds on a loaded
// host.
const gatherFacts = `if [ -r /etc/os-release ]; then
  ( . /etc/os-release; printf 'os.id=%s\nos.version=%s\nos.name=%s\n' "${ID:-}" "${VERSION_ID:-}" "${PRETTY_NAME:-${NAME:-}}" )
fi
# uname, not /proc/sys/kernel/arch: a 32-bit container (setarch, LXC's
# lxc.arch) runs under a personality only uname reports.
printf 'arch=%s\n' "$(uname -m)"
# The online CPUs, as getconf counts them, from their list (0-3,6,8-9).
cpus=0
if read -r online 2>/dev/null </sys/devices/system/cpu/online; then
  IFS=,
  for r in $online; do
    case $r in
      *-*) cpus=$((cpus + ${r#*-} - ${r%-*} + 1)) ;;
      *[0-9]*) cpus=$((cpus + 1)) ;;
    esac
  done
  unset IFS
fi
[ "$cpus" -gt 0 ] || cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || grep -c ^processor /proc/cpuinfo)
printf 'cpus=%s\n' "$cpus"
while read -r k v _; do
  if [ "$k" = MemTotal: ]; then printf 'memkb=%s\n' "$v"; fi
done < /proc/meminfo
hn=
read -r hn </proc/sys/kernel/hostname || true
printf 'hostname=%s\n' "$hn"
for d in /sys/block/*; do
  n=${d##*/}
  case $n in loop*|ram*|zram*|sr*|fd*|'*') continue ;; esac
  [ -r "$d/size" ] && read -r sz <"$d/size" && printf 'disk=%s %s\n' "$n" "$sz"
done
for i in /sys/class/net/*; do
  [ -e "$i" ] && printf 'iface=%s\n' "${i##*/}"
done
if command -v ip >/dev/null 2>&1; then
  ip -o addr show 2>/dev/null | while read -r _ name fam addr _; do
    printf 'addr=%s %s %s\n' "$name" "$fam" "$addr"
  done
fi
exit 0
`

// ParseFacts turns gatherFacts' output into node facts: os {id, version,
// name}, arch, cpus, memoryMB, disks [{name, sizeMB}], interfaces [{name,
// addresses}] and hostname.
func ParseFacts(out string) map[string]any {
	facts := map[string]any{}
	osf := map[string]any{}
	var disks []map[string]any
	ifaces := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "os.id", "os.version", "os.name":
			if v != "" {
				osf[strings.TrimPrefix(k, "os.")] = v
			}
		case "arch", "hostname":
			facts[k] = v
		case "cpus":
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				facts["cpus"] = n
			}
		case "memkb":
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				facts["memoryMB"] = n / 1024
			}
		case "disk":
			name, sectors, _ := strings.Cut(v, " ")
			if n, err := strconv.ParseInt(strings.TrimSpace(sectors), 10, 64); err == nil && n > 0 {
				// /sys/block sizes count 512-byte sectors whatever the device's.
				disks = append(disks, map[string]any{"name": name, "sizeMB": n * 512 >> 20})
			}
		case "iface":
			if _, ok := ifaces[v]; !ok {
				ifaces[v] = []string{}
			}
		case "addr":
			f := strings.Fields(v)
			if len(f) == 3 && (f[1] == "inet" || f[1] == "inet6") {
				name, _, _ := strings.Cut(f[0], "@")
				ifaces[name] = append(ifaces[name], f[2])
			}
		}
	}
	if len(osf) > 0 {
		facts["os"] = osf
	}
	if disks == nil {
		disks = []map[string]any{}
	}
	facts["disks"] = disks
	list := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(ifaces)) {
		list = append(list, map[string]any{"name": name, "addresses": ifaces[name]})
	}
	facts["interfaces"] = list
	return facts
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// ValidHostname reports whether h is an RFC 1123 host name.
func ValidHostname(h string) bool { return len(h) <= 253 && hostnameRE.MatchString(h) }

// describe adds a failed command's last stderr line to its error.
func describe(err error) error {
	var ee *remote.ExitError
	if errors.As(err, &ee) && ee.Stderr != "" {
		return fmt.Errorf("%w: %s", err, ee.Stderr)
	}
	return err
}

func failure(err error, retryable bool, facts map[string]any) drivers.Result {
	r := drivers.Result{Status: statusFailed, Message: "bootstrap: " + err.Error(), Facts: facts, Unreachable: remote.Unreachable(err)}
	if !retryable {
		r.Retryable = &retryable
	}
	return r
}
