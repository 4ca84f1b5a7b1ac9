package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/internal/filelock"
)

func (d *driver) delete(ctx context.Context, s settings, t *drivers.Task, out drivers.Output) drivers.Result {
	name, err := targetName(s, t)
	if err != nil {
		return drivers.Result{Status: statusFailed, Message: "libvirt: " + err.Error(), Retryable: &no}
	}
	c, err := connect(ctx, s.URI, d.log)
	if err != nil {
		return failure(statusFailed, "libvirt", err)
	}
	defer c.close()
	unlock, err := filelock.Lock(ctx, filepath.Join(s.StateDir, "locks", name+".lock"))
	if err != nil {
		return failure(statusFailed, "lock node", err)
	}
	defer unlock()
	_, m, ok, err := c.lookupDomain(name)
	if err != nil {
		return failure(statusFailed, "delete", err)
	}
	if ok {
		if err := m.belongs(name, t); err != nil {
			return failure(statusFailed, "delete", err)
		}
	}
	out.Status("removing "+name, 20)
	start := time.Now()
	pool, network := s.Pool, s.Network
	if perCluster(t) {
		network = clusterNetName(s.StateDir, clusterID(t))
	}
	if m != nil {
		pool, network = m.Pool, m.Network
	}
	found, err := c.removeNode(ctx, name, pool, network)
	if err != nil {
		return failure(statusFailed, "delete", err)
	}
	filelock.Remove(filepath.Join(s.StateDir, "locks", name+".lock"))
	if !found {
		return drivers.Result{Message: "domain " + name + " is already gone"}
	}
	msg := "deleted domain " + name
	d.log.Info(msg, "took", time.Since(start).Round(time.Millisecond))
	return drivers.Result{Message: msg}
}

