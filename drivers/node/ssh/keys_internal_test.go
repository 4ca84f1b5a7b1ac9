package sshnode

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// The keys' script stops at its first failing step, as its set -e says,
// and the rest does not run.
func TestKeysFirstStopsAtAFailure(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("sh", "-c", keysFirst("set -e\nfalse\necho keys-went-on", "echo rest-ran")).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != keysFailed {
		t.Fatalf("exit %v, want %d: %s", err, keysFailed, out)
	}
	if strings.Contains(string(out), "keys-went-on") || strings.Contains(string(out), "rest-ran") {
		t.Errorf("ran past the failure: %s", out)
	}
}
