package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/cooprhq/coopr/drivers"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/remote"
)

// LeasePath is where a host keeps its lease: a symbolic link whose target
// is the owner, "<clusterId> <nodeId>".
const LeasePath = "/var/lib/coopr/pool/lease"

// leaseScript does COOPR_LEASE_OP to the lease for COOPR_LEASE_OWNER and
// prints the outcome: free, ours, held <owner>, foreign (something not a
// lease is in the way), acquired or released. Only acquire and release
// change anything.
const leaseScript = `l=` + LeasePath + `
state() {
  if [ -L "$l" ]; then
    o=$(readlink "$l")
    if [ "$o" = "$COOPR_LEASE_OWNER" ]; then echo ours; else printf 'held %s\n' "$o"; fi
  elif [ -e "$l" ]; then
    echo foreign
  else
    echo free
  fi
}
case $COOPR_LEASE_OP in
probe)
  state ;;
acquire)
  # A program is a fork and exec a loaded host makes slow: mkdir only when
  # the directory is missing (a host's first lease, or after a wipe or a
  # reboot cleared it); [ is the shell's own.
  [ -d "${l%/*}" ] || mkdir -p "${l%/*}" || exit 1
  # ln -s would put the link inside a directory standing in the way.
  if [ -e "$l" ] && [ ! -L "$l" ]; then echo foreign; exit 0; fi
  # symlink(2) is the atomic step: it fails when any lease exists.
  if ln -s "$COOPR_LEASE_OWNER" "$l" 2>/dev/null; then echo acquired; else state; fi ;;
release)
  # Only the owner removes a lease and only one task of a node runs at a
  # time, so the lease cannot change between the check and rm.
  if [ -L "$l" ] && [ "$(readlink "$l")" = "$COOPR_LEASE_OWNER" ]; then
    rm -f "$l" && echo released
  else
    state
  fi ;;
*)
  echo "unknown lease operation" >&2; exit 2 ;;
esac
`

// leaseState is a host's lease as leaseScript reported it.
type leaseState struct {
	kind  string // free, ours, held, foreign, acquired, released
	owner string // held: who holds it
}

func (s leaseState) String() string {
	switch s.kind {
	case "held":
		return "leased to " + s.owner
	case "foreign":
		return LeasePath + " is in the way and is no lease"
	}
	return s.kind
}

