package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cooprhq/coopr/remote/sshdtest"
)

// BenchmarkBuildVsAnsible builds N nodes of base + web from the example
// catalog with coopr, then the same steps with one Ansible playbook
// (forks = N) on the same kind of nodes, and prints both wall times.
//
//	go test -run '^$' -bench BuildVsAnsible -benchtime 1x ./e2e/   (COOPR_BENCH_NODES, default 50)
func BenchmarkBuildVsAnsible(b *testing.B) {
	n := 50
	if v := os.Getenv("COOPR_BENCH_NODES"); v != "" {
		fmt.Sscan(v, &n)
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		b.Fatal("ansible-playbook not found: apt-get install ansible")
	}
	for range b.N {
		w := newWorld(b, n)
		w.startAgent(b, "bench", n)
		w.s.Must(w.admin, `mutation($e: JSON!) { putCatalogEntity(kind: CLUSTERTEMPLATES, entity: $e) { entity { version } } }`,
			map[string]any{"e": map[string]any{"name": "web-farm", "description": "N web servers",
				"defaults": map[string]any{"services": []string{"base", "web"}, "provider": "local", "hardwaretype": "small",
					"imagetype": "debian12", "config": map[string]any{"web": map[string]any{"greeting": "hello from coopr"}}},
				"compatibility": map[string]any{"services": []string{"base", "web"}}}}, &struct{}{})

		start := time.Now()
		id := w.create(b, "web-farm", "", n)
		w.follow(b, id, "ACTIVE", 20*time.Minute)
		coopr := phases{total: time.Since(start)}
		coopr.machines, coopr.services = w.phaseTimes(b, id)
		w.delete(b, id)
		w.follow(b, id, "TERMINATED", 10*time.Minute)

		ans := ansibleBuild(b, w, n)
		fmt.Printf("\n%d nodes of base + web (local nspawn nodes, 2 cores)\n", n)
		fmt.Printf("%-44s %10s %10s %8s\n", "phase", "coopr", "ansible", "ratio")
		for _, r := range []struct {
			name string
			c, a time.Duration
		}{
			{"machines (create + confirm)", coopr.machines, ans.machines},
			{"services (bootstrap, hosts, base, web)", coopr.services, ans.services},
			{"total", coopr.total, ans.total},
		} {
			fmt.Printf("%-44s %9.1fs %9.1fs %8.2f\n", r.name, r.c.Seconds(), r.a.Seconds(), r.c.Seconds()/r.a.Seconds())
		}
		b.ReportMetric(coopr.services.Seconds(), "coopr-services-s")
		b.ReportMetric(ans.services.Seconds(), "ansible-services-s")
		b.ReportMetric(coopr.total.Seconds(), "coopr-total-s")
		b.ReportMetric(ans.total.Seconds(), "ansible-total-s")
	}
}

type phases struct{ machines, services, total time.Duration }

// phaseTimes reads the create job's tasks: machines run from the first
// CREATE's claim to the last CONFIRM's end; services from the first
// BOOTSTRAP's claim to the last task's end.
func (w *world) phaseTimes(t testing.TB, id string) (machines, services time.Duration) {
	t.Helper()
	var out struct {
		Cluster struct {
			Jobs []struct {
				Tasks []struct {
					Action   string
					Attempts []struct {
						ClaimedAt  time.Time
						FinishedAt *time.Time
					}
				}
			}
		}
	}
	w.s.Must(w.admin, `query($id: ID!) { cluster(id: $id) { jobs { tasks { action attempts { claimedAt finishedAt } } } } }`,
		map[string]any{"id": id}, &out)
	job := out.Cluster.Jobs[len(out.Cluster.Jobs)-1] // the create
	var createStart, confirmEnd, bootStart, lastEnd time.Time
	for _, tk := range job.Tasks {
		for _, a := range tk.Attempts {
			end := a.ClaimedAt
			if a.FinishedAt != nil {
				end = *a.FinishedAt
			}
			switch tk.Action {
			case "CREATE":
				if createStart.IsZero() || a.ClaimedAt.Before(createStart) {
					createStart = a.ClaimedAt
				}
			case "CONFIRM":
				if end.After(confirmEnd) {
					confirmEnd = end
				}
			case "BOOTSTRAP":
				if bootStart.IsZero() || a.ClaimedAt.Before(bootStart) {
					bootStart = a.ClaimedAt
				}
			}
			if end.After(lastEnd) {
				lastEnd = end
			}
		}
	}
	return confirmEnd.Sub(createStart), lastEnd.Sub(bootStart)
}

