package credentials_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/cooprhq/coopr/server/credentials"
	"github.com/cooprhq/coopr/store/storetest"
	"github.com/jmoiron/sqlx"
)

func newStore(t *testing.T) *credentials.Store {
	t.Helper()
	c, err := credentials.New(credentials.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cluster makes a cluster to hold credentials in a fresh schema.
func cluster(t *testing.T) (*sqlx.DB, string) {
	t.Helper()
	st := storetest.New(t)
	ten, err := st.EnsureTenant(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := st.DB().GetContext(t.Context(), &id, `INSERT INTO clusters (tenant_id, name, status) VALUES ($1, 'c', 'ACTIVE') RETURNING id`, ten.ID); err != nil {
		t.Fatal(err)
	}
	return st.DB(), id
}

func put(t *testing.T, db *sqlx.DB, c *credentials.Store, cluster string, values map[string]any) {
	t.Helper()
	tx, err := db.BeginTxx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := c.Put(t.Context(), tx, cluster, "vm", values); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func version(t *testing.T, db *sqlx.DB, cluster string) string {
	t.Helper()
	var v string
	if err := db.GetContext(t.Context(), &v, `SELECT xmin::text FROM credentials WHERE cluster_id = $1 AND namespace = 'vm'`, cluster); err != nil {
		t.Fatal(err)
	}
	return v
}

func get(t *testing.T, db *sqlx.DB, c *credentials.Store, cluster string) map[string]any {
	t.Helper()
	all, err := c.Get(t.Context(), db, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return all["vm"]
}

// TestPutSameValuesWritesNothing: a driver reports the same secret with
// each task of every node; writing it again would lock the cluster's row
// until the finish commits (so its nodes' finishes queued on it) and change
// the version claims key the cluster's decrypted secrets by.
func TestPutSameValuesWritesNothing(t *testing.T) {
	db, cl := cluster(t)
	c := newStore(t)
	key := map[string]any{"privateKey": "k1"}
	put(t, db, c, cl, key)
	was := version(t, db, cl)

	// Another transaction holds the row: a Put of the same values neither
	// waits for it nor writes.
	holder, err := db.BeginTxx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback() }()
	if _, err := holder.ExecContext(t.Context(), `SELECT 1 FROM credentials WHERE cluster_id = $1 FOR UPDATE`, cl); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTxx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(t.Context(), `SET LOCAL lock_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(t.Context(), tx, cl, "vm", map[string]any{"privateKey": "k1"}); err != nil {
		t.Fatalf("a Put of the values stored waited for the row's lock: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Rollback()
	if v := version(t, db, cl); v != was {
		t.Errorf("the row was written again (version %s, was %s)", v, was)
	}

	// Other values are written.
	put(t, db, c, cl, map[string]any{"privateKey": "k2"})
	if v := version(t, db, cl); v == was {
		t.Error("new values were not written")
	}
	if got := get(t, db, c, cl); !reflect.DeepEqual(got, map[string]any{"privateKey": "k2"}) {
		t.Errorf("stored %v, want k2", got)
	}
}

// TestPutFirstValuesTogether: two transactions store a namespace that has
// none yet. The second waits for the first's commit; then it keeps the
// first's row when the values are the same and replaces them when not.
func TestPutFirstValuesTogether(t *testing.T) {
	for _, tc := range []struct {
		name          string
		second        string
		wantRewritten bool
	}{{"same", "k1", false}, {"other", "k2", true}} {
		t.Run(tc.name, func(t *testing.T) {
			db, cl := cluster(t)
			c := newStore(t)
			first, err := db.BeginTxx(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = first.Rollback() }()
			if err := c.Put(t.Context(), first, cl, "vm", map[string]any{"privateKey": "k1"}); err != nil {
				t.Fatal(err)
			}
			second, err := db.BeginTxx(context.WithoutCancel(t.Context()), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = second.Rollback() }()
			var pid int
			if err := second.GetContext(t.Context(), &pid, `SELECT pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- c.Put(t.Context(), second, cl, "vm", map[string]any{"privateKey": tc.second}) }()
			// The second Put waits on the first's insert until it commits.
			waitForLockWait(t, db, pid)
			if err := first.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			was := version(t, db, cl)
			if err := second.Commit(); err != nil {
				t.Fatal(err)
			}
			if rewritten := version(t, db, cl) != was; rewritten != tc.wantRewritten {
				t.Errorf("rewritten %v, want %v", rewritten, tc.wantRewritten)
			}
			if got := get(t, db, c, cl); !reflect.DeepEqual(got, map[string]any{"privateKey": tc.second}) {
				t.Errorf("stored %v, want %s", got, tc.second)
			}
		})
	}
}

// waitForLockWait returns once the session pid waits for a lock.
func waitForLockWait(t *testing.T, db *sqlx.DB, pid int) {
	t.Helper()
	for range 1000 {
		var n int
		if err := db.GetContext(t.Context(), &n, `SELECT count(*) FROM pg_stat_activity
			WHERE pid = $1 AND wait_event_type = 'Lock'`, pid); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if err := db.GetContext(t.Context(), &n, `SELECT 1 FROM pg_sleep(0.01)`); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("the second Put does not wait for the first's insert")
}
