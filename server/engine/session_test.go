package engine

import (
	"context"
	"testing"

	"github.com/cooprhq/coopr/store/storetest"
)

// A session the pool does not keep is closed, not handed back to the
// database pool with its settings.
func TestSessionSettingsStayInTheSession(t *testing.T) {
	db := storetest.New(t).DB()
	db.SetMaxOpenConns(1) // one connection: a returned session would be the next one used
	p := &sessions{db: db, setup: []string{`SET synchronous_commit = off`},
		query: `SELECT current_setting('synchronous_commit')`, maxIdle: 0}
	var got []string
	must(t, p.selectContext(context.Background(), &got))
	if len(got) != 1 || got[0] != "off" {
		t.Fatalf("in the session synchronous_commit = %v, want off", got)
	}
	var after string
	must(t, db.Get(&after, `SELECT current_setting('synchronous_commit')`))
	if after != "on" {
		t.Fatalf("the pool's next connection has synchronous_commit = %s: a session's setting leaked", after)
	}
}
