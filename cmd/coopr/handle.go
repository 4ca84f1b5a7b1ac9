package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cooprhq/coopr/client"
)

// idWidth is how many digits cluster ids are padded to.
const idWidth = 8

// clusterHandle is a cluster as the user typed it: its id (00000001), the
// id's number (1), or its name.
type clusterHandle string

// id is the cluster id a number stands for ("1" → "00000001"), or "" when
// the handle is not a number.
func (h clusterHandle) id() string {
	s := string(h)
	if s == "" || len(s) > 19 || strings.Trim(s, "0123456789") != "" {
		return ""
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%0*d", idWidth, n)
}

type clusterMatch struct {
	ID, Name, Status string
	CreatedAt        time.Time
}

// resolveCluster finds the cluster a handle names among those the caller
// may see and returns its id:
//
//   - a number is the cluster with that id, padded ("1" is 00000001);
//   - anything else, or a number no cluster has as id, is a name. One
//     cluster of that name is it. Of several, the one that is not
//     TERMINATED is it (deleted clusters keep their names, and a name is
//     often reused), and note says so; several live ones, or only
//     TERMINATED ones, are ambiguous: the error lists them to pick an id.
func resolveCluster(ctx context.Context, c *client.Client, handle string, note io.Writer) (string, error) {
	if strings.TrimSpace(handle) == "" {
		// A name query for "" would match every cluster called anything.
		return "", errors.New("a cluster id, number or name is needed")
	}
	h := clusterHandle(handle)
	if id := h.id(); id != "" {
		var out struct{ Cluster *struct{ ID string } }
		if err := gql(ctx, c, `query($id: ID!) { cluster(id: $id) { id } }`, map[string]any{"id": id}, &out); err != nil {
			return "", err
		}
		if out.Cluster != nil {
			return out.Cluster.ID, nil
		}
	}
	matches, err := clustersNamed(ctx, c, handle)
	if err != nil {
		return "", err
	}
	var live []clusterMatch
	for _, m := range matches {
		if m.Status != "TERMINATED" {
			live = append(live, m)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0].ID, nil
	case len(live) == 1:
		fmt.Fprintf(note, "%q is cluster %s, the only one of that name not TERMINATED\n", handle, live[0].ID)
		return live[0].ID, nil
	case len(matches) > 1:
		var b strings.Builder
		fmt.Fprintf(&b, "cluster name %q is ambiguous: %d clusters have it; give one's id instead:\n", handle, len(matches))
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tSTATUS\tCREATED")
		for _, m := range matches {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.ID, m.Status, m.CreatedAt.Local().Format(time.DateTime))
		}
		_ = tw.Flush()
		return "", fmt.Errorf("%s", strings.TrimRight(b.String(), "\n"))
	}
	if id := h.id(); id != "" && id != handle {
		return "", notFound("cluster %s: not found: no cluster you can see has id %s or name %q (coopr cluster list shows the clusters you can see)", handle, id, handle)
	}
	return "", notFound("cluster %s: not found (coopr cluster list shows the clusters you can see)", handle)
}

// clustersNamed lists the visible clusters called name, newest first.
func clustersNamed(ctx context.Context, c *client.Client, name string) ([]clusterMatch, error) {
	var all []clusterMatch
	var after *string
	for {
		var out struct {
			Clusters struct {
				Nodes       []clusterMatch
				EndCursor   *string
				HasNextPage bool
			}
		}
		if err := gql(ctx, c, `query($name: String!, $after: String) { clusters(first: 500, name: $name, after: $after) {
			nodes { id name status createdAt } endCursor hasNextPage } }`, map[string]any{"name": name, "after": after}, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Clusters.Nodes...)
		if !out.Clusters.HasNextPage || out.Clusters.EndCursor == nil {
			return all, nil
		}
		after = out.Clusters.EndCursor
	}
}

// clusterArgHelp explains the CLUSTER argument in the commands' help.
const clusterArgHelp = `CLUSTER is the cluster's id (00000001), its number (1) or its name. Of
several clusters with that name the one not TERMINATED is meant; when more
than one is live, the command refuses and lists their ids.`

// notFound is the CLI's own "not found", carrying NOT_FOUND as the API's
// errors do (docs/cli.md#output), so that the two read and test alike.
func notFound(format string, a ...any) error {
	return &client.ResponseError{Errors: []client.Error{{Message: fmt.Sprintf(format, a...),
		Extensions: map[string]any{"code": "NOT_FOUND"}}}}
}
