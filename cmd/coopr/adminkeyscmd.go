package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newTenantAdminKeysCmd turns the caller's tenant's adminSSHKeys setting
// on or off (docs/operations.md#keys-on-live-clusters).
func newTenantAdminKeysCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "admin-keys on|off",
		Short: "Let your tenant's admins' SSH keys in on every cluster of the tenant, or stop (tenant admins)",
		Long: `admin-keys on lets the SSH keys of your tenant's admins in on the nodes
of every cluster of the tenant, beside the owner's; off takes them out
again. Either starts an UPDATE_SSH_KEYS job on every ACTIVE cluster of the
tenant, which brings the change to the nodes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var on bool
			switch strings.ToLower(args[0]) {
			case "on":
				on = true
			case "off":
			default:
				return fmt.Errorf("admin-keys takes on or off, not %q", args[0])
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				SetTenantAdminSSHKeys struct {
					Name         string
					AdminSSHKeys bool
				}
			}
			if err := gql(cmd.Context(), c, `mutation($on: Boolean!) { setTenantAdminSSHKeys(enabled: $on) { name adminSSHKeys } }`,
				map[string]any{"on": on}, &out); err != nil {
				return err
			}
			state := "no longer let in"
			if out.SetTenantAdminSSHKeys.AdminSSHKeys {
				state = "let in"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "tenant %s: admins' SSH keys are %s on every cluster; ACTIVE clusters are updating\n",
				out.SetTenantAdminSSHKeys.Name, state)
			return nil
		},
	}
	api.register(cmd)
	return cmd
}