// lease runs op on the host of tg and returns the lease's state and the
// host key the host showed, in authorized_keys format. The op claim is a
// scan's probe that acquires the lease for owner when it is free (see
// scanRun.wants); confirm is CONFIRM's acquisition, which, unlike CREATE's
// and the scan's, leaves no proof for a later CONFIRM (noteLease).
func (d *driver) lease(ctx context.Context, tg remote.Target, op, owner string) (leaseState, string, error) {
	prove := false
	switch op {
	case "probe":
		d.probes.Add(1)
	case "claim":
		d.probes.Add(1)
		d.claims.Add(1)
		op, prove = "acquire", true
	case "acquire":
		d.acquires.Add(1)
		prove = true
	case "confirm":
		d.acquires.Add(1)
		op = "acquire"
	}
	if owner != "" {
		// Whatever this command does to the lease, an earlier proof no
		// longer stands for it; forgotten before it runs, so that one whose
		// answer is lost (a release that did remove the lease) leaves none.
		d.noteLease(tg.Addr(), owner, false, nil, "")
	}
	c, err := d.pool.Dial(ctx, tg)
	if err != nil {
		return leaseState{}, "", err
	}
	key := remote.AuthorizedKey(c.HostKey())
	if len(tg.HostKeys) == 0 {
		// Should the pool dial again, it must meet the same host.
		tg.HostKeys = []string{key}
	}
	raw, err := d.pool.Output(ctx, tg, leaseScript, remote.RunOptions{
		Sudo: true,
		Env:  map[string]string{"COOPR_LEASE_OP": op, "COOPR_LEASE_OWNER": owner},
	})
	if err != nil {
		return leaseState{}, key, fmt.Errorf("lease %s on %s: %w", op, tg.Addr(), describe(err))
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	kind, rest, _ := strings.Cut(line, " ")
	var st leaseState
	switch kind {
	case "free", "ours", "foreign", "acquired", "released":
		st = leaseState{kind: kind}
	case "held":
		st = leaseState{kind: kind, owner: rest}
	default:
		return leaseState{}, key, fmt.Errorf("lease %s on %s: unexpected answer %q", op, tg.Addr(), line)
	}
	if owner != "" && prove && (st.kind == "acquired" || st.kind == "ours") {
		d.noteLease(tg.Addr(), owner, true, c, key)
	}
	return st, key, nil
}

// leaseProof is a lease this driver saw held by its owner: the host's
// answer to a lease command run over conn, the pool's connection to it.
type leaseProof struct {
	conn *remote.Conn
	key  string // the host key conn was opened to
	at   time.Time
}

// noteLease keeps what a lease command on host (host:port) for owner
// proved, for confirm: held tells that CREATE's acquisition (or a scan's
// claim for it) found the lease owner's when it ran on conn. Any other
// command for owner there (a release, DELETE's probe, CONFIRM's own
// acquisition) forgets it.
func (d *driver) noteLease(host, owner string, held bool, conn *remote.Conn, key string) {
	k := owner + "\x00" + host
	d.proofMu.Lock()
	defer d.proofMu.Unlock()
	if d.proofs == nil {
		d.proofs = map[string]leaseProof{}
	}
	now := time.Now()
	for k, p := range d.proofs {
		if now.Sub(p.at) > d.confirmFresh {
			delete(d.proofs, k)
		}
	}
	if held {
		d.proofs[k] = leaseProof{conn: conn, key: key, at: now}
		return
	}
	delete(d.proofs, k)
}

// takeProof returns and forgets the lease proof of owner on host, if one
// younger than confirmFresh is kept: a CONFIRM uses it once, and a retry
// checks the host in full.
func (d *driver) takeProof(host, owner string) (leaseProof, bool) {
	k := owner + "\x00" + host
	d.proofMu.Lock()
	defer d.proofMu.Unlock()
	p, ok := d.proofs[k]
	delete(d.proofs, k)
	if !ok || time.Since(p.at) > d.confirmFresh {
		return leaseProof{}, false
	}
	return p, true
}

// probed is one host as a scan found it.
type probed struct {
	st  leaseState
	key string
	err error
	// claimFor is the owner the scan tried to lease the host to, if any;
	// claimed is set when it did (the host was free).
	claimFor string
	claimed  bool
}

// ours tells whether the host is leased to owner.
func (p probed) ours(owner string) bool {
	return p.err == nil && (p.st.kind == "ours" || p.st.kind == "held" && p.st.owner == owner)
}

// scan looks at every host's lease at once, each within probeTimeout,
// and leases the free ones of claims to the owners it names (claims[i] is
// the owner of hosts[i]'s claim, "" for none). Owners are as the lease
// shows them: no host is "ours".
func (d *driver) scan(ctx context.Context, s settings, hosts []host, claims []string) []probed {
	res := make([]probed, len(hosts))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pctx, cancel := context.WithTimeout(ctx, d.probeTimeout)
			defer cancel()
			owner := claims[i]
			if owner != "" {
				if _, err := d.ipv4(pctx, h); err != nil {
					owner = "" // CREATE tells why it cannot have the host
				}
			}
			if owner == "" {
				st, key, err := d.lease(pctx, s.target(h, nil), "probe", "")
				res[i] = probed{st: st, key: key, err: err}
				return
			}
			st, key, err := d.lease(pctx, s.target(h, nil), "claim", owner)
			p := probed{st: st, key: key, err: err, claimFor: owner}
			switch {
			case err != nil:
				// The claim may have leased the host: the owner's
				// CREATE says which host (create).
			case st.kind == "acquired":
				p.st, p.claimed = leaseState{kind: "held", owner: owner}, true
			case st.kind == "ours":
				p.st = leaseState{kind: "held", owner: owner}
			}
			res[i] = p
		})
	}
	wg.Wait()
	return res
}

