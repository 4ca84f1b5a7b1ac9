// Package packaging holds the systemd units, example settings and nfpm
// configuration of the coopr .deb; its tests check the units with
// systemd's own verifier and build and inspect the package.
package packaging

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// coopr is a freshly built binary, for ExecStart= and the package.
var coopr string

const testVersion = "9.9.9-packaging-test"

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "coopr-packaging-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		coopr = filepath.Join(dir, "coopr")
		build := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion, "-o", coopr, "../cmd/coopr")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build coopr: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (Debian: apt-get install systemd dpkg)", tool)
		}
	}
}

// `systemd-analyze verify` on copies of the units whose ExecStart= runs
// a real coopr binary (verify refuses a missing one). It exits 0 on
// unknown keys and bad values and only warns, so any line about our files
// is a failure.
func TestUnitsVerify(t *testing.T) {
	need(t, "systemd-analyze")
	tests := []struct {
		name        string
		unit        string
		dropin      string // a packaging file to install as <unit>.d/local.conf
		extra       string // appended to the unit
		dropinExtra string // appended to the drop-in
		wantProblem bool
	}{
		{name: "server", unit: "coopr-server.service"},
		{name: "agent", unit: "coopr-agent.service"},
		{name: "agent with the local drop-in", unit: "coopr-agent.service", dropin: "coopr-agent-local.conf"},
		// The checker itself: problems in our units are seen.
		{name: "unknown key", unit: "coopr-agent.service", extra: "[Service]\nRestartSecs=5s\n", wantProblem: true},
		{name: "bad value", unit: "coopr-server.service", extra: "[Service]\nKillMode=gently\n", wantProblem: true},
		{name: "drop-in problem", unit: "coopr-agent.service", dropin: "coopr-agent-local.conf", dropinExtra: "ProtectSystem=mostly\n",
			wantProblem: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "coopr-units")
			src, err := os.ReadFile(tt.unit)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(src, []byte("\nExecStart=/usr/bin/coopr ")) {
				t.Fatalf("%s does not run /usr/bin/coopr", tt.unit)
			}
			unit := strings.ReplaceAll(string(src), "\nExecStart=/usr/bin/coopr ", "\nExecStart="+coopr+" ") + tt.extra
			path := filepath.Join(dir, tt.unit)
			if tt.dropin != "" {
				conf, err := os.ReadFile(tt.dropin)
				if err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(path+".d", "local.conf"), append(conf, tt.dropinExtra...))
			}
			write(t, path, []byte(unit))
			out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
			var problems []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				// Our files all have coopr in their path; other lines are
				// about the host's units.
				if strings.Contains(l, "coopr") {
					problems = append(problems, l)
				} else if l != "" {
					t.Logf("host: %s", l)
				}
			}
			if err != nil {
				problems = append(problems, err.Error())
			}
			if got := len(problems) > 0; got != tt.wantProblem {
				t.Errorf("problems %q, want some: %v", problems, tt.wantProblem)
			}
		})
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The settings the units promise: readiness and watchdog through
// sd_notify, restarts, the coopr user, settings files and a sandbox.
func TestUnitSettings(t *testing.T) {
	common := map[string]string{"Type": "notify", "NotifyAccess": "main", "Restart": "on-failure", "RestartSec": "5s",
		"User": "coopr", "Group": "coopr", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ReadWritePaths": "/var/lib/coopr",
		"ProtectHome": "yes", "PrivateTmp": "yes", "StateDirectory": "coopr"}
	tests := []struct {
		unit string
		want map[string]string
	}{
		{"coopr-server.service", map[string]string{"EnvironmentFile": "-/etc/coopr/server.env", "ExecStart": "/usr/bin/coopr server",
			// Fed only while the scheduler, the event relay and HTTP run.
			"WatchdogSec": "30s"}},
		{"coopr-agent.service", map[string]string{"EnvironmentFile": "-/etc/coopr/agent.env",
			"ExecStart": "/usr/bin/coopr agent --config /etc/coopr/agent.yaml", "WatchdogSec": "30s",
			// The agent stops its tasks itself, after their grace.
			"KillMode": "mixed"}},
		{"coopr-agent-local.conf", map[string]string{"User": "root", "NoNewPrivileges": "no", "RestrictNamespaces": "no"}},
	}
	for _, tt := range tests {
		t.Run(tt.unit, func(t *testing.T) {
			b, err := os.ReadFile(tt.unit)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, l := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "#") {
					got[k] = v
				}
			}
			want := tt.want
			if strings.HasSuffix(tt.unit, ".service") {
				for k, v := range common {
					if _, ok := want[k]; !ok {
						want[k] = v
					}
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s=%q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// The package as `make package` builds it, inspected with dpkg-deb.
func TestDeb(t *testing.T) {
	need(t, "dpkg-deb", "go")
	dir := t.TempDir()
	nfpm := exec.Command("go", "tool", "nfpm", "package", "-f", "packaging/nfpm.yaml", "-p", "deb", "-t", dir+"/")
	nfpm.Dir = ".."
	nfpm.Env = append(os.Environ(), "COOPR_BIN="+coopr, "COOPR_PKG_VERSION=1.2.3", "GOARCH="+runtime.GOARCH)
	if out, err := nfpm.CombinedOutput(); err != nil {
		t.Fatalf("nfpm: %v\n%s", err, out)
	}
	deb := filepath.Join(dir, "coopr_1.2.3_"+runtime.GOARCH+".deb")
	dpkg := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("dpkg-deb", append(args, deb)...).CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg-deb %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	if got, want := dpkg("-f"), "Package: coopr\n"; !strings.HasPrefix(got, want) {
		t.Errorf("control:\n%s", got)
	}
	for _, f := range []string{"Version: 1.2.3", "Architecture: " + runtime.GOARCH} {
		if !strings.Contains(dpkg("-f"), f+"\n") {
			t.Errorf("control lacks %q", f)
		}
	}

	// Files: path -> mode and owner.
	files := map[string]string{}
	for _, l := range strings.Split(dpkg("-c"), "\n") {
		if f := strings.Fields(l); len(f) == 6 {
			files[f[5]] = f[0] + " " + f[1]
		}
	}
	for path, want := range map[string]string{
		"./usr/bin/coopr": "-rwxr-xr-x root/root",
		"./lib/systemd/system/coopr-server.service": "-rw-r--r-- root/root",
		"./lib/systemd/system/coopr-agent.service":  "-rw-r--r-- root/root",
		"./usr/share/coopr/coopr-agent-local.conf":  "-rw-r--r-- root/root",
		// Secrets live here: readable by the services' group only.
		"./etc/coopr/server.env": "-rw-r----- root/coopr",
		"./etc/coopr/agent.env":  "-rw-r----- root/coopr",
		"./etc/coopr/agent.yaml": "-rw-r----- root/coopr",
	} {
		if files[path] != want {
			t.Errorf("%s: %q, want %q", path, files[path], want)
		}
	}

	ctrl := filepath.Join(dir, "control")
	if out, err := exec.Command("dpkg-deb", "-e", deb, ctrl).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -e: %v\n%s", err, out)
	}
	conffiles := read(t, filepath.Join(ctrl, "conffiles"))
	for _, f := range []string{"/etc/coopr/server.env", "/etc/coopr/agent.env", "/etc/coopr/agent.yaml"} {
		if !strings.Contains(conffiles, f+"\n") {
			t.Errorf("%s is not a conffile (noreplace): %q", f, conffiles)
		}
	}
	for script, wants := range map[string][]string{
		"preinst":  {"groupadd --system coopr", "useradd --system --gid coopr"},
		"postinst": {"install -d -o coopr -g coopr -m 0750 /var/lib/coopr", "daemon-reload"},
		"prerm":    {"disable --now coopr-agent.service coopr-server.service"},
		"postrm":   {"rm -rf /var/lib/coopr"},
	} {
		path := filepath.Join(ctrl, script)
		body := read(t, path)
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", script, w)
			}
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable", script)
		}
		if out, err := exec.Command("sh", "-n", path).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", script, err, out)
		}
	}

	// The payload is what we built and what packaging/ holds.
	root := filepath.Join(dir, "root")
	if out, err := exec.Command("dpkg-deb", "-x", deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	for dst, src := range map[string]string{
		"usr/bin/coopr": coopr,
		"lib/systemd/system/coopr-server.service": "coopr-server.service",
		"lib/systemd/system/coopr-agent.service":  "coopr-agent.service",
		"etc/coopr/agent.yaml":                    "agent.yaml.example",
		"etc/coopr/agent.env":                     "agent.env.example",
		"etc/coopr/server.env":                    "server.env.example",
	} {
		if read(t, filepath.Join(root, dst)) != read(t, src) {
			t.Errorf("%s differs from %s", dst, src)
		}
	}
	out, err := exec.Command(filepath.Join(root, "usr/bin/coopr"), "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), testVersion) {
		t.Errorf("packaged coopr --version: %v %s", err, out)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
