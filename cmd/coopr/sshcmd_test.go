package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/remote/sshdtest"
)

// Issue 19: coopr ssh logs in to a node with real ssh, trusting only the
// host key coopr pinned; a host showing another key is refused. --print
// prints the command, whose pinned keys stay in the cache directory.
func TestSSHCommand(t *testing.T) {
	w := newCLIWorld(t)
	w.startAgent(t)
	id := w.create(t, "web-cluster", "demo", 2)
	w.await(t, id, "ACTIVE")

	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	out, errOut, code := w.cli(t, "ssh", "demo", "--print")
	if code != 0 {
		t.Fatalf("--print: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "the first of 2 nodes") {
		t.Errorf("--print without a node said %q, want which node of 2", errOut)
	}
	var nodes struct {
		Cluster struct {
			Nodes []struct{ ID, Hostname string }
		}
	}
	w.s.Must(w.token, `query($id: ID!) { cluster(id: $id) { nodes { id hostname } } }`, map[string]any{"id": id}, &nodes)
	n1 := nodes.Cluster.Nodes[0]
	known := filepath.Join(cache, "coopr", "known_hosts", id+"-"+n1.ID)
	want := "ssh -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + known + " -o GlobalKnownHostsFile=/dev/null " +
		"-o HostKeyAlias=coopr-node -o CheckHostIP=no -l root -- 10.0.0.1\n"
	if out != want {
		t.Errorf("--print:\n%s\nwant:\n%s", out, want)
	}
	if b, err := os.ReadFile(known); err != nil || string(b) != "coopr-node "+testHostKey(1000)+"\n" {
		t.Errorf("the pinned keys file: %q, %v", b, err)
	}
	// The second node by its short name, with ssh's own arguments.
	short, _, _ := strings.Cut(nodes.Cluster.Nodes[1].Hostname, ".")
	// w.cli's flags would go after --, to ssh.
	withSSHArgs := func(args []string, sshArgs ...string) (string, string, int) {
		return runCLI(t, append(append(args, "--server", w.s.URL, "--token", w.token, "--"), sshArgs...)...)
	}
	out, errOut, _ = withSSHArgs([]string{"ssh", "demo", short, "--print"}, "-p", "2222", "-t", "sudo -i")
	if !strings.HasSuffix(out, " -p 2222 -t -l root -- 10.0.0.2 'sudo -i'\n") || errOut != "" {
		t.Errorf("--print for %s with arguments: %q %q", short, out, errOut)
	}
	if _, errOut, code := w.cli(t, "ssh", "demo", "nosuch", "--print"); code != 1 || !strings.Contains(errOut, short) {
		t.Errorf("an unknown node: exit %d, %q; want 1 listing the nodes", code, errOut)
	}

	// A real host: the node's record points at it, as BOOTSTRAP would
	// have left it, and the user's key is authorized there.
	dir := t.TempDir()
	signer := newUserKey(t, dir)
	userKey := &sshdtest.Key{Signer: signer}
	pub, _ := os.ReadFile(filepath.Join(dir, "id.pub"))
	userKey.AuthorizedKey = strings.Join(strings.Fields(string(pub))[:2], " ")
	h := sshdtest.Start(t, sshdtest.Options{Key: userKey})
	point := func(hostKey string) {
		t.Helper()
		ips, _ := json.Marshal(map[string]string{"access_v4": h.IP})
		keys, _ := json.Marshal([]string{hostKey})
		if _, err := w.s.Srv.Store().DB().Exec(`UPDATE nodes SET ipaddresses = $1::jsonb,
			facts = jsonb_set(coalesce(facts, '{}'::jsonb), '{node}', jsonb_build_object('hostKeys', $2::jsonb)) WHERE id = $3`,
			string(ips), string(keys), n1.ID); err != nil {
			t.Fatal(err)
		}
	}
	point(h.HostKeyLine())
	login := []string{"-p", strconv.Itoa(h.Port), "-i", filepath.Join(dir, "id"),
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-F", "/dev/null", "echo", "logged in as", "$(id -un)"}
	out, errOut, code = withSSHArgs([]string{"ssh", "demo", n1.ID}, login...)
	if code != 0 || out != "logged in as root\n" {
		t.Fatalf("coopr ssh to the real host: exit %d, %q\n%s", code, out, errOut)
	}
	// The host shows another key than the pinned one: ssh refuses.
	h.RotateHostKey(t)
	out, errOut, code = withSSHArgs([]string{"ssh", "demo", n1.ID}, login...)
	if code != 255 || out != "" || !strings.Contains(errOut, "Host key verification failed") {
		t.Errorf("a host with another key: exit %d, %q, %q; want 255 and ssh's refusal", code, out, errOut)
	}
}
