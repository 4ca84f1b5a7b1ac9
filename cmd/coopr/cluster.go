package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

// newClusterCmd is the everyday CLI over the API: create, list, show,
// change and delete clusters, following the slow parts live.
func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Create, list, show, change and delete clusters through the API"}
	cmd.AddCommand(newClusterCreateCmd(), newClusterListCmd(), newClusterShowCmd(), newClusterDeleteCmd(), newClusterOpCmd(), newClusterLeaseCmd(),
		newClusterCheckCmd(), newClusterRepairCmd(), newClusterReplaceCmd(), newClusterRebootCmd(), newClusterSyncCmd())
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

// createOptions are cluster create's optional fields of ClusterInput.
type createOptions struct {
	description, provider, hardwaretype, imagetype, dnsSuffix, lease, providerFields string
}

func (o *createOptions) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.description, "description", "", "what the cluster is for")
	cmd.Flags().StringVar(&o.provider, "provider", "", "provider instead of the template's default")
	cmd.Flags().StringVar(&o.hardwaretype, "hardwaretype", "", "hardware type instead of the template's default")
	cmd.Flags().StringVar(&o.imagetype, "imagetype", "", "image type instead of the template's default")
	cmd.Flags().StringVar(&o.dnsSuffix, "dns-suffix", "", "DNS suffix of the node host names instead of the template's")
	cmd.Flags().StringVar(&o.lease, "lease", "", "initial lease, a duration such as 48h (default: the template's)")
	registerProviderFields(cmd, &o.providerFields)
}

// registerProviderFields adds --provider-fields, the provider type's user
// fields from a JSON file (a file, so that secrets stay off the command line).
func registerProviderFields(cmd *cobra.Command, file *string) {
	cmd.Flags().StringVar(file, "provider-fields", "", "JSON file of the provider type's user fields (sensitive ones are sealed on the server)")
}

// withProviderFields adds the --provider-fields file to an input.
func withProviderFields(in map[string]any, file string) error {
	if file == "" {
		return nil
	}
	v, err := readJSONObject(file)
	if err != nil {
		return fmt.Errorf("--provider-fields: %w", err)
	}
	in["providerFields"] = v
	return nil
}

func (o *createOptions) apply(in map[string]any) error {
	for _, f := range []struct{ key, val string }{{"description", o.description}, {"provider", o.provider},
		{"hardwaretype", o.hardwaretype}, {"imagetype", o.imagetype}, {"dnsSuffix", o.dnsSuffix}} {
		if f.val != "" {
			in[f.key] = f.val
		}
	}
	if o.lease != "" {
		// The server reads it and names the field when it refuses it.
		in["initialLeaseDuration"] = o.lease
	}
	return withProviderFields(in, o.providerFields)
}

