package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newWebhookCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Tell HTTP endpoints of job and cluster state changes (tenant admins)",
		Long: `A webhook posts job and cluster state changes of your tenant to a URL,
signed with its secret (docs/webhooks.md). Events: job.started, job.succeeded,
job.failed, cluster.active, cluster.terminated.`,
	}
	cmd.AddCommand(newWebhookCreateCmd(), newWebhookListCmd(), newWebhookDeleteCmd(), newWebhookDeliveriesCmd())
	return cmd
}

// webhookEvent turns job.failed (or JOB_FAILED) into the API's JOB_FAILED.
func webhookEvent(s string) string { return strings.ToUpper(strings.ReplaceAll(s, ".", "_")) }

// eventName turns the API's JOB_FAILED into job.failed.
func eventName(s string) string { return strings.ToLower(strings.Replace(s, "_", ".", 1)) }

func newWebhookCreateCmd() *cobra.Command {
	var api apiFlags
	var events []string
	var template, secret, output string
	cmd := &cobra.Command{
		Use:   "create URL --events E[,E...]",
		Short: "Make a webhook; prints its signing secret, shown only this once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			in := map[string]any{"url": args[0], "events": []string{}}
			for _, e := range events {
				in["events"] = append(in["events"].([]string), webhookEvent(e))
			}
			if template != "" {
				in["template"] = template
			}
			if secret != "" {
				in["secret"] = secret
			}
			var out struct {
				CreateWebhook struct {
					Webhook shownWebhook `json:"webhook"`
					Secret  string       `json:"secret"`
				}
			}
			if err := gql(cmd.Context(), c, `mutation($in: WebhookInput!) { createWebhook(input: $in) {
				webhook { id url events template createdBy createdAt } secret } }`, map[string]any{"in": in}, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(w, out.CreateWebhook)
			}
			fmt.Fprintf(w, "webhook %s created\nsecret: %s\n(the secret signs every delivery; it is not shown again)\n",
				out.CreateWebhook.Webhook.ID, out.CreateWebhook.Secret)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&events, "events", nil, "events to post: job.started, job.succeeded, job.failed, cluster.active, cluster.terminated")
	cmd.Flags().StringVar(&template, "template", "", "only clusters of this template")
	cmd.Flags().StringVar(&secret, "secret", "", "signing secret, 16 to 256 characters (default: a random one)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	_ = cmd.MarkFlagRequired("events")
	api.register(cmd)
	return cmd
}

type shownWebhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Template  string    `json:"template"`
	CreatedBy string    `json:"createdBy"`
	CreatedAt time.Time `json:"createdAt"`
}

func newWebhookListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tenant's webhooks",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ Webhooks []shownWebhook }
			if err := gql(cmd.Context(), c, `{ webhooks { id url events template createdBy createdAt } }`, nil, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(w, out.Webhooks)
			}
			return writeWebhooks(w, out.Webhooks)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	api.register(cmd)
	return cmd
}

func writeWebhooks(w io.Writer, hooks []shownWebhook) error {
	if len(hooks) == 0 {
		fmt.Fprintln(w, "no webhooks (coopr webhook create URL --events ... makes one)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tURL\tEVENTS\tTEMPLATE\tCREATED BY")
	for _, h := range hooks {
		names := make([]string, len(h.Events))
		for i, e := range h.Events {
			names[i] = eventName(e)
		}
		tmpl := h.Template
		if tmpl == "" {
			tmpl = "(all)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.ID, h.URL, strings.Join(names, ","), tmpl, h.CreatedBy)
	}
	return tw.Flush()
}

func newWebhookDeleteCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Remove a webhook and its delivery history",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			if err := gql(cmd.Context(), c, `mutation($id: ID!) { deleteWebhook(id: $id) }`, map[string]any{"id": args[0]}, &struct{}{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "webhook %s deleted\n", args[0])
			return nil
		},
	}
	api.register(cmd)
	return cmd
}

type shownDelivery struct {
	ID          string     `json:"id"`
	Event       string     `json:"event"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAt      *time.Time `json:"nextAt"`
	LastStatus  *int       `json:"lastStatus"`
	LastError   string     `json:"lastError"`
	CreatedAt   time.Time  `json:"createdAt"`
	DeliveredAt *time.Time `json:"deliveredAt"`
}

func newWebhookDeliveriesCmd() *cobra.Command {
	var api apiFlags
	var output string
	var first int
	cmd := &cobra.Command{
		Use:   "deliveries ID",
		Short: "Show a webhook's deliveries, newest first: state, attempts, the endpoint's last answer",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				Webhook *struct{ Deliveries []shownDelivery }
			}
			if err := gql(cmd.Context(), c, `query($id: ID!, $n: Int) { webhook(id: $id) { deliveries(first: $n) {
				id event state attempts nextAt lastStatus lastError createdAt deliveredAt } } }`,
				map[string]any{"id": args[0], "n": first}, &out); err != nil {
				return err
			}
			if out.Webhook == nil {
				return notFound("webhook %s: not found (coopr webhook list shows the tenant's)", args[0])
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(w, out.Webhook.Deliveries)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CREATED\tEVENT\tSTATE\tATTEMPTS\tLAST ANSWER")
			for _, d := range out.Webhook.Deliveries {
				answer := d.LastError
				if d.LastStatus != nil && answer == "" {
					answer = fmt.Sprintf("HTTP %d", *d.LastStatus)
				}
				if d.State == "PENDING" && d.NextAt != nil {
					answer += fmt.Sprintf(" (next attempt %s)", d.NextAt.Local().Format(time.TimeOnly))
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", d.CreatedAt.Local().Format(time.DateTime), eventName(d.Event), d.State,
					d.Attempts, strings.TrimSpace(answer))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&first, "first", 20, "how many, newest first (at most 500)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	api.register(cmd)
	return cmd
}

func checkOutput(o string) error {
	if o != "json" && o != "table" {
		return fmt.Errorf("-o %q: use json or table", o)
	}
	return nil
}
