package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// given says a database was named, by flag or environment: token create
// then makes the token straight in it.
func (d *dbFlags) given() bool { return d.url != "" || os.Getenv("COOPR_DATABASE_URL") != "" }

// changed is a flag's value when the user set it, else "".
func changed(cmd *cobra.Command, flag, v string) string {
	if cmd.Flags().Changed(flag) {
		return v
	}
	return ""
}

type tokenRequest struct {
	name, user, tenant, agentID, output string
	agent                               bool
}

// shownToken is an API token as token list prints it; its JSON keys are
// the API's.
type shownToken struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Kind       string     `json:"kind"`
	User       *string    `json:"user"`
	Agents     *string    `json:"agents"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
}

const tokenFields = `id name kind user agents createdAt lastUsedAt revokedAt`

// createTokenByAPI makes a token with createAPIToken and prints its
// secret: alone, so that it can be captured, or with the token as JSON.
func createTokenByAPI(cmd *cobra.Command, api *apiFlags, r tokenRequest) error {
	if err := checkOutput(r.output); err != nil {
		return err
	}
	c, err := api.client()
	if err != nil {
		return err
	}
	in := map[string]any{"name": r.name, "kind": "USER"}
	if r.agent {
		in["kind"], in["agents"] = "AGENT", r.agentID
	}
	if r.user != "" {
		in["user"] = r.user
	}
	if r.tenant != "" {
		in["tenant"] = r.tenant
	}
	var out struct {
		CreateAPIToken struct {
			Token  shownToken `json:"token"`
			Secret string     `json:"secret"`
		}
	}
	if err := gql(cmd.Context(), c, `mutation($in: APITokenInput!) { createAPIToken(input: $in) { token { `+tokenFields+` } secret } }`,
		map[string]any{"in": in}, &out); err != nil {
		return err
	}
	if r.output == "json" {
		return writeJSON(cmd.OutOrStdout(), out.CreateAPIToken)
	}
	fmt.Fprintln(cmd.OutOrStdout(), out.CreateAPIToken.Secret)
	return nil
}

func newTokenListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List API tokens: your own, or all of the tenant's for admins (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ APITokens []shownToken }
			if err := gql(cmd.Context(), c, `{ apiTokens { `+tokenFields+` } }`, nil, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.APITokens)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tKIND\tFOR\tLAST USED\tREVOKED")
			for _, t := range out.APITokens {
				who := "-"
				if t.User != nil {
					who = *t.User
				} else if t.Agents != nil {
					who = "agents " + *t.Agents
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Kind, who, stamp(t.LastUsedAt), stamp(t.RevokedAt))
			}
			return tw.Flush()
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

// stamp prints an optional time, "-" when absent.
func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(time.DateTime)
}

func newTokenRevokeCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token: your own, or any of the tenant's for admins",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			if err := gql(cmd.Context(), c, `mutation($id: ID!) { revokeAPIToken(id: $id) }`, map[string]any{"id": args[0]}, &struct{}{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "token %s revoked\n", args[0])
			return nil
		},
	}
	api.register(cmd)
	return cmd
}
