package graph

import (
	"encoding/json"
	"testing"

	"github.com/cooprhq/coopr/server/engine"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// A payload lists the cluster's nodes only for the tasks that need them,
// and decodes into the agent's wire.Task as it was built.
func TestPayloadOf(t *testing.T) {
	peers := map[string]*engine.NodePayload{
		"n1": {ID: "n1", NodeNum: 1001, Hostname: "h1", IPAddresses: map[string]string{"bind_v4": "10.0.0.1"}},
		"n2": {ID: "n2", NodeNum: 1002, Hostname: "h2", IPAddresses: map[string]string{"bind_v4": "10.0.0.2"}},
	}
	own := *peers["n1"]
	own.Facts = map[string]any{"vm": map[string]any{"providerId": "m-1"}}
	for _, tc := range []struct {
		task  string
		nodes int
	}{
		{"NETWORK_CONFIGURE", 2},
		{"NETWORK_UNCONFIGURE", 0},
		{"CREATE", 0},
		{"BOOTSTRAP", 0},
		{"INSTALL", 0},
		{"CONFIGURE", 0},
	} {
		t.Run(tc.task, func(t *testing.T) {
			a := &engine.Assignment{TaskID: "t1", JobID: "j1", ClusterID: "c1", TenantID: "te", Attempt: 2, TaskName: tc.task,
				TimeoutSeconds: 60, Node: &own, Nodes: peers,
				Cluster: engine.ClusterPayload{ID: "c1", Name: "web", Owner: "alice", Config: map[string]any{"k": "v"}}}
			if tc.task == "INSTALL" || tc.task == "CONFIGURE" {
				a.Service = &engine.ServicePayload{Name: "base", Action: wire.Action{Type: "shell", Fields: map[string]string{"script": "x"}}}
			}
			prov := wire.Provider{Name: "p", ProviderType: "rackspace", Network: map[string]any{"type": "hosts"}}
			secrets := map[string]map[string]any{"ssh": {"privateKey": "k"}}
			refs := []store.ResourceRef{{ResourceKey: store.ResourceKey{PluginType: "automatortypes", Plugin: "shell", ResourceType: "scripts", Name: "s"},
				Version: 3, Format: "file", Digest: "sha256:00"}}
			raw, err := json.Marshal(payloadOf(a, prov, secrets, refs))
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Nodes) != tc.nodes {
				t.Errorf("payload lists %d nodes, want %d", len(got.Nodes), tc.nodes)
			}
			for id, n := range got.Nodes {
				if n.Hostname != peers[id].Hostname || n.Facts != nil {
					t.Errorf("peer %s is %+v", id, n)
				}
			}
			if got.Node == nil || got.Node.ID != "n1" || got.Node.Facts["vm"] == nil {
				t.Errorf("own node %+v, want n1 with its facts", got.Node)
			}
			if got.TaskID != "t1" || got.Attempt != 2 || got.Cluster.Config["k"] != "v" || got.Provider.ProviderType != "rackspace" ||
				got.Secrets["ssh"]["privateKey"] != "k" || len(got.Resources) != 1 || got.Resources[0].Version != 3 || got.TimeoutSeconds != 60 {
				t.Errorf("payload %s", raw)
			}
			role, name := got.Driver()
			if wantRole := wire.RoleOf(tc.task); role != wantRole {
				t.Errorf("role %s, want %s", role, wantRole)
			}
			if role == wire.RoleAutomator && name != "shell" || role == wire.RoleNetwork && name != "hosts" || role == wire.RoleVM && name != "rackspace" {
				t.Errorf("driver %s/%s", role, name)
			}
		})
	}
}
