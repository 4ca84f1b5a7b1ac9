package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// shownTenant is a tenant as tenant list prints it; its JSON keys are the
// API's.
type shownTenant struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Workers     int       `json:"workers"`
	MaxClusters *int      `json:"maxClusters"`
	MaxNodes    *int      `json:"maxNodes"`
	CreatedAt   time.Time `json:"createdAt"`
}

const tenantFields = `id name description workers maxClusters maxNodes createdAt`

func newTenantCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "tenant", Short: "List, make and delete tenants (superadmin)"}
	cmd.AddCommand(newTenantListCmd(), newTenantCreateCmd(), newTenantUpdateCmd(), newTenantDeleteCmd(),
		newTenantAdminKeysCmd())
	return cmd
}

func newTenantListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List every tenant with its workers and quotas",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ Tenants []shownTenant }
			if err := gql(cmd.Context(), c, `{ tenants { `+tenantFields+` } }`, nil, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.Tenants)
			}
			var b strings.Builder
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tWORKERS\tMAX CLUSTERS\tMAX NODES\tDESCRIPTION")
			for _, t := range out.Tenants {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.Name, t.Workers, limit(t.MaxClusters), limit(t.MaxNodes), t.Description)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return writeTrimmed(cmd.OutOrStdout(), b.String())
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

