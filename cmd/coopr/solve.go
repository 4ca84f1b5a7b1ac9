package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/solver"
	"github.com/spf13/cobra"
)

type solveFlags struct {
	catalogDir, template, provider, hardwareType, imageType string
	services, addServices                                   []string
	size, maxSteps                                          int
	existing, output, name, clusterID                       string
}

func newSolveCmd() *cobra.Command {
	var f solveFlags
	cmd := &cobra.Command{
		Use:   "solve --catalog DIR --template NAME --size N",
		Short: "Solve a cluster layout offline from a catalog directory",
		Long: `Solve prints the node layout coopr would build for a template and size,
reading the catalog from a directory in Coopr's layout. With --existing it
changes a live layout instead: --add-services places new services on the
existing nodes, otherwise --size grows or shrinks it.

On failure it exits 1 and prints {"error":{"kind":...,"message":...}} (json)
or the explanation (table).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSolve(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.catalogDir, "catalog", "", "catalog directory (Coopr layout)")
	fl.StringVar(&f.template, "template", "", "cluster template name")
	fl.IntVar(&f.size, "size", 0, "number of nodes")
	fl.StringVar(&f.provider, "provider", "", "provider (default: the template's)")
	fl.StringVar(&f.hardwareType, "hardwaretype", "", "hardware type for every node (default: the template's, else chosen per layout)")
	fl.StringVar(&f.imageType, "imagetype", "", "image type for every node (default: the template's, else chosen per layout)")
	fl.StringSliceVar(&f.services, "services", nil, "cluster services (default: the template's)")
	fl.StringVar(&f.existing, "existing", "", `a live layout: a {"layout":[...]} document, such as this command's JSON output`)
	fl.StringSliceVar(&f.addServices, "add-services", nil, "services to add to the --existing layout")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: json or table")
	fl.StringVar(&f.name, "name", "", "cluster name used in hostnames (default: the template name)")
	fl.StringVar(&f.clusterID, "cluster-id", "00000001", "cluster id used in hostnames and node ids")
	fl.IntVar(&f.maxSteps, "max-steps", solver.DefaultMaxSteps, "search step budget")
	_ = cmd.MarkFlagRequired("catalog")
	_ = cmd.MarkFlagRequired("template")
	return cmd
}

// solveOutput is the JSON printed on success.
type solveOutput struct {
	Layout  []solver.LayoutEntry  `json:"layout"`
	Nodes   []solver.Node         `json:"nodes"`
	Changed []solver.NodeChange   `json:"changed,omitempty"`
	Added   []string              `json:"added,omitempty"`
	Removed []solver.ExistingNode `json:"removed,omitempty"`
}

type solveError struct {
	Kind    solver.Kind `json:"kind"`
	Message string      `json:"message"`
	Reasons []string    `json:"reasons,omitempty"`
}

func runSolve(w io.Writer, f solveFlags) error {
	if f.output != "json" && f.output != "table" {
		return fmt.Errorf("-o %q: use json or table", f.output)
	}
	out, err := solve(f)
	if err != nil {
		var se *solver.Error
		if !errors.As(err, &se) {
			se = &solver.Error{Kind: solver.KindInvalidCatalog, Message: err.Error()}
		}
		if f.output == "json" {
			_ = writeJSON(w, map[string]solveError{"error": {Kind: se.Kind, Message: se.Message, Reasons: se.Reasons}})
		} else {
			fmt.Fprintf(w, "cannot solve (%s):\n", se.Kind)
			lines := se.Reasons
			if len(lines) == 0 {
				lines = []string{se.Message}
			}
			for _, l := range lines {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
		return exitCode(1)
	}
	if f.output == "json" {
		return writeJSON(w, out)
	}
	return writeLayoutTable(w, out)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeLayoutTable(w io.Writer, out *solveOutput) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tNODES\tHARDWARE\tIMAGE\tSERVICES")
	total := 0
	for i, e := range out.Layout {
		total += e.Count
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", i+1, e.Count, e.HardwareType, e.ImageType, strings.Join(e.Services, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d nodes", total)
	if len(out.Nodes) > 0 {
		fmt.Fprintf(w, ", %s .. %s", out.Nodes[0].Hostname, out.Nodes[len(out.Nodes)-1].Hostname)
	}
	fmt.Fprintln(w)
	if len(out.Changed) > 0 {
		fmt.Fprintf(w, "%d nodes gain services\n", len(out.Changed))
	}
	if len(out.Added) > 0 {
		fmt.Fprintf(w, "new nodes: %s\n", strings.Join(out.Added, ", "))
	}
	for _, n := range out.Removed {
		fmt.Fprintf(w, "remove node %d (%s)\n", n.NodeNum, n.Hostname)
	}
	return nil
}

func solve(f solveFlags) (*solveOutput, error) {
	c, issues, err := catalog.LoadPath(f.catalogDir)
	if err != nil {
		return nil, err
	}
	templates, partials := c.ClusterTemplates(), c.PartialTemplates()
	if templates[f.template] == nil {
		msg := fmt.Sprintf("cluster template %s is not in %s", f.template, f.catalogDir)
		for _, i := range issues.Errors() {
			if strings.HasPrefix(i.File, "clustertemplates/"+f.template+".json") {
				msg += "\n" + i.String()
			}
		}
		return nil, &solver.Error{Kind: solver.KindInvalidCatalog, Message: msg}
	}
	t, err := catalog.Merge(f.template, templates, partials)
	if err != nil {
		return nil, &solver.Error{Kind: solver.KindInvalidCatalog, Message: err.Error()}
	}
	provider := f.provider
	if provider == "" {
		provider = t.Defaults.Provider
	}
	name := f.name
	if name == "" {
		name = f.template
	}
	cl := solver.Cluster{ID: f.clusterID, Name: name, DNSSuffix: t.Defaults.DNSSuffix}
	var he *solver.HostnameError
	if err := solver.CheckHostnames(cl, solver.FirstNodeNum); errors.As(err, &he) {
		if he.Field == "name" {
			he.Field = "--name"
		}
		return nil, &solver.Error{Kind: solver.KindInvalidInput, Message: he.Error()}
	}
	cat := solver.FromCatalog(c)
	if f.existing == "" {
		if len(f.addServices) > 0 {
			return nil, fmt.Errorf("--add-services needs --existing")
		}
		if f.size < 1 {
			// The solver would name its own field (numMachines).
			return nil, &solver.Error{Kind: solver.KindSizeConstraint,
				Message: fmt.Sprintf("--size must be at least 1 (got %d): give the number of nodes", f.size)}
		}
		sol, err := solver.Solve(solver.Request{Template: t, Catalog: cat, Provider: provider, HardwareType: f.hardwareType,
			ImageType: f.imageType, Services: f.services, Size: f.size, MaxSteps: f.maxSteps}, cl)
		if err != nil {
			return nil, err
		}
		return &solveOutput{Layout: sol.Layout, Nodes: sol.Nodes}, nil
	}
	nodes, err := readExisting(f.existing, f.clusterID, name, cl.DNSSuffix)
	if err != nil {
		return nil, err
	}
	var u *solver.Update
	if len(f.addServices) > 0 {
		u, err = solver.AddServices(solver.AddRequest{Template: t, Catalog: cat, Nodes: nodes, Add: f.addServices, MaxSteps: f.maxSteps})
	} else {
		u, err = solver.Scale(solver.ScaleRequest{Template: t, Catalog: cat, Provider: provider, HardwareType: f.hardwareType,
			ImageType: f.imageType, Cluster: cl, Nodes: nodes, Size: f.size, MaxSteps: f.maxSteps})
	}
	if err != nil {
		return nil, err
	}
	out := &solveOutput{Layout: u.Layout, Changed: u.Changed, Removed: u.Removed}
	for _, n := range u.Nodes {
		out.Nodes = append(out.Nodes, fullNode(n, provider, cat))
	}
	for _, n := range u.Added {
		out.Added = append(out.Added, n.Hostname)
	}
	return out, nil
}

func fullNode(n solver.ExistingNode, provider string, cat solver.Catalog) solver.Node {
	out := solver.Node{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType}
	if h := cat.HardwareTypes[n.HardwareType]; h != nil {
		out.Flavor = h.Flavor(provider)
	}
	if i := cat.ImageTypes[n.ImageType]; i != nil {
		out.Image = i.Image(provider)
		out.SSHUser = i.SSHUser(provider)
	}
	return out
}

// readExisting reads a live layout. When the document lists nodes (as this
// command prints them) they are used as they are; otherwise nodes are made
// from the layout entries, numbered from 1000 in order.
func readExisting(path, clusterID, name, suffix string) ([]solver.ExistingNode, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Layout []solver.LayoutEntry  `json:"layout"`
		Nodes  []solver.ExistingNode `json:"nodes"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("--existing %s: %w", path, err)
	}
	if len(doc.Nodes) > 0 {
		return doc.Nodes, nil
	}
	if len(doc.Layout) == 0 {
		return nil, fmt.Errorf(`--existing %s: want {"layout":[{"services":[...],"hardwaretype":"...","imagetype":"...","count":N}, ...]}`, path)
	}
	var nodes []solver.ExistingNode
	num := solver.FirstNodeNum
	for i, e := range doc.Layout {
		if e.Count < 1 || len(e.Services) == 0 {
			return nil, fmt.Errorf("--existing %s: layout[%d] needs services and a count >= 1", path, i)
		}
		for range e.Count {
			nodes = append(nodes, solver.ExistingNode{ID: solver.NodeID(clusterID, num), NodeNum: num,
				Hostname: solver.Hostname(name, clusterID, num, suffix), Services: catalog.SortedUnion(e.Services),
				HardwareType: e.HardwareType, ImageType: e.ImageType})
			num++
		}
	}
	return nodes, nil
}
