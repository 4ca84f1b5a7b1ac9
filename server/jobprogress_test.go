package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cooprhq/coopr/server"
	"github.com/cooprhq/coopr/server/servertest"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

type progressEvent struct {
	Kind, State string
	TaskID      *string
	Lagged      bool
}

// A subscriber of jobProgress that falls behind loses events; whatever it
// lost, it is told (a lagged event) after the last loss, so that reading
// the tasks again then, and applying what follows, ends at the store's
// states. Each round commits a big change (its events overflow the
// subscriber's buffer, so the server re-reads the job), then a small one
// a moment later, while the buffer may still be full of the big one's
// events, which the server's re-read holds. (Whether the small one's
// events are dropped then depends on timing; graph.TestJobStreamEvent
// holds the case where they are and nothing else tells the lag.)
func TestJobProgressConvergesAfterDrops(t *testing.T) {
	w := newAttackWorld(t, 1, func(c *server.Config) { c.RateLimit = 0 })
	ctx := context.Background()
	db := w.s.Srv.Store().DB()
	var job string
	if err := db.GetContext(ctx, &job, `SELECT latest_job_id FROM clusters WHERE id = $1`, w.clusters[0]); err != nil {
		t.Fatal(err)
	}
	tasks := servertest.CloneTasks(t, db, job, 6000)

	sub, err := w.s.Subscribe(w.alice, `subscription($id: ID!) { jobProgress(jobId: $id) { kind taskId state lagged } }`,
		map[string]any{"id": job})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	msgs := make(chan progressEvent, 1<<16)
	go func() {
		defer close(msgs)
		for {
			r, done, err := sub.Next(5 * time.Minute)
			if err != nil || done {
				return
			}
			var out struct{ JobProgress progressEvent }
			if err := r.Decode(&out); err != nil {
				return
			}
			msgs <- out.JobProgress
		}
	}()

	// The view: task states from a read of every task, then the events.
	states := map[string]string{}
	reads, applied := 0, 0
	read := func() {
		reads++
		var out struct {
			Job struct{ Tasks []struct{ ID, State string } }
		}
		for after := ""; ; {
			vars := map[string]any{"id": job, "first": 2000}
			if after != "" {
				vars["after"] = after
			}
			w.s.Must(w.alice, `query($id: ID!, $first: Int, $after: ID) { job(id: $id) { tasks(first: $first, after: $after) { id state } } }`, vars, &out)
			for _, t := range out.Job.Tasks {
				states[t.ID] = t.State
			}
			if len(out.Job.Tasks) < 2000 {
				return
			}
			after = out.Job.Tasks[len(out.Job.Tasks)-1].ID
		}
	}
	apply := func(e progressEvent) {
		if e.Kind == "SNAPSHOT" || e.Lagged {
			read()
		}
		if e.Kind == "TASK" && e.TaskID != nil {
			states[*e.TaskID] = e.State
			applied++
		}
	}
	// until applies what comes until nothing has for quiet.
	until := func(quiet time.Duration) {
		for {
			select {
			case e, ok := <-msgs:
				if !ok {
					t.Fatal("the subscription ended")
				}
				apply(e)
			case <-time.After(quiet):
				return
			}
		}
	}
	// The SNAPSHOT first (a loaded machine can take more than a second to
	// send it), then whatever follows it.
	for timeout := time.After(30 * time.Second); reads == 0; {
		select {
		case e, ok := <-msgs:
			if !ok {
				t.Fatal("the subscription ended")
			}
			apply(e)
		case <-timeout:
			t.Fatal("no SNAPSHOT in 30 s")
		}
	}
	until(time.Second)
	set := func(ids []string, state string) {
		st := make([]string, len(ids))
		for k := range st {
			st[k] = state
		}
		if err := setTaskStates(ctx, db, w.clusters[0], ids, st); err != nil {
			t.Fatal(err)
		}
	}
	hub := w.s.Srv.Hub()
	for round := range 6 {
		big := tasks[(round%3)*1500 : (round%3+1)*1500]
		small := tasks[5000+round*50 : 5000+(round+1)*50]
		state := []string{"IN_PROGRESS", "COMPLETE"}[round%2]
		done := make(chan struct{})
		go func() {
			defer close(done)
			set(big, state)
			time.Sleep(time.Duration(round*15) * time.Millisecond)
			set(small, "COMPLETE")
		}()
		<-done
		// The view must end at the store's states. Events come in relay
		// rounds, which a loaded machine (or another test's transaction
		// holding events back) can space out by more than any quiet spell
		// chosen here: apply what comes until the view matches, and fail
		// only if it still differs long after. A loss the subscriber was
		// never told of leaves it different for good.
		for deadline := time.Now().Add(30 * time.Second); ; {
			until(500 * time.Millisecond)
			// Read each time: the server's scheduler moves the job's
			// tasks too (queues them), not only this test.
			var stored []struct{ ID, State string }
			if err := db.SelectContext(ctx, &stored, `SELECT id::text AS id, state FROM tasks WHERE job_id = $1`, job); err != nil {
				t.Fatal(err)
			}
			wrong := 0
			var example string
			for _, s := range stored {
				if states[s.ID] != s.State {
					wrong++
					example = fmt.Sprintf("task %s is %s, the subscriber shows %s", s.ID, s.State, states[s.ID])
				}
			}
			if wrong == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %d of %d tasks differ from the store 30 s after the last change (%s): "+
					"a loss the subscriber was never told of (%d events applied, %d reads, %d dropped)",
					round, wrong, len(stored), example, applied, reads, hub.Dropped.Load())
			}
		}
	}
	t.Logf("the subscriber applied %d task events and read the tasks %d times; the hub dropped %d events",
		applied, reads, hub.Dropped.Load())
	if hub.Dropped.Load() == 0 {
		t.Errorf("no event was dropped: the test did not make the subscriber fall behind")
	}
}

// setTaskStates sets tasks' states with their events in one transaction,
// locking the rows in id order as the engine does.
func setTaskStates(ctx context.Context, db *sqlx.DB, cluster string, ids, states []string) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM tasks WHERE id::text = ANY($1) ORDER BY id FOR UPDATE`, pq.Array(ids)); err != nil {
		return fmt.Errorf("locking tasks: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `
		WITH u AS (
			UPDATE tasks SET state = x.state, attempt = 1 FROM unnest($1::text[], $2::text[]) AS x(id, state)
			WHERE tasks.id::text = x.id RETURNING tasks.id, tasks.job_id, tasks.tenant_id, tasks.state, tasks.attempt)
		INSERT INTO events (tenant_id, cluster_id, job_id, task_id, kind, state, attempt)
		SELECT tenant_id, $3, job_id, id, 'task', state, attempt FROM u`,
		pq.Array(ids), pq.Array(states), cluster); err != nil {
		return fmt.Errorf("task updates: %w", err)
	}
	return tx.Commit()
}