func newClusterCreateCmd() *cobra.Command {
	var api apiFlags
	var opts createOptions
	var output string
	var name, configFile string
	var size int
	var services []string
	var noWait, dryRun, replaceConfig bool
	cmd := &cobra.Command{
		Use:   "create TEMPLATE [--size N]",
		Short: "Create a cluster from a template and follow it until it is ACTIVE",
		Long: `create makes a cluster from a template and follows it until it is ACTIVE.

--config FILE is merged into the template's config, as configure merges
into a cluster's: objects merge key by key, a null removes the key, any
other value (arrays too) replaces it, so {"web": {"greeting": "yo"}}
changes one value and keeps the rest. With --replace-config the file is
the whole config and the template's is not used.

With --dry-run it shows what the create would do, making nothing: the nodes
with their host names (<name>-<id>-<nodenum>.<dnsSuffix>; the id is 0 until
the cluster exists), the config the cluster gets and how it differs from
the template's, the plan, and the room the nodes take on the provider.
A create that does not fit the tenant's quotas or the provider's room is
refused either way, before anything is made.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("size") && size < 1 {
				return fmt.Errorf("--size must be at least 1 (got %d): give the number of nodes", size)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("size") {
				// The template's least: 1 would be refused by every
				// template that needs more. Said when it is more than 1,
				// the size a user would not guess.
				size = 1
				if least, ok, err := templateMinSize(cmd.Context(), c, args[0]); err != nil {
					return err
				} else if ok && least > 1 {
					size = least
					fmt.Fprintln(cmd.ErrOrStderr(), sizeNote(args[0], size))
				}
			}
			in := map[string]any{"name": name, "clusterTemplate": args[0], "numMachines": size}
			if in["name"] == "" {
				in["name"] = args[0]
			}
			if err := withServicesAndConfig(in, services, configFile); err != nil {
				return err
			}
			// The API replaces the template's config with a create's
			// (Coopr's rule); the CLI merges, as configure does.
			switch {
			case replaceConfig && configFile == "":
				return errors.New("--replace-config needs --config FILE: the whole config the cluster gets")
			case configFile != "" && !replaceConfig:
				in["mergeConfig"] = true
			}
			if err := opts.apply(in); err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if output != "table" && !dryRun {
				return errors.New("-o is for --dry-run: a create prints its progress")
			}
			if dryRun && output == "json" {
				return previewJSON(cmd, c, `mutation($in: ClusterInput!) { previewCluster(input: $in) { template provider services
					nodes { nodenum hostname services hardwaretype imagetype flavor image } tasks { ref nodenum action service stage }
					edges stages planHash warnings `+capacityFields+` quota { maxClusters maxNodes clusters nodes addClusters addNodes }
					config configChanges { path kind old new } } }`,
					map[string]any{"in": in}, "previewCluster")
			}
			if dryRun {
				var pv struct{ PreviewCluster clusterPreview }
				if err := gql(cmd.Context(), c, `mutation($in: ClusterInput!) { previewCluster(input: $in) { template provider
					nodes { nodenum hostname services } tasks { ref } stages planHash warnings `+capacityFields+`
					config configChanges { path kind old new } } }`,
					map[string]any{"in": in}, &pv); err != nil {
					return sizeHint(err)
				}
				how := "the template's"
				if replaceConfig {
					how = "the --config file's alone: --replace-config"
				} else if configFile != "" {
					how = "the template's with the --config file merged in"
				}
				printPreview(cmd.OutOrStdout(), in["name"].(string), how, pv.PreviewCluster)
				return nil
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
	cmd.Flags().IntVar(&size, "size", 0, "number of nodes (default: the fewest the template takes)")
	cmd.Flags().StringVar(&name, "name", "", "cluster name (default: the template's name)")
	cmd.Flags().StringVar(&configFile, "config", "", "JSON file merged into the template's config (a null removes a key)")
	cmd.Flags().BoolVar(&replaceConfig, "replace-config", false, "the --config file replaces the template's whole config instead of merging into it")
	cmd.Flags().StringSliceVar(&services, "services", nil, "services instead of the template's defaults")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the cluster is accepted")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the create would do, making nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "with --dry-run: json prints the whole preview")
	opts.register(cmd)
	return cmd
}

// sizeHint names the flag behind the API's numMachines in an error: an
// input error on that field, or the template's size rule refusing it.
func sizeHint(err error) error {
	var re *client.ResponseError
	if !errors.As(err, &re) {
		return err
	}
	for _, e := range re.Errors {
		if e.Extensions["field"] == "numMachines" || e.Extensions["kind"] == "size_constraint" {
			return fmt.Errorf("%w (numMachines is the --size flag)", err)
		}
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
		return fmt.Errorf("--config: %w", err)
	}
	in["config"] = cfg
	return nil
}

func readJSONObject(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s must hold a JSON object: %w", path, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must hold a JSON object, not %s", path, jsonKind(v))
	}
	return obj, nil
}

// jsonKind names a decoded JSON value's type as a user knows it.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// listedCluster is a cluster as cluster list prints it; its JSON keys
// are the API's.
type listedCluster struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	Template   string     `json:"template"`
	Owner      string     `json:"owner"`
	Size       int        `json:"size"`
	ExpireTime *time.Time `json:"expireTime"`
	CreatedAt  time.Time  `json:"createdAt"`
}

func newClusterListCmd() *cobra.Command {
	var api apiFlags
	var output, template, name string
	var statuses []string
	cmd := &cobra.Command{
		Use:     "list [--status S[,S...]] [--template T] [--name N]",
		Aliases: []string{"ls"},
		Short:   "List the clusters you can see, newest first",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			vars := map[string]any{}
			if len(statuses) > 0 {
				up := make([]string, len(statuses))
				for i, st := range statuses {
					up[i] = strings.ToUpper(st)
				}
				vars["status"] = up
			}
			if template != "" {
				vars["template"] = template
			}
			if name != "" {
				vars["name"] = name
			}
			// Every page: a listing that stops at the first is a wrong answer.
			var all []listedCluster
			for {
				var out struct {
					Clusters struct {
						Nodes       []listedCluster
						EndCursor   *string
						HasNextPage bool
					}
				}
				if err := gql(cmd.Context(), c, `query($after: String, $status: [ClusterStatus!], $template: String, $name: String) {
					clusters(first: 500, after: $after, status: $status, template: $template, name: $name) {
					nodes { id name status template owner size expireTime createdAt } endCursor hasNextPage } }`, vars, &out); err != nil {
					return err
				}
				all = append(all, out.Clusters.Nodes...)
				if !out.Clusters.HasNextPage || out.Clusters.EndCursor == nil {
					break
				}
				vars["after"] = *out.Clusters.EndCursor
			}
			if all == nil {
				all = []listedCluster{}
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tTEMPLATE\tSIZE\tOWNER")
			for _, n := range all {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", n.ID, n.Name, n.Status, n.Template, n.Size, n.Owner)
			}
			return tw.Flush()
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().StringSliceVar(&statuses, "status", nil, "only these statuses: pending, active, incomplete, inconsistent, terminated")
	cmd.Flags().StringVar(&template, "template", "", "only clusters of this template")
	cmd.Flags().StringVar(&name, "name", "", "only clusters with this name")
	return cmd
}

func newClusterShowCmd() *cobra.Command {
	var api apiFlags
	var output string
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
			if err := checkOutput(output); err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if output == "json" {
				return showClusterJSON(cmd.Context(), c, id, cmd.OutOrStdout())
			}
			return showCluster(cmd.Context(), c, id, cmd.OutOrStdout())
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

// showClusterJSON prints the cluster as the API gives it, keys in the
// order asked for here.
func showClusterJSON(ctx context.Context, c *client.Client, id string, w io.Writer) error {
	var out struct{ Cluster json.RawMessage }
	if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { id name description owner status message template provider
		services size config dnsSuffix expireTime createdAt updatedAt
		serviceSummary { service nodes states { state count } }
		nodes { id nodenum hostname services ipaddresses hardwaretype imagetype flavor image sshuser state stateReason stateSince
			serviceStates { service state } }
		latestJob { id action state message } } }`, map[string]any{"id": id}, &out); err != nil {
		return err
	}
	if string(out.Cluster) == "null" {
		return notFound("cluster %s: not found (coopr cluster list shows the clusters you can see)", id)
	}
	return writeJSON(w, out.Cluster)
}

