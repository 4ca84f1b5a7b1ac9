package engine

import "strings"

// TaskState is a task's state (docs/operations.md#job-and-task-states);
// its value is what the tasks table and the API hold.
type TaskState string

// Task states.
const (
	NotSubmitted TaskState = "NOT_SUBMITTED"
	Queued       TaskState = "QUEUED"
	InProgress   TaskState = "IN_PROGRESS"
	Complete     TaskState = "COMPLETE"
	Failed       TaskState = "FAILED"
	Dropped      TaskState = "DROPPED"
	// Skipped ends a best-effort task whose node was unreachable or gone,
	// or whose attempts ran out: its successors go on as after COMPLETE.
	Skipped TaskState = "SKIPPED"
)

// done reports whether a task in state counts as done for its successors
// and its job.
func done(state TaskState) bool { return state == Complete || state == Skipped }

// JobState is a job's state (docs/operations.md#job-and-task-states).
type JobState string

// Job states.
const (
	JobRunning JobState = "RUNNING"
	JobPaused  JobState = "PAUSED"
	// JobComplete and JobFailed end a job; a failed job may be retried.
	JobComplete JobState = "COMPLETE"
	JobFailed   JobState = "FAILED"
)

// ClusterState is a cluster's status (docs/operations.md#cluster-states).
type ClusterState string

// Cluster states.
const (
	// ClusterPending: its latest job is running or paused.
	ClusterPending      ClusterState = "PENDING"
	ClusterActive       ClusterState = "ACTIVE"
	ClusterIncomplete   ClusterState = "INCOMPLETE"
	ClusterInconsistent ClusterState = "INCONSISTENT"
	ClusterTerminated   ClusterState = "TERMINATED"
)

// joinStates is strings.Join for states.
func joinStates[S ~string](states []S, sep string) string {
	s := make([]string, len(states))
	for i, st := range states {
		s[i] = string(st)
	}
	return strings.Join(s, sep)
}
