package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

// lastCheckFields asks for a cluster's lastCheck.
const lastCheckFields = `lastCheck { at jobId healthy nodes { nodeId nodenum hostname reachable findings { kind service detail } unchecked } }`

type lastCheck struct {
	At      time.Time `json:"at"`
	JobID   string    `json:"jobId"`
	Healthy bool      `json:"healthy"`
	Nodes   []struct {
		NodeID    string `json:"nodeId"`
		Nodenum   int    `json:"nodenum"`
		Hostname  string `json:"hostname"`
		Reachable bool   `json:"reachable"`
		Findings  []struct {
			Kind    string `json:"kind"`
			Service string `json:"service"`
			Detail  string `json:"detail"`
		} `json:"findings"`
		Unchecked []string `json:"unchecked"`
	} `json:"nodes"`
}

// newClusterCheckCmd checks a cluster and prints what it found
// (docs/operations.md#checking-a-cluster).
func newClusterCheckCmd() *cobra.Command {
	var api apiFlags
	var output string
	var last bool
	cmd := &cobra.Command{
		Use:   "check CLUSTER",
		Short: "Check that a cluster's nodes answer and its services run, and print what is wrong",
		Long: `check runs CHECK on a cluster, follows it and prints its findings: nodes
that do not answer or show another host key, services stopped or missing,
hostnames and addresses changed. The cluster keeps its status; the findings
stay on it as lastCheck, and repair acts on them. --last prints the latest
check's findings without checking again.

Exit status 0 whether or not something was found; -o json prints the
findings as the API gives them.

` + clusterArgHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if !last {
				var out struct{ CheckCluster struct{ ID string } }
				if err := gql(cmd.Context(), c, `mutation($id: ID!) { checkCluster(id: $id) { id } }`, map[string]any{"id": id}, &out); err != nil {
					return err
				}
				progress := cmd.OutOrStdout()
				if output == "json" {
					progress = cmd.ErrOrStderr()
				}
				fmt.Fprintf(progress, "checking cluster %s (job %s)\n", id, out.CheckCluster.ID)
				if err := watchCluster(cmd.Context(), c, id, progress, cmd.ErrOrStderr(), false); err != nil {
					return err
				}
			}
			return printLastCheck(cmd, c, id, output)
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&last, "last", false, "print the latest check's findings without checking again")
	return cmd
}

func printLastCheck(cmd *cobra.Command, c *client.Client, id, output string) error {
	var raw struct {
		Cluster *struct{ LastCheck json.RawMessage }
	}
	if err := gql(cmd.Context(), c, `query($id: ID!) { cluster(id: $id) { `+lastCheckFields+` } }`, map[string]any{"id": id}, &raw); err != nil {
		return err
	}
	if raw.Cluster == nil {
		return fmt.Errorf("NOT_FOUND: cluster %s", id)
	}
	if output == "json" {
		return writeJSON(cmd.OutOrStdout(), raw.Cluster.LastCheck)
	}
	var lc *lastCheck
	if err := json.Unmarshal(raw.Cluster.LastCheck, &lc); err != nil {
		return err
	}
	writeCheck(cmd.OutOrStdout(), id, lc)
	return nil
}