// shownCluster is what cluster show prints.
type shownCluster struct {
	ID, Name, Status, Message, Template string
	ExpireTime                          *time.Time
	ServiceSummary                      []struct {
		Service string
		Nodes   int
		States  []struct {
			State string
			Count int
		}
	}
	Nodes []struct {
		Nodenum       int
		Hostname      string
		Ipaddresses   map[string]string
		ServiceStates []struct{ Service, State string }
		State         string
		StateReason   string
		StateSince    *time.Time
	}
	LastCheck *struct {
		At      time.Time
		Healthy bool
		Nodes   []struct{ Findings []struct{ Kind string } }
	}
	// Jobs are the cluster's, newest first, for a repair since the check.
	Jobs []struct {
		ID, Action, State string
		CreatedAt         time.Time
	}
	LatestJob *struct {
		ID, Action, State string
		Tasks             []struct {
			NodeID, Action, Service, State, Message string
			Hostname                                *string
		}
	}
}

func showCluster(ctx context.Context, c *client.Client, id string, w io.Writer) error {
	var out struct{ Cluster *shownCluster }
	if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { id name status message template expireTime
		serviceSummary { service nodes states { state count } }
		nodes { nodenum hostname ipaddresses serviceStates { service state } state stateReason stateSince }
		lastCheck { at healthy nodes { findings { kind } } } jobs { id action state createdAt }
		latestJob { id action state tasks { nodeId hostname action service state message } } } }`, map[string]any{"id": id}, &out); err != nil {
		return err
	}
	if out.Cluster == nil {
		return notFound("cluster %s: not found (coopr cluster list shows the clusters you can see)", id)
	}
	return writeCluster(w, out.Cluster)
}

// writeCluster prints the cluster, its nodes (saying which were found
// unreachable, since when and why) and the steps its latest job skipped.
func writeCluster(w io.Writer, cl *shownCluster) error {
	fmt.Fprintf(w, "cluster %s %q from %s: %s", cl.ID, cl.Name, cl.Template, cl.Status)
	if cl.Message != "" {
		fmt.Fprintf(w, " (%s)", cl.Message)
	}
	fmt.Fprintln(w)
	if cl.ExpireTime != nil && cl.Status != "TERMINATED" {
		fmt.Fprintf(w, "lease ends %s (coopr cluster lease extend moves it)\n", cl.ExpireTime.Local().Format(time.DateTime))
	}
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
	fmt.Fprintln(tw, "NODE\tHOSTNAME\tADDRESS\tSERVICES\tSTATE")
	var lost []string
	for _, n := range cl.Nodes {
		svcs := make([]string, len(n.ServiceStates))
		for i, st := range n.ServiceStates {
			svcs[i] = st.Service
			if u, ok := usual[st.Service]; ok && st.State != u {
				svcs[i] += " (" + strings.ToLower(st.State) + ")"
			}
		}
		state := n.State
		if n.StateSince != nil {
			since := n.StateSince.Local().Format(time.DateTime)
			if n.State == "DELETED" {
				// Found unreachable before the delete removed it: history.
				state += " (unreachable since " + since + ")"
			} else {
				state += " since " + since
			}
			lost = append(lost, fmt.Sprintf("node %d (%s) unreachable: %s", n.Nodenum, n.Hostname, n.StateReason))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", n.Nodenum, n.Hostname, n.Ipaddresses["access_v4"], strings.Join(svcs, ", "), state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range lost {
		fmt.Fprintln(w, l)
	}
	if lc := cl.LastCheck; lc != nil {
		findings, bad := 0, 0
		for _, n := range lc.Nodes {
			findings += len(n.Findings)
			if len(n.Findings) > 0 {
				bad++
			}
		}
		when := lc.At.Local().Format(time.DateTime)
		// A repair that completed after the check acted on its findings:
		// they are history until a new check says otherwise.
		repaired := ""
		for _, j := range cl.Jobs {
			if j.Action == "REPAIR" && j.State == "COMPLETE" && !j.CreatedAt.Before(lc.At) {
				repaired = j.ID
				break
			}
		}
		switch {
		case lc.Healthy:
			fmt.Fprintf(w, "last check %s: healthy\n", when)
		case repaired != "":
			fmt.Fprintf(w, "last check %s: %s on %d of %d nodes, repaired since by job %s (coopr cluster check %s checks again)\n",
				when, count(findings, "finding"), bad, len(lc.Nodes), repaired, cl.ID)
		default:
			fmt.Fprintf(w, "last check %s: %s on %d of %d nodes (coopr cluster check %s --last)\n",
				when, count(findings, "finding"), bad, len(lc.Nodes), cl.ID)
		}
	}
	if j := cl.LatestJob; j != nil {
		var skipped []string
		for _, t := range j.Tasks {
			if t.State != "SKIPPED" {
				continue
			}
			// A task's node without a host name is one the job removed
			// (a repair's dead node): its id is all that is left of it.
			where := "the cluster"
			switch {
			case t.Hostname != nil && *t.Hostname != "":
				where = *t.Hostname
			case t.NodeID != "":
				where = "a node since removed (" + t.NodeID + ")"
			}
			what := t.Action
			if t.Service != "" {
				what += " " + t.Service
			}
			skipped = append(skipped, fmt.Sprintf("  %s on %s: %s", what, where, t.Message))
		}
		if len(skipped) > 0 {
			steps := "steps"
			if len(skipped) == 1 {
				steps = "step"
			}
			fmt.Fprintf(w, "job %s (%s, %s) skipped %d best-effort %s:\n%s\n", j.ID, j.Action, j.State, len(skipped), steps,
				strings.Join(skipped, "\n"))
		}
	}
	return nil
}

func newClusterDeleteCmd() *cobra.Command {
	var api apiFlags
	var noWait bool
	var providerFields string
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
			vars := map[string]any{"id": id}
			if err := withProviderFields(vars, providerFields); err != nil {
				return err
			}
			var out struct{ DeleteCluster *struct{ ID string } }
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $providerFields: JSON) { deleteCluster(id: $id, providerFields: $providerFields) { id } }`,
				vars, &out); err != nil {
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
	registerProviderFields(cmd, &providerFields)
	return cmd
}

