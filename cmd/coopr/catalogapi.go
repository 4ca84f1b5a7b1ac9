package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/catalog"
)

// addAPICatalogCmds adds the catalog commands that work on the caller's
// tenant through the API: list, show, put and delete.
func addAPICatalogCmds(cmd *cobra.Command) {
	cmd.AddCommand(newCatalogListCmd(), newCatalogShowCmd(), newCatalogPutCmd(), newCatalogDeleteCmd())
}

// catalogKindHelp names the kinds a KIND argument takes.
var catalogKindHelp = func() string {
	names := make([]string, len(catalog.Kinds))
	for i, k := range catalog.Kinds {
		names[i] = string(k)
	}
	return "KIND is one of " + strings.Join(names, ", ") + "."
}()

// apiKind turns services (or SERVICES) into the API's SERVICES.
func apiKind(s string) (string, error) {
	k, ok := catalog.ParseKind(strings.ToLower(s))
	if !ok {
		return "", fmt.Errorf("catalog kind %q: %s", s, catalogKindHelp)
	}
	return apiKindName(k), nil
}

// apiKindName is the API's name of a kind: SERVICES for services.
func apiKindName(k catalog.Kind) string { return strings.ToUpper(string(k)) }

// shownEntity is a catalog entity as the API gives it.
type shownEntity struct {
	Kind     string          `json:"kind"`
	Name     string          `json:"name"`
	Version  int             `json:"version"`
	Versions []int           `json:"versions"`
	Document json.RawMessage `json:"document,omitempty"`
}

