package main

import (
	"strings"
	"testing"

	"github.com/cooprhq/coopr/server/servertest"
)

// A command that groups others refuses an unknown one, suggesting the
// closest, instead of printing its help and succeeding; alone it helps.
func TestUnknownSubcommand(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"cluster", "lst"}, 1, `unknown command "lst" for "coopr cluster"; did you mean list?`},
		{[]string{"catalog", "frob"}, 1, `unknown command "frob" for "coopr catalog"`},
		{[]string{"local"}, 0, "Available Commands"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.contains) {
				t.Errorf("exit %d, want %d, with %q in:\n%s%s", code, tc.code, tc.contains, out, errOut)
			}
		})
	}
}

// Showing a cluster that does not exist (or is not the caller's) fails and
// says so, rather than printing an empty cluster.
func TestClusterShowNotFound(t *testing.T) {
	s := servertest.Start(t)
	t.Setenv("COOPR_SERVER", s.URL)
	t.Setenv("COOPR_TOKEN", s.Super)
	_, errOut, code := runCLI(t, "cluster", "show", "99999999")
	if code != 1 || !strings.Contains(errOut, "cluster 99999999: not found") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