// scanGroup shares scans of one provider's hosts between the tasks of this
// agent that need one at the same time: a cluster's CREATEs all start
// together, and each scanning every host on its own made N nodes on H
// hosts cost N×H probes. One scan runs at a time; tasks that arrive while
// it runs share the next one. A scan waits scanGather, and for one of
// its handshakes to end, before its first probe, so that the CREATEs of a
// cluster, claimed together but arriving a few milliseconds apart (now and
// then tens), share the first scan rather than most of them waiting for it
// to end and then for a second one (at 50 nodes the two took 1.4 s of
// every node's CREATE). A scan that started after a task did serves
// it as well as its own would: a lease any earlier attempt of the task
// took is older than the scan.
type scanGroup struct {
	running bool
	next    *scanRun
	// taken are the hosts the last scan found leased or leased itself, by
	// id: the next scan claims them for nobody.
	taken map[string]bool
}

// scanRun is one scan. Its probes also lease a free host to each CREATE
// waiting for it (wants), the one pickHost would have it try first: a
// CREATE whose host was free then costs one lease command, not a probe
// and then an acquisition, each a session and round trip to the host. The
// lease on the host still decides; a CREATE whose claimed host was taken
// meanwhile tries the free hosts as before.
type scanRun struct {
	done    chan struct{}
	started time.Time         // when its first probe could start
	res     map[string]probed // by host id
	wants   []*want           // the CREATEs waiting, in arrival order
	ended   bool              // res is set; no want may leave now
}

// want is a CREATE waiting for a scan. A CREATE cancelled while the scan
// gathers and its retry can wait for the same scan: two wants with one
// owner, so a claim belongs to a want, not to an owner.
type want struct {
	owner string
	order []host // its spread order
	left  bool   // it stopped waiting: a lease claimed for it is released
	// claim is the id of the host the scan claims for this want, "" for
	// none; set under scanMu before the scan ends, read by the CREATE
	// after.
	claim string
}

// sharedScan returns every host of s by id as a scan started after the
// call found it, with owners as they are (no host is "ours"), and when
// that scan started. A CREATE passes its want: the scan may lease it a
// free host (probed.claimed).
func (d *driver) sharedScan(ctx context.Context, s settings, w *want) (map[string]probed, time.Time, error) {
	key := s.scanKey()
	d.scanMu.Lock()
	g := d.scans[key]
	if g == nil {
		g = &scanGroup{}
		d.scans[key] = g
	}
	if g.next == nil {
		g.next = &scanRun{done: make(chan struct{})}
	}
	r := g.next
	if w != nil {
		r.wants = append(r.wants, w)
	}
	if !g.running {
		d.startScan(key, g, s)
	}
	d.scanMu.Unlock()
	select {
	case <-r.done:
		return r.res, r.started, nil
	case <-ctx.Done():
	}
	d.scanMu.Lock()
	defer d.scanMu.Unlock()
	if r.ended {
		// The scan ended as ctx did, and may have leased a host to w.
		return r.res, r.started, nil
	}
	if w != nil {
		w.left = true
	}
	return nil, time.Time{}, context.Cause(ctx)
}

// claimsOf gives each want of r still waiting a host, the first of its
// spread order that no earlier want got, that the last scan did not find
// taken and that no other CREATE of this driver is trying: claims[i] is
// the want s.hosts[i] is claimed for, nil for none. d.scanMu is held.
func (d *driver) claimsOf(s settings, r *scanRun, taken map[string]bool) []*want {
	index := make(map[string]int, len(s.hosts))
	for i, h := range s.hosts {
		index[h.id()] = i
	}
	taken = maps.Clone(taken)
	if taken == nil {
		taken = map[string]bool{}
	}
	d.tryMu.Lock()
	for id, a := range d.tries {
		if a.inFlight {
			taken[id] = true
		}
	}
	d.tryMu.Unlock()
	claims := make([]*want, len(s.hosts))
	for _, w := range r.wants {
		if w.left {
			continue
		}
		for _, h := range w.order {
			if i, ok := index[h.id()]; ok && claims[i] == nil && !taken[h.id()] {
				claims[i], w.claim = w, h.id()
				break
			}
		}
	}
	return claims
}

