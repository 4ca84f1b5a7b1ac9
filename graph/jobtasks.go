package graph

import (
	"context"
	"errors"

	"github.com/cooprhq/coopr/server/control"
)

// MaxTaskPage is the largest first Job.tasks takes: a page of the job
// view's fields costs about 25,000, well inside the default limit.
const MaxTaskPage = 2000

// jobTasks is Job.tasks: every task, or a page of them.
func (r *Resolver) jobTasks(ctx context.Context, j *control.Job, first *int, after *string) ([]*control.Task, error) {
	var ts []control.Task
	var err error
	switch {
	case first == nil && after != nil:
		return nil, invalid("after", "needs first: after pages, first says how many")
	case first == nil:
		ts, err = r.Control.Tasks(ctx, j.ID)
	case *first < 1 || *first > MaxTaskPage:
		return nil, invalid("first", "must be 1 to %d (got %d)", MaxTaskPage, *first)
	default:
		cursor := ""
		if after != nil {
			cursor = *after
		}
		ts, err = r.Control.TasksPage(ctx, j.ID, cursor, *first)
	}
	if err != nil {
		return nil, err
	}
	out := make([]*control.Task, len(ts))
	for i := range ts {
		out[i] = &ts[i]
	}
	return out, nil
}

// jobTask is Job.task: null for an id the job does not have.
func (r *Resolver) jobTask(ctx context.Context, j *control.Job, id string) (*control.Task, error) {
	t, err := r.Control.Task(ctx, j.ID, id)
	if errors.Is(err, control.ErrNotFound) {
		return nil, nil
	}
	return t, err
}
