package wire_test

import (
	"testing"

	"github.com/cooprhq/coopr/wire"
)

func TestDriverOf(t *testing.T) {
	network := map[string]any{"type": "hosts"}
	for _, tc := range []struct {
		task, actionType string
		role             wire.Role
		name             string
	}{
		{"CREATE", "", wire.RoleVM, "rackspace"},
		{"CONFIRM", "", wire.RoleVM, "rackspace"},
		{"DELETE", "", wire.RoleVM, "rackspace"},
		{"NETWORK_ALLOCATE", "", wire.RoleNetwork, "hosts"},
		{"NETWORK_RELEASE", "", wire.RoleNetwork, "hosts"},
		{"NETWORK_CONFIGURE", "", wire.RoleNetwork, "hosts"},
		{"NETWORK_UNCONFIGURE", "", wire.RoleNetwork, "hosts"},
		{"BOOTSTRAP", "", wire.RoleNode, "ssh"},
		{"INSTALL", "chef-solo", wire.RoleAutomator, "chef-solo"},
		{"START", "shell", wire.RoleAutomator, "shell"},
	} {
		role, name := wire.DriverOf(tc.task, "rackspace", network, tc.actionType)
		if role != tc.role || name != tc.name {
			t.Errorf("%s: %s/%s, want %s/%s", tc.task, role, name, tc.role, tc.name)
		}
		task := &wire.Task{TaskName: tc.task, Provider: wire.Provider{ProviderType: "rackspace", Network: network}}
		if tc.actionType != "" {
			task.Service = &wire.Service{Name: "s", Action: wire.Action{Type: tc.actionType}}
		}
		if r, n := task.Driver(); r != role || n != name {
			t.Errorf("%s: Task.Driver %s/%s, DriverOf %s/%s", tc.task, r, n, role, name)
		}
	}
}

func TestNeedsPeers(t *testing.T) {
	for _, task := range []string{"CREATE", "CONFIRM", "BOOTSTRAP", "NETWORK_ALLOCATE", "NETWORK_UNCONFIGURE", "INSTALL", "CONFIGURE", "START", "DELETE"} {
		if wire.NeedsPeers(task) {
			t.Errorf("%s lists the cluster's nodes", task)
		}
	}
	if !wire.NeedsPeers("NETWORK_CONFIGURE") {
		t.Error("NETWORK_CONFIGURE does not list the cluster's nodes; the hosts driver needs them")
	}
}