// newClusterOpCmd runs an operation on a live cluster: configure (with
// or without restart), start/stop/restart services, add services, scale.
func newClusterOpCmd() *cobra.Command {
	var api apiFlags
	var services, remove []string
	var configFile string
	var size int
	var noWait, dryRun, replace bool
	var providerFields, output string
	cmd := &cobra.Command{
		Use:   "op CLUSTER OPERATION",
		Short: "Run an operation: configure, configure-with-restart, start, stop, restart, add-services, scale",
		Long: `op runs an operation on a live cluster and follows it:

  coopr cluster op ID configure --config new.json
  coopr cluster op ID configure-with-restart --config new.json
  coopr cluster op ID restart --services web
  coopr cluster op ID add-services --services metrics
  coopr cluster op ID scale --size 5
  coopr cluster op ID scale --size 3 --remove 1002

start, stop and restart without --services act on every service of the
cluster. With it, start also starts what those services need, and stop and
restart also cover the services that need them.

configure merges --config into the cluster's config: objects merge key by
key, a null removes the key, any other value (arrays too) replaces it, so
{"web": {"greeting": "hi"}} changes one value and keeps the rest. With
--replace the file is the whole new config. configure prints what changes
before it runs.

--dry-run shows what the operation would do and changes nothing: the nodes
added or removed, the config changes, the plan, and for a scale-out the
room the new nodes take on the provider.

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
			if err := opFlagsApply(cmd, strings.ToLower(args[1])); err != nil {
				return err
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
			if len(remove) > 0 {
				in["nodes"] = remove
			}
			if err := withProviderFields(in, providerFields); err != nil {
				return err
			}
			configure := op == "CONFIGURE" || op == "CONFIGURE_WITH_RESTART"
			if replace {
				in["replace"] = true
			}
			if configure && configFile == "" {
				return errors.New(args[1] + " needs --config FILE: the JSON object to merge into the cluster's config (with --replace, the whole new config)")
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if output != "table" && !dryRun {
				return errors.New("-o is for --dry-run: an operation prints its progress")
			}
			if dryRun && output == "json" {
				return previewJSON(cmd, c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
					action added { nodenum hostname services hardwaretype imagetype flavor image } removed changed { nodenum add }
					config configChanges { path kind old new } `+capacityFields+` tasks { ref nodenum action service stage }
					edges stages planHash } }`, map[string]any{"id": id, "in": in}, "previewOperation")
			}
			var hash *string
			if dryRun || configure {
				var pv struct{ PreviewOperation opPreview }
				if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
					action added { nodenum hostname services } removed changed { nodenum add }
					configChanges { path kind old new } tasks { ref service } stages planHash `+capacityFields+` } }`,
					map[string]any{"id": id, "in": in}, &pv); err != nil {
					return sizeHint(err)
				}
				if dryRun {
					printOpPreview(cmd.OutOrStdout(), pv.PreviewOperation, services)
					return nil
				}
				printConfigChanges(cmd.OutOrStdout(), pv.PreviewOperation.ConfigChanges)
				// Run the plan shown, or fail if the cluster changed since.
				hash = &pv.PreviewOperation.PlanHash
			}
			var out struct{ RunOperation struct{ ID, Action string } }
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!, $h: String) {
				runOperation(clusterId: $id, input: $in, expectedPlanHash: $h) { id action } }`,
				map[string]any{"id": id, "in": in, "h": hash}, &out); err != nil {
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
	cmd.Flags().StringVar(&configFile, "config", "", "JSON file merged into the config (configure)")
	cmd.Flags().BoolVar(&replace, "replace", false, "the --config file replaces the whole config instead of merging into it (configure)")
	cmd.Flags().IntVar(&size, "size", 0, "new node count (scale)")
	cmd.Flags().StringSliceVar(&remove, "remove", nil, "nodes a scale-in removes (number, host name or id) instead of the solver's pick (scale)")
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the operation is accepted")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the operation would do, changing nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "with --dry-run: json prints the whole preview")
	registerProviderFields(cmd, &providerFields)
	return cmd
}

