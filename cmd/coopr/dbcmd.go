package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/store"
	"github.com/spf13/cobra"
)

func addDatabaseCatalogCmds(cmd *cobra.Command) {
	cmd.AddCommand(newCatalogImportCmd(), newCatalogExportCmd())
}

// dbFlags locate the database: --database-url, else $COOPR_DATABASE_URL;
// and the credential key that seals providers' sensitive values, from
// $COOPR_CREDENTIAL_KEY or --credential-key-file as the server takes it
// (never a flag's value: command lines are visible to every local user).
type dbFlags struct {
	url, keyFile string
}

func (d *dbFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.url, "database-url", "", "Postgres URL (default $COOPR_DATABASE_URL)")
}

// registerKey adds --credential-key-file, for commands that write sensitive
// values.
func (d *dbFlags) registerKey(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.keyFile, "credential-key-file", "",
		"file holding the server's credential key, to store providers' sensitive fields (default $COOPR_CREDENTIAL_KEY)")
}

// credentialKey is the key of --credential-key-file, else of the
// environment, else "".
func (d *dbFlags) credentialKey() (string, error) {
	if d.keyFile == "" {
		return os.Getenv("COOPR_CREDENTIAL_KEY"), nil
	}
	b, err := os.ReadFile(d.keyFile)
	if err != nil {
		return "", fmt.Errorf("--credential-key-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// open connects and applies migrations, so every command sees the schema it
// was built for.
func (d *dbFlags) open(ctx context.Context) (*store.Store, error) {
	url := d.url
	if url == "" {
		url = os.Getenv("COOPR_DATABASE_URL")
	}
	if url == "" {
		return nil, fmt.Errorf("no database: set COOPR_DATABASE_URL or pass --database-url postgres://USER@HOST:5432/DB?sslmode=disable")
	}
	key, err := d.credentialKey()
	if err != nil {
		return nil, err
	}
	creds, err := credentials.New(key)
	if err != nil {
		return nil, err
	}
	s, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	s.SetSealer(creds)
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func newCatalogImportCmd() *cobra.Command {
	var db dbFlags
	var api apiFlags
	var tenant string
	cmd := &cobra.Command{
		Use:   "import DIR|FILE",
		Short: "Replace a tenant's catalog with the one in DIR or FILE",
		Long: `Import validates the catalog and, only if it has no error, replaces the
tenant's catalog with it in one transaction. Provider and automator types are
shared by all tenants. Providers' sensitive fields (those their provider type
marks sensitive) are stored sealed under the server's credential key, which
this command then needs too: $COOPR_CREDENTIAL_KEY or --credential-key-file.

Without a database (--database-url or $COOPR_DATABASE_URL) it imports
through the API instead (importCatalog), into the caller's tenant: the
server seals the sensitive fields, and only the superadmin may import
provider and automator types.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, issues, err := catalog.LoadPath(args[0])
			if err != nil {
				return err
			}
			if issues.HasErrors() {
				printIssues(cmd.ErrOrStderr(), issues, c)
				fmt.Fprintln(cmd.ErrOrStderr(), "nothing was imported")
				return exitCode(1)
			}
			for _, i := range issues.Warnings() {
				fmt.Fprintln(cmd.ErrOrStderr(), i)
			}
			if !db.given() {
				return importByAPI(cmd, &api, c)
			}
			s, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if _, err := s.EnsureTenant(cmd.Context(), tenant); err != nil {
				return err
			}
			res, err := s.ImportCatalog(cmd.Context(), tenant, c)
			if err != nil {
				return err
			}
			cmd.Printf("imported %d entities into tenant %s: %d created, %d updated, %d unchanged, %d deleted\n",
				c.Len(), tenant, res.Created, res.Updated, res.Unchanged, res.Deleted)
			return nil
		},
	}
	db.register(cmd)
	db.registerKey(cmd)
	api.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", store.SuperadminTenant, "with a database: tenant whose catalog to replace")
	return cmd
}

func newCatalogExportCmd() *cobra.Command {
	var db dbFlags
	var api apiFlags
	var tenant string
	cmd := &cobra.Command{
		Use:   "export DIR",
		Short: "Write a tenant's catalog to DIR in Coopr's layout",
		Long: `export writes a tenant's catalog to DIR, one file per entity. With a
database (--database-url or $COOPR_DATABASE_URL) it reads --tenant's there;
without one, the caller's tenant's through the API.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !db.given() {
				return exportByAPI(cmd, &api, args[0])
			}
			s, err := db.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			c, err := s.ExportCatalog(cmd.Context(), tenant)
			if err != nil {
				return err
			}
			if err := c.Export(args[0]); err != nil {
				return err
			}
			cmd.Printf("exported %d entities of tenant %s to %s\n", c.Len(), tenant, args[0])
			return nil
		},
	}
	db.register(cmd)
	api.register(cmd)
	cmd.Flags().StringVar(&tenant, "tenant", store.SuperadminTenant, "with a database: tenant whose catalog to export")
	return cmd
}