// removeNode powers the node off and removes its domain, its volumes and
// its address reservation, each step tolerating its part being gone. It
// says whether anything was there.
func (c *conn) removeNode(ctx context.Context, name, poolName, network string) (bool, error) {
	found := false
	dom, err := c.lv.DomainLookupByName(name)
	switch {
	case notFound(err, golibvirt.ErrNoDomain):
	case err != nil:
		return false, fmt.Errorf("domain %s: %w", name, err)
	default:
		found = true
		if up, _ := c.lv.DomainIsActive(dom); up != 0 {
			if err := c.lv.DomainDestroy(dom); err != nil && !notFound(err, golibvirt.ErrNoDomain) {
				if up, _ := c.lv.DomainIsActive(dom); up != 0 {
					return found, fmt.Errorf("stop domain %s: %w", name, err)
				}
			}
		}
		err := c.lv.DomainUndefineFlags(dom, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineSnapshotsMetadata|golibvirt.DomainUndefineNvram)
		if err != nil && !notFound(err, golibvirt.ErrNoDomain) {
			return found, fmt.Errorf("undefine domain %s: %w", name, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return found, err
	}
	pool, err := c.lv.StoragePoolLookupByName(poolName)
	if err == nil {
		for _, v := range []string{diskVol(name), seedVol(name)} {
			if _, ok, _ := c.volume(pool, v); ok {
				found = true
				if err := c.deleteVolume(pool, v); err != nil {
					return found, err
				}
			}
		}
	} else if !notFound(err, golibvirt.ErrNoStoragePool) {
		return found, fmt.Errorf("storage pool %s: %w", poolName, err)
	}
	l, ok, err := c.lookupNetwork(network)
	if err != nil {
		return found, err
	}
	if ok {
		for _, h := range l.hosts {
			if h.Name == name {
				found = true
			}
		}
		if err := c.release(l, name); err != nil {
			return found, err
		}
	}
	return found, nil
}

// NodeKey names a node as the server knows it: its cluster's id and its
// own.
type NodeKey struct {
	Cluster, Node string
}

// CleanupOptions says what Cleanup may remove.
type CleanupOptions struct {
	URI      string // DefaultURI when empty
	StateDir string // the installation whose nodes these are (DefaultStateDir when empty)
	// Tenant, when set, limits cleanup to that tenant's nodes: a server
	// lists only one tenant's clusters.
	Tenant string
	// Owned are the nodes of clusters the server still has live: they
	// stay. Every other node of this installation (and Tenant) is an
	// orphan.
	Owned []NodeKey
	// All removes every node of this installation, owned or not, and the
	// networks coopr defined that no domain uses anymore.
	All bool
	Log *slog.Logger
}

// Cleanup removes what coopr made on a libvirt that no cluster owns: the
// domains of this installation (told by their coopr metadata) whose
// cluster and node are not in Owned, the disks and seeds in coopr's pools
// and the address reservations in its networks that belong to no domain,
// and with All the networks coopr defined. Base images stay. `coopr
// libvirt cleanup` calls it.
func Cleanup(ctx context.Context, o CleanupOptions) error {
	if o.URI == "" {
		o.URI = DefaultURI
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	instance := filepath.Clean(o.StateDir)
	c, err := connect(ctx, o.URI, o.Log)
	if err != nil {
		return err
	}
	defer c.close()
	keep := map[string]bool{}
	for _, k := range o.Owned {
		keep[nodeName(instance, k.Cluster, k.Node)] = true
	}
	doms, _, err := c.lv.ConnectListAllDomains(1, 0)
	if err != nil {
		return fmt.Errorf("list domains: %w", err)
	}
	var errs []error
	live := map[string]bool{} // every coopr-named domain, whoever's
	pools := map[string]bool{DefaultPool: true}
	networks := map[string]bool{DefaultNetwork: true}
	for _, dom := range doms {
		if !nameRE.MatchString(dom.Name) {
			continue
		}
		live[dom.Name] = true
		m, err := c.domainMeta(dom)
		if err != nil {
			continue
		}
		pools[m.Pool], networks[m.Network] = true, true
		if m.Instance != instance || (!o.All && (keep[dom.Name] || (o.Tenant != "" && m.TenantID != o.Tenant))) {
			continue
		}
		o.Log.Info("removing node", "domain", dom.Name, "cluster", m.ClusterID, "node", m.NodeID)
		if _, err := c.removeNode(ctx, dom.Name, m.Pool, m.Network); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(live, dom.Name)
	}
	// Volumes and reservations of nodes that have no domain: their names
	// do not tell the installation or tenant, so only All removes them (a
	// CREATE under way makes them before its domain).
	orphan := func(name string) bool {
		return o.All && nameRE.MatchString(name) && !live[name]
	}
	for p := range pools {
		pool, err := c.lv.StoragePoolLookupByName(p)
		if err != nil {
			continue
		}
		vols, _, err := c.lv.StoragePoolListAllVolumes(pool, 1, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("list volumes of %s: %w", p, err))
			continue
		}
		for _, v := range vols {
			n := strings.TrimSuffix(strings.TrimSuffix(v.Name, ".qcow2"), "-seed.iso")
			if n == v.Name || !orphan(n) {
				continue
			}
			o.Log.Info("removing volume without a domain", "pool", p, "volume", v.Name)
			if err := c.lv.StorageVolDelete(v, 0); err != nil && !notFound(err, golibvirt.ErrNoStorageVol) {
				errs = append(errs, fmt.Errorf("delete volume %s: %w", v.Name, err))
			}
		}
	}
	nets, _, err := c.lv.ConnectListAllNetworks(1, 0)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range nets {
		l, err := c.readNetwork(n)
		if err != nil {
			continue
		}
		used := false
		for _, h := range l.hosts {
			if !nameRE.MatchString(h.Name) {
				used = true
				continue
			}
			if !orphan(h.Name) {
				used = true
				continue
			}
			o.Log.Info("removing address reservation without a domain", "network", n.Name, "ip", h.IP, "name", h.Name)
			if err := c.release(l, h.Name); err != nil {
				errs = append(errs, err)
			}
		}
		if o.All && !used && strings.HasPrefix(l.bridge, bridgePrefix) && !c.networkInUse(n.Name) {
			o.Log.Info("removing network coopr defined", "network", n.Name)
			// Another cleanup (another installation's, or a second
			// `coopr libvirt cleanup`) may remove the same network between
			// the listing and here; libvirt then answers with whatever
			// step it was at (no such network, a config file already
			// unlinked), so a network gone since is not an error.
			if l.active {
				if err := c.lv.NetworkDestroy(n); err != nil {
					if c.networkGone(n.Name) {
						continue
					}
					// Invalid here means no longer running: stopped by the
					// other cleanup, which may not have undefined it yet.
					if !notFound(err, golibvirt.ErrOperationInvalid) {
						errs = append(errs, fmt.Errorf("stop network %s: %w", n.Name, err))
						continue
					}
				}
			}
			if err := c.lv.NetworkUndefine(n); err != nil && !c.networkGone(n.Name) {
				errs = append(errs, fmt.Errorf("undefine network %s: %w", n.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// networkGone says whether no network of that name is defined any more,
// looking for up to a second: a removal under way elsewhere (whose unlink
// of the config file failed ours) leaves the network listed a moment.
func (c *conn) networkGone(name string) bool {
	for range 20 {
		if _, err := c.lv.NetworkLookupByName(name); notFound(err, golibvirt.ErrNoNetwork) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// networkInUse says whether any domain, coopr's or not, has a NIC on the
// network.
func (c *conn) networkInUse(network string) bool {
	doms, _, err := c.lv.ConnectListAllDomains(1, 0)
	if err != nil {
		return true
	}
	needle := fmt.Sprintf("network='%s'", xmlEscape(network))
	for _, d := range doms {
		x, err := c.lv.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
		if err != nil || strings.Contains(x, needle) {
			return true
		}
	}
	return false
}

// Leftovers names what is left on the libvirt at uri of the installation
// stateDir's nodes of the clusters: their domains and cluster networks.
// Tests use it to check a deleted cluster left nothing.
func Leftovers(ctx context.Context, uri, stateDir string, clusters ...string) ([]string, error) {
	c, err := connect(ctx, uri, nil)
	if err != nil {
		return nil, err
	}
	defer c.close()
	instance := filepath.Clean(stateDir)
	want := map[string]bool{}
	for _, id := range clusters {
		want[id] = true
	}
	var out []string
	doms, _, err := c.lv.ConnectListAllDomains(1, 0)
	if err != nil {
		return nil, err
	}
	for _, d := range doms {
		if !nameRE.MatchString(d.Name) {
			continue
		}
		if m, err := c.domainMeta(d); err == nil && m.Instance == instance && want[m.ClusterID] {
			out = append(out, "domain "+d.Name)
		}
	}
	for id := range want {
		if _, ok, err := c.lookupNetwork(clusterNetName(instance, id)); err != nil {
			return nil, err
		} else if ok {
			out = append(out, "network "+clusterNetName(instance, id))
		}
	}
	return out, nil
}
