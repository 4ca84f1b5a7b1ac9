package main

import (
	"log/slog"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/builtin"
	"github.com/cooprhq/coopr/drivers/vm/libvirt"
	"github.com/cooprhq/coopr/drivers/vm/local"
)

// driverRegistry is the drivers this agent carries, for both the agent and
// its isolated task processes: every built-in one. closeDrivers releases
// their shared SSH connections.
func driverRegistry(workDir string, states stateDirs, log *slog.Logger) (reg *drivers.Registry, closeDrivers func(), err error) {
	return builtin.Registry(builtin.Config{WorkDir: workDir, Local: local.Config{StateDir: states.local},
		Libvirt: libvirt.Config{StateDir: states.libvirt}, Log: log})
}

// stateDirs are the vm drivers' state directories ("" for their
// defaults).
type stateDirs struct{ local, libvirt string }
