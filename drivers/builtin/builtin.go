// Package builtin is the one place where every driver coopr ships is
// registered, with the resources the drivers share: one SSH connection
// pool for the whole agent, so that the tasks of a job reuse one
// connection per node.
package builtin

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/automator/ansible"
	"github.com/cooprhq/coopr/drivers/automator/shell"
	"github.com/cooprhq/coopr/drivers/network/hosts"
	sshnode "github.com/cooprhq/coopr/drivers/node/ssh"
	"github.com/cooprhq/coopr/drivers/vm/libvirt"
	"github.com/cooprhq/coopr/drivers/vm/local"
	vmpool "github.com/cooprhq/coopr/drivers/vm/pool"
	"github.com/cooprhq/coopr/remote"
)

// Config is what the drivers need from the agent.
type Config struct {
	// WorkDir holds the drivers' private files (playbooks, keys for
	// ansible); default a directory under the system's temporary one.
	WorkDir string
	// Local configures the local vm driver; provider fields override it
	// per task.
	Local local.Config
	// Libvirt configures the libvirt vm driver (its defaults when zero);
	// provider fields override the libvirt URI per task.
	Libvirt libvirt.Config
	// CheckRetry bounds how long the ssh node driver's CHECK tries again
	// a node that does not answer (0: sshnode.DefaultCheckRetry).
	CheckRetry time.Duration
	Log        *slog.Logger
}

// Registry registers every built-in driver. close releases what they
// share (the SSH connections) once the agent is done with them.
func Registry(cfg Config) (reg *drivers.Registry, close func(), err error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = filepath.Join(os.TempDir(), "coopr-agent")
	}
	if err := os.MkdirAll(cfg.WorkDir, 0o700); err != nil {
		return nil, nil, err
	}
	pool := remote.NewPool(remote.Options{Logger: cfg.Log})
	reg = drivers.NewRegistry()
	reg.Register(local.Descriptor(), local.New(cfg.Local, cfg.Log))
	reg.Register(libvirt.Descriptor(), libvirt.New(cfg.Libvirt, cfg.Log))
	reg.Register(vmpool.Descriptor(), vmpool.New(pool, cfg.Log))
	names := hosts.New(pool, cfg.Log)
	reg.Register(hosts.Descriptor(), names)
	reg.Register(local.NetworkDescriptor(), local.NewNetwork(cfg.Local, names, cfg.Log))
	reg.Register(libvirt.NetworkDescriptor(), libvirt.NewNetwork(cfg.Libvirt, names, cfg.Log))
	reg.Register(sshnode.Descriptor(), sshnode.NewWith(pool, cfg.Log, sshnode.Options{CheckRetry: cfg.CheckRetry}))
	reg.Register(shell.Descriptor(), shell.New(pool, cfg.Log))
	reg.Register(ansible.Descriptor(), ansible.New(cfg.Log, cfg.WorkDir))
	return reg, func() { _ = pool.Close() }, nil
}

// Capacities are the capacity rules of the vm drivers that declare one,
// by driver name (the providertype that picks the driver): the server
// refuses creates and scale-outs that do not fit.
func Capacities() map[string]drivers.NetworkCapacityFunc {
	return map[string]drivers.NetworkCapacityFunc{
		local.Descriptor().Name:   drivers.CapacityFunc(local.Capacity).AnyNetwork(),
		vmpool.Descriptor().Name:  drivers.CapacityFunc(vmpool.Capacity).AnyNetwork(),
		libvirt.Descriptor().Name: libvirt.Capacity,
	}
}
