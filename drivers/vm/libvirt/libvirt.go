package libvirt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cooprhq/coopr/drivers"
)

// Defaults of Config and of the provider's fields.
const (
	DefaultURI         = "qemu:///system"
	DefaultStateDir    = "/var/lib/coopr/libvirt/state"
	DefaultPool        = "coopr"
	DefaultPoolPath    = "/var/lib/libvirt/coopr"
	DefaultNetwork     = "coopr"
	DefaultSubnet      = "10.234.0.0/24"
	DefaultAccelerator = AccelKVM
)

// Accelerators a provider may ask for.
const (
	AccelKVM  = "kvm"  // KVM or nothing
	AccelAuto = "auto" // KVM when libvirt offers it, else emulation
	AccelTCG  = "tcg"  // emulation (QEMU's TCG) always
)

// Config is the agent's side of the driver: where it keeps its locks and
// builds its images, and the libvirt it uses unless a provider names
// another.
type Config struct {
	URI      string
	StateDir string // locks; also names this installation in domain names
	ImageDir string
}

func (c Config) withDefaults() Config {
	if c.URI == "" {
		c.URI = DefaultURI
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.ImageDir == "" {
		c.ImageDir = DefaultImageDir
	}
	return c
}

// Descriptor is the driver's identity and parameters.
func Descriptor() drivers.Descriptor {
	return drivers.Descriptor{
		Role:    drivers.RoleVM,
		Name:    "libvirt",
		Version: "1",
		Params: []drivers.Param{
			{Name: "uri", Type: "text"},
			{Name: "accelerator", Type: "text"},
			{Name: "pool", Type: "text"},
			{Name: "poolPath", Type: "text"},
			{Name: "network", Type: "text"},
			{Name: "subnet", Type: "text"},
			{Name: "forward", Type: "text"},
			{Name: "flavors", Type: "text"},
			{Name: "imageDir", Type: "text"},
			{Name: "clusterRange", Type: "text"},
			{Name: "clusterPrefix", Type: "text"},
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

// settings is a task's configuration: the agent's, with the provider's
// fields over it.
type settings struct {
	Config
	Accelerator string
	Pool        string
	PoolPath    string
	Network     string
	Forward     string
	Subnet      netip.Prefix
	Flavors     map[string]flavor
}

// flavor is what a hardware type's flavor gives a node.
type flavor struct {
	VCPUs    int
	MemoryMB int
}

// defaultFlavors are the sizes every provider has; its flavors field adds
// or replaces some.
var defaultFlavors = map[string]flavor{
	"small":  {VCPUs: 1, MemoryMB: 512},
	"medium": {VCPUs: 2, MemoryMB: 1024},
	"large":  {VCPUs: 2, MemoryMB: 2048},
}

var poolNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// settingsFor reads the provider's fields.
func (d *driver) settingsFor(t *drivers.Task) (settings, error) {
	s := settings{Config: d.cfg, Accelerator: DefaultAccelerator, Pool: DefaultPool, PoolPath: DefaultPoolPath, Network: DefaultNetwork, Forward: ForwardIsolated}
	subnet, flavors := DefaultSubnet, ""
	fields := map[string]*string{
		"uri": &s.URI, "accelerator": &s.Accelerator, "pool": &s.Pool, "poolPath": &s.PoolPath,
		"network": &s.Network, "forward": &s.Forward, "subnet": &subnet, "flavors": &flavors, "imageDir": &s.ImageDir,
	}
	for key, dst := range fields {
		v, ok := t.Provider.Provisioner[key]
		if !ok || v == nil {
			continue
		}
		str, ok := v.(string)
		if !ok {
			return settings{}, fmt.Errorf("provider field %s: want a string, got %T", key, v)
		}
		if str = strings.TrimSpace(str); str != "" {
			*dst = str
		}
	}
	switch s.Accelerator {
	case AccelKVM, AccelAuto, AccelTCG:
	default:
		return settings{}, fmt.Errorf("provider field accelerator %q: want kvm, auto (KVM, else emulation) or tcg (emulation)", s.Accelerator)
	}
	if s.Forward != ForwardIsolated && s.Forward != ForwardRoute {
		return settings{}, fmt.Errorf("provider field forward %q: want isolated (only the libvirt host reaches the nodes) or route (the agent reaches them through the libvirt host, for a remote libvirt)", s.Forward)
	}
	if !poolNameRE.MatchString(s.Pool) || !poolNameRE.MatchString(s.Network) {
		return settings{}, fmt.Errorf("provider fields pool %q and network %q: want names of letters, digits, '.', '_' or '-'", s.Pool, s.Network)
	}
	if !filepath.IsAbs(s.PoolPath) || !filepath.IsAbs(s.ImageDir) {
		return settings{}, fmt.Errorf("provider fields poolPath %q and imageDir %q: want absolute paths", s.PoolPath, s.ImageDir)
	}
	p, err := parseSubnet(subnet)
	if err != nil {
		return settings{}, err
	}
	s.Subnet = p
	s.Flavors, err = parseFlavors(flavors)
	if err != nil {
		return settings{}, err
	}
	return s, nil
}

// parseSubnet reads an IPv4 prefix of /16 to /29; the host takes its first
// address.
func parseSubnet(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() || p.Bits() < 16 || p.Bits() > 29 {
		return netip.Prefix{}, fmt.Errorf("provider field subnet %q: want an IPv4 prefix from /16 to /29, such as %s", s, DefaultSubnet)
	}
	return p.Masked(), nil
}

// parseFlavors reads "name=vcpus,memoryMB" entries separated by spaces or
// semicolons, over the default flavors.
func parseFlavors(s string) (map[string]flavor, error) {
	out := map[string]flavor{}
	for k, v := range defaultFlavors {
		out[k] = v
	}
	for _, e := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ';' || r == '\n' || r == '\t' }) {
		name, spec, ok := strings.Cut(e, "=")
		cpu, mem, ok2 := strings.Cut(spec, ",")
		c, err1 := strconv.Atoi(strings.TrimSpace(cpu))
		m, err2 := strconv.Atoi(strings.TrimSpace(mem))
		if !ok || !ok2 || name == "" || err1 != nil || err2 != nil || c < 1 || c > 64 || m < 128 {
			return nil, fmt.Errorf("provider field flavors: %q: want name=vcpus,memoryMB (at least 1 vCPU and 128 MB), such as small=1,512", e)
		}
		out[name] = flavor{VCPUs: c, MemoryMB: m}
	}
	return out, nil
}

func (s settings) flavorOf(name string) (flavor, error) {
	if name == "" {
		name = "small"
	}
	if f, ok := s.Flavors[name]; ok {
		return f, nil
	}
	var names []string
	for k := range s.Flavors {
		names = append(names, k)
	}
	sort.Strings(names)
	return flavor{}, fmt.Errorf("flavor %q is not one of this provider's (%s): add it to the provider's flavors field as %s=vcpus,memoryMB", name, strings.Join(names, ", "), name)
}

// Run does CREATE, CONFIRM or DELETE of the task's node.
func (d *driver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if out == nil {
		out = nopOutput{}
	}
	if t.Node == nil || t.Node.ID == "" {
		return drivers.Result{Status: statusNothingCreated, Message: "libvirt: the task names no node", Retryable: &no}
	}
	s, err := d.settingsFor(t)
	if err != nil {
		return drivers.Result{Status: statusNothingCreated, Message: "libvirt: " + err.Error(), Retryable: &no}
	}
	switch t.TaskName {
	case "CREATE":
		return d.create(ctx, s, t, out)
	case "CONFIRM":
		return d.confirm(ctx, s, t, out)
	case "DELETE":
		return d.delete(ctx, s, t, out)
	}
	return drivers.Result{Status: statusFailed, Message: fmt.Sprintf("libvirt: vm drivers do not run %s", t.TaskName), Retryable: &no}
}

// failure turns an error into a result, not retryable when it names
// something missing.
func failure(status int, prefix string, err error) drivers.Result {
	r := drivers.Result{Status: status, Message: "libvirt: " + prefix + ": " + err.Error()}
	var me *missingError
	var te *terminalError
	if errors.As(err, &me) || errors.As(err, &te) {
		r.Retryable = &no
	}
	return r
}

// terminalError is a failure a retry cannot fix.
type terminalError struct{ msg string }

func (e *terminalError) Error() string { return e.msg }

func terminal(format string, args ...any) error {
	return &terminalError{msg: fmt.Sprintf(format, args...)}
}

type nopOutput struct{}

func (nopOutput) Stdout(string)          {}
func (nopOutput) Stderr(string)          {}
func (nopOutput) Status(string, float64) {}