// opFlags lists the ops each of cluster op's flags is for; the flags not
// listed (--dry-run, --no-wait, -o, --provider-fields) are for every op.
var opFlags = []struct {
	flag string
	ops  []string
}{
	{"services", []string{"start", "stop", "restart", "add-services"}},
	{"config", []string{"configure", "configure-with-restart"}},
	{"replace", []string{"configure", "configure-with-restart"}},
	{"size", []string{"scale"}},
	{"remove", []string{"scale"}},
}

// opFlagsApply refuses a flag given to an op it is not for: silently
// dropping it would run something else than what was asked.
func opFlagsApply(cmd *cobra.Command, op string) error {
	for _, f := range opFlags {
		if cmd.Flags().Changed(f.flag) && !slices.Contains(f.ops, op) {
			ops := strings.Join(f.ops, ", ")
			if i := strings.LastIndex(ops, ", "); i >= 0 {
				ops = ops[:i] + " and " + ops[i+2:]
			}
			return fmt.Errorf("--%s is for %s, not %s", f.flag, ops, op)
		}
	}
	return nil
}

// previewJSON runs a preview and prints its field as the API gives it.
func previewJSON(cmd *cobra.Command, c *client.Client, query string, vars map[string]any, field string) error {
	out := map[string]json.RawMessage{}
	if err := gql(cmd.Context(), c, query, vars, &out); err != nil {
		return sizeHint(err)
	}
	return writeJSON(cmd.OutOrStdout(), out[field])
}

