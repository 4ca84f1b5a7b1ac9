package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
)

// A 1,000-node job (some 15,000 tasks) opens under the default limits a
// page at a time, as the job view reads it: every task once, in plan
// order, each page within the complexity limit, while reading all of them
// in one request is refused.
func TestJobTasksPagesDefaultLimits(t *testing.T) {
	w := newAttackWorld(t, 1, func(c *server.Config) { c.RateLimit = 0 })
	ctx := context.Background()
	db := w.s.Srv.Store().DB()
	var job string
	if err := db.GetContext(ctx, &job, `SELECT latest_job_id FROM clusters WHERE id = $1`, w.clusters[0]); err != nil {
		t.Fatal(err)
	}
	const want = 15_000
	all := servertest.CloneTasks(t, db, job, want)

	// The job view's fields (ui/src/views/cluster/JobView.tsx).
	const fields = "id nodeId hostname action service stage state attempt failures maxAttempts message"
	if r := w.s.Do(w.alice, `query($id: ID!) { job(id: $id) { tasks { `+fields+` } } }`, map[string]any{"id": job}); r.Code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("every task in one request: %v, want COMPLEXITY_LIMIT_EXCEEDED", r.Errors)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > want/2000+1 {
			t.Fatalf("more pages than %d tasks make", want)
		}
		vars := map[string]any{"id": job, "first": 2000}
		if after != "" {
			vars["after"] = after
		}
		var out struct {
			Job struct {
				Counts struct{ Total int }
				Tasks  []struct{ ID string }
			}
		}
		w.s.Must(w.alice, `query($id: ID!, $first: Int, $after: ID) { job(id: $id) { counts { total } tasks(first: $first, after: $after) { `+fields+` } } }`, vars, &out)
		if out.Job.Counts.Total != want {
			t.Fatalf("counts.total %d, want %d", out.Job.Counts.Total, want)
		}
		for _, t := range out.Job.Tasks {
			got = append(got, t.ID)
		}
		if len(out.Job.Tasks) < 2000 {
			break
		}
		after = out.Job.Tasks[len(out.Job.Tasks)-1].ID
	}
	if fmt.Sprint(got) != fmt.Sprint(all) {
		t.Errorf("the pages hold %d tasks, not the job's %d in plan order", len(got), len(all))
	}

	// One task by id, for the view's drawer, and the refusals.
	var one struct {
		Job struct {
			Task *struct {
				ID       string
				Attempts []struct{ Attempt int }
			}
		}
	}
	w.s.Must(w.alice, `query($id: ID!, $t: ID!) { job(id: $id) { task(id: $t) { id attempts { attempt } } } }`,
		map[string]any{"id": job, "t": all[7777]}, &one)
	if one.Job.Task == nil || one.Job.Task.ID != all[7777] {
		t.Errorf("job.task(%s): %+v", all[7777], one.Job.Task)
	}
	w.s.Must(w.alice, `query($id: ID!, $t: ID!) { job(id: $id) { task(id: $t) { id } } }`,
		map[string]any{"id": job, "t": "no-such-task"}, &one)
	if one.Job.Task != nil {
		t.Errorf("job.task(no-such-task): %+v, want null", one.Job.Task)
	}
	for _, c := range []struct {
		name string
		vars map[string]any
		code string
	}{
		{"first over the page size", map[string]any{"id": job, "first": 2001}, "INVALID_INPUT"},
		{"after without first", map[string]any{"id": job, "after": all[0]}, "INVALID_INPUT"},
		{"after another job's task", map[string]any{"id": job, "first": 10, "after": "00000000-0000-0000-0000-000000000000"}, "NOT_FOUND"},
	} {
		if r := w.s.Do(w.alice, `query($id: ID!, $first: Int, $after: ID) { job(id: $id) { tasks(first: $first, after: $after) { id } } }`, c.vars); r.Code() != c.code {
			t.Errorf("%s: %v, want %s", c.name, r.Errors, c.code)
		}
	}
}