// startScan runs g's next scan; d.scanMu is held. Tasks that arrive
// within scanGather, or later but before any of the scan's handshakes
// has ended, join it.
func (d *driver) startScan(key string, g *scanGroup, s settings) {
	r := g.next
	g.running = true
	// The handshakes start now, not after the gathering: they are most of
	// a probe's time (a first contact: key exchange and login, 100-200 ms
	// on a loaded fleet) and need no task, and the pool shares each
	// connection with the probe that follows. Only the lease commands wait
	// for the tasks to gather.
	answered := make(chan struct{})
	var first sync.Once
	for _, h := range s.hosts {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), d.probeTimeout)
			defer cancel()
			// A failure shows again in the probe, which dials anew.
			_, _ = d.pool.Dial(ctx, s.target(h, nil))
			first.Do(func() { close(answered) })
		}()
	}
	go func() {
		time.Sleep(d.scanGather)
		// Until a host's handshake has ended no lease command can run, so
		// tasks that arrive meanwhile still share this scan: its every
		// answer comes after they did. A cold scan's handshakes outlast
		// the gathering (80-120 ms at 10 nodes on the benchmark's fleet,
		// 300-800 ms at 50), and CREATEs claimed in between used to wait
		// for a second scan. Every dial ends within probeTimeout.
		<-answered
		// Tasks that arrive from here on wait for the next scan.
		d.scanMu.Lock()
		if g.next == r {
			g.next = nil
		}
		r.started = time.Now()
		claims := d.claimsOf(s, r, g.taken)
		owners := make([]string, len(claims))
		for i, w := range claims {
			if w != nil {
				owners[i] = w.owner
			}
		}
		d.scanMu.Unlock()
		// Not any one task's context: the others wait for this scan too.
		// Each probe is bounded by probeTimeout.
		found := d.scan(context.Background(), s, s.hosts, owners)
		res := make(map[string]probed, len(found))
		for i, h := range s.hosts {
			res[h.id()] = found[i]
		}
		d.scanMu.Lock()
		r.res, r.ended = res, true
		g.taken = map[string]bool{}
		for id, p := range res {
			if p.err == nil && p.st.kind != "free" {
				g.taken[id] = true
			}
		}
		orphans := d.orphans(s, found, res, claims, r.wants)
		close(r.done)
		d.scanMu.Unlock()
		for _, i := range orphans {
			d.unclaim(s, s.hosts[i], found[i], owners[i])
		}
		d.scanMu.Lock()
		defer d.scanMu.Unlock()
		if g.next != nil {
			d.startScan(key, g, s)
			return
		}
		g.running = false
		delete(d.scans, key)
	}()
}

// orphans returns the indexes of the hosts found leased for wants that
// stopped waiting (claims[i] is the want s.hosts[i] was claimed for), to
// be given back. A host leased for a want that left while a retry of the
// same node waits in the same scan with no host leased to it goes to the
// retry instead: the lease already names its node. d.scanMu is held.
func (d *driver) orphans(s settings, found []probed, byID map[string]probed, claims []*want, wants []*want) []int {
	// unserved tells whether w has no host leased to it: no claim, or one
	// that found the host taken (an answer that may have leased it makes
	// w's CREATE report that host).
	unserved := func(w *want) bool {
		if w.claim == "" {
			return true
		}
		p := byID[w.claim]
		return !p.claimed && p.err == nil
	}
	var out []int
	for i, p := range found {
		w := claims[i]
		if !p.claimed || w == nil || !w.left {
			continue
		}
		handed := false
		for _, v := range wants {
			if v.owner == w.owner && !v.left && unserved(v) {
				v.claim, handed = s.hosts[i].id(), true
				break
			}
		}
		if !handed {
			out = append(out, i)
		}
	}
	return out
}