// capacityFields asks for a preview's provider room.
const capacityFields = `capacity { provider pool nodes used free requested }`

type capacityOut struct {
	Provider, Pool               string
	Nodes, Used, Free, Requested int
}

type previewNode struct {
	Nodenum  int
	Hostname string
	Services []string
}

type clusterPreview struct {
	Template, Provider, PlanHash string
	Nodes                        []previewNode
	Tasks                        []struct{ Ref string }
	Stages                       [][]string
	Warnings                     []string
	Capacity                     *capacityOut
	Config                       map[string]any
	ConfigChanges                []configChange
}

type configChange struct {
	Path     []string
	Kind     string
	Old, New any
}

type opPreview struct {
	Action, PlanHash string
	Added            []previewNode
	Removed          []int
	Changed          []struct {
		Nodenum int
		Add     []string
	}
	ConfigChanges []configChange
	Tasks         []struct{ Ref, Service string }
	Stages        [][]string
	Capacity      *capacityOut
}

// printPreview shows what a create would do; configFrom says where its
// config comes from.
func printPreview(w io.Writer, name, configFrom string, p clusterPreview) {
	fmt.Fprintf(w, "would create %q from %s on provider %s: %s (nothing made: --dry-run)\n",
		name, p.Template, p.Provider, count(len(p.Nodes), "node"))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOSTNAME\tSERVICES")
	for _, n := range p.Nodes {
		fmt.Fprintf(tw, "%d\t%s\t%s\n", n.Nodenum, n.Hostname, strings.Join(n.Services, ", "))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "host names carry 0 for the cluster id, which the create gives")
	printCreateConfig(w, configFrom, p.Config, p.ConfigChanges)
	printPlan(w, len(p.Tasks), len(p.Stages), p.PlanHash)
	printCapacity(w, p.Capacity)
	for _, m := range p.Warnings {
		fmt.Fprintln(w, "warning: "+m)
	}
}

