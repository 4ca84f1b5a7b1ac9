package main

import (
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/drivers/vm/libvirt"
)

// newLibvirtCmd holds the libvirt vm driver's maintenance commands.
func newLibvirtCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "libvirt", Short: "Maintain the libvirt vm driver's machines"}
	var api apiFlags
	var uri, stateDir, imageDir string
	var all bool
	cleanup := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove the VMs, disks, seeds and addresses coopr made on a libvirt that no cluster owns",
		Long: `cleanup finds the domains this agent installation made on the libvirt at --uri
(told by the coopr metadata in each domain) and removes those whose cluster
the server no longer has live, with their disks, seeds and address
reservations. It asks the server (--server, --token or COOPR_SERVER,
COOPR_TOKEN) for the token's tenant's live clusters and touches only that
tenant's nodes.

With --all it asks no server: it removes every node of the installation,
the disks, seeds and reservations of coopr nodes that have no domain, and
the networks coopr defined that nothing uses. Cached base images stay.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := libvirt.CleanupOptions{URI: uri, StateDir: stateDir, All: all, Log: slog.Default()}
			if !all {
				c, err := api.client()
				if err != nil {
					return errors.Join(err, errors.New("or pass --all to remove every node of this installation"))
				}
				var me struct {
					Me struct{ Tenant struct{ ID string } }
				}
				if err := gql(cmd.Context(), c, `{ me { tenant { id } } }`, nil, &me); err != nil {
					return err
				}
				owned, err := devOwnedNodes(cmd.Context(), c.URL, c.Token)
				if err != nil {
					return err
				}
				o.Tenant = me.Me.Tenant.ID
				for _, k := range owned {
					o.Owned = append(o.Owned, libvirt.NodeKey{Cluster: k.Cluster, Node: k.Node})
				}
			}
			return libvirt.Cleanup(cmd.Context(), o)
		},
	}
	api.register(cleanup)
	cleanup.Flags().StringVar(&uri, "uri", libvirt.DefaultURI, "the libvirt the nodes are on")
	cleanup.Flags().StringVar(&stateDir, "state-dir", libvirt.DefaultStateDir, "the libvirt driver's state directory of the agent whose nodes these are")
	cleanup.Flags().BoolVar(&all, "all", false, "remove every node of the installation, ask no server")
	var imageURI, pool, poolPath string
	image := &cobra.Command{
		Use:   "image",
		Short: "Build the libvirt nodes' base image now (it is otherwise built on first use); with --uri, put it into that libvirt's pool",
		Long: `image builds the base image on this host (debootstrap; a few minutes the
first time, cached in --image-dir after) and prints its disk's path. With
--uri it also uploads it into the storage pool --pool of that libvirt,
local or remote (qemu+ssh://root@kvm1/system, qemu+tcp://kvm1/system), if
it is not there yet, as a node's first CREATE there would, and prints
the volume's path on the libvirt host.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			img, err := libvirt.EnsureImage(cmd.Context(), imageDir, slog.Default())
			if err != nil {
				return err
			}
			if imageURI == "" {
				cmd.Println(img.Disk)
				return nil
			}
			vol, err := libvirt.UploadImage(cmd.Context(), libvirt.UploadOptions{URI: imageURI, Pool: pool, PoolPath: poolPath, ImageDir: imageDir, Log: slog.Default()})
			if err != nil {
				return err
			}
			cmd.Println(vol)
			return nil
		},
	}
	image.Flags().StringVar(&imageDir, "image-dir", libvirt.DefaultImageDir, "where base images are built and cached")
	image.Flags().StringVar(&imageURI, "uri", "", "also put the image into the storage pool of this libvirt (local or remote)")
	image.Flags().StringVar(&pool, "pool", libvirt.DefaultPool, "the storage pool (the provider's pool field)")
	image.Flags().StringVar(&poolPath, "pool-path", libvirt.DefaultPoolPath, "where a pool defined now lies on the libvirt host (the provider's poolPath field)")
	cmd.AddCommand(cleanup, image)
	return cmd
}
