package local

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cooprhq/coopr/drivers"
)

// NetworkDescriptor is the network driver named "local", for providers of
// this vm driver whose network block says {"type": "local"}.
func NetworkDescriptor() drivers.Descriptor {
	return drivers.Descriptor{Role: drivers.RoleNetwork, Name: "local", Version: "1",
		Params: []drivers.Param{{Name: "subnet", Type: "text"}, {Name: "clusterPrefix", Type: "text"}}}
}

// NewNetwork returns the network driver "local". NETWORK_ALLOCATE gives
// the task's cluster its own network (a bridge and a subnet of the range,
// kept apart from every other cluster's), NETWORK_RELEASE removes it; both
// find what an earlier attempt made from the cluster id alone, as the
// CREATEs do. NETWORK_CONFIGURE and NETWORK_UNCONFIGURE are names's (the
// hosts driver: the cluster's names in every node's /etc/hosts). It reads
// the provider's provisioner fields as the vm driver does, over cfg.
func NewNetwork(cfg Config, names drivers.Driver, log *slog.Logger) drivers.Driver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &netDriver{cfg: cfg.withDefaults(), names: names, log: log}
}

type netDriver struct {
	cfg   Config
	names drivers.Driver
	log   *slog.Logger
}

func (d *netDriver) Run(ctx context.Context, t *drivers.Task, out drivers.Output) drivers.Result {
	if out == nil {
		out = nopOutput{}
	}
	switch t.TaskName {
	case "NETWORK_CONFIGURE", "NETWORK_UNCONFIGURE":
		return d.names.Run(ctx, t, out)
	case "NETWORK_ALLOCATE", "NETWORK_RELEASE":
	default:
		return drivers.Result{Status: statusFailed, Message: "local: the local network driver does not run " + t.TaskName, Retryable: &no}
	}
	cluster := clusterID(t)
	if cluster == "" {
		return drivers.Result{Status: statusNothingCreated, Message: "local: the task names no cluster", Retryable: &no}
	}
	s, err := resolve(d.cfg, t.Provider.Provisioner)
	if err != nil {
		return drivers.Result{Status: statusNothingCreated, Message: "local: " + err.Error(), Retryable: &no}
	}
	if err := preflight(); err != nil {
		return failure(statusNothingCreated, "host not ready", err)
	}
	if t.TaskName == "NETWORK_RELEASE" {
		out.Status("releasing the cluster network", 10)
		released, err := releaseClusterNet(ctx, s.StateDir, cluster)
		if err != nil {
			return failure(statusFailed, "release network", err)
		}
		msg := "cluster network " + clusterBridge(s.StateDir, cluster) + " is already gone"
		if released {
			msg = "released cluster network " + clusterBridge(s.StateDir, cluster)
		}
		d.log.Info(msg, "cluster", cluster)
		return drivers.Result{Message: msg}
	}
	out.Status("allocating the cluster network", 10)
	nw, err := ensureClusterNet(ctx, s.StateDir, s.rng, cluster)
	if err != nil {
		return failure(statusNothingCreated, "allocate network", err)
	}
	msg := fmt.Sprintf("cluster network %s: subnet %s, host %s", nw.bridge, nw.subnet.prefix, nw.subnet.host)
	d.log.Info(msg, "cluster", cluster)
	return drivers.Result{Message: msg}
}
