package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// newUserKey writes a fresh ed25519 key pair in the OpenSSH formats to dir
// (id, id.pub) and returns the signer.
func newUserKey(t *testing.T, dir string) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pub := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " me@laptop\n"
	if err := os.WriteFile(filepath.Join(dir, "id"), pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id.pub"), []byte(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	return signer
}

// The key commands add a public key to the caller's profile, list and
// remove it, and refuse a private key or garbage naming the field.
func TestKeyCommands(t *testing.T) {
	w := newCLIWorld(t)
	dir := t.TempDir()
	signer := newUserKey(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "junk"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := w.cli(t, "key", "add", filepath.Join(dir, "id.pub"))
	if code != 0 {
		t.Fatalf("add: exit %d\n%s%s", code, out, errOut)
	}
	fp := ssh.FingerprintSHA256(signer.PublicKey())
	m := regexp.MustCompile(`^key (\S+) added \(ssh-ed25519 (\S+)\)\n$`).FindStringSubmatch(out)
	if m == nil || m[2] != fp {
		t.Fatalf("add said %q, want the key's id and fingerprint %s", out, fp)
	}
	id := m[1]
	for _, tt := range []struct{ file, want string }{
		{"id", "private key"},
		{"junk", "give one line like"},
		{"id.pub", "already"},
	} {
		out, errOut, code := w.cli(t, "key", "add", filepath.Join(dir, tt.file))
		if code != 1 || !strings.Contains(errOut, "publicKey") || !strings.Contains(errOut, tt.want) {
			t.Errorf("add %s: exit %d, %q%q; want 1 naming publicKey and saying %q", tt.file, code, out, errOut, tt.want)
		}
		if strings.Contains(errOut, "PRIVATE") {
			t.Errorf("add %s echoed the key: %q", tt.file, errOut)
		}
	}

	out, _, _ = w.cli(t, "key", "list", "-o", "json")
	var keys []shownSSHKey
	if err := json.Unmarshal([]byte(out), &keys); err != nil || len(keys) != 1 || keys[0].ID != id ||
		keys[0].Name != "me@laptop" || keys[0].Type != "ssh-ed25519" || keys[0].Fingerprint != fp {
		t.Errorf("list -o json: %v %s", err, out)
	}
	out, _, _ = w.cli(t, "key", "list")
	if !strings.Contains(out, "FINGERPRINT") || !strings.Contains(out, fp) || !strings.Contains(out, "me@laptop") {
		t.Errorf("list: %q", out)
	}
	if out, errOut, code := w.cli(t, "key", "remove", id); code != 0 || out != "key "+id+" removed\n" {
		t.Fatalf("remove: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := w.cli(t, "key", "remove", id); code != 1 || !strings.Contains(errOut, "no SSH key") {
		t.Errorf("remove again: exit %d, %q", code, errOut)
	}
	if out, _, _ := w.cli(t, "key", "list"); !strings.HasPrefix(out, "no SSH keys") {
		t.Errorf("list after remove: %q", out)
	}

	// - reads the key from standard input.
	pub, err := os.ReadFile(filepath.Join(dir, "id.pub"))
	if err != nil {
		t.Fatal(err)
	}
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = stdin })
	go func() { _, _ = pw.Write(pub); pw.Close() }()
	out, errOut, code = w.cli(t, "key", "add", "-", "--name", "piped", "-o", "json")
	os.Stdin = stdin
	var added shownSSHKey
	if err := json.Unmarshal([]byte(out), &added); code != 0 || err != nil || added.Name != "piped" || added.Fingerprint != fp {
		t.Errorf("add - --name piped: exit %d, %q %q", code, out, errOut)
	}
}

// tenant admin-keys turns the tenant's adminSSHKeys setting on and off.
func TestTenantAdminKeysCommand(t *testing.T) {
	w := newCLIWorld(t)
	setting := func() bool {
		var me struct {
			Me struct{ Tenant struct{ AdminSSHKeys bool } }
		}
		w.s.Must(w.token, `{ me { tenant { adminSSHKeys } } }`, nil, &me)
		return me.Me.Tenant.AdminSSHKeys
	}
	if setting() {
		t.Fatal("adminSSHKeys is on by default")
	}
	for _, tt := range []struct {
		arg, out string
		want     bool
	}{
		{"on", "tenant cli: admins' SSH keys are let in on every cluster; ACTIVE clusters are updating\n", true},
		{"off", "tenant cli: admins' SSH keys are no longer let in on every cluster; ACTIVE clusters are updating\n", false},
	} {
		out, errOut, code := w.cli(t, "tenant", "admin-keys", tt.arg)
		if code != 0 || out != tt.out || setting() != tt.want {
			t.Errorf("admin-keys %s: exit %d %q %q, setting %v", tt.arg, code, out, errOut, setting())
		}
	}
	if _, errOut, code := w.cli(t, "tenant", "admin-keys", "maybe"); code != 1 || !strings.Contains(errOut, "on or off") {
		t.Errorf("admin-keys maybe: exit %d %q", code, errOut)
	}
}
