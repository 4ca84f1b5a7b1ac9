package main

import (
	"fmt"
	"io"

	"github.com/cooprhq/coopr/catalog"
	"github.com/spf13/cobra"
)

func newCatalogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Validate, import, export, list, show and edit catalogs in Coopr's JSON layout",
	}
	cmd.AddCommand(newCatalogValidateCmd(), newCatalogBundleCmd())
	addDatabaseCatalogCmds(cmd)
	addAPICatalogCmds(cmd)
	return cmd
}

// printIssues writes every issue, errors first, and a one-line summary.
func printIssues(w io.Writer, issues catalog.Issues, c *catalog.Catalog) {
	for _, i := range issues.Errors() {
		fmt.Fprintln(w, i)
	}
	for _, i := range issues.Warnings() {
		fmt.Fprintln(w, i)
	}
	n := 0
	if c != nil {
		n = c.Len()
	}
	fmt.Fprintf(w, "%d entities, %d errors, %d warnings\n", n, len(issues.Errors()), len(issues.Warnings()))
}

func newCatalogValidateCmd() *cobra.Command {
	var strict bool
	cmd := &cobra.Command{
		Use:   "validate DIR|FILE",
		Short: "Check a catalog without a server or database",
		Long: `Validate reads a catalog directory (Coopr's layout: providers/, hardwaretypes/,
imagetypes/, services/, clustertemplates/, partialtemplates/, providertypes/,
automatortypes/) or one file, and prints every error and warning with its file
and JSON path. It exits 1 when there is an error (or, with --strict, a warning).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, issues, err := catalog.LoadPath(args[0])
			if err != nil {
				return err
			}
			printIssues(cmd.OutOrStdout(), issues, c)
			if issues.HasErrors() || (strict && len(issues) > 0) {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	return cmd
}

func newCatalogBundleCmd() *cobra.Command {
	var only string
	cmd := &cobra.Command{
		Use:   "bundle DIR|FILE",
		Short: "Print a catalog as one JSON document, as importCatalog takes it",
		Long: `Bundle prints a catalog as one JSON document, as importCatalog takes it.
Provider and automator types are shared by every tenant and only the
superadmin imports them: --only shared prints just those, --only tenant
everything else (what a tenant admin imports).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var keep func(catalog.Kind) bool
			switch only {
			case "":
				keep = func(catalog.Kind) bool { return true }
			case "shared":
				keep = catalog.Kind.Shared
			case "tenant":
				keep = func(k catalog.Kind) bool { return !k.Shared() }
			default:
				return fmt.Errorf("--only %q: use shared (the provider and automator types) or tenant (everything else)", only)
			}
			c, issues, err := catalog.LoadPath(args[0])
			if err != nil {
				return err
			}
			if issues.HasErrors() {
				printIssues(cmd.ErrOrStderr(), issues, c)
				return exitCode(1)
			}
			part := catalog.New()
			for _, k := range catalog.Kinds {
				if keep(k) {
					for _, e := range c.Entities(k) {
						part.Put(e)
					}
				}
			}
			b, err := part.Bundle()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(append(b, '\n'))
			return err
		},
	}
	cmd.Flags().StringVar(&only, "only", "", "print only the shared kinds (shared) or only the tenant's (tenant)")
	return cmd
}