// create adopts the host leased to the node, else leases a free one.
func (d *driver) create(ctx context.Context, s settings, t *drivers.Task, out drivers.Output, log *slog.Logger) drivers.Result {
	own := owner(t)
	// A retry finds the host the first CREATE reported, most likely still
	// leased to the node: check it alone before looking at every host.
	if id := providerID(t.Node); id != "" {
		if h, ok := s.byID(id); ok {
			tg := s.target(h, pinsOf(t.Node))
			st, key, err := d.lease(ctx, tg, "probe", own)
			if remote.Terminal(err) {
				return failure(statusFailed, err, map[string]any{"providerId": id})
			}
			if err == nil && st.kind == "ours" {
				return d.created(ctx, s, h, orKey(tg.HostKeys, key), "adopted", out, log)
			}
		}
	}

	order := spread(s.hosts, t.ClusterID, t.Node.ID)
	out.Status(fmt.Sprintf("looking for a free host among %d", len(order)), 0)
	w := &want{owner: own, order: order}
	scanned, started, err := d.sharedScan(ctx, s, w)
	if err != nil {
		return failure(statusNothingCreated, fmt.Errorf("looking for a free host: %w", err), nil)
	}
	found := make([]probed, len(order))
	for i, h := range order {
		found[i] = scanned[h.id()]
	}
	// Adopt before leasing: a CREATE whose result was lost holds a host
	// the facts do not name. It keeps that host, and gives back the one
	// the scan leased to it besides.
	adopt, claimed := -1, -1
	for i, h := range order {
		var ee *remote.ExitError
		if p := found[i]; p.claimFor == own && p.err != nil && !errors.As(p.err, &ee) &&
			!remote.Unreachable(p.err) && !remote.Terminal(p.err) {
			// As when an acquisition fails so: the command may have run,
			// and the host may be leased to this node. Say which host, so
			// that a retry adopts it or a DELETE releases it.
			return failure(statusFailed, p.err, map[string]any{"providerId": h.id()})
		}
		switch {
		case !found[i].ours(own):
		case found[i].claimed:
			// Only the host claimed for this want: one claimed for an
			// earlier CREATE of the node that left this scan is given
			// back by the scan.
			if h.id() == w.claim {
				claimed = i
			}
		case adopt < 0:
			adopt = i
		}
	}
	if adopt >= 0 {
		if claimed >= 0 {
			d.unclaim(s, order[claimed], found[claimed], own)
		}
		return d.created(ctx, s, order[adopt], []string{found[adopt].key}, "adopted", out, log)
	}
	if claimed >= 0 {
		h := order[claimed]
		d.tried(h, own)
		log.Info("pool: leased host", "host", h.id())
		return d.created(ctx, s, h, []string{found[claimed].key}, "leased", out, log)
	}

	// Hosts not taken are silent (no answer) or broken (they answered
	// but cannot be leased: a failing command, no IPv4, a changed key).
	var taken, silent, broken int
	var firstSilent, firstBroken error
	note := func(err error) {
		var ee *remote.ExitError
		var ne *noIPv4Error
		if errors.As(err, &ee) || errors.As(err, &ne) || remote.Terminal(err) {
			broken++
			if firstBroken == nil {
				firstBroken = err
			}
			return
		}
		silent++
		if firstSilent == nil {
			firstSilent = err
		}
	}
	var free []int // indexes in order of the hosts the scan found free
	for i, h := range order {
		p := found[i]
		switch {
		case p.err != nil:
			log.Warn("pool: host did not answer", "host", h.id(), "err", p.err)
			note(p.err)
		case p.st.kind != "free":
			taken++
		default:
			free = append(free, i)
		}
	}
	for len(free) > 0 {
		var i int
		i, free = d.pickHost(order, free, own, started)
		h, p := order[i], found[i]
		if _, err := d.ipv4(ctx, h); err != nil {
			log.Warn("pool: skipping host", "host", h.id(), "err", err)
			note(&noIPv4Error{err})
			d.tried(h, own)
			continue
		}
		// The scan was the first contact: hold the host to the key it
		// showed then.
		tg := s.target(h, []string{p.key})
		st, _, err := d.lease(ctx, tg, "acquire", own)
		d.tried(h, own)
		var ee *remote.ExitError
		switch {
		case err == nil && (st.kind == "acquired" || st.kind == "ours"):
			log.Info("pool: leased host", "host", h.id())
			return d.created(ctx, s, h, tg.HostKeys, "leased", out, log)
		case err == nil:
			// Another node was quicker.
			taken++
		case errors.As(err, &ee):
			// The script ran and failed before it could lease.
			log.Warn("pool: cannot lease host", "host", h.id(), "err", err)
			note(err)
		case remote.Terminal(err):
			// The host changed its key since the scan: not to be trusted.
			log.Warn("pool: host changed its key", "host", h.id(), "err", err)
			note(err)
		default:
			// The command may have run: the host may be leased to this
			// node. Say which host, so that a retry adopts it or a DELETE
			// releases it.
			return failure(statusFailed, err, map[string]any{"providerId": h.id()})
		}
	}
	msg := fmt.Sprintf("provider %s has no free host: %d of %d hosts are leased to other nodes", s.provider, taken, len(order))
	if silent > 0 {
		msg += fmt.Sprintf(", %d did not answer (%v)", silent, firstSilent)
	}
	if broken > 0 {
		msg += fmt.Sprintf(", %d cannot be leased (%v)", broken, firstBroken)
	}
	log.Info("pool: no free host", "taken", taken, "silent", silent, "broken", broken)
	return drivers.Result{Status: statusNothingCreated, Message: "pool: " + msg}
}