// printOpPreview shows what an operation would do.
func printOpPreview(w io.Writer, p opPreview, asked []string) {
	fmt.Fprintf(w, "would run %s (nothing changed: --dry-run)\n", p.Action)
	printAlsoActs(w, p, asked)
	for _, n := range p.Added {
		fmt.Fprintf(w, "  add node %d %s: %s\n", n.Nodenum, n.Hostname, strings.Join(n.Services, ", "))
	}
	for _, n := range p.Removed {
		fmt.Fprintf(w, "  remove node %d\n", n)
	}
	for _, c := range p.Changed {
		fmt.Fprintf(w, "  node %d gains %s\n", c.Nodenum, strings.Join(c.Add, ", "))
	}
	if strings.HasPrefix(p.Action, "CLUSTER_CONFIGURE") {
		printConfigChanges(w, p.ConfigChanges)
	}
	printPlan(w, len(p.Tasks), len(p.Stages), p.PlanHash)
	printCapacity(w, p.Capacity)
}

// printAlsoActs names the services a start, stop or restart acts on beyond
// those asked: stopping web also stops the lb that needs it, which the
// plan's task count alone did not show.
func printAlsoActs(w io.Writer, p opPreview, asked []string) {
	var verb, why string
	switch p.Action {
	case "START_SERVICES":
		verb, why = "starts", "what a started service needs starts first"
	case "STOP_SERVICES":
		verb, why = "stops", "what needs a stopped service stops first"
	case "RESTART_SERVICES":
		verb, why = "restarts", "what needs a restarted service restarts with it"
	default:
		return
	}
	if len(asked) == 0 {
		return
	}
	var also []string
	for _, t := range p.Tasks {
		if t.Service != "" && !slices.Contains(asked, t.Service) && !slices.Contains(also, t.Service) {
			also = append(also, t.Service)
		}
	}
	if len(also) == 0 {
		return
	}
	slices.Sort(also)
	fmt.Fprintf(w, "  %s %s, and %s too: %s\n", verb, strings.Join(asked, ", "), strings.Join(also, ", "), why)
}

func printPlan(w io.Writer, tasks, stages int, hash string) {
	fmt.Fprintf(w, "plan: %d tasks in %d stages (plan hash %s)\n", tasks, stages, hash)
}

// printCapacity shows the room a request takes on its provider.
func printCapacity(w io.Writer, c *capacityOut) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "room on provider %s: %d more %s of %d free (%s: %s, %d held by clusters not TERMINATED)\n",
		c.Provider, c.Requested, plural(c.Requested, "node"), c.Free, c.Pool, count(c.Nodes, "node"), c.Used)
}

// printConfigChanges lists a configure's changes, one path a line:
// + added, - removed, ~ changed.
func printConfigChanges(w io.Writer, changes []configChange) {
	if len(changes) == 0 {
		fmt.Fprintln(w, "config unchanged: the services are configured again with it")
		return
	}
	fmt.Fprintln(w, "config changes:")
	printChangeLines(w, changes)
}

// printChangeLines lists config changes, one path a line: + added,
// - removed, ~ changed.
func printChangeLines(w io.Writer, changes []configChange) {
	for _, c := range changes {
		path := strings.Join(c.Path, ".")
		switch c.Kind {
		case "ADDED":
			fmt.Fprintf(w, "  + %s: %s\n", path, jsonText(c.New))
		case "REMOVED":
			fmt.Fprintf(w, "  - %s (was %s)\n", path, jsonText(c.Old))
		default:
			fmt.Fprintf(w, "  ~ %s: %s -> %s\n", path, jsonText(c.Old), jsonText(c.New))
		}
	}
}

// printCreateConfig shows the config a create gives the cluster, whole,
// and what differs from the template's: a partial --config that once
// replaced the template's showed nothing of what it dropped.
func printCreateConfig(w io.Writer, from string, cfg map[string]any, changes []configChange) {
	fmt.Fprintf(w, "config (%s):\n", from)
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(cfg); err != nil {
		fmt.Fprintf(w, "  %v\n", cfg)
	} else {
		fmt.Fprint(w, "  "+b.String())
	}
	if len(changes) > 0 {
		fmt.Fprintln(w, "changes from the template's config:")
		printChangeLines(w, changes)
	}
}

// jsonText is v as compact JSON, with <, > and & as they are.
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// count is n things, the noun in the plural unless n is 1: "1 node",
// "3 nodes".
func count(n int, noun string) string {
	return strconv.Itoa(n) + " " + plural(n, noun)
}

// plural is noun for one, nouns for any other number.
func plural(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
