package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// syncOut is what a template sync's preview says beside the plan.
type syncOut struct {
	FromVersion, ToVersion    int
	AddServices, KeptServices []string
	ConstraintChanges         []struct {
		Path     string
		Old, New *string
	}
}

type syncPreviewOut struct {
	opPreview
	Sync *syncOut
}

const syncPreviewFields = `action added { nodenum hostname services } removed changed { nodenum add }
	configChanges { path kind old new } tasks { ref } stages planHash
	sync { fromVersion toVersion addServices keptServices constraintChanges { path old new } }`

// newClusterSyncCmd moves a cluster to the newest version of its template
// (docs/catalog.md#template-sync): it shows what changes, then runs exactly
// that plan and follows it.
func newClusterSyncCmd() *cobra.Command {
	var api apiFlags
	var noWait, dryRun bool
	var output, providerFields string
	cmd := &cobra.Command{
		Use:   "sync CLUSTER",
		Short: "Move a cluster to the newest version of its template",
		Long: `sync runs SYNC_TEMPLATE: the cluster takes the newest version of the
template it was made from. Services the new version adds to its defaults
are installed on the nodes the template's rules give them, config keys the
new version changed take its values (and every service is configured
again), and its constraints must hold for the nodes as they are: a version
the layout breaks is refused with the reason, and nothing changes.

sync prints what changes before it runs, and runs exactly that plan.
--dry-run prints it and stops (-o json: the whole preview).

` + clusterArgHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if output != "table" && !dryRun {
				return fmt.Errorf("-o is for --dry-run: a sync prints its progress")
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			in := map[string]any{"operation": "SYNC_TEMPLATE"}
			if err := withProviderFields(in, providerFields); err != nil {
				return err
			}
			vars := map[string]any{"id": id, "in": in}
			if dryRun && output == "json" {
				return previewJSON(cmd, c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
					`+syncPreviewFields+` config edges } }`, vars, "previewOperation")
			}
			var pv struct{ PreviewOperation syncPreviewOut }
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $in: OperationInput!) { previewOperation(clusterId: $id, input: $in) {
				`+syncPreviewFields+` } }`, vars, &pv); err != nil {
				return err
			}
			printSyncPreview(cmd.OutOrStdout(), pv.PreviewOperation, dryRun)
			if dryRun {
				return nil
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
		},
	}
	api.register(cmd)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the sync is accepted")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show what the sync would do, changing nothing")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "with --dry-run: json prints the whole preview")
	registerProviderFields(cmd, &providerFields)
	return cmd
}

// printSyncPreview shows what a sync changes.
func printSyncPreview(w io.Writer, p syncPreviewOut, dryRun bool) {
	s := p.Sync
	if s == nil {
		s = &syncOut{}
	}
	from := fmt.Sprint(s.FromVersion)
	if s.FromVersion == 0 {
		from = "unrecorded"
	}
	verb := "syncing"
	if dryRun {
		verb = "would sync"
	}
	fmt.Fprintf(w, "%s template version %s -> %d", verb, from, s.ToVersion)
	if dryRun {
		fmt.Fprint(w, " (nothing changed: --dry-run)")
	}
	fmt.Fprintln(w)
	if len(s.AddServices) > 0 {
		fmt.Fprintf(w, "services added: %s\n", strings.Join(s.AddServices, ", "))
	}
	for _, c := range p.Changed {
		fmt.Fprintf(w, "  node %d gains %s\n", c.Nodenum, strings.Join(c.Add, ", "))
	}
	if len(s.KeptServices) > 0 {
		fmt.Fprintf(w, "kept (no longer in the template's defaults, not removed): %s\n", strings.Join(s.KeptServices, ", "))
	}
	if len(s.ConstraintChanges) > 0 {
		fmt.Fprintln(w, "constraint changes (the layout satisfies them):")
		for _, c := range s.ConstraintChanges {
			fmt.Fprintf(w, "  ~ %s: %s -> %s\n", c.Path, orNone(c.Old), orNone(c.New))
		}
	}
	if len(p.ConfigChanges) > 0 {
		printConfigChanges(w, p.ConfigChanges)
	}
	printPlan(w, len(p.Tasks), len(p.Stages), p.PlanHash)
}

func orNone(s *string) string {
	if s == nil {
		return "(none)"
	}
	return *s
}