// unclaim gives back h, which a scan leased to owner (p) but owner's
// CREATE does not take. The lease is removed only if it is still owner's;
// a failure leaves it, for the node's DELETE to find by its lease.
func (d *driver) unclaim(s settings, h host, p probed, owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), d.probeTimeout)
	defer cancel()
	if _, _, err := d.lease(ctx, s.target(h, []string{p.key}), "release", owner); err != nil {
		d.log.Warn("pool: cannot give back a host leased to a CREATE that did not take it", "host", h.id(), "owner", owner, "err", err)
	}
}

// attempt is a CREATE's try at leasing a host, as this driver's other
// CREATEs see it.
type attempt struct {
	owner    string
	inFlight bool      // the acquire has not returned yet
	ended    time.Time // when it returned
}

// pickHost takes from free (indexes into order of hosts a scan started at
// started found free) the next host for owner's CREATE to try, and marks
// it as tried by owner. The CREATEs of a cluster's nodes share scans, so
// they all see the same hosts free: each lease taken since the scan began
// is invisible to it, and without a word between them two CREATEs whose
// spread orders meet try the same host, and one loses a round trip to it
// (on a 12-node cluster, about one CREATE in two did). So a host another
// node's CREATE of this driver is trying, or tried after the scan began,
// comes last; the first other host in spread order is taken. The lease on
// the host still decides: this only orders the tries, and every free
// host is still tried.
func (d *driver) pickHost(order []host, free []int, owner string, started time.Time) (int, []int) {
	d.tryMu.Lock()
	defer d.tryMu.Unlock()
	pick := 0
	for k, i := range free {
		a, ok := d.tries[order[i].id()]
		if !ok || a.owner == owner || !a.inFlight && a.ended.Before(started) {
			pick = k
			break
		}
	}
	i := free[pick]
	if d.tries == nil {
		d.tries = map[string]attempt{}
	}
	d.tries[order[i].id()] = attempt{owner: owner, inFlight: true}
	return i, append(free[:pick:pick], free[pick+1:]...)
}

// tried records that owner's try at h ended. The map holds one entry per
// host ever tried, so it is as large as the pools are.
func (d *driver) tried(h host, owner string) {
	d.tryMu.Lock()
	defer d.tryMu.Unlock()
	if d.tries == nil {
		d.tries = map[string]attempt{}
	}
	d.tries[h.id()] = attempt{owner: owner, ended: time.Now()}
}

// noIPv4Error is a host that answers SSH but has no IPv4 address to give
// the node.
type noIPv4Error struct{ err error }

func (e *noIPv4Error) Error() string { return e.err.Error() }
func (e *noIPv4Error) Unwrap() error { return e.err }

// created reports the node's host.
func (d *driver) created(ctx context.Context, s settings, h host, hostKeys []string, how string, out drivers.Output, log *slog.Logger) drivers.Result {
	ip, err := d.ipv4(ctx, h)
	if err != nil {
		return failure(statusFailed, err, map[string]any{"providerId": h.id(), "hostKeys": hostKeys})
	}
	r := s.machine(h, ip, hostKeys)
	r.Message = fmt.Sprintf("%s host %s", how, h.id())
	out.Status(r.Message, 100)
	log.Info("pool: "+r.Message, "ip", ip)
	return r
}

