package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

// newClusterCmd is the everyday CLI over the API: create, list, show,
// change and delete clusters, following the slow parts live.
func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Create, list, show, change and delete clusters through the API"}
	cmd.AddCommand(newClusterCreateCmd(), newClusterListCmd(), newClusterShowCmd(), newClusterDeleteCmd(), newClusterOpCmd())
	return cmd
}

// gql runs one request and decodes its data into out; GraphQL errors come
// back as one error naming their code.
func gql(ctx context.Context, c *client.Client, query string, vars map[string]any, out any) error {
	r, err := c.Do(ctx, query, vars)
	if err != nil {
		return err
	}
	if err := r.Err(); err != nil {
		return err
	}
	return r.Decode(out)
}

func newClusterCreateCmd() *cobra.Command {
	var api apiFlags
	var name, configFile string
	var size int
	var services []string
	var noWait bool
	cmd := &cobra.Command{
		Use:   "create TEMPLATE --size N",
		Short: "Create a cluster from a template and follow it until it is ACTIVE",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if size < 1 {
				return fmt.Errorf("--size must be at least 1 (got %d): give the number of nodes", size)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			in := map[string]any{"name": name, "clusterTemplate": args[0], "numMachines": size}
			if in["name"] == "" {
				in["name"] = args[0]
			}
			if err := withServicesAndConfig(in, services, configFile); err != nil {
				return err
			}
			var out struct{ CreateCluster struct{ ID, Status string } }
			if err := gql(cmd.Context(), c, `mutation($in: ClusterInput!) { createCluster(input: $in) { id status } }`,
				map[string]any{"in": in}, &out); err != nil {
				return sizeHint(err)
			}
			id := out.CreateCluster.ID
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s created (%s)\n", id, out.CreateCluster.Status)
			if noWait {
				return nil
			}
			if err := watchCluster(cmd.Context(), c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), false); err != nil {
				return err
			}
			return showCluster(cmd.Context(), c, id, cmd.OutOrStdout())
		},
	}
	api.register(cmd)
	cmd.Flags().IntVar(&size, "size", 1, "number of nodes")
	cmd.Flags().StringVar(&name, "name", "", "cluster name (default: the template's name)")
	cmd.Flags().StringVar(&configFile, "config", "", "JSON file replacing the template's config")
	cmd.Flags().StringSliceVar(&services, "services", nil, "services instead of the template's defaults")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the cluster is accepted")
	return cmd
}

// sizeHint names the flag behind the API's numMachines in an error.
func sizeHint(err error) error {
	if strings.Contains(err.Error(), "numMachines") {
		return fmt.Errorf("%w (numMachines is the --size flag)", err)
	}
	return err
}

// withServicesAndConfig adds the --services and --config flags to an input.
func withServicesAndConfig(in map[string]any, services []string, configFile string) error {
	if len(services) > 0 {
		in["services"] = services
	}
	if configFile == "" {
		return nil
	}
	cfg, err := readJSONObject(configFile)
	if err != nil {
		return err
	}
	in["config"] = cfg
	return nil
}

func readJSONObject(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: must hold a JSON object: %w", path, err)
	}
	return v, nil
}

func newClusterListCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the clusters you can see",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				Clusters struct {
					Nodes []struct {
						ID, Name, Status, Template, Owner string
						Size                              int
					}
				}
			}
			if err := gql(cmd.Context(), c, `{ clusters(first: 100) { nodes { id name status template owner size } } }`, nil, &out); err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tTEMPLATE\tSIZE\tOWNER")
			for _, n := range out.Clusters.Nodes {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", n.ID, n.Name, n.Status, n.Template, n.Size, n.Owner)
			}
			return tw.Flush()
		},
	}
	api.register(cmd)
	return cmd
}

func newClusterShowCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "show CLUSTER",
		Long:  "show prints a cluster's status, the state of its services and its nodes.\n\n" + clusterArgHelp,
		Short: "Show a cluster's status and nodes with their addresses",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return showCluster(cmd.Context(), c, id, cmd.OutOrStdout())
		},
	}
	api.register(cmd)
	return cmd
}

