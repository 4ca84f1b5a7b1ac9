package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func sampleTask() *Task {
	return &Task{TaskID: "0a1b2c3d-0000-4000-8000-000000000001", JobID: "0a1b2c3d-0000-4000-8000-000000000002",
		ClusterID: "0a1b2c3d-0000-4000-8000-000000000003", TenantID: "0a1b2c3d-0000-4000-8000-000000000004", Attempt: 1,
		TaskName: "INSTALL", Service: &Service{Name: "base", Action: Action{Type: "shell", Fields: map[string]string{"script": "install.sh"},
			Timeout: json.RawMessage(`"10m"`), MaxAttempts: 3}},
		Node: &Node{ID: "0a1b2c3d-0000-4000-8000-000000000005", NodeNum: 1042, Hostname: "bench-1042.local",
			IPAddresses: map[string]string{"access_v4": "10.2.0.1", "bind_v4": "10.2.0.1"}, SSHUser: "root", HardwareType: "small",
			ImageType: "debian12", Flavor: "2", Image: "debian-12", Services: []string{"base"}, Automators: []string{"shell"},
			Facts: map[string]any{"vm": map[string]any{"providerId": "m-1042", "cpus": 2.0, "disks": []any{"sda", 1e3, true, nil, []any{}}}}},
		Nodes: map[string]Node{"n2": {ID: "n2", NodeNum: 2, Hostname: "h2", IPAddresses: map[string]string{}}},
		Cluster: Cluster{ID: "0a1b2c3d-0000-4000-8000-000000000003", Name: "bench", Owner: "admin",
			Config: map[string]any{"bench": map[string]any{"me": "bench-1042.local", "script": "echo \"<é>\"\n\tdone", "n": -0.5e-3}}},
		Provider: Provider{Name: "rackspace", ProviderType: "rackspace", Provisioner: map[string]any{"api_user": "u", "api_key": "k", "region": "dfw"},
			Network: map[string]any{"type": "hosts"}},
		Secrets:        map[string]map[string]any{"ssh": {"privateKey": "-----BEGIN\nKEY-----"}, "none": nil},
		TimeoutSeconds: 600,
		AuthorizedKeys: []string{"ssh-ed25519 AAAA alice@x"},
		Units:          map[string][]string{"base": {"base.service"}, "other": {}},
		Resources:      []Resource{{PluginType: "automatortypes", Plugin: "shell", ResourceType: "scripts", Name: "s", Version: 3, Format: "file", Digest: "sha256:00"}},
		LocalResources: map[string]string{"sha256:00": "/tmp/x"},
	}
}

// The hand decoder reads what the server writes as json.Unmarshal does, and
// leaves to it what it was not written for.
func TestDecodeAsUnmarshal(t *testing.T) {
	full, err := json.Marshal(sampleTask())
	if err != nil {
		t.Fatal(err)
	}
	bare, err := json.Marshal(&Task{TaskID: "t", TaskName: "CREATE", Resources: []Resource{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		payload string
		hand    bool // read by the hand decoder
	}{
		{"full", string(full), true},
		{"bare, with nulls", string(bare), true},
		{"whitespace", " {\n\"taskId\" : \"t\" , \"attempt\" : 2 , \"node\" : { \"facts\" : { } } }\t", true},
		{"escapes and non-ASCII", `{"taskId":"a\u00e9\"b\\","cluster":{"config":{"k\n":"vé","x":"\ud83d\ude00"}}}`, true},
		{"invalid UTF-8", "{\"taskId\":\"a\xffb\"}", true},
		{"key in other case", `{"TaskID":"t"}`, false},
		{"unknown key", `{"taskId":"t","extra":1}`, false},
		{"key twice", `{"node":{"id":"a"},"node":{"hostname":"b"}}`, false},
		{"fraction for an int", `{"attempt":1.0}`, false},
		{"string for an int", `{"attempt":"1"}`, false},
		{"null in a list of strings", `{"authorizedKeys":[null]}`, false},
		{"null payload", `null`, false},
		{"trailing", `{"taskId":"t"} x`, false},
		{"bad number", `{"cluster":{"config":{"n":01}}}`, false},
		{"control character", "{\"taskId\":\"a\nb\"}", false},
		{"truncated", `{"taskId":"t"`, false},
		{"number out of range", `{"cluster":{"config":{"n":1e999}}}`, false},
		{"nested past encoding/json's limit", `{"cluster":{"config":{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}}}`, false},
		{"nested within the limit", `{"cluster":{"config":{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := decodeTask([]byte(tc.payload))
			if ok != tc.hand {
				t.Fatalf("read by hand: %v, want %v", ok, tc.hand)
			}
			var want Task
			werr := json.Unmarshal([]byte(tc.payload), &want)
			if ok {
				if werr != nil {
					t.Fatalf("read by hand, json.Unmarshal fails: %v", werr)
				}
				if !reflect.DeepEqual(*got, want) {
					t.Errorf("read by hand\n%+v\njson.Unmarshal\n%+v", *got, want)
				}
			}
			dec, err := Decode([]byte(tc.payload))
			if (err != nil) != (werr != nil) || err == nil && !reflect.DeepEqual(*dec, want) {
				t.Errorf("Decode: %+v, %v; json.Unmarshal: %+v, %v", dec, err, want, werr)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	full, _ := json.Marshal(sampleTask())
	f.Add(full)
	f.Add([]byte(`{"taskId":"a\u00e9","attempt":-3,"cluster":{"config":{"a":[1,{"b":null}],"c":true}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := decodeTask(b)
		if !ok {
			return
		}
		var want Task
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("read by hand, json.Unmarshal fails: %v", err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("read by hand\n%+v\njson.Unmarshal\n%+v", *got, want)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	raw, err := json.Marshal(sampleTask())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		decode func([]byte) error
	}{
		{"hand", func(p []byte) error { _, err := Decode(p); return err }},
		{"encoding/json", func(p []byte) error { var t Task; return json.Unmarshal(p, &t) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.decode(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
