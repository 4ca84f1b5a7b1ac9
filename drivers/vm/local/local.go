// Package local is the vm driver named "local": every node is a
// systemd-nspawn container on this host booting real systemd from a cached
// Debian image, with a copy-on-write root (overlayfs, one upper dir per
// node), its own hostname, machine id and ssh host keys, and its own
// address on its cluster's bridge, a network of the cluster's own that
// reaches nothing but the cluster's nodes and this machine (clusternet.go;
// the network driver "local" allocates and releases it). It is for trying
// coopr out and for tests, and needs root.
//
// Layout under the state dir (default /var/lib/coopr/local/state):
//
//	network.lock             guards the network records and address books
//	nets/<bridge>.json       one cluster's network: bridge and subnet
//	addrs/<bridge>/<ip>      one file per allocated address, naming its node
//	locks/<node>.lock        one node's CREATE/DELETE at a time
//	nodes/<node>/node.json   the node: ids, hostname, address, host keys
//	nodes/<node>/upper|work  its overlay layers; merged/ is its root
//	nodes/<node>/nspawn.pid, console.log
//
// A node's nspawn runs in its own session, so it outlives the agent that
// started it; DELETE and Cleanup find it again by its pid file.
package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cooprhq/coopr/drivers"
)

// Defaults of Config.
const (
	DefaultStateDir      = "/var/lib/coopr/local/state"
	DefaultSubnet        = "10.232.0.0/16"
	DefaultClusterPrefix = 24
)

// Config places the driver's state, images and networks. Empty fields
// take the defaults; a provider's provisioner fields (subnet,
// clusterPrefix, stateDir, imageDir) override them per task.
type Config struct {
	StateDir string // node state, address books, network records, locks
	ImageDir string // base images (DefaultImageDir)
	// Subnet is the range cluster networks are carved from: each cluster
	// gets a /ClusterPrefix of it, with a bridge of its own, the host on
	// its first address and nodes on the rest.
	Subnet        string
	ClusterPrefix int
}

func (c Config) withDefaults() Config {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.ImageDir == "" {
		c.ImageDir = DefaultImageDir
	}
	if c.Subnet == "" {
		c.Subnet = DefaultSubnet
	}
	if c.ClusterPrefix == 0 {
		c.ClusterPrefix = DefaultClusterPrefix
	}
	return c
}

// Descriptor is the driver's identity and parameters.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{
		Role:    drivers.RoleVM,
		Name:    "local",
		Version: "1",
		Params: []drivers.Param{
			{Name: "subnet", Type: "text"},
			{Name: "clusterPrefix", Type: "text"},
			{Name: "stateDir", Type: "text"},
			{Name: "imageDir", Type: "text"},
		},
		Capabilities: []string{"ssh", "systemd"},
	}
}

// New returns the driver.
func New(cfg Config, log *slog.Logger) drivers.Driver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &driver{cfg: cfg.withDefaults(), log: log}
}

type driver struct {
	cfg Config
	log *slog.Logger
}

// Result statuses: 200–299 tell the server nothing was created.
const (
	statusFailed         = 1
	statusNothingCreated = 200
)

var no = false

// settings is a task's resolved configuration.
type settings struct {
	Config
	rng netRange
}

// settingsFor applies the provider's fields to the driver's config.
func (d *driver) settingsFor(t *drivers.Task) (settings, error) {
	return resolve(d.cfg, t.Provider.Provisioner)
}

// resolve applies a provider's fields to a config.
func resolve(c Config, fields map[string]any) (settings, error) {
	if v, ok := fields["clusterPrefix"]; ok && v != nil {
		n, err := prefixLength(v)
		if err != nil {
			return settings{}, err
		}
		if n != 0 {
			c.ClusterPrefix = n
		}
	}
	for key, dst := range map[string]*string{"subnet": &c.Subnet, "stateDir": &c.StateDir, "imageDir": &c.ImageDir} {
		v, ok := fields[key]
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return settings{}, fmt.Errorf("provider field %s: want a string, got %T", key, v)
		}
		if s != "" {
			*dst = s
		}
	}
	for _, p := range []string{c.StateDir, c.ImageDir} {
		// Paths go into overlayfs mount options, where these separate.
		if !filepath.IsAbs(p) || strings.ContainsAny(p, ",:\\") {
			return settings{}, fmt.Errorf("directory %q: want an absolute path without ',', ':' or '\\'", p)
		}
	}
	rng, err := parseRange(c.Subnet, c.ClusterPrefix)
	if err != nil {
		return settings{}, err
	}
	return settings{Config: c, rng: rng}, nil
}

// prefixLength reads clusterPrefix: a number, or text as catalog fields
// are ("24" or "/24").
func prefixLength(v any) (int, error) {
	switch x := v.(type) {
	case float64:
		if x != float64(int(x)) {
			return 0, fmt.Errorf("provider field clusterPrefix: want a whole prefix length, got %v", x)
		}
		return int(x), nil
	case int:
		return x, nil
	case string:
		s := strings.TrimPrefix(strings.TrimSpace(x), "/")
		if s == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("provider field clusterPrefix: want a prefix length such as 24, got %q", x)
		}
		return n, nil
	}
	return 0, fmt.Errorf("provider field clusterPrefix: want a prefix length such as 24, got %T", v)
}

// Run does CREATE, CONFIRM or DELETE of the task's node.
func (d *driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if out == nil {
		out = nopOutput{}
	}
	if t.Node == nil || t.Node.ID == "" {
		return drivers.Result{Status: statusNothingCreated, Message: "local: the task names no node", Retryable: &no}
	}
	s, err := d.settingsFor(t)
	if err != nil {
		return drivers.Result{Status: statusNothingCreated, Message: "local: " + err.Error(), Retryable: &no}
	}
	switch t.TaskName {
	case "CREATE":
		return d.create(ctx, s, t, out)
	case "CONFIRM":
		return d.confirm(ctx, s, t, out)
	case "DELETE":
		return d.delete(ctx, s, t, out)
	case "REBOOT":
		return d.reboot(ctx, s, t, out)
	}
	return drivers.Result{Status: statusFailed, Message: fmt.Sprintf("local: vm drivers do not run %s", t.TaskName), Retryable: &no}
}

// failure turns an error into a result, non-retryable when it names
// something missing on the host.
func failure(status int, prefix string, err error) drivers.Result {
	r := drivers.Result{Status: status, Message: "local: " + prefix + ": " + err.Error()}
	var mt *missingToolError
	if errors.As(err, &mt) {
		r.Retryable = &no
	}
	return r
}

type nopOutput struct{}

func (nopOutput) Stdout(string)          {}
func (nopOutput) Stderr(string)          {}
func (nopOutput) Status(string, float64) {}
