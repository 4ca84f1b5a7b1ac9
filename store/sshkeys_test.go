package store_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/store/storetest"
)

func newPublicKey(t *testing.T, comment string) (string, *pem.Block) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " " + comment, block
}

func TestParseSSHPublicKey(t *testing.T) {
	t.Parallel()
	good, priv := newPublicKey(t, "me@laptop")
	two := good + "\n" + good
	for _, tt := range []struct {
		name, text, want string // want: "" accepts
	}{
		{name: "a .pub line", text: good + "\n"},
		{name: "a private key", text: string(pem.EncodeToMemory(priv)), want: "private key"},
		{name: "garbage", text: "hello world", want: "not an SSH public key"},
		{name: "empty", text: "  ", want: "empty"},
		{name: "options", text: `command="true" ` + good, want: "options"},
		{name: "two keys", text: two, want: "more than one key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, line, comment, err := store.ParseSSHPublicKey(tt.text)
			if tt.want == "" {
				if err != nil || comment != "me@laptop" || strings.Contains(line, "me@laptop") || !strings.HasPrefix(line, "ssh-ed25519 ") {
					t.Errorf("= %q, %q, %v; want the key without its comment", line, comment, err)
				}
				return
			}
			if !errors.Is(err, store.ErrNotPublicKey) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrNotPublicKey saying %q", err, tt.want)
			}
		})
	}
}

func TestSSHKeys(t *testing.T) {
	t.Parallel()
	s := storetest.New(t)
	ctx := t.Context()
	ten, err := s.CreateTenant(ctx, "keys", store.TenantSettings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, err := s.CreateUser(ctx, ten.ID, u, store.RoleUser); err != nil {
			t.Fatal(err)
		}
	}
	a1, _ := newPublicKey(t, "a1")
	a2, _ := newPublicKey(t, "a2")
	k1, err := s.AddSSHKey(ctx, ten.ID, "alice", a1, "")
	if err != nil {
		t.Fatal(err)
	}
	if k1.Name != "a1" || k1.Type != ssh.KeyAlgoED25519 || !strings.HasPrefix(k1.Fingerprint, "SHA256:") || k1.ID == "" {
		t.Errorf("added %+v, want named by its comment, typed, fingerprinted", k1)
	}
	if _, err := s.AddSSHKey(ctx, ten.ID, "alice", a1, "again"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("the same key twice: %v, want ErrConflict", err)
	}
	if _, err := s.AddSSHKey(ctx, ten.ID, "alice", a2, "work"); err != nil {
		t.Fatal(err)
	}
	// Another user may hold the same key.
	if _, err := s.AddSSHKey(ctx, ten.ID, "bob", a1, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSSHKey(ctx, ten.ID, "nobody", a1, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a key for no user: %v, want ErrNotFound", err)
	}
	ks, err := s.SSHKeys(ctx, ten.ID, "alice")
	if err != nil || len(ks) != 2 || ks[1].Name != "work" {
		t.Fatalf("alice's keys = %+v, %v", ks, err)
	}
	auth, err := s.AuthorizedKeys(ctx, ten.ID, "alice")
	if err != nil || len(auth) != 2 {
		t.Fatalf("authorized keys = %q, %v", auth, err)
	}
	for _, l := range auth {
		if len(strings.Fields(l)) != 2 || strings.ContainsAny(l, "\n") {
			t.Errorf("authorized key %q carries a comment or a newline", l)
		}
	}
	if err := s.RemoveSSHKey(ctx, ten.ID, "bob", k1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob removing alice's key: %v, want ErrNotFound", err)
	}
	if err := s.RemoveSSHKey(ctx, ten.ID, "alice", k1.ID); err != nil {
		t.Fatal(err)
	}
	if ks, _ := s.SSHKeys(ctx, ten.ID, "alice"); len(ks) != 1 {
		t.Errorf("after removing one, alice has %d keys, want 1", len(ks))
	}
}
