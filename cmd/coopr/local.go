package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/drivers/vm/local"
)

// newLocalCmd holds the local vm driver's maintenance commands.
func newLocalCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "local", Short: "Maintain the local vm driver's nodes on this host"}
	var stateDir, imageDir string
	var all bool
	cleanup := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what a crash left of local nodes: stopped nodes, mounts, veths, namespaces, unused cluster networks",
		Long: `cleanup removes, from the state directory, every node whose container is not
running, its mounts, addresses and locks, the network namespaces and veths
of coopr containers that have no node, and the cluster networks (bridge,
subnet) that no node uses any more, except those made in the last minute.
With --all it also stops and removes running nodes and every cluster network
of the state directory: nothing of the local driver is left on this host
(the cached base images stay; the nftables table coopr_local goes once no
cluster bridge of any state directory is left).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return local.Cleanup(cmd.Context(), stateDir, slog.Default(), all)
		},
	}
	cleanup.Flags().StringVar(&stateDir, "state-dir", local.DefaultStateDir, "the local driver's state directory")
	cleanup.Flags().BoolVar(&all, "all", false, "also stop and remove running nodes and every cluster network")
	image := &cobra.Command{
		Use:   "image",
		Short: "Build the local nodes' base image now (it is otherwise built on first use)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := local.EnsureImage(cmd.Context(), imageDir, slog.Default())
			if err != nil {
				return err
			}
			cmd.Println(p)
			return nil
		},
	}
	image.Flags().StringVar(&imageDir, "image-dir", local.DefaultImageDir, "where base images are cached")
	cmd.AddCommand(cleanup, image)
	return cmd
}