// ansibleBuild makes n nodes with the local driver and runs the catalog's
// own scripts on them with ansible-playbook, forks = n: the hostname and
// facts (coopr's BOOTSTRAP), every node's name in /etc/hosts (NETWORK_
// CONFIGURE), then base and web's install, configure and start.
func ansibleBuild(t testing.TB, w *world, n int) phases {
	t.Helper()
	key := sshdtest.NewKey(t)
	start := time.Now()
	hosts := poolHosts(t, w, n, key.AuthorizedKey)
	var p phases
	p.machines = time.Since(start)

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, key.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	var inv strings.Builder
	inv.WriteString("[web]\n")
	for i, h := range hosts {
		fmt.Fprintf(&inv, "node%d ansible_host=%s coopr_hostname=bench-%d.local coopr_nodenum=%d\n", i, h, i, 1000+i)
	}
	if err := os.WriteFile(filepath.Join(dir, "inventory"), []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(map[string]any{"web": map[string]any{"greeting": "hello from ansible"}})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), config, 0o600); err != nil {
		t.Fatal(err)
	}
	play := playbook(t, []step{{"base", "install"}, {"base", "configure"}, {"web", "install"}, {"web", "configure"}, {"web", "start"}})
	if err := os.WriteFile(filepath.Join(dir, "play.yml"), []byte(play), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ansible-playbook", "-i", "inventory", "-f", fmt.Sprint(n), "play.yml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ANSIBLE_HOST_KEY_CHECKING=False", "ANSIBLE_PIPELINING=True", "ANSIBLE_REMOTE_USER=root",
		"ANSIBLE_PRIVATE_KEY_FILE="+keyFile, "ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "HOME="+dir,
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"), "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	start = time.Now()
	out, err := cmd.CombinedOutput()
	p.services = time.Since(start)
	if testing.Verbose() {
		t.Logf("ansible-playbook:\n%s", tail(string(out), 40))
	}
	if err != nil {
		t.Fatalf("ansible-playbook: %v\n%s", err, tail(string(out), 40))
	}
	if !strings.Contains(string(out), "failed=0") {
		t.Fatalf("ansible-playbook reported failures:\n%s", tail(string(out), 40))
	}
	got := answers(t, "http://"+hosts[0]+"/", []string{"bench-0.local"}, 10*time.Second)
	if got["bench-0.local"] != "bench-0.local hello from ansible" {
		t.Fatalf("an ansible-built node answers %q", got["bench-0.local"])
	}
	p.total = p.machines + p.services
	return p
}

type step struct{ service, action string }

// playbook runs the example catalog's scripts, unchanged, with the
// environment the shell automator gives them.
func playbook(t testing.TB, steps []step) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`- hosts: web
  gather_facts: true
  tasks:
    - name: hostname
      ansible.builtin.shell: hostname {{ coopr_hostname }} && echo {{ coopr_hostname }} > /etc/hostname
    - name: cluster names in /etc/hosts
      ansible.builtin.blockinfile:
        path: /etc/hosts
        unsafe_writes: true
        marker: "# {mark} coopr bench"
        block: |
          {% for h in groups['web'] %}
          {{ hostvars[h].ansible_host }} {{ hostvars[h].coopr_hostname }}
          {% endfor %}
    - name: cluster config
      ansible.builtin.copy:
        src: config.json
        dest: /var/lib/coopr-bench.json
        mode: "0600"
`)
	for _, s := range steps {
		raw, err := os.ReadFile(filepath.Join("../examples/catalog/services", s.service+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var svc struct {
			Provisioner struct {
				Actions map[string]struct {
					Fields map[string]string
				}
			}
		}
		if err := json.Unmarshal(raw, &svc); err != nil {
			t.Fatal(err)
		}
		script := svc.Provisioner.Actions[s.action].Fields["script"]
		if script == "" {
			t.Fatalf("%s has no %s script", s.service, s.action)
		}
		fmt.Fprintf(&b, "    - name: %s %s\n      ansible.builtin.shell: |\n", s.service, s.action)
		for _, line := range strings.Split(strings.TrimRight(script, "\n"), "\n") {
			fmt.Fprintf(&b, "        %s\n", line)
		}
		fmt.Fprintf(&b, `      args:
        executable: /bin/sh
      environment:
        COOPR_CONFIG: /var/lib/coopr-bench.json
        COOPR_SERVICE: %s
        COOPR_ACTION: %s
        COOPR_HOSTNAME: "{{ coopr_hostname }}"
        COOPR_NODENUM: "{{ coopr_nodenum }}"
        COOPR_CLUSTER_ID: bench
`, s.service, strings.ToUpper(s.action))
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