func orKey(pins []string, key string) []string {
	if len(pins) > 0 {
		return pins
	}
	return []string{key}
}

// confirm checks the host still answers with its pinned key and is still
// leased to the node; it re-takes a lease that vanished.
func (d *driver) confirm(ctx context.Context, s settings, t *drivers.Task, out drivers.Output, log *slog.Logger) drivers.Result {
	id := providerID(t.Node)
	if id == "" {
		return terminal(statusFailed, errors.New("the node has no vm.providerId: CREATE has not leased it a host"))
	}
	h, ok := s.byID(id)
	if !ok {
		var err error
		if h, err = hostOfID(id); err != nil {
			return terminal(statusFailed, fmt.Errorf("vm.providerId: %w", err))
		}
	}
	tg := s.target(h, pinsOf(t.Node))
	out.Status("checking host "+id, 0)
	if r, ok := d.confirmByProof(ctx, s, h, tg, owner(t), out, log); ok {
		return r
	}
	deadline := time.Now().Add(d.confirmWait)
	wait := d.minWait
	var st leaseState
	var key string
	for attempt := 1; ; attempt++ {
		var err error
		st, key, err = d.lease(ctx, tg, "confirm", owner(t))
		if err == nil {
			break
		}
		var ee *remote.ExitError
		if remote.Terminal(err) || errors.As(err, &ee) || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return failure(statusFailed, fmt.Errorf("host %s (attempt %d): %w", id, attempt, err), nil)
		}
		out.Status(fmt.Sprintf("host %s not answering yet (attempt %d): %v", id, attempt, err), 0)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return failure(statusFailed, fmt.Errorf("host %s (attempt %d, last: %v): %w", id, attempt, err, context.Cause(ctx)), nil)
		case <-timer.C:
		}
		wait = min(2*wait, d.maxWait)
	}
	switch st.kind {
	case "ours":
	case "acquired":
		log.Warn("pool: the node's lease had vanished; took it again", "host", id)
	default:
		// Retryable: the server's CONFIRM rollback deletes and creates
		// the node anew, on another host.
		return failure(statusFailed, fmt.Errorf("host %s is %s, not to this node", id, st), nil)
	}
	return d.created(ctx, s, h, orKey(tg.HostKeys, key), "confirmed", out, log)
}

// confirmByProof confirms the node's host without a command on it when
// this driver's CREATE of the node leased it (or found it leased to the
// node) moments ago over the connection the pool still holds to the host:
// that lease command already showed what confirm's would. The connection
// is the same SSH session to the same sshd, its host key checked against
// the node's pins now (as any reuse is); the lease is the node's, and only
// the node's own DELETE (which forgets the proof) or someone on the host
// could have removed it since. The host must still answer on the
// connection (a keepalive). Another agent, a restarted one, a second
// CONFIRM, or one later than confirmFresh, or over a connection the pool
// dialed anew, runs the full check.
func (d *driver) confirmByProof(ctx context.Context, s settings, h host, tg remote.Target, own string, out drivers.Output, log *slog.Logger) (drivers.Result, bool) {
	p, ok := d.takeProof(tg.Addr(), own)
	if !ok {
		return drivers.Result{}, false
	}
	c, err := d.pool.Dial(ctx, tg)
	if err != nil || c != p.conn {
		// The full check dials again and reports what is wrong.
		return drivers.Result{}, false
	}
	// The pool hands out a recently used connection without a word to the
	// host: one that died or rebooted since CREATE would be confirmed from
	// memory, and the server's CONFIRM rollback, which picks another host,
	// would not happen. A keepalive's round trip (no session, no program)
	// tells; a host that does not answer gets the full check.
	if err := c.Alive(ctx); err != nil {
		log.Debug("pool: host did not answer since CREATE; checking it in full", "host", h.id(), "err", err)
		return drivers.Result{}, false
	}
	d.byProof.Add(1)
	log.Debug("pool: host confirmed by CREATE's lease on the same connection", "host", h.id(), "age", time.Since(p.at))
	return d.created(ctx, s, h, orKey(tg.HostKeys, p.key), "confirmed", out, log), true
}

