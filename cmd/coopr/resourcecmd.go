package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// resourceRefHelp explains how the resource commands name things.
const resourceRefHelp = `A resource is named TYPE/PLUGIN/RESOURCE_TYPE/NAME, a version of it
...@VERSION: TYPE is automatortypes or providertypes, PLUGIN the automator or
provider type, RESOURCE_TYPE a key of its descriptor's resourceTypes, e.g.
automatortypes/shell/scripts/setup.sh@2. Versions are INACTIVE when
uploaded, STAGED for the next sync, ACTIVE once synced, RECALLED until the
next sync makes them INACTIVE (docs/task-protocol.md#plugin-resources).`

// resourceRef is a parsed TYPE/PLUGIN[/RESOURCE_TYPE/NAME[@VERSION]].
type resourceRef struct {
	pluginType, plugin, resourceType, name string
	version                                int
}

// parseResourceRef reads a reference with parts parts (2 or 4) and, when
// withVersion, an @VERSION.
func parseResourceRef(s string, parts int, withVersion bool) (resourceRef, error) {
	var r resourceRef
	bad := func(why string) (resourceRef, error) {
		want := "TYPE/PLUGIN"
		if parts == 4 {
			want += "/RESOURCE_TYPE/NAME"
		}
		if withVersion {
			want += "@VERSION"
		}
		return r, fmt.Errorf("resource %q: %s: want %s (coopr resource --help)", s, why, want)
	}
	body := s
	if withVersion {
		i := strings.LastIndexByte(s, '@')
		if i < 0 {
			return bad("no @VERSION")
		}
		v, err := strconv.Atoi(s[i+1:])
		if err != nil || v < 1 {
			return bad("the version is not a number from 1")
		}
		body, r.version = s[:i], v
	}
	f := strings.SplitN(body, "/", parts)
	if len(f) != parts {
		return bad(fmt.Sprintf("%d parts separated by /", parts))
	}
	for _, p := range f {
		if p == "" {
			return bad("an empty part")
		}
	}
	switch t := strings.ToUpper(f[0]); t {
	case "AUTOMATORTYPES", "PROVIDERTYPES":
		r.pluginType = t
	default:
		return bad("TYPE is automatortypes or providertypes")
	}
	r.plugin = f[1]
	if parts == 4 {
		r.resourceType, r.name = f[2], f[3]
	}
	return r, nil
}

func (r resourceRef) input() map[string]any {
	in := map[string]any{"pluginType": r.pluginType, "plugin": r.plugin, "resourceType": r.resourceType, "name": r.name}
	if r.version > 0 {
		in["version"] = r.version
	}
	return in
}

// shownResource is a resource version as the API gives it.
type shownResource struct {
	PluginType   string    `json:"pluginType"`
	Plugin       string    `json:"plugin"`
	ResourceType string    `json:"resourceType"`
	Name         string    `json:"name"`
	Version      int       `json:"version"`
	Format       string    `json:"format"`
	Permissions  *string   `json:"permissions"`
	State        string    `json:"state"`
	Digest       string    `json:"digest"`
	Size         int       `json:"size"`
	CreatedAt    time.Time `json:"createdAt"`
}

const resourceFields = `pluginType plugin resourceType name version format permissions state digest size createdAt`

func newResourceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resource",
		Short: "Upload, stage, recall, delete and sync plugin resources (tenant admins)",
		Long:  "Plugin resources are files and archives that automator and provider types hand their tasks.\n\n" + resourceRefHelp,
	}
	cmd.AddCommand(newResourceListCmd(), newResourceUploadCmd())
	for _, a := range []struct{ verb, mutation, short string }{
		{"stage", "stageResource", "Slate a version for the next sync (and unslate the name's others)"},
		{"recall", "recallResource", "Unslate a version: a live one becomes inactive at the next sync"},
	} {
		cmd.AddCommand(newResourceVersionCmd(a.verb, a.mutation, a.short))
	}
	cmd.AddCommand(newResourceDeleteCmd(), newResourceSyncCmd())
	return cmd
}

func newResourceListCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:     "list TYPE/PLUGIN",
		Aliases: []string{"ls"},
		Short:   "List a plugin's resources, every version with its state",
		Long:    "list prints a plugin's resource versions (never their bytes) and the tenant's resource generation.\n\n" + resourceRefHelp,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			r, err := parseResourceRef(args[0], 2, false)
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct {
				Resources          []shownResource
				ResourceGeneration int
			}
			if err := gql(cmd.Context(), c, `query($t: PluginType!, $p: String!) { resources(pluginType: $t, plugin: $p) { `+resourceFields+` }
				resourceGeneration }`, map[string]any{"t": r.pluginType, "p": r.plugin}, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.Resources)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "resource generation %d\n", out.ResourceGeneration)
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RESOURCE TYPE\tNAME\tVERSION\tSTATE\tFORMAT\tSIZE\tDIGEST")
			for _, x := range out.Resources {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\n", x.ResourceType, x.Name, x.Version, x.State, x.Format, x.Size, x.Digest)
			}
			return tw.Flush()
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func newResourceUploadCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   "upload TYPE/PLUGIN/RESOURCE_TYPE/NAME FILE",
		Short: "Store FILE as a resource's next version, INACTIVE until staged and synced",
		Long:  "upload stores FILE's bytes as the resource's next version. An archive resource takes a tar.gz with one top directory named like the resource.\n\n" + resourceRefHelp,
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			r, err := parseResourceRef(args[0], 4, false)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			in := r.input()
			in["content"] = base64.StdEncoding.EncodeToString(b)
			var out struct{ UploadResource shownResource }
			if err := gql(cmd.Context(), c, `mutation($in: ResourceUploadInput!) { uploadResource(input: $in) { `+resourceFields+` } }`,
				map[string]any{"in": in}, &out); err != nil {
				return err
			}
			u := out.UploadResource
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), u)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "uploaded %s@%d (%s, %d bytes, %s): %s\n", args[0], u.Version, u.Format, u.Size, u.Digest, u.State)
			return nil
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func newResourceVersionCmd(verb, mutation, short string) *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   verb + " TYPE/PLUGIN/RESOURCE_TYPE/NAME@VERSION",
		Short: short,
		Long:  short + ".\n\n" + resourceRefHelp,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			r, err := parseResourceRef(args[0], 4, true)
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			out := map[string]shownResource{}
			if err := gql(cmd.Context(), c, `mutation($in: ResourceVersionInput!) { r: `+mutation+`(input: $in) { `+resourceFields+` } }`,
				map[string]any{"in": r.input()}, &out); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out["r"])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], out["r"].State)
			return nil
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func newResourceDeleteCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "delete TYPE/PLUGIN/RESOURCE_TYPE/NAME@VERSION",
		Short: "Delete an inactive version that no running job uses",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := parseResourceRef(args[0], 4, true)
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			if err := gql(cmd.Context(), c, `mutation($in: ResourceVersionInput!) { deleteResource(input: $in) }`,
				map[string]any{"in": r.input()}, &struct{}{}); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
			return nil
		},
	}
	api.register(cmd)
	return cmd
}

func newResourceSyncCmd() *cobra.Command {
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Make the staged versions live, all at once; prints the new resource generation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ SyncResources int }
			if err := gql(cmd.Context(), c, `mutation { syncResources }`, nil, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "resource generation %d\n", out.SyncResources)
			return nil
		},
	}
	api.register(cmd)
	return cmd
}
