package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cooprhq/coopr/client"
)

// apiCmds are the top-level commands over the API that reach what the
// web UI reaches beyond clusters: jobs and their output, tenants, users,
// the audit log.
func apiCmds() []*cobra.Command {
	return []*cobra.Command{newJobCmd(), newLogsCmd(), newTenantCmd(), newUserCmd(), newAuditCmd(), newResourceCmd(), newWhoamiCmd()}
}

// outputFlag adds -o json|table to a command that prints something.
func outputFlag(cmd *cobra.Command, o *string) {
	cmd.Flags().StringVarP(o, "output", "o", "table", "output format: json or table")
}

func newJobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "job",
		Short: "Show, pause, resume, abort and retry a cluster's jobs",
		Long: `A job is one cluster action (create, an operation, delete) and its tasks.
JOB is the job's id, as cluster show, watch and the web UI give it.`,
	}
	cmd.AddCommand(newJobShowCmd())
	for _, a := range []struct{ verb, mutation, short string }{
		{"pause", "pauseJob", "Stop dispatching a job's tasks; running ones finish"},
		{"resume", "resumeJob", "Dispatch a paused job's tasks again"},
		{"abort", "abortJob", "Fail a running or paused job; running tasks are cancelled"},
		{"retry", "retryJob", "Run a failed job again from its unfinished tasks"},
	} {
		cmd.AddCommand(newJobActionCmd(a.verb, a.mutation, a.short))
	}
	return cmd
}

// shownJob is a job as job show and the job actions print it; its JSON
// keys are the API's.
type shownJob struct {
	ID        string      `json:"id"`
	ClusterID string      `json:"clusterId"`
	Action    string      `json:"action"`
	State     string      `json:"state"`
	Message   string      `json:"message"`
	CreatedAt time.Time   `json:"createdAt"`
	UpdatedAt time.Time   `json:"updatedAt"`
	Tasks     []shownTask `json:"tasks"`
}

type shownTask struct {
	ID          string  `json:"id"`
	NodeID      string  `json:"nodeId"`
	Hostname    *string `json:"hostname"`
	Action      string  `json:"action"`
	Service     string  `json:"service"`
	Stage       int     `json:"stage"`
	State       string  `json:"state"`
	Attempt     int     `json:"attempt"`
	Failures    int     `json:"failures"`
	MaxAttempts int     `json:"maxAttempts"`
	Message     string  `json:"message"`
}

// jobFields are a job's own fields; its tasks are read a page at a time
// (readJobTasks), since a big job's tasks in one request pass the server's
// complexity limit.
const jobFields = `id clusterId action state message createdAt updatedAt`

// taskPage is how many tasks one request reads: the most Job.tasks takes.
const taskPage = 2000

// readJobTasks reads every task of a job in plan order, a page at a time.
func readJobTasks(ctx context.Context, c *client.Client, job string) ([]shownTask, error) {
	all := []shownTask{}
	after := ""
	for {
		vars := map[string]any{"id": job, "first": taskPage}
		if after != "" {
			vars["after"] = after
		}
		var out struct {
			Job *struct{ Tasks []shownTask }
		}
		if err := gql(ctx, c, `query($id: ID!, $first: Int, $after: ID) { job(id: $id) {
			tasks(first: $first, after: $after) { id nodeId hostname action service stage state attempt failures maxAttempts message } } }`, vars, &out); err != nil {
			return nil, err
		}
		if out.Job == nil {
			return nil, notFound("job %s: not found", job)
		}
		all = append(all, out.Job.Tasks...)
		if len(out.Job.Tasks) < taskPage {
			return all, nil
		}
		after = out.Job.Tasks[len(out.Job.Tasks)-1].ID
	}
}