func showCluster(ctx context.Context, c *client.Client, id string, w io.Writer) error {
	type stateCount struct {
		State string
		Count int
	}
	var out struct {
		Cluster *struct {
			ID, Name, Status, Message, Template string
			ServiceSummary                      []struct {
				Service string
				Nodes   int
				States  []stateCount
			}
			Nodes []struct {
				Nodenum       int
				Hostname      string
				Ipaddresses   map[string]string
				ServiceStates []struct{ Service, State string }
			}
		}
	}
	if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { id name status message template
		serviceSummary { service nodes states { state count } }
		nodes { nodenum hostname ipaddresses serviceStates { service state } } } }`, map[string]any{"id": id}, &out); err != nil {
		return err
	}
	cl := out.Cluster
	if cl == nil {
		return fmt.Errorf("cluster %s: not found (coopr cluster list shows the clusters you can see)", id)
	}
	fmt.Fprintf(w, "cluster %s %q from %s: %s", cl.ID, cl.Name, cl.Template, cl.Status)
	if cl.Message != "" {
		fmt.Fprintf(w, " (%s)", cl.Message)
	}
	fmt.Fprintln(w)
	// Services by their state over the nodes; on the nodes, a service is
	// marked only where its state is not the one most nodes have.
	usual := map[string]string{}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(cl.ServiceSummary) > 0 {
		fmt.Fprintln(tw, "SERVICE\tSTATE")
		for _, s := range cl.ServiceSummary {
			parts := make([]string, len(s.States))
			for i, st := range s.States {
				parts[i] = fmt.Sprintf("%s on %d/%d", strings.ToLower(st.State), st.Count, s.Nodes)
			}
			if len(s.States) > 0 {
				usual[s.Service] = s.States[0].State
			}
			fmt.Fprintf(tw, "%s\t%s\n", s.Service, strings.Join(parts, ", "))
		}
		fmt.Fprintln(tw)
	}
	sort.Slice(cl.Nodes, func(i, j int) bool { return cl.Nodes[i].Nodenum < cl.Nodes[j].Nodenum })
	fmt.Fprintln(tw, "NODE\tHOSTNAME\tADDRESS\tSERVICES")
	for _, n := range cl.Nodes {
		svcs := make([]string, len(n.ServiceStates))
		for i, st := range n.ServiceStates {
			svcs[i] = st.Service
			if st.State != usual[st.Service] {
				svcs[i] += " (" + strings.ToLower(st.State) + ")"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", n.Nodenum, n.Hostname, n.Ipaddresses["access_v4"], strings.Join(svcs, ", "))
	}
	return tw.Flush()
}

func newClusterDeleteCmd() *cobra.Command {
	var api apiFlags
	var noWait bool
	cmd := &cobra.Command{
		Use:   "delete CLUSTER",
		Long:  "delete runs CLUSTER_DELETE and follows it until the cluster is TERMINATED.\n\n" + clusterArgHelp,
		Short: "Delete a cluster's machines and follow it until it is TERMINATED",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var out struct{ DeleteCluster *struct{ ID string } }
			if err := gql(cmd.Context(), c, `mutation($id: ID!) { deleteCluster(id: $id) { id } }`,
				map[string]any{"id": id}, &out); err != nil {
				return err
			}
			if out.DeleteCluster == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "cluster %s is already terminated\n", id)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleting cluster %s (job %s)\n", id, out.DeleteCluster.ID)
			if noWait {
				return nil
			}
			return watchCluster(cmd.Context(), c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), false)
		},
	}
	api.register(cmd)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the delete is accepted")
	return cmd
}

// newClusterOpCmd runs an operation on a live cluster: configure (with
// or without restart), start/stop/restart services, add services, scale.
func newClusterOpCmd() *cobra.Command {
	var api apiFlags
	var services []string
	var configFile string
	var size int
	var noWait bool
	cmd := &cobra.Command{
		Use:   "op CLUSTER OPERATION",
		Short: "Run an operation: configure, configure-with-restart, start, stop, restart, add-services, scale",
		Long: `op runs an operation on a live cluster and follows it:

  coopr cluster op ID configure --config new.json
  coopr cluster op ID configure-with-restart --config new.json
  coopr cluster op ID restart --services web
  coopr cluster op ID add-services --services metrics
  coopr cluster op ID scale --size 5

start, stop and restart without --services act on every service of the
cluster. With it, start also starts what those services need, and stop and
restart also cover the services that need them.

` + clusterArgHelp,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops := map[string]string{"configure": "CONFIGURE", "configure-with-restart": "CONFIGURE_WITH_RESTART",
				"start": "START_SERVICES", "stop": "STOP_SERVICES", "restart": "RESTART_SERVICES",
				"add-services": "ADD_SERVICES", "scale": "SCALE"}
			op, ok := ops[strings.ToLower(args[1])]
			if !ok {
				return fmt.Errorf("unknown operation %q: use configure, configure-with-restart, start, stop, restart, add-services or scale", args[1])
			}
			if op == "SCALE" && !cmd.Flags().Changed("size") {
				return errors.New("scale needs --size N: the node count the cluster should have")
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			in := map[string]any{"operation": op}
			if err := withServicesAndConfig(in, services, configFile); err != nil {
				return err
			}
			if cmd.Flags().Changed("size") {
				in["numMachines"] = size
			}
			var out struct{ RunOperation struct{ ID, Action string } }
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!) { runOperation(clusterId: $id, input: $in) { id action } }`,
				map[string]any{"id": id, "in": in}, &out); err != nil {
				return sizeHint(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: %s\n", out.RunOperation.ID, out.RunOperation.Action)
			if noWait {
				return nil
			}
			if err := watchCluster(cmd.Context(), c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), false); err != nil {
				return err
			}
			return showCluster(cmd.Context(), c, id, cmd.OutOrStdout())
		},
	}
	api.register(cmd)
	cmd.Flags().StringSliceVar(&services, "services", nil, "services to act on (default: all) or add")
	cmd.Flags().StringVar(&configFile, "config", "", "JSON file with the new config (configure)")
	cmd.Flags().IntVar(&size, "size", 0, "new node count (scale)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the operation is accepted")
	return cmd
}
