package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cooprhq/coopr/catalog"
	"github.com/cooprhq/coopr/planner"
	"github.com/cooprhq/coopr/solver"
	"github.com/spf13/cobra"
)

type planFlags struct {
	catalogDir, action, nodesFile, template, output string
	size                                            int
	services, plannedNodes, newNodes, removedNodes  []string
	restart, network                                bool
}

func newPlanCmd() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan --catalog DIR (--nodes FILE | --template NAME --size N) [--action A]",
		Short: "Plan a cluster operation offline: its task DAG and stages",
		Long: `Plan prints the tasks, DAG edges and stages coopr would run for a cluster
operation, reading service definitions from a catalog directory (a directory
holding only services/ is enough).

The nodes come from --nodes, a JSON file with {"nodes":[{"id","nodenum",
"services"}, ...]} such as the output of 'coopr solve -o json', or from
--template and --size, which solve the layout first. For SCALE_OUT and
SCALE_IN the new and removed nodes default to the "added" and "removed"
lists of a 'coopr solve --existing' output.

On failure it exits 1 and prints {"error":{"code":...,"message":...}} (json)
or the message (table).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.catalogDir, "catalog", "", "catalog directory (Coopr layout)")
	fl.StringVar(&f.action, "action", string(planner.ClusterCreate), "cluster operation: "+clusterActionList())
	fl.StringVar(&f.nodesFile, "nodes", "", `the cluster's nodes: {"nodes":[{"id":...,"nodenum":...,"services":[...]}, ...]}`)
	fl.StringVar(&f.template, "template", "", "solve this cluster template for the nodes instead of --nodes")
	fl.IntVar(&f.size, "size", 0, "number of nodes to solve with --template")
	fl.StringSliceVar(&f.services, "services", nil, "services to act on (default: all; START/STOP/RESTART add their dependencies)")
	fl.StringSliceVar(&f.plannedNodes, "planned-nodes", nil, "node ids to act on (default: all)")
	fl.StringSliceVar(&f.newNodes, "new-nodes", nil, "SCALE_OUT: ids of the new nodes")
	fl.StringSliceVar(&f.removedNodes, "removed-nodes", nil, "SCALE_IN: ids of the nodes to remove")
	fl.BoolVar(&f.restart, "restart", false, "SCALE_OUT: also stop and start the staying nodes' services around their reconfiguration (the server's scale-out does not)")
	fl.BoolVar(&f.network, "network", false, "the provider has a network block: add the network steps")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: json or table")
	_ = cmd.MarkFlagRequired("catalog")
	return cmd
}

func clusterActionList() string {
	var s []string
	for _, a := range planner.ClusterActions {
		s = append(s, string(a))
	}
	return strings.Join(s, ", ")
}

// planNode is a node as plan reads it; hostname only labels the table.
type planNode struct {
	ID       string   `json:"id"`
	NodeNum  int      `json:"nodenum"`
	Hostname string   `json:"hostname"`
	Services []string `json:"services"`
}

type planTask struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	Hostname string `json:"hostname,omitempty"`
	Action   string `json:"action"`
	Service  string `json:"service"`
	Stage    int    `json:"stage"`
}

type planOutput struct {
	Tasks    []planTask  `json:"tasks"`
	Edges    [][2]string `json:"edges"`
	Stages   [][]string  `json:"stages"`
	PlanHash string      `json:"planHash"`
}

