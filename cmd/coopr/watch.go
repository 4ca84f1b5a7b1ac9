package main

import (
	"context"
	"errors"
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
		return nil, fmt.Errorf("no API token: set COOPR_TOKEN or pass --token (the first comes from `coopr token create --database-url ...`; later ones from `coopr token create`)")
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
When the server goes away it says so, reconnects when the server is back and
goes on from the cluster as it then stands.

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

// Reconnection backoff: doubling from the first to the last.
const (
	reconnectFirst = 250 * time.Millisecond
	reconnectMax   = 5 * time.Second
)

// watchCluster prints a cluster's changes to out until it settles (exit
// status 1 when it settles broken), or until ctx ends when follow is set.
// When the connection drops it says so on notes, reconnects with backoff
// and goes on from the snapshot the new subscription starts with.
func watchCluster(ctx context.Context, c *client.Client, id string, out, notes io.Writer, follow bool) error {
	w := &watcher{c: c, id: id, out: out, notes: notes, follow: follow, printed: map[string]bool{}, track: &progressTracker{}}
	w.tty, w.width = isTerminal(out)
	defer w.clearBar()
	wait := reconnectFirst
	down := false
	for {
		err := w.watch(ctx, down)
		w.clearBar()
		if ctx.Err() != nil {
			return nil
		}
		var ce *client.ConnectionError
		if !errors.As(err, &ce) || !w.ever {
			// A first subscription that fails (websockets blocked on the
			// way, say) is not retried: it may never work.
			return err
		}
		if w.received {
			// It had come back: this is a new loss.
			w.received, down, wait = false, false, reconnectFirst
		}
		if !down {
			w.clearBar()
			fmt.Fprintf(notes, "server went away (%s); reconnecting…\n", ce.Reason())
			down = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, reconnectMax)
	}
}

// watcher follows one cluster across reconnections.
type watcher struct {
	c       *client.Client
	id      string
	out     io.Writer
	notes   io.Writer // reconnection news
	follow  bool
	printed map[string]bool // sequence numbers of the changes printed
	state   string          // the cluster's status as last printed
	// received is set once a subscription answered, so that its loss is
	// told apart from a retry that found the server still down.
	received bool
	ever     bool // some subscription answered
	// The followed job's progress: plain lines carry its task counts; a
	// terminal shows it as one line redrawn under the changes
	// (docs/cli.md#progress).
	track    *progressTracker
	tty      bool
	width    int
	barShown bool
}

// errServerEnded is a subscription the server completed before the
// cluster settled: another subscription picks up from there.
var errServerEnded = &client.ConnectionError{Err: errors.New("the server ended the subscription")}

// watch runs one subscription until the cluster settles or it fails;
// resumed says a connection was lost before it.
func (w *watcher) watch(ctx context.Context, resumed bool) error {
	sub, err := w.c.Subscribe(ctx, `subscription($id: ID!) { clusterEvents(clusterId: $id) {
		kind seq state message jobId taskId attempt at lagged } }`, map[string]any{"id": w.id})
	if err != nil {
		return err
	}
	defer sub.Close()
	for {
		r, done, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		if done {
			return errServerEnded
		}
		var ev struct {
			ClusterEvents struct {
				Kind, Seq, State, Message string
				JobID, TaskID             *string
				Attempt                   *int
				At                        time.Time
				Lagged                    bool
			}
		}
		if err := r.Decode(&ev); err != nil {
			return err
		}
		e := ev.ClusterEvents
		if !w.received && resumed {
			w.clearBar()
			fmt.Fprintf(w.notes, "reconnected; following cluster %s again\n", w.id)
		}
		w.trackEvent(ctx, e.Kind, e.State, e.JobID, e.TaskID, e.Lagged)
		w.received, w.ever = true, true
		cluster := e.Kind == "CLUSTER" || e.Kind == "SNAPSHOT"
		switch {
		case e.Kind == "SNAPSHOT" && e.State == w.state:
			// A reconnection's snapshot of what was already printed.
		case e.Seq != "" && e.Seq != "0" && w.printed[e.Seq]:
			// Sent again on a new subscription.
		default:
			if e.Seq != "" && e.Seq != "0" {
				w.printed[e.Seq] = true
			}
			w.show(e.Kind, e.State, e.Message, e.JobID, e.TaskID, e.Attempt, e.At, e.Lagged)
		}
		if !cluster {
			continue
		}
		w.state = e.State
		if w.follow {
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

// trackEvent keeps the tracked job up to date: a new job, a snapshot or a
// lag reads its tasks again, a task event moves one task.
func (w *watcher) trackEvent(ctx context.Context, kind, state string, job, task *string, lagged bool) {
	if job == nil {
		return
	}
	reload := *job != w.track.job || kind == "SNAPSHOT" || lagged
	if !reload && kind == "TASK" && task != nil {
		reload = !w.track.set(*task, state)
	}
	if reload {
		// Without the job's tasks the changes still print, uncounted.
		if err := w.track.load(ctx, w.c, *job); err != nil {
			w.track.job = ""
		}
	}
	if kind == "JOB" {
		w.track.ended = state == "COMPLETE" || state == "FAILED"
	}
}

// show prints one change. Plain output prints every change, task changes
// with the job's counts; a terminal prints the cluster's and the job's
// changes, failures and retries above the progress line and redraws it.
func (w *watcher) show(kind, state, message string, job, task *string, attempt *int, at time.Time, lagged bool) {
	line := w.line(kind, state, message, job, task, attempt, at, lagged)
	tracked := w.track.job != "" && job != nil && *job == w.track.job
	if !w.tty {
		if kind == "TASK" && tracked {
			line += "  " + progressLine(w.track.progress(time.Now()))
		}
		fmt.Fprintln(w.out, line)
		return
	}
	retry := attempt != nil && *attempt > 1 && state == "IN_PROGRESS"
	if kind != "TASK" || state == "FAILED" || state == "DROPPED" || retry {
		w.clearBar()
		if kind == "JOB" && tracked && w.track.ended {
			// The job's last progress stays on screen.
			fmt.Fprintln(w.out, renderProgress(w.track.progress(time.Now()), w.width-1))
		}
		fmt.Fprintln(w.out, line)
	}
	if w.track.job != "" && !w.track.ended {
		fmt.Fprint(w.out, "\r\x1b[K"+renderProgress(w.track.progress(time.Now()), w.width-1))
		w.barShown = true
	}
}

// clearBar takes the progress line off the terminal.
func (w *watcher) clearBar() {
	if w.barShown {
		fmt.Fprint(w.out, "\r\x1b[K")
		w.barShown = false
	}
}

func (w *watcher) line(kind, state, message string, job, task *string, attempt *int, at time.Time, lagged bool) string {
	what := w.id
	switch {
	case task != nil:
		what = *task
	case job != nil:
		what = *job
	}
	line := fmt.Sprintf("%s  %-8s %-22s %s", at.Local().Format("15:04:05.000"), kind, what, state)
	if attempt != nil && *attempt > 1 {
		line += fmt.Sprintf(" (attempt %d)", *attempt)
	}
	if message != "" {
		line += "  " + message
	}
	if lagged {
		line += "  [some changes were skipped: this watcher fell behind]"
	}
	return line
}