// limit prints a quota: a number, or "-" for none.
func limit(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func newTenantCreateCmd() *cobra.Command {
	var api apiFlags
	var description, output string
	var workers, maxClusters, maxNodes int
	var bootstrap bool
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Make a tenant with its admin user",
		Long: `create makes a tenant and its admin user. --bootstrap copies the superadmin
tenant's catalog into it. Make its admin a token with
coopr token create --tenant NAME (over the API, as the superadmin).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			in := map[string]any{"name": args[0], "workers": workers}
			if description != "" {
				in["description"] = description
			}
			if cmd.Flags().Changed("max-clusters") {
				in["maxClusters"] = maxClusters
			}
			if cmd.Flags().Changed("max-nodes") {
				in["maxNodes"] = maxNodes
			}
			var out struct{ CreateTenant shownTenant }
			if err := gql(cmd.Context(), c, `mutation($in: TenantInput!, $b: Boolean) { createTenant(input: $in, bootstrap: $b) { `+tenantFields+` } }`,
				map[string]any{"in": in, "b": bootstrap}, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.CreateTenant)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s created (id %s, %d workers)\n", out.CreateTenant.Name, out.CreateTenant.ID, out.CreateTenant.Workers)
			return nil
		},
	}
	api.register(cmd)
	cmd.Flags().StringVar(&description, "description", "", "what the tenant is")
	cmd.Flags().IntVar(&workers, "workers", 0, "task slots: how many of its tasks may run at once")
	cmd.Flags().IntVar(&maxClusters, "max-clusters", 0, "quota of clusters not TERMINATED (default: none)")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 0, "quota of nodes (default: none)")
	cmd.Flags().BoolVar(&bootstrap, "bootstrap", false, "copy the superadmin tenant's catalog")
	outputFlag(cmd, &output)
	return cmd
}

func newTenantUpdateCmd() *cobra.Command {
	var api apiFlags
	var description, output string
	var workers, maxClusters, maxNodes int
	cmd := &cobra.Command{
		Use:   "update NAME [--workers N] [--max-clusters N] [--max-nodes N] [--description TEXT]",
		Short: "Change a tenant's workers, quotas or description; -1 removes a quota",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			in := map[string]any{"name": args[0]}
			for _, f := range []struct {
				flag, key string
				val       any
			}{{"description", "description", description}, {"workers", "workers", workers},
				{"max-clusters", "maxClusters", maxClusters}, {"max-nodes", "maxNodes", maxNodes}} {
				if cmd.Flags().Changed(f.flag) {
					in[f.key] = f.val
				}
			}
			if len(in) == 1 {
				return errors.New("nothing to change: give --workers, --max-clusters, --max-nodes or --description")
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ UpdateTenant shownTenant }
			if err := gql(cmd.Context(), c, `mutation($n: String!, $in: TenantInput!) { updateTenant(name: $n, input: $in) { `+tenantFields+` } }`,
				map[string]any{"n": args[0], "in": in}, &out); err != nil {
				return err
			}
			t := out.UpdateTenant
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), t)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s: %d workers, max clusters %s, max nodes %s\n", t.Name, t.Workers, limit(t.MaxClusters), limit(t.MaxNodes))
			return nil
		},
	}
	api.register(cmd)
	cmd.Flags().StringVar(&description, "description", "", "what the tenant is")
	cmd.Flags().IntVar(&workers, "workers", 0, "task slots: how many of its tasks may run at once (0 stops its work; then it can be deleted)")
	cmd.Flags().IntVar(&maxClusters, "max-clusters", 0, "quota of clusters not TERMINATED; -1 removes it")
	cmd.Flags().IntVar(&maxNodes, "max-nodes", 0, "quota of nodes; -1 removes it")
	outputFlag(cmd, &output)
	return cmd
}

func newTenantDeleteCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a tenant that has no workers",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			if err := gql(cmd.Context(), c, `mutation($n: String!) { deleteTenant(name: $n) }`, map[string]any{"n": args[0]}, &struct{}{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s deleted\n", args[0])
			return nil
		},
	}
	api.register(cmd)
	return cmd
}

type shownUser struct {
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
}

func newUserCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "List and add the users of your tenant (tenant admins)"}

	var listAPI apiFlags
	var listOutput string
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the users of your tenant",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(listOutput); err != nil {
				return err
			}
			c, err := listAPI.client()
			if err != nil {
				return err
			}
			var out struct{ Users []shownUser }
			if err := gql(cmd.Context(), c, `{ users { name role createdAt } }`, nil, &out); err != nil {
				return err
			}
			if listOutput == "json" {
				return writeJSON(cmd.OutOrStdout(), out.Users)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE")
			for _, u := range out.Users {
				fmt.Fprintf(tw, "%s\t%s\n", u.Name, u.Role)
			}
			return tw.Flush()
		},
	}
	listAPI.register(list)
	outputFlag(list, &listOutput)

	var api apiFlags
	var role, tenant, output string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Add a user; coopr token create --user NAME then gives them a token",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			r := strings.ToUpper(role)
			if r != "USER" && r != "ADMIN" {
				return fmt.Errorf("--role %q: use user or admin", role)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			vars := map[string]any{"n": args[0], "r": r}
			if tenant != "" {
				vars["t"] = tenant
			}
			var out struct{ CreateUser shownUser }
			if err := gql(cmd.Context(), c, `mutation($n: String!, $r: Role!, $t: String) { createUser(name: $n, role: $r, tenant: $t) { name role createdAt } }`,
				vars, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.CreateUser)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s created (%s)\n", out.CreateUser.Name, out.CreateUser.Role)
			return nil
		},
	}
	api.register(create)
	create.Flags().StringVar(&role, "role", "user", "user or admin (a tenant admin)")
	create.Flags().StringVar(&tenant, "tenant", "", "superadmin: add the user to this tenant")
	outputFlag(create, &output)
	cmd.AddCommand(list, create)
	return cmd
}

type shownAgent struct {
	ID           string          `json:"id"`
	Version      string          `json:"version"`
	Host         string          `json:"host"`
	Capacity     int             `json:"capacity"`
	Drivers      json.RawMessage `json:"drivers"`
	RegisteredAt time.Time       `json:"registeredAt"`
	LastSeen     time.Time       `json:"lastSeen"`
	Slots        []struct {
		TenantID string `json:"tenantId"`
		Slots    int    `json:"slots"`
	} `json:"slots"`
}

// newAgentListCmd lists the registered agents; it is a subcommand of
// coopr agent, which runs one.
func newAgentListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the registered agents and their slots (superadmin)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ Agents []shownAgent }
			if err := gql(cmd.Context(), c, `{ agents { id version host capacity drivers registeredAt lastSeen slots { tenantId slots } } }`, nil, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.Agents)
			}
			if len(out.Agents) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no agents registered")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tHOST\tVERSION\tCAPACITY\tSLOTS\tLAST SEEN")
			for _, a := range out.Agents {
				slots := make([]string, len(a.Slots))
				for i, s := range a.Slots {
					slots[i] = fmt.Sprintf("%d for tenant %s", s.Slots, s.TenantID)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", a.ID, a.Host, a.Version, a.Capacity, strings.Join(slots, ", "),
					a.LastSeen.Local().Format(time.DateTime))
			}
			return tw.Flush()
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

type shownAudit struct {
	ID        string          `json:"id"`
	At        time.Time       `json:"at"`
	Tenant    string          `json:"tenant"`
	User      string          `json:"user"`
	TokenID   *string         `json:"tokenId"`
	Address   string          `json:"address"`
	Operation string          `json:"operation"`
	Args      json.RawMessage `json:"args"`
	Outcome   string          `json:"outcome"`
	Message   string          `json:"message"`
}

func newAuditCmd() *cobra.Command {
	var api apiFlags
	var tenant, user, operation, since, until, before, output string
	var failed bool
	var first int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read the audit log, newest first (tenant admins; the superadmin sees every tenant's)",
		Long: `audit prints the mutations the audit log recorded (docs/audit.md), newest
first: who, from where, what and how it ended. --failed lists only refusals
and failures. --since and --until take an RFC 3339 time or a duration back
from now (24h). For the next page, pass the last id printed as --before.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			vars := map[string]any{"first": first}
			for _, f := range []struct{ key, val string }{{"tenant", tenant}, {"user", user}, {"operation", operation}, {"before", before}} {
				if f.val != "" {
					vars[f.key] = f.val
				}
			}
			for _, f := range []struct{ key, val string }{{"since", since}, {"until", until}} {
				if f.val == "" {
					continue
				}
				t, err := timeOrAgo(f.val, time.Now())
				if err != nil {
					return fmt.Errorf("--%s: %w", f.key, err)
				}
				vars[f.key] = t.UTC().Format(time.RFC3339Nano)
			}
			if cmd.Flags().Changed("failed") {
				vars["failed"] = failed
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ AuditLog []shownAudit }
			if err := gql(cmd.Context(), c, `query($first: Int, $before: ID, $tenant: String, $user: String, $operation: String,
				$failed: Boolean, $since: Time, $until: Time) { auditLog(first: $first, before: $before, tenant: $tenant, user: $user,
				operation: $operation, failed: $failed, since: $since, until: $until) {
				id at tenant user tokenId address operation args outcome message } }`, vars, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.AuditLog)
			}
			return writeAudit(cmd.OutOrStdout(), out.AuditLog)
		},
	}
	api.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", "", "superadmin: only this tenant's entries")
	cmd.Flags().StringVar(&user, "user", "", "only this user's calls")
	cmd.Flags().StringVar(&operation, "operation", "", "only this mutation, e.g. createCluster")
	cmd.Flags().BoolVar(&failed, "failed", false, "only refusals and failures (--failed=false: only successes)")
	cmd.Flags().StringVar(&since, "since", "", "entries from this time on: RFC 3339, or a duration back from now (24h)")
	cmd.Flags().StringVar(&until, "until", "", "entries up to this time: RFC 3339, or a duration back from now")
	cmd.Flags().StringVar(&before, "before", "", "entries older than this id (the last of the previous page)")
	cmd.Flags().IntVar(&first, "first", 50, "how many entries")
	outputFlag(cmd, &output)
	return cmd
}

