package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

func newKnownHostsCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "known-hosts CLUSTER",
		Short: "Print the SSH host keys coopr pinned for a cluster's nodes, in known_hosts format",
		Long: `known-hosts prints one known_hosts line per pinned key of each node of the
cluster: the node's host name, short name and addresses, then the key. Your
ssh then checks the very keys coopr pinned at first contact:

  coopr known-hosts demo >> ~/.ssh/known_hosts

` + clusterArgHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return knownHosts(cmd.Context(), c, id, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	api.register(cmd)
	return cmd
}

func knownHosts(ctx context.Context, c *client.Client, id string, w, note io.Writer) error {
	var out struct {
		Cluster *struct {
			Nodes []struct {
				Hostname    string
				Ipaddresses map[string]string
				HostKeys    []struct{ Key string }
			}
		}
	}
	if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { nodes { hostname ipaddresses hostKeys { key } } } }`,
		map[string]any{"id": id}, &out); err != nil {
		return err
	}
	if out.Cluster == nil {
		return notFound("cluster %s: not found (coopr cluster list shows the clusters you can see)", id)
	}
	for _, n := range out.Cluster.Nodes {
		if len(n.HostKeys) == 0 {
			fmt.Fprintf(note, "# %s: no host key pinned yet (the node has not been reached)\n", n.Hostname)
			continue
		}
		names := []string{n.Hostname}
		if short, _, ok := strings.Cut(n.Hostname, "."); ok {
			names = append(names, short)
		}
		for _, k := range []string{"access_v4", "bind_v4"} {
			if ip := n.Ipaddresses[k]; ip != "" && !slices.Contains(names, ip) {
				names = append(names, ip)
			}
		}
		for _, k := range n.HostKeys {
			fmt.Fprintf(w, "%s %s\n", strings.Join(names, ","), k.Key)
		}
	}
	return nil
}
