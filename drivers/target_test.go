package drivers_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

func TestTargetOf(t *testing.T) {
	key := sshdtest.NewKey(t)
	other := sshdtest.NewKey(t)
	pin := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	pin2 := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB6nh9qdgdyVxQrrDjrxM3pF1QXbH3Y6J7n4K8aLTG5d"
	secrets := func(vmKey bool) map[string]map[string]any {
		s := map[string]map[string]any{"ssh": {"privateKey": string(key.PEM), "publicKey": key.AuthorizedKey}}
		if vmKey {
			s["vm"] = map[string]any{"privateKey": string(other.PEM)}
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		node    drivers.Node
		vmKey   bool
		noKey   bool
		want    remote.Target
		wantKey *sshdtest.Key
		err     string
		is      error
	}{
		{
			name: "access address, defaults",
			node: drivers.Node{ID: "n1", Hostname: "web-1", IPAddresses: map[string]string{"access_v4": "10.0.0.5", "bind_v4": "10.1.0.5"}},
			want: remote.Target{Host: "10.0.0.5", Port: 22, User: "root"}, wantKey: key,
		},
		{
			name: "bind address when no access address, node sshuser",
			node: drivers.Node{ID: "n1", Hostname: "web-1", SSHUser: "admin", IPAddresses: map[string]string{"bind_v4": "10.1.0.5"}},
			want: remote.Target{Host: "10.1.0.5", Port: 22, User: "admin"}, wantKey: key,
		},
		{
			name: "vm facts win, JSON port, vm key, node pins over vm pins",
			node: drivers.Node{ID: "n1", Hostname: "web-1", SSHUser: "admin",
				IPAddresses: map[string]string{"access_v4": "10.0.0.5"},
				Facts: map[string]any{
					"vm":   map[string]any{"sshHost": "127.0.0.1", "sshPort": float64(2222), "sshUser": "coopr", "hostKeys": []any{pin2}},
					"node": map[string]any{"hostKeys": []any{pin}},
				}},
			vmKey: true,
			want:  remote.Target{Host: "127.0.0.1", Port: 2222, User: "coopr", HostKeys: []string{pin}}, wantKey: other,
		},
		{
			name: "vm pins when bootstrap has not run",
			node: drivers.Node{ID: "n1", IPAddresses: map[string]string{"access_v4": "10.0.0.5"},
				Facts: map[string]any{"vm": map[string]any{"hostKeys": []any{pin2}, "sshPort": "2200"}}},
			want: remote.Target{Host: "10.0.0.5", Port: 2200, User: "root", HostKeys: []string{pin2}}, wantKey: key,
		},
		{
			name: "no address",
			node: drivers.Node{ID: "n1", Hostname: "web-1"},
			err:  "node web-1 has no address: CONFIRM has not reported ipaddresses.access_v4",
			is:   remote.ErrNoAddress,
		},
		{
			name:  "no key",
			node:  drivers.Node{ID: "n1", Hostname: "web-1", IPAddresses: map[string]string{"access_v4": "10.0.0.5"}},
			noKey: true,
			err:   "node web-1 has no SSH key",
		},
		{
			name: "bad port",
			node: drivers.Node{ID: "n1", IPAddresses: map[string]string{"access_v4": "10.0.0.5"}, Facts: map[string]any{"vm": map[string]any{"sshPort": float64(70000)}}},
			err:  "node n1: facts vm.sshPort 70000 is not a port",
		},
		{
			name: "bad pin",
			node: drivers.Node{ID: "n1", IPAddresses: map[string]string{"access_v4": "10.0.0.5"}, Facts: map[string]any{"node": map[string]any{"hostKeys": []any{"ssh-ed25519 nonsense"}}}},
			err:  "pinned host key",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task := &drivers.Task{Secrets: secrets(tc.vmKey)}
			if tc.noKey {
				task.Secrets = nil
			}
			got, err := drivers.TargetOf(task, &tc.node)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, remote.ErrTarget) {
					t.Fatalf("err %v, want ErrTarget with %q", err, tc.err)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Fatalf("err %v is not %v", err, tc.is)
				}
				if tc.is == nil && errors.Is(err, remote.ErrNoAddress) {
					t.Fatalf("err %v is ErrNoAddress", err)
				}
				if !remote.Terminal(err) {
					t.Fatalf("err %v is not terminal", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Signer.PublicKey().Marshal(), tc.wantKey.Signer.PublicKey().Marshal()) {
				t.Error("wrong key chosen")
			}
			got.Signer = nil
			if got.Host != tc.want.Host || got.Port != tc.want.Port || got.User != tc.want.User || !slices.Equal(got.HostKeys, tc.want.HostKeys) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	// A bad key is named, never quoted.
	task := &drivers.Task{Secrets: map[string]map[string]any{"ssh": {"privateKey": "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END OPENSSH PRIVATE KEY-----\n"}}}
	_, err := drivers.TargetOf(task, &drivers.Node{ID: "n1", IPAddresses: map[string]string{"access_v4": "10.0.0.5"}})
	if err == nil || strings.Contains(err.Error(), "c2VjcmV0") || !strings.Contains(err.Error(), "secrets.ssh.privateKey") {
		t.Fatalf("err %v", err)
	}
}

// A node with no address is unreachable: nothing can have run on it.
func TestTargetOfNoAddressIsUnreachable(t *testing.T) {
	if _, err := drivers.TargetOf(&drivers.Task{}, &drivers.Node{ID: "n1"}); !remote.Unreachable(err) {
		t.Errorf("no address: Unreachable(%v) = false", err)
	}
}
