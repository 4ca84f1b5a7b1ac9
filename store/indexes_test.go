package store_test

import (
	"reflect"
	"testing"

	"github.com/cooprhq/coopr/store/storetest"
)

// TestHotTablesIndexes pins the indexes of the tables every task writes
// rows into, several times over: each index costs each row written an
// insert (docs/performance.md, "Postgres's cost per task, again"). An
// index added here needs a reader that a sweep of the table cannot serve.
func TestHotTablesIndexes(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	for _, tc := range []struct {
		table string
		want  []string
	}{
		// The relay and webhook deliveries read events by txid; nothing
		// reads them by cluster or by job.
		{"events", []string{"events_pkey", "events_txid"}},
	} {
		t.Run(tc.table, func(t *testing.T) {
			var got []string
			if err := s.DB().SelectContext(t.Context(), &got, `SELECT indexname FROM pg_indexes
				WHERE schemaname = current_schema() AND tablename = $1 ORDER BY indexname`, tc.table); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("indexes on %s = %v, want %v", tc.table, got, tc.want)
			}
		})
	}
}