func writeCheck(w io.Writer, id string, lc *lastCheck) {
	if lc == nil {
		fmt.Fprintf(w, "cluster %s was never checked: coopr cluster check %s\n", id, id)
		return
	}
	verdict := "healthy"
	if !lc.Healthy {
		verdict = "NOT healthy: coopr cluster repair " + id + " acts on these findings"
	}
	fmt.Fprintf(w, "checked %s (job %s): %s\n", lc.At.Local().Format("2006-01-02 15:04:05"), lc.JobID, verdict)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tHOSTNAME\tFINDING\tSERVICE\tDETAIL")
	var unchecked []string
	for _, n := range lc.Nodes {
		if len(n.Findings) == 0 {
			fmt.Fprintf(tw, "%d\t%s\tOK\t\t\n", n.Nodenum, n.Hostname)
		}
		for _, f := range n.Findings {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", n.Nodenum, n.Hostname, f.Kind, f.Service, oneLine(f.Detail))
		}
		for _, s := range n.Unchecked {
			if !slices.Contains(unchecked, s) {
				unchecked = append(unchecked, s)
			}
		}
	}
	_ = tw.Flush()
	if len(unchecked) > 0 {
		// No finding, and not known to run either: say so rather than
		// let "OK" read as "every service runs".
		slices.Sort(unchecked)
		fmt.Fprintf(w, "not checked (no status action, no systemd units): %s\n", strings.Join(unchecked, ", "))
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// newClusterRepairCmd repairs a cluster after its latest check's findings
// (docs/operations.md#repairing-a-cluster).
func newClusterRepairCmd() *cobra.Command {
	var api apiFlags
	var noWait, dryRun bool
	var providerFields, output string
	cmd := &cobra.Command{
		Use:   "repair CLUSTER",
		Short: "Replace dead nodes and bring back missing or stopped services, after the latest check",
		Long: `repair acts on what the latest check (coopr cluster check) found: a node
that does not answer, or shows another host key, is replaced by a new node
with the same services (a new node number), and the nodes that stay are
reconfigured to take it in; a missing service is installed, configured and
started again; a stopped one is started. It shows the plan, runs exactly
that plan and follows it. Check again afterwards to see the cluster
healthy.

--dry-run shows what it would do and changes nothing.

` + clusterArgHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if output != "table" && !dryRun {
				return fmt.Errorf("-o is for --dry-run: a repair prints its progress")
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			in := map[string]any{"operation": "REPAIR"}
			if err := withProviderFields(in, providerFields); err != nil {
				return err
			}
			if dryRun && output == "json" {
				return previewJSON(cmd, c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
					action added { nodenum hostname services hardwaretype imagetype flavor image } removed changed { nodenum add }
					`+capacityFields+` tasks { ref nodenum action service stage } edges stages planHash } }`,
					map[string]any{"id": id, "in": in}, "previewOperation")
			}
			var pv struct{ PreviewOperation opPreview }
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
				action added { nodenum hostname services } removed changed { nodenum add } tasks { ref } stages planHash `+capacityFields+` } }`,
				map[string]any{"id": id, "in": in}, &pv); err != nil {
				return err
			}
			if dryRun {
				printOpPreview(cmd.OutOrStdout(), pv.PreviewOperation, nil)
				return nil
			}
			if len(pv.PreviewOperation.Tasks) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing to repair: the latest check of %s found nothing a repair acts on\n", id)
				return nil
			}
			for _, n := range pv.PreviewOperation.Removed {
				fmt.Fprintf(cmd.OutOrStdout(), "  replace node %d\n", n)
			}
			for _, n := range pv.PreviewOperation.Added {
				fmt.Fprintf(cmd.OutOrStdout(), "  by node %d %s: %s\n", n.Nodenum, n.Hostname, strings.Join(n.Services, ", "))
			}
			vars := map[string]any{"id": id, "h": pv.PreviewOperation.PlanHash, "f": in["providerFields"]}
			var out struct{ RepairCluster struct{ ID string } }
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $h: String, $f: JSON) { repairCluster(id: $id, expectedPlanHash: $h, providerFields: $f) { id } }`,
				vars, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: REPAIR\n", out.RepairCluster.ID)
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
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the repair is accepted")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the repair would do, changing nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "with --dry-run: json prints the whole preview")
	registerProviderFields(cmd, &providerFields)
	return cmd
}

// newClusterNodeOpCmd runs an operation on chosen nodes: replace
// (docs/operations.md#replacing-a-node) or reboot
// (docs/operations.md#rebooting-a-node).
func newClusterNodeOpCmd(use, op, short, long string) *cobra.Command {
	var api apiFlags
	var noWait, dryRun bool
	var providerFields, output string
	cmd := &cobra.Command{
		Use:   use + " CLUSTER NODE...",
		Short: short,
		Long:  long + "\n\n--dry-run shows what it would do and changes nothing.\n\n" + clusterArgHelp,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if output != "table" && !dryRun {
				return fmt.Errorf("-o is for --dry-run: %s prints its progress", use)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			in := map[string]any{"operation": op, "nodes": args[1:]}
			if err := withProviderFields(in, providerFields); err != nil {
				return err
			}
			return previewAndRun(cmd, c, id, in, dryRun, noWait, output)
		},
	}
	api.register(cmd)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the operation is accepted")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what it would do, changing nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "with --dry-run: json prints the whole preview")
	registerProviderFields(cmd, &providerFields)
	return cmd
}

func newClusterReplaceCmd() *cobra.Command {
	return newClusterNodeOpCmd("replace", "REPLACE_NODE",
		"Replace nodes by new ones with the same services, and reconfigure the others",
		`replace deletes each NODE (a number, host name or id) and creates a new node
with the same services and types in its place, with a new node number; the
other nodes are reconfigured to take the new one in. The node need not
answer: a dead machine is deleted all the same. It shows the plan, runs
exactly that plan and follows it.`)
}

func newClusterRebootCmd() *cobra.Command {
	return newClusterNodeOpCmd("reboot", "REBOOT_NODE",
		"Reboot nodes, then bootstrap them and start their services again",
		`reboot has the provider power each NODE (a number, host name or id) off and
on, waits for its SSH with the pinned host key (BOOTSTRAP), and starts its
services. It shows the plan, runs exactly that plan and follows it.`)
}

// previewAndRun previews an operation, prints the nodes it replaces, then
// runs exactly that plan and follows it; with dryRun it prints the preview
// alone.
func previewAndRun(cmd *cobra.Command, c *client.Client, id string, in map[string]any, dryRun, noWait bool, output string) error {
	if dryRun && output == "json" {
		return previewJSON(cmd, c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
			action added { nodenum hostname services hardwaretype imagetype flavor image } removed changed { nodenum add }
			`+capacityFields+` tasks { ref nodenum action service stage } edges stages planHash } }`,
			map[string]any{"id": id, "in": in}, "previewOperation")
	}
	var pv struct{ PreviewOperation opPreview }
	if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
		action added { nodenum hostname services } removed changed { nodenum add } tasks { ref } stages planHash `+capacityFields+` } }`,
		map[string]any{"id": id, "in": in}, &pv); err != nil {
		return err
	}
	if dryRun {
		printOpPreview(cmd.OutOrStdout(), pv.PreviewOperation, nil)
		return nil
	}
	for i, n := range pv.PreviewOperation.Removed {
		if i < len(pv.PreviewOperation.Added) {
			a := pv.PreviewOperation.Added[i]
			fmt.Fprintf(cmd.OutOrStdout(), "  replace node %d by node %d %s: %s\n", n, a.Nodenum, a.Hostname, strings.Join(a.Services, ", "))
		}
	}
	var out struct{ RunOperation struct{ ID, Action string } }
	if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!, $h: String) {
		runOperation(clusterId: $id, input: $in, expectedPlanHash: $h) { id action } }`,
		map[string]any{"id": id, "in": in, "h": pv.PreviewOperation.PlanHash}, &out); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "job %s: %s\n", out.RunOperation.ID, out.RunOperation.Action)
	if noWait {
		return nil
	}
	if err := watchCluster(cmd.Context(), c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), false); err != nil {
		return err
	}
	return showCluster(cmd.Context(), c, id, cmd.OutOrStdout())
}
