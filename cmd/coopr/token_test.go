package main

import (
	"context"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

// `token create --agent` makes a token bound to --agent-id, and refuses
// to make one without it.
func TestTokenCreateAgentBound(t *testing.T) {
	dsn, _ := storetest.NewDSN(t)
	t.Setenv("COOPR_DATABASE_URL", dsn)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token", "create", "--agent"}, 1, "--agent-id"},
		{[]string{"token", "create", "--agent-id", "web-1"}, 1, "add --agent"},
		{[]string{"token", "create", "--agent", "--agent-id", "web 1"}, 1, "not allowed"},
		{[]string{"token", "create", "--agent", "--agent-id", "web-*"}, 0, "coopr_"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d, with %q in:\n%s%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
		if code == 0 {
			st, err := store.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			p, err := st.Authenticate(context.Background(), strings.TrimSpace(out))
			st.Close()
			if err != nil || !p.MayActAs("web-2") || p.MayActAs("db-1") {
				t.Errorf("the token: %+v, %v: want one serving web-* only", p, err)
			}
		}
	}
}