type planError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func runPlan(w io.Writer, f planFlags) error {
	if f.output != "json" && f.output != "table" {
		return fmt.Errorf("-o %q: use json or table", f.output)
	}
	out, err := plan(f)
	if err != nil {
		code := "INVALID_CATALOG"
		var coded interface{ Code() string }
		if errors.As(err, &coded) {
			code = coded.Code()
		}
		if f.output == "json" {
			_ = writeJSON(w, map[string]planError{"error": {Code: code, Message: err.Error()}})
		} else {
			fmt.Fprintf(w, "cannot plan (%s): %s\n", code, err)
		}
		return exitCode(1)
	}
	if f.output == "json" {
		return writeJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STAGE\tTASK\tNODE\tACTION\tSERVICE\tWAITS FOR")
	waits := map[string][]string{}
	for _, e := range out.Edges {
		waits[e[1]] = append(waits[e[1]], e[0])
	}
	for _, t := range out.Tasks {
		node := t.Hostname
		if node == "" {
			node = t.Node
		}
		if node == "" {
			node = "(cluster)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.Stage+1, t.ID, node, t.Action, t.Service, strings.Join(waits[t.ID], " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d tasks, %d edges, %d stages; plan %s\n", len(out.Tasks), len(out.Edges), len(out.Stages), out.PlanHash[:12])
	return nil
}

// codedError gives a plain error an error code for the JSON reply.
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Code() string  { return e.code }
func (e *codedError) Unwrap() error { return e.err }

func invalid(format string, a ...any) error {
	return &codedError{code: planner.CodeInvalid, err: fmt.Errorf(format, a...)}
}

func plan(f planFlags) (*planOutput, error) {
	action, err := planner.ParseClusterAction(f.action)
	if err != nil {
		return nil, invalid("--action: %w", err)
	}
	c, issues, err := catalog.LoadPath(f.catalogDir)
	if err != nil {
		return nil, err
	}
	var nodes []planNode
	var added, removed []string
	switch {
	case f.nodesFile != "" && f.template != "":
		return nil, invalid("give --nodes or --template, not both")
	case f.nodesFile != "":
		nodes, added, removed, err = readPlanNodes(f.nodesFile)
		if err != nil {
			return nil, invalid("%w", err)
		}
	case f.template != "":
		t, err := catalog.Resolve(f.template, c.ClusterTemplates(), c.PartialTemplates())
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", f.template, err)
		}
		sol, err := solver.Solve(solver.Request{Template: t, Catalog: solver.FromCatalog(c), Size: f.size},
			solver.Cluster{ID: "00000001", Name: f.template, DNSSuffix: t.Defaults.DNSSuffix})
		if err != nil {
			return nil, fmt.Errorf("solve: %w", err)
		}
		for _, n := range sol.Nodes {
			nodes = append(nodes, planNode{ID: n.ID, NodeNum: n.NodeNum, Hostname: n.Hostname, Services: n.Services})
		}
	default:
		return nil, invalid("give the nodes: --nodes FILE, or --template NAME --size N")
	}
	services := c.Services()
	for i, n := range nodes {
		for _, s := range n.Services {
			if services[s] == nil {
				msg := fmt.Sprintf("node %s: service %s is not in %s", n.ID, s, f.catalogDir)
				for _, is := range issues.Errors() {
					if strings.HasPrefix(is.File, "services/"+s+".json") {
						msg += "\n" + is.String()
					}
				}
				return nil, invalid("nodes[%d]: %s", i, msg)
			}
		}
	}
	req := &planner.Request{Action: action, Services: services, PlannedServices: f.services, PlannedNodes: f.plannedNodes,
		NewNodes: f.newNodes, RemovedNodes: f.removedNodes, Network: f.network, Restart: f.restart}
	byHost := map[string]string{}
	for _, n := range nodes {
		req.Nodes = append(req.Nodes, planner.Node{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services})
		byHost[n.Hostname] = n.ID
	}
	if action == planner.ScaleOut && req.NewNodes == nil {
		for _, h := range added {
			if id, ok := byHost[h]; ok {
				req.NewNodes = append(req.NewNodes, id)
			} else {
				req.NewNodes = append(req.NewNodes, h)
			}
		}
	}
	if action == planner.ScaleIn && req.RemovedNodes == nil {
		req.RemovedNodes = removed
	}
	p, err := planner.Build(req)
	if err != nil {
		return nil, err
	}
	hosts := map[string]string{}
	for _, n := range nodes {
		hosts[n.ID] = n.Hostname
	}
	id := func(i int32) string { return "t" + strconv.Itoa(int(i)+1) }
	out := &planOutput{Tasks: make([]planTask, len(p.Tasks)), Edges: make([][2]string, len(p.Edges)), PlanHash: p.Hash()}
	for i, t := range p.Tasks {
		out.Tasks[i] = planTask{ID: id(int32(i)), Node: t.Node, Hostname: hosts[t.Node], Action: t.Action.String(), Service: t.Service, Stage: t.Stage}
	}
	for i, e := range p.Edges {
		out.Edges[i] = [2]string{id(e[0]), id(e[1])}
	}
	for _, s := range p.Stages {
		var ids []string
		for _, ti := range s {
			ids = append(ids, id(int32(ti)))
		}
		out.Stages = append(out.Stages, ids)
	}
	return out, nil
}

// readPlanNodes reads {"nodes":[...]} (coopr solve's output, whose
// "removed" nodes join the list and "added" hostnames mark new nodes) or a
// bare array of nodes.
func readPlanNodes(path string) (nodes []planNode, added, removed []string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var doc struct {
		Nodes   []planNode `json:"nodes"`
		Added   []string   `json:"added"`
		Removed []planNode `json:"removed"`
	}
	if trimmed := strings.TrimSpace(string(data)); strings.HasPrefix(trimmed, "[") {
		err = json.Unmarshal(data, &doc.Nodes)
	} else {
		err = json.Unmarshal(data, &doc)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--nodes %s: %w", path, err)
	}
	if len(doc.Nodes) == 0 && len(doc.Removed) == 0 {
		return nil, nil, nil, fmt.Errorf(`--nodes %s: no nodes; want {"nodes":[{"id":"...","nodenum":1000,"services":[...]}, ...]}`, path)
	}
	nodes = doc.Nodes
	for _, r := range doc.Removed {
		if !slices.ContainsFunc(nodes, func(n planNode) bool { return n.ID == r.ID }) {
			nodes = append(nodes, r)
		}
		removed = append(removed, r.ID)
	}
	return nodes, doc.Added, removed, nil
}
