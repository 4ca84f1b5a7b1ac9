package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/store"
	"github.com/spf13/cobra"
)

func addDatabaseCatalogCmds(cmd *cobra.Command) {
	cmd.AddCommand(newCatalogImportCmd(), newCatalogExportCmd())
}

// dbFlags locate the database: --database-url, else $COOPR_DATABASE_URL.
type dbFlags struct {
	url string
}

func (d *dbFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.url, "database-url", "", "Postgres URL (default $COOPR_DATABASE_URL)")
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
	s, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func newCatalogImportCmd() *cobra.Command {
	var db dbFlags
	var tenant string
	cmd := &cobra.Command{
		Use:   "import DIR|FILE",
		Short: "Replace a tenant's catalog with the one in DIR or FILE",
		Long: `Import validates the catalog and, only if it has no error, replaces the
tenant's catalog with it in one transaction. Provider and automator types are
shared by all tenants.`,
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
	cmd.Flags().StringVar(&tenant, "tenant", store.SuperadminTenant, "tenant whose catalog to replace")
	return cmd
}

func newCatalogExportCmd() *cobra.Command {
	var db dbFlags
	var tenant string
	cmd := &cobra.Command{
		Use:   "export DIR",
		Short: "Write a tenant's catalog to DIR in Coopr's layout",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
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
	cmd.Flags().StringVar(&tenant, "tenant", store.SuperadminTenant, "tenant whose catalog to export")
	return cmd
}