func newJobShowCmd() *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   "show JOB",
		Short: "Show a job's state and its tasks",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			var out struct{ Job *shownJob }
			if err := gql(cmd.Context(), c, `query($id: ID!) { job(id: $id) { `+jobFields+` } }`, map[string]any{"id": args[0]}, &out); err != nil {
				return err
			}
			if out.Job == nil {
				return notFound("job %s: not found (cluster show names a cluster's latest job)", args[0])
			}
			if out.Job.Tasks, err = readJobTasks(cmd.Context(), c, out.Job.ID); err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), out.Job)
			}
			return writeJob(cmd.OutOrStdout(), out.Job)
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

func writeJob(w io.Writer, j *shownJob) error {
	fmt.Fprintf(w, "job %s of cluster %s: %s %s", j.ID, j.ClusterID, j.Action, j.State)
	if j.Message != "" {
		fmt.Fprintf(w, " (%s)", j.Message)
	}
	fmt.Fprintln(w)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTAGE\tACTION\tSERVICE\tNODE\tSTATE\tATTEMPT\tMESSAGE")
	for _, t := range j.Tasks {
		node := t.NodeID
		if t.Hostname != nil && *t.Hostname != "" {
			node = *t.Hostname
		}
		if node == "" {
			node = "-"
		}
		svc := t.Service
		if svc == "" {
			svc = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", t.ID, t.Stage, t.Action, svc, node, t.State, t.Attempt, t.MaxAttempts, t.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeTrimmed(w, b.String())
}

// writeTrimmed writes a table's lines without the padding a last column
// left empty ends them with.
func writeTrimmed(w io.Writer, table string) error {
	for _, l := range strings.SplitAfter(table, "\n") {
		if l == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(l, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

func newJobActionCmd(verb, mutation, short string) *cobra.Command {
	var api apiFlags
	var output string
	cmd := &cobra.Command{
		Use:   verb + " JOB",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			out := map[string]*shownJob{}
			if err := gql(cmd.Context(), c, `mutation($id: ID!) { job: `+mutation+`(id: $id) { `+jobFields+` } }`,
				map[string]any{"id": args[0]}, &out); err != nil {
				return err
			}
			j := out["job"]
			if output == "json" {
				if j.Tasks, err = readJobTasks(cmd.Context(), c, j.ID); err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), j)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s (%s of cluster %s) is %s\n", j.ID, j.Action, j.ClusterID, j.State)
			return nil
		},
	}
	api.register(cmd)
	outputFlag(cmd, &output)
	return cmd
}

// newClusterLeaseCmd moves a cluster's lease end.
func newClusterLeaseCmd() *cobra.Command {
	lease := &cobra.Command{Use: "lease", Short: "Move the end of a cluster's lease (cluster show shows it)",
		Long: "lease extend moves the end of a cluster's lease; cluster show prints when it ends."}
	var api apiFlags
	var until string
	var by time.Duration
	var output string
	extend := &cobra.Command{
		Use:   "extend CLUSTER (--until TIME | --by DURATION)",
		Short: "Move the end of a cluster's lease",
		Long: `extend sets when a cluster's lease ends: --until an RFC 3339 time
(2026-12-01T18:00:00Z), or --by a duration (48h) past the current end. The
template may cap the lease after creation and what one change adds; the
server says what it allows when it refuses.

` + clusterArgHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if (until == "") == (by == 0) {
				return errors.New("give either --until TIME (RFC 3339, e.g. 2026-12-01T18:00:00Z) or --by DURATION (e.g. 48h)")
			}
			var at time.Time
			if until != "" {
				t, err := time.Parse(time.RFC3339, until)
				if err != nil {
					return fmt.Errorf("--until %q: want an RFC 3339 time such as 2026-12-01T18:00:00Z: %w", until, err)
				}
				at = t
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			id, err := resolveCluster(cmd.Context(), c, args[0], cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if by != 0 {
				var cur struct {
					Cluster struct{ ExpireTime *time.Time }
				}
				if err := gql(cmd.Context(), c, `query($id: ID!) { cluster(id: $id) { expireTime } }`, map[string]any{"id": id}, &cur); err != nil {
					return err
				}
				if cur.Cluster.ExpireTime == nil {
					return fmt.Errorf("cluster %s: its lease never ends, so --by has nothing to add to: give --until TIME to set an end", id)
				}
				at = cur.Cluster.ExpireTime.Add(by)
			}
			var out struct {
				SetClusterExpireTime struct {
					ID         string     `json:"id"`
					Name       string     `json:"name"`
					ExpireTime *time.Time `json:"expireTime"`
				}
			}
			if err := gql(cmd.Context(), c, `mutation($id: ID!, $t: Time!) { setClusterExpireTime(id: $id, expireTime: $t) { id name expireTime } }`,
				map[string]any{"id": id, "t": at.UTC().Format(time.RFC3339Nano)}, &out); err != nil {
				return err
			}
			r := out.SetClusterExpireTime
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s %q: lease ends %s\n", r.ID, r.Name, r.ExpireTime.UTC().Format(time.RFC3339))
			return nil
		},
	}
	api.register(extend)
	extend.Flags().StringVar(&until, "until", "", "new end of the lease, RFC 3339")
	extend.Flags().DurationVar(&by, "by", 0, "add this to the current end (e.g. 48h)")
	outputFlag(extend, &output)
	lease.AddCommand(extend)
	return lease
}

// taskJob is the job a task id names: task ids are <jobId>-<n>.
func taskJob(task string) (string, error) {
	i := strings.LastIndexByte(task, '-')
	if i <= 0 || i == len(task)-1 {
		return "", fmt.Errorf("task %q: a task id is <job id>-<number>, as job show lists them", task)
	}
	return task[:i], nil
}

type logTask struct {
	ID, State string
	Attempts  []struct {
		Attempt                int
		Agent                  string
		Status                 *int
		Message                string
		StdoutTail, StderrTail string
		FinishedAt             *time.Time
	}
}

// readTask reads a task and its job's state.
func readTask(ctx context.Context, c *client.Client, job, task string) (*logTask, string, error) {
	var out struct {
		Job *struct {
			State string
			Task  *logTask
		}
	}
	// The one task, not the job's every task: a big job's tasks in one
	// request pass the server's complexity limit.
	if err := gql(ctx, c, `query($id: ID!, $task: ID!) { job(id: $id) { state task(id: $task) { id state
		attempts { attempt agent status message stdoutTail stderrTail finishedAt } } } }`, map[string]any{"id": job, "task": task}, &out); err != nil {
		return nil, "", err
	}
	if out.Job != nil && out.Job.Task != nil {
		return out.Job.Task, out.Job.State, nil
	}
	return nil, "", notFound("task %s: not found (job show JOB lists a job's tasks)", task)
}

func newLogsCmd() *cobra.Command {
	var api apiFlags
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs TASK",
		Short: "Print a task's output: its attempts' tails, or live with -f",
		Long: `logs prints the output a task's attempts left: the last 2,048 characters
of stdout and stderr of each, with how it ended. With -f it then prints the
running attempt's output as the agent reports it, until the task is done
(COMPLETE, SKIPPED, DROPPED) or its job ends; a task that fails and is
retried is followed into its next attempt.

TASK is the task's id, as job show lists them (<job id>-<number>).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			task := args[0]
			job, err := taskJob(task)
			if err != nil {
				return err
			}
			c, err := api.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			w := cmd.OutOrStdout()
			if !follow {
				t, _, err := readTask(ctx, c, job, task)
				if err != nil {
					return err
				}
				writeAttempts(w, t, 0)
				return nil
			}
			return followTask(ctx, c, job, task, w)
		},
	}
	api.register(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "print the output live until the task is done")
	return cmd
}

// writeAttempts prints the finished attempts after the first skip ones
// and returns how many attempts are finished.
func writeAttempts(w io.Writer, t *logTask, skip int) int {
	n := 0
	for _, a := range t.Attempts {
		if a.FinishedAt == nil {
			continue
		}
		n++
		if n <= skip {
			continue
		}
		how := "running"
		if a.Status != nil {
			how = fmt.Sprintf("status %d", *a.Status)
		}
		if a.Message != "" {
			how += ": " + a.Message
		}
		fmt.Fprintf(w, "== attempt %d on %s (%s)\n", a.Attempt, a.Agent, how)
		for _, s := range []struct{ name, text string }{{"stdout", a.StdoutTail}, {"stderr", a.StderrTail}} {
			if s.text == "" {
				continue
			}
			fmt.Fprintf(w, "-- %s\n%s", s.name, s.text)
			if !strings.HasSuffix(s.text, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
	return n
}

// taskDone says a followed task will make no more output.
func taskDone(taskState, jobState string) bool {
	switch taskState {
	case "COMPLETE", "SKIPPED", "DROPPED":
		return true
	}
	return jobState == "COMPLETE" || jobState == "FAILED"
}

// followTask prints a task's finished attempts, then its live output
// until it is done. The log subscription is opened before the task is
// read, so that no line falls between the read and the stream; the job's
// progress says when to read the task again.
func followTask(ctx context.Context, c *client.Client, job, task string, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs, err := c.Subscribe(ctx, `subscription($id: ID!) { taskLog(taskId: $id) { attempt stream chunk lagged } }`, map[string]any{"id": task})
	if err != nil {
		return err
	}
	defer logs.Close()
	progress, err := c.Subscribe(ctx, `subscription($id: ID!) { jobProgress(jobId: $id) { taskId jobState lagged } }`, map[string]any{"id": job})
	if err != nil {
		return err
	}
	defer progress.Close()

	type line struct {
		text string
		err  error
	}
	lines := make(chan line)
	go func() {
		for {
			r, done, err := logs.Next(ctx)
			if err == nil && done {
				err = errors.New("the server ended the log stream")
			}
			var l struct {
				TaskLog struct {
					Attempt       int
					Stream, Chunk string
					Lagged        bool
				}
			}
			if err == nil {
				err = r.Decode(&l)
			}
			text := l.TaskLog.Chunk
			if l.TaskLog.Stream == "STDERR" {
				text = prefixLines(text, "stderr: ")
			}
			if l.TaskLog.Lagged {
				text = "[some output was skipped: this reader fell behind]\n" + text
			}
			select {
			case lines <- line{text, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	changed := make(chan error, 1)
	go func() {
		for {
			r, done, err := progress.Next(ctx)
			if err == nil && done {
				err = errors.New("the server ended the job's progress stream")
			}
			if err == nil {
				var ev struct {
					JobProgress struct {
						TaskID   *string
						JobState string
						Lagged   bool
					}
				}
				if err = r.Decode(&ev); err == nil {
					// Other tasks' changes say nothing of this one; reading
					// the whole job for each would cost a big job dearly.
					e := ev.JobProgress
					if e.TaskID != nil && *e.TaskID != task && e.JobState == "RUNNING" && !e.Lagged {
						continue
					}
				}
			}
			select {
			case changed <- err:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	shown, read := 0, true
	for {
		if read {
			t, jobState, err := readTask(ctx, c, job, task)
			if err != nil {
				return err
			}
			shown = writeAttempts(w, t, shown)
			if taskDone(t.State, jobState) {
				fmt.Fprintf(w, "== task %s %s (job %s)\n", task, t.State, jobState)
				return nil
			}
			read = false
		}
		select {
		case l := <-lines:
			if l.err != nil {
				return l.err
			}
			if _, err := io.WriteString(w, l.text); err != nil {
				return err
			}
		case err := <-changed:
			// The job changed: read the task again.
			if err != nil {
				return err
			}
			read = true
		case <-ctx.Done():
			return nil
		}
	}
}

// prefixLines puts p before every line of s.
func prefixLines(s, p string) string {
	if s == "" {
		return s
	}
	end := strings.HasSuffix(s, "\n")
	s = p + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+p)
	if end {
		s += "\n"
	}
	return s
}
