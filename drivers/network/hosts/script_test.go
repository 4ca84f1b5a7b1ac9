package hosts_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/drivers/network/hosts"
	"github.com/cooprhq/coopr/remote"
)

// shells are the /bin/sh coopr meets on nodes; those not installed here are
// skipped.
var shells = [][]string{{"dash"}, {"busybox", "ash"}, {"mksh"}, {"bash", "--posix"}}

// localRunner runs the script as the node's /bin/sh -s would, on this
// machine: the shell reads it from stdin as it goes.
func localRunner(t *testing.T, shell []string) hosts.Runner {
	return func(script io.Reader, stdout func(string)) error {
		cmd := exec.Command(shell[0], append(shell[1:], "-s")...)
		cmd.Stdin = script
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			stdout(sc.Text())
		}
		err = cmd.Wait()
		if stderr := strings.TrimSpace(errb.String()); stderr != "" {
			t.Logf("%s stderr: %s", shell[0], stderr)
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return &remote.ExitError{Code: ee.ExitCode(), Stderr: strings.TrimSpace(errb.String())}
		}
		return err
	}
}

// tricky has what a shell could mangle: CRLF, backslashes, quotes, blanks
// at either end, words a test could take for operators, bytes shells use
// internally and invalid UTF-8, and no final newline.
const tricky = "127.0.0.1 localhost\r\n\\n \\\\ 'q' \"d\" $HOME `x`\n  \t lead and trail \t \n\n-n\n(\n!\n=\n" +
	"\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\xff\xfe caf\xc3\xa9\n# BEGIN coopr other\n10.1.1.1 x\n# END coopr other\n::1 ip6-localhost"

const block = "# BEGIN coopr c1\n10.0.0.1 n1.c1.test n1\n# END coopr c1\n"

// The script keeps every byte of the file outside the block with each
// shell, renames a regular file into place, writes a symlink's target in
// place, leaves an unchanged file alone and leaves no temporary file.
func TestScriptShells(t *testing.T) {
	large := tricky + "\n" + strings.Repeat("10.9.9.9 filler.example filler\n", 100)
	withNUL := "127.0.0.1 localhost\n\x00nul\x00\n"
	for _, shell := range shells {
		if _, err := exec.LookPath(shell[0]); err != nil {
			t.Logf("%s: not installed", shell[0])
			continue
		}
		t.Run(shell[0], func(t *testing.T) {
			t.Parallel()
			run := localRunner(t, shell)
			for _, tc := range []struct {
				name, initial string
				symlink       bool
			}{
				{"small", tricky, false},
				{"large", large, false},
				{"empty", "", false},
				{"NUL bytes", withNUL, false},
				{"symlink", tricky, true},
				{"large symlink", large, true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					dir, path, file := hostsFile(t, tc.initial, 0o600, tc.symlink)
					before := stat(t, file)
					changed, err := hosts.Exchange(path, "c1", block, nil, run)
					if err != nil || !changed {
						t.Fatalf("changed %v, err %v", changed, err)
					}
					want := hosts.Apply(tc.initial, "c1", block)
					if got := read(t, path); got != want {
						t.Fatalf("got\n%q\nwant\n%q", got, want)
					}
					after := stat(t, file)
					if tc.symlink {
						if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
							t.Fatalf("the symlink is gone: %v %v", fi, err)
						}
						if !os.SameFile(before, after) {
							t.Error("the symlink's target was replaced, not written in place")
						}
					} else {
						if os.SameFile(before, after) {
							t.Error("written in place, not renamed into place")
						}
						if after.Mode().Perm() != 0o644 {
							t.Errorf("mode %v, want 0644", after.Mode().Perm())
						}
					}
					// Nothing to change: the file is not touched.
					changed, err = hosts.Exchange(path, "c1", block, nil, run)
					if err != nil || changed {
						t.Fatalf("again: changed %v, err %v", changed, err)
					}
					if again := stat(t, file); !os.SameFile(after, again) || !again.ModTime().Equal(after.ModTime()) {
						t.Error("an unchanged file was written")
					}
					// And back.
					if _, err := hosts.Exchange(path, "c1", "", nil, run); err != nil {
						t.Fatal(err)
					}
					if got := read(t, path); got != hosts.Apply(want, "c1", "") {
						t.Fatalf("after removing the block:\n%q", got)
					}
					noTemporary(t, dir)
				})
			}
		})
	}
}

// A writer coming between the read and the write wins: the script exits
// with the code for it and leaves that writer's content, whether the check
// reads the file with the shell (small) or base64 (large), and even when
// the content differs in one byte and keeps its size.
func TestScriptCompareAndSwap(t *testing.T) {
	large := strings.Repeat("10.9.9.9 filler.example filler\n", 100)
	for _, shell := range shells {
		if _, err := exec.LookPath(shell[0]); err != nil {
			continue
		}
		t.Run(shell[0], func(t *testing.T) {
			t.Parallel()
			run := localRunner(t, shell)
			for _, tc := range []struct {
				name, initial, theirs string
				symlink               bool
			}{
				{"small", tricky, strings.Replace(tricky, "lead", "LEAD", 1), false},
				{"small, a final newline added", tricky, tricky + "\n", false},
				{"large", large, strings.Replace(large, "9.9.9", "9.9.8", 1), false},
				{"symlink", tricky, tricky + "10.2.2.2 y\n", true},
			} {
				t.Run(tc.name, func(t *testing.T) {
					dir, path, file := hostsFile(t, tc.initial, 0o644, tc.symlink)
					_, err := hosts.Exchange(path, "c1", block, func() {
						if err := os.WriteFile(file, []byte(tc.theirs), 0o644); err != nil {
							t.Error(err)
						}
					}, run)
					if !errors.Is(err, hosts.ErrChanged) {
						t.Fatalf("err %v, want %v", err, hosts.ErrChanged)
					}
					if got := read(t, path); got != tc.theirs {
						t.Fatalf("the other writer's content was overwritten:\n%q", got)
					}
					noTemporary(t, dir)
				})
			}
		})
	}
}

// hostsFile makes a hosts file holding content in a new directory: path
// is what the script is given, file where the content is (a symlink's
// target, or path itself).
func hostsFile(t *testing.T, content string, mode os.FileMode, symlink bool) (dir, path, file string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "hosts")
	file = path
	if symlink {
		file = filepath.Join(dir, "real-hosts")
		if err := os.Symlink("real-hosts", path); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(file, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return dir, path, file
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noTemporary(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".hosts.") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
