package main

import (
	"log/slog"
	"time"

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
		Libvirt: libvirt.Config{StateDir: states.libvirt}, CheckRetry: states.checkRetry, Log: log})
}

// stateDirs are the vm drivers' state directories ("" for their
// defaults), and the ssh node driver's check retry (0 for its default):
// the drivers' settings an isolated task process is given too.
type stateDirs struct {
	local, libvirt string
	checkRetry     time.Duration
}
