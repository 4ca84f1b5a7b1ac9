// Package cooprcompat finds Coopr's own catalogs and acceptance cases for
// the tests that check coopr against them: Coopr's published catalog must
// import, resolve, solve and plan unchanged, and Coopr's solver and planner
// cases must come out as Coopr had them. That material is not part of this
// repository. COOPR_COMPAT_DIR names a directory holding catalogs/ and
// acceptance/; a relative path is taken from the repository root, and unset
// it is defaultDir. Where that directory does not
// exist the compatibility tests skip, so that a clone alone passes its
// tests; every other test uses the repository's own catalogs.
package cooprcompat

import (
	"os"
	"path/filepath"
	"testing"
)

// Env is the variable naming the directory.
const Env = "COOPR_COMPAT_DIR"

// defaultDir is where a checkout of the material sits beside the
// repository, relative to its root.
const defaultDir = "../shared"

// root is the repository root, found from the directory the test binary
// starts in (its package's) before any test can change it.
var root = findRoot()

// findRoot walks up from the working directory to the one holding go.mod;
// without one it is the working directory.
func findRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return wd
		}
		d = parent
	}
}

// Dir returns the directory COOPR_COMPAT_DIR names (or the default),
// absolute, and whether it exists.
func Dir() (string, bool) {
	d := os.Getenv(Env)
	if d == "" {
		d = defaultDir
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(root, d)
	}
	fi, err := os.Stat(d)
	return d, err == nil && fi.IsDir()
}

// Path returns the path elem names inside the directory. It skips t when
// the directory does not exist, and fails t when the directory exists but
// lacks that path: then COOPR_COMPAT_DIR names the wrong directory.
func Path(t testing.TB, elem ...string) string {
	t.Helper()
	d, ok := Dir()
	if !ok {
		t.Skipf("Coopr compatibility: %s (%s, default %s) not found; set %s to a checkout holding catalogs/ and acceptance/ to run it", d, Env, defaultDir, Env)
	}
	p := filepath.Join(append([]string{d}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("Coopr compatibility: %s is %s, which has no %s: point it at a checkout holding catalogs/ and acceptance/", Env, d, filepath.Join(elem...))
	}
	return p
}

// Catalog is the path of one of Coopr's catalogs: "coopr-templates" or
// "coopr-plugin-types".
func Catalog(t testing.TB, name string) string {
	t.Helper()
	return Path(t, "catalogs", name)
}

// Cases returns the files of Coopr's acceptance cases of one suite
// ("solver" or "planner"), failing t when there are none.
func Cases(t testing.TB, suite string) []string {
	t.Helper()
	dir := Path(t, "acceptance", suite)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("Coopr compatibility: no acceptance cases in %s (%v)", dir, err)
	}
	return files
}
