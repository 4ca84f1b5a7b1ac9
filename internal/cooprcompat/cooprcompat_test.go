package cooprcompat

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stopped is what recorder panics with, standing in for the Goexit of a
// real Skip or Fatal.
type stopped struct{}

// recorder is a testing.TB whose Skipf and Fatalf record the message and
// stop the caller, so that the test of Path neither skips nor fails.
type recorder struct {
	testing.TB
	skip, fatal string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skip = sprintf(format, args...)
	panic(stopped{})
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = sprintf(format, args...)
	panic(stopped{})
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// path runs Path against r, returning what it returned if it did.
func path(r *recorder, elem ...string) (p string) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopped); !ok {
				panic(v)
			}
		}
	}()
	return Path(r, elem...)
}

func TestPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "catalogs", "coopr-templates"), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Setenv(Env, dir)
	r := &recorder{TB: t}
	if got, want := path(r, "catalogs", "coopr-templates"), filepath.Join(dir, "catalogs", "coopr-templates"); got != want || r.skip != "" || r.fatal != "" {
		t.Errorf("present: %q (skip %q, fatal %q), want %q", got, r.skip, r.fatal, want)
	}

	r = &recorder{TB: t}
	if path(r, "acceptance", "solver"); r.fatal == "" || !strings.Contains(r.fatal, "acceptance/solver") {
		t.Errorf("the directory without the path: fatal %q, want one naming acceptance/solver", r.fatal)
	}

	missing := filepath.Join(dir, "nowhere")
	t.Setenv(Env, missing)
	r = &recorder{TB: t}
	if path(r, "catalogs"); !strings.Contains(r.skip, missing) || !strings.Contains(r.skip, Env) || strings.Contains(r.skip, "\n") || r.fatal != "" {
		t.Errorf("absent: skip %q, fatal %q, want one line naming %s and %s", r.skip, r.fatal, missing, Env)
	}
}

func TestDirRelativeToRoot(t *testing.T) {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("root %s holds no go.mod", root)
	}
	t.Setenv(Env, "")
	if d, _ := Dir(); d != filepath.Join(filepath.Dir(root), "shared") {
		t.Errorf("default %s, want ../shared beside %s", d, root)
	}
	t.Setenv(Env, "internal")
	if d, ok := Dir(); d != filepath.Join(root, "internal") || !ok {
		t.Errorf("relative: %s %v, want %s/internal, existing", d, ok, root)
	}
}