// hostOfID reads a provider id, host:port.
func hostOfID(id string) (host, error) {
	hs, err := parseHosts(id)
	if err != nil || len(hs) != 1 {
		return host{}, fmt.Errorf("%q is not host:port", id)
	}
	return hs[0], nil
}

// delete releases the node's host: wipe_script, then the lease.
func (d *driver) delete(ctx context.Context, s settings, t *drivers.Task, out drivers.Output, log *slog.Logger) drivers.Result {
	own := owner(t)
	id := providerID(t.Node)
	if id == "" {
		// A CREATE whose result was lost may hold a host no fact names. Hosts
		// that do not answer are passed over: with no providerId the node is
		// gone as far as the server knows (docs/operations.md#idempotency).
		found, _, err := d.sharedScan(ctx, s, nil)
		if err != nil {
			return failure(statusFailed, fmt.Errorf("looking for the node's host: %w", err), nil)
		}
		var released []string
		for _, h := range s.hosts {
			if p := found[h.id()]; p.ours(own) {
				if r := d.release(ctx, s, t, h, s.target(h, []string{p.key}), out, log); r.Status != 0 {
					return r
				}
				released = append(released, h.id())
			}
		}
		if len(released) == 0 {
			return drivers.Result{Message: "pool: no vm.providerId and no host leased to this node: nothing to release"}
		}
		return drivers.Result{Message: "pool: released host " + strings.Join(released, ", ")}
	}
	h, ok := s.byID(id)
	if !ok {
		return drivers.Result{Message: fmt.Sprintf("pool: host %s is no longer listed in provider %s: nothing to release", id, s.provider)}
	}
	tg := s.target(h, pinsOf(t.Node))
	st, key, err := d.lease(ctx, tg, "probe", own)
	if err != nil {
		return failure(statusFailed, fmt.Errorf("%w (to release the host without wiping it, remove it from provider %s's hosts)", err, s.provider), nil)
	}
	if st.kind != "ours" {
		return drivers.Result{Message: fmt.Sprintf("pool: host %s is %s, not to this node: nothing to release", id, st)}
	}
	tg.HostKeys = orKey(tg.HostKeys, key)
	return d.release(ctx, s, t, h, tg, out, log)
}

// release wipes h and removes the node's lease; a failed wipe keeps the
// lease, so that no other node gets the host unwiped.
func (d *driver) release(ctx context.Context, s settings, t *drivers.Task, h host, tg remote.Target, out drivers.Output, log *slog.Logger) drivers.Result {
	if strings.TrimSpace(s.wipe) != "" {
		out.Status("wiping host "+h.id(), 30)
		err := d.pool.Run(ctx, tg, s.wipe, remote.RunOptions{
			Sudo: true,
			Env: map[string]string{
				"COOPR_CLUSTER_ID": t.ClusterID,
				"COOPR_NODE_ID":    t.Node.ID,
				"COOPR_HOSTNAME":   t.Node.Hostname,
				"COOPR_HOST":       h.id(),
			},
			Stdout: out.Stdout,
			Stderr: out.Stderr,
		})
		if err != nil {
			log.Warn("pool: wipe failed", "host", h.id(), "err", err)
			return failure(statusFailed, fmt.Errorf("wipe_script on host %s: %w (the host stays leased to this node)", h.id(), describe(err)), nil)
		}
	}
	// The cluster owner's keys BOOTSTRAP installed leave with the node:
	// the host's next user must not find the last one let in.
	if _, err := sshnode.InstallOwnerKeys(ctx, d.pool, tg, nil); err != nil {
		return failure(statusFailed, fmt.Errorf("host %s: %w (the host stays leased to this node)", h.id(), err), nil)
	}
	st, _, err := d.lease(ctx, tg, "release", owner(t))
	if err != nil {
		return failure(statusFailed, err, nil)
	}
	log.Info("pool: released host", "host", h.id(), "lease", st.kind)
	out.Status("released host "+h.id(), 100)
	return drivers.Result{Message: "pool: released host " + h.id()}
}