type shownIssue struct {
	Path     string `json:"path"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
}

func newCatalogListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:     "list KIND",
		Aliases: []string{"ls"},
		Short:   "List your tenant's entities of a kind with their versions (through the API)",
		Long:    "list prints the newest version of every entity of a kind in your tenant's catalog.\n\n" + catalogKindHelp,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			kind, err := apiKind(args[0])
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				Catalog struct{ Entities []shownEntity }
			}
			if err := gql(cmd.Context(), c, `query($k: CatalogKind!) { catalog { entities(kind: $k) { kind name version versions } } }`,
				map[string]any{"k": kind}, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.Catalog.Entities)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tVERSIONS")
			for _, e := range out.Catalog.Entities {
				vs := make([]string, len(e.Versions))
				for i, v := range e.Versions {
					vs[i] = fmt.Sprint(v)
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\n", e.Name, e.Version, strings.Join(vs, ","))
			}
			return tw.Flush()
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func newCatalogShowCmd() *cobra.Command {
	var api apiFlags
	var output string
	var version int
	cmd := &cobra.Command{
		Use:   "show KIND NAME",
		Short: "Print an entity of your tenant's catalog as Coopr JSON (through the API)",
		Long: `show prints an entity's document, the newest version unless --version says
which; the output is what catalog put takes back. With -o json it prints the
entity with its kind, name, version and versions around the document.

` + catalogKindHelp,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			kind, err := apiKind(args[0])
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			vars := map[string]any{"k": kind, "n": args[1]}
			if cmd.Flags().Changed("version") {
				vars["v"] = version
			}
			var out struct{ Catalog struct{ Entity *shownEntity } }
			if err := gql(cmd.Context(), c, `query($k: CatalogKind!, $n: String!, $v: Int) { catalog { entity(kind: $k, name: $n, version: $v) {
				kind name version versions document } } }`, vars, &out); err != nil {
				return err
			}
			e := out.Catalog.Entity
			if e == nil {
				return notFound("%s %s: not found (coopr catalog list %s lists them)", strings.ToLower(kind), args[1], strings.ToLower(kind))
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), e)
			}
			return writeJSON(cmd.OutOrStdout(), e.Document)
		},
	}
	api.register(cmd)
	cmd.Flags().IntVar(&version, "version", 0, "this version instead of the newest")
	outputFlag(cmd, &output)
	return cmd
}

func newCatalogPutCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   "put KIND FILE",
		Short: "Store an entity in your tenant's catalog: a new one, or a new version (tenant admins, through the API)",
		Long:  "put stores the entity in FILE (Coopr JSON, as catalog show prints it) as version 1 of a new entity or the next version of one.\n\n" + catalogKindHelp,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			kind, err := apiKind(args[0])
			if err != nil {
				return err
			}
			doc, err := readJSONObject(args[1])
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				PutCatalogEntity struct {
					Entity   shownEntity  `json:"entity"`
					Warnings []shownIssue `json:"warnings"`
				}
			}
			if err := gql(cmd.Context(), c, `mutation($k: CatalogKind!, $e: JSON!) { putCatalogEntity(kind: $k, entity: $e) {
				entity { kind name version versions } warnings { path message severity } } }`, map[string]any{"k": kind, "e": doc}, &out); err != nil {
				return err
			}
			r := out.PutCatalogEntity
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stored %s %s version %d\n", strings.ToLower(r.Entity.Kind), r.Entity.Name, r.Entity.Version)
			writeIssues(cmd.ErrOrStderr(), r.Warnings)
			return nil
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func writeIssues(w io.Writer, issues []shownIssue) {
	for _, i := range issues {
		fmt.Fprintf(w, "%s: %s: %s\n", strings.ToLower(i.Severity), i.Path, i.Message)
	}
}

func newCatalogDeleteCmd() *cobra.Command {
	var api apiFlags
	var version int
	cmd := &cobra.Command{
		Use:   "delete KIND NAME",
		Short: "Delete an entity, or one version of it, from your tenant's catalog (tenant admins, through the API)",
		Long:  "delete removes every version of the entity, or only --version.\n\n" + catalogKindHelp,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := apiKind(args[0])
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			vars := map[string]any{"k": kind, "n": args[1]}
			what := "every version"
			if cmd.Flags().Changed("version") {
				vars["v"] = version
				what = fmt.Sprintf("version %d", version)
			}
			var out struct{ DeleteCatalogEntity bool }
			if err := gql(cmd.Context(), c, `mutation($k: CatalogKind!, $n: String!, $v: Int) { deleteCatalogEntity(kind: $k, name: $n, version: $v) }`,
				vars, &out); err != nil {
				return err
			}
			if !out.DeleteCatalogEntity {
				return notFound("%s %s: not found (coopr catalog list %s lists them)", strings.ToLower(kind), args[1], strings.ToLower(kind))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s of %s %s\n", what, strings.ToLower(kind), args[1])
			return nil
		},
	}
	api.register(cmd)
	cmd.Flags().IntVar(&version, "version", 0, "delete only this version")
	return cmd
}

// exportByAPI writes the caller's tenant's catalog, as the API exports
// it, to dir in Coopr's layout.
func exportByAPI(cmd *cobra.Command, api *apiFlags, dir string) error {
	c, err := api.client()
	if err != nil {
		return fmt.Errorf("no database to work on (--database-url or $COOPR_DATABASE_URL), so through the API: %w", err)
	}
	var out struct {
		Catalog struct{ Export json.RawMessage }
	}
	if err := gql(cmd.Context(), c, `{ catalog { export } }`, nil, &out); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "coopr-export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bundle := filepath.Join(tmp, "catalog.json")
	if err := os.WriteFile(bundle, out.Catalog.Export, 0o600); err != nil {
		return err
	}
	cat, _, err := catalog.LoadPath(bundle)
	if err != nil {
		return err
	}
	if err := cat.Export(dir); err != nil {
		return err
	}
	cmd.Printf("exported %d entities of your tenant to %s\n", cat.Len(), dir)
	return nil
}

// importByAPI replaces the caller's tenant's catalog with c through the
// API.
func importByAPI(cmd *cobra.Command, api *apiFlags, c *catalog.Catalog) error {
	cl, err := api.client()
	if err != nil {
		return fmt.Errorf("no database to work on (--database-url or $COOPR_DATABASE_URL), so through the API: %w", err)
	}
	b, err := c.Bundle()
	if err != nil {
		return err
	}
	var out struct {
		ImportCatalog struct {
			Created, Updated, Unchanged, Deleted int
			Warnings                             []shownIssue
		}
	}
	if err := gql(cmd.Context(), cl, `mutation($d: JSON!) { importCatalog(document: $d) { created updated unchanged deleted
		warnings { path message severity } } }`, map[string]any{"d": json.RawMessage(b)}, &out); err != nil {
		return err
	}
	r := out.ImportCatalog
	writeIssues(cmd.ErrOrStderr(), r.Warnings)
	cmd.Printf("imported %d entities into your tenant: %d created, %d updated, %d unchanged, %d deleted\n",
		c.Len(), r.Created, r.Updated, r.Unchanged, r.Deleted)
	return nil
}