// timeOrAgo reads an RFC 3339 time, or a duration back from now.
func timeOrAgo(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-11-24T08:00:00Z) or a duration back from now (24h)", s)
	}
	return now.Add(-d), nil
}

func writeAudit(w io.Writer, entries []shownAudit) error {
	if len(entries) == 0 {
		fmt.Fprintln(w, "no audit entries match")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAT\tTENANT\tUSER\tOPERATION\tARGS\tOUTCOME")
	for _, e := range entries {
		outcome := e.Outcome
		if e.Message != "" {
			outcome += ": " + e.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.At.Local().Format(time.DateTime), e.Tenant, e.User, e.Operation,
			compactJSON(e.Args), outcome)
	}
	return tw.Flush()
}

// compactJSON prints raw JSON on one line; {} and null as "-".
func compactJSON(b json.RawMessage) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	if m, ok := v.(map[string]any); v == nil || ok && len(m) == 0 {
		return "-"
	}
	return jsonText(v)
}

func newWhoamiCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Say who the token acts as: user, role and tenant",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				Me struct {
					User       string      `json:"user"`
					Role       *string     `json:"role"`
					Superadmin bool        `json:"superadmin"`
					Tenant     shownTenant `json:"tenant"`
				}
			}
			if err := gql(cmd.Context(), c, `{ me { user role superadmin tenant { `+tenantFields+` } } }`, nil, &out); err != nil {
				return err
			}
			m := out.Me
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), m)
			}
			who := "an agent token"
			if m.User != "" {
				who = "user " + m.User
			}
			role := ""
			switch {
			case m.Superadmin:
				role = " (superadmin)"
			case m.Role != nil:
				role = " (" + strings.ToLower(*m.Role) + ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s%s of tenant %s at %s\n", who, role, m.Tenant.Name, c.URL)
			return nil
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}
