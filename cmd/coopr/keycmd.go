package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

func newKeyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Keep SSH public keys on your profile, to log in to the nodes of your clusters",
		Long: `BOOTSTRAP installs the SSH public keys on a cluster owner's profile into
the authorized_keys of the nodes' SSH user, so that the owner can log in with
coopr ssh CLUSTER (docs/operations.md#host-keys-and-logging-in). Nodes take
keys added later when they are bootstrapped again.`,
	}
	cmd.AddCommand(newKeyAddCmd(), newKeyListCmd(), newKeyRemoveCmd())
	return cmd
}

type shownSSHKey struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Fingerprint string    `json:"fingerprint"`
	CreatedAt   time.Time `json:"createdAt"`
}

const sshKeyFields = `id name type fingerprint createdAt`

func newKeyAddCmd() *cobra.Command {
	var api apiFlags
	var name, output string
	cmd := &cobra.Command{
		Use:   "add FILE|-",
		Short: "Add a public key (a .pub file, or - for standard input) to your profile",
		Example: `  coopr key add ~/.ssh/id_ed25519.pub
  ssh-add -L | head -1 | coopr key add - --name laptop`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			var data []byte
			var err error
			if args[0] == "-" {
				data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10))
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return fmt.Errorf("read the public key: %w", err)
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			vars := map[string]any{"key": string(data)}
			if name != "" {
				vars["name"] = name
			}
			var out struct{ AddSSHKey shownSSHKey }
			if err := gql(cmd.Context(), c, `mutation($key: String!, $name: String) { addSSHKey(publicKey: $key, name: $name) { `+sshKeyFields+` } }`,
				vars, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(w, out.AddSSHKey)
			}
			fmt.Fprintf(w, "key %s added (%s %s)\n", out.AddSSHKey.ID, out.AddSSHKey.Type, out.AddSSHKey.Fingerprint)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "what the key is, shown in listings (default: the key's comment)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	api.register(cmd)
	return cmd
}

func newKeyListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the SSH keys on your profile",
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
				Me struct{ SSHKeys []shownSSHKey }
			}
			if err := gql(cmd.Context(), c, `{ me { sshKeys { `+sshKeyFields+` } } }`, nil, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(w, out.Me.SSHKeys)
			}
			return writeSSHKeys(w, out.Me.SSHKeys)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	api.register(cmd)
	return cmd
}

func writeSSHKeys(w io.Writer, keys []shownSSHKey) error {
	if len(keys) == 0 {
		fmt.Fprintln(w, "no SSH keys (coopr key add ~/.ssh/id_ed25519.pub adds one)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tTYPE\tFINGERPRINT\tADDED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Type, k.Fingerprint, k.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func newKeyRemoveCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "remove ID",
		Short: "Take an SSH key off your profile (nodes keep it until bootstrapped again)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			if err := gql(cmd.Context(), c, `mutation($id: ID!) { removeSSHKey(id: $id) }`, map[string]any{"id": args[0]}, &struct{}{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "key %s removed\n", args[0])
			return nil
		},
	}
	api.register(cmd)
	return cmd
}
