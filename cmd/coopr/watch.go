package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

// apiFlags locate the server and the token: flags, else $COOPR_SERVER and
// $COOPR_TOKEN.
type apiFlags struct {
	server, token string
}

func (a *apiFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.server, "server", "", "server URL (default $COOPR_SERVER, else http://127.0.0.1:8080)")
	cmd.Flags().StringVar(&a.token, "token", "", "API token (default $COOPR_TOKEN)")
}

func (a *apiFlags) client() (*client.Client, error) {
	c := &client.Client{URL: a.server, Token: a.token}
	if c.URL == "" {
		c.URL = os.Getenv("COOPR_SERVER")
	}
	if c.URL == "" {
		c.URL = "http://127.0.0.1:8080"
	}
	if c.Token == "" {
		c.Token = os.Getenv("COOPR_TOKEN")
	}
	if c.Token == "" {
		return nil, fmt.Errorf("no API token: set COOPR_TOKEN or pass --token (make one with `coopr token create`)")
	}
	return c, nil
}

func newWatchCmd() *cobra.Command {
	var api apiFlags
	var follow bool
	cmd := &cobra.Command{
		Use:   "watch CLUSTER",
		Short: "Print a cluster's changes as they happen",
		Long: `watch subscribes to a cluster's events and prints each change: the cluster's
status, its jobs and their tasks. It stops when the cluster settles (exit 0
when ACTIVE or TERMINATED, 1 when INCOMPLETE or INCONSISTENT) unless --follow.

` + clusterArgHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return watchCluster(cmd.Context(), c, id, cmd.OutOrStdout(), cmd.ErrOrStderr(), follow)
		},
	}
	api.register(cmd)
	cmd.Flags().BoolVar(&follow, "follow", false, "keep watching after the cluster settles")
	return cmd
}

// watchCluster prints a cluster's changes until it settles (exit status 1
// when it settles broken), or until ctx ends when follow is set.
func watchCluster(ctx context.Context, c *client.Client, id string, out, _ io.Writer, follow bool) error {
	sub, err := c.Subscribe(ctx, `subscription($id: ID!) { clusterEvents(clusterId: $id) {
		kind seq state message jobId taskId attempt at lagged } }`, map[string]any{"id": id})
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		r, done, err := sub.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if done {
			return nil
		}
		var ev struct {
			ClusterEvents struct {
				Kind, State, Message string
				JobID, TaskID        *string
				Attempt              *int
				At                   time.Time
				Lagged               bool
			}
		}
		if err := r.Decode(&ev); err != nil {
			return err
		}
		e := ev.ClusterEvents
		what := id
		switch {
		case e.TaskID != nil:
			what = *e.TaskID
		case e.JobID != nil:
			what = *e.JobID
		}
		line := fmt.Sprintf("%s  %-8s %-22s %s", e.At.Local().Format("15:04:05.000"), e.Kind, what, e.State)
		if e.Attempt != nil && *e.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", *e.Attempt)
		}
		if e.Message != "" {
			line += "  " + e.Message
		}
		if e.Lagged {
			line += "  [some changes were skipped: this watcher fell behind]"
		}
		fmt.Fprintln(out, line)
		if follow || (e.Kind != "CLUSTER" && e.Kind != "SNAPSHOT") {
			continue
		}
		switch e.State {
		case "ACTIVE", "TERMINATED":
			return nil
		case "INCOMPLETE", "INCONSISTENT":
			return exitCode(1)
		}
	}
}
