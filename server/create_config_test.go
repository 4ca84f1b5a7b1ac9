package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A create's config replaces the template's default config (Coopr's
// rule); with mergeConfig it merges in, as a CONFIGURE's merges into a
// cluster's (the CLI's way: a partial config that replaced the whole left
// a web-cluster's lb without its port and backends). The preview shows the
// config the cluster gets and how it differs from the template's.
func TestCreateConfigReplacesOrMerges(t *testing.T) {
	w := newWorld(t)
	s := w.s
	show := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	type change struct {
		Path     []string
		Kind     string
		Old, New any
	}
	input := func(cfg map[string]any, merge bool) map[string]any {
		in := map[string]any{"name": "cfg", "clusterTemplate": "lamp", "numMachines": 2, "config": cfg}
		if merge {
			in["mergeConfig"] = true
		}
		return in
	}
	create := func(in map[string]any) map[string]any {
		t.Helper()
		var out struct {
			CreateCluster struct{ Config map[string]any }
		}
		s.Must(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { config } }`, map[string]any{"in": in}, &out)
		return out.CreateCluster.Config
	}
	preview := func(in map[string]any) (map[string]any, []change) {
		t.Helper()
		var out struct {
			PreviewCluster struct {
				Config        map[string]any
				ConfigChanges []change
			}
		}
		s.Must(w.alice, `mutation($in: ClusterInput!) { previewCluster(input: $in) { config configChanges { path kind old new } } }`,
			map[string]any{"in": in}, &out)
		return out.PreviewCluster.Config, out.PreviewCluster.ConfigChanges
	}
	paths := func(changes []change) string {
		var out []string
		for _, c := range changes {
			out = append(out, strings.Join(c.Path, ".")+" "+c.Kind)
		}
		return strings.Join(out, ", ")
	}

	// lamp's default config: mysql {bind_address, port}, php {directives {mysql.default_host}}.
	patch := map[string]any{
		"php":   map[string]any{"directives": map[string]any{"memory_limit": "256M"}},
		"mysql": map[string]any{"port": "3307"},
		"web":   map[string]any{"greeting": "yo"},
	}
	merged := map[string]any{
		"mysql": map[string]any{"bind_address": "%ip.bind_v4.service.mysql-server%", "port": "3307"},
		"php": map[string]any{"directives": map[string]any{"memory_limit": "256M",
			"mysql.default_host": "%host.service.mysql-server%"}},
		"web": map[string]any{"greeting": "yo"},
	}
	cfg, changes := preview(input(patch, true))
	if show(cfg) != show(merged) {
		t.Errorf("previewed config %s, want %s", show(cfg), show(merged))
	}
	if got, want := paths(changes), "mysql.port CHANGED, php.directives.memory_limit ADDED, web ADDED"; got != want {
		t.Errorf("previewed changes %s, want %s", got, want)
	}
	if got := create(input(patch, true)); show(got) != show(merged) {
		t.Errorf("created with config %s, want %s", show(got), show(merged))
	}

	// A null removes the template's key.
	drop := map[string]any{"mysql": nil, "php": map[string]any{"directives": map[string]any{"mysql.default_host": nil}}}
	if got := create(input(drop, true)); show(got) != `{"php":{"directives":{}}}` {
		t.Errorf("created with nulls: config %s", show(got))
	}

	// No config: the template's.
	if got := create(map[string]any{"name": "cfg", "clusterTemplate": "lamp", "numMachines": 2}); !strings.Contains(show(got), `"port":"3306"`) {
		t.Errorf("created without config: %s", show(got))
	}

	// Without mergeConfig the request's config is the whole config.
	whole := map[string]any{"web": map[string]any{"greeting": "yo"}}
	cfg, changes = preview(input(whole, false))
	if show(cfg) != show(whole) {
		t.Errorf("previewed config without mergeConfig %s", show(cfg))
	}
	if got, want := paths(changes), "mysql REMOVED, php REMOVED, web ADDED"; got != want {
		t.Errorf("previewed changes without mergeConfig %s, want %s", got, want)
	}
	if got := create(input(whole, false)); show(got) != show(whole) {
		t.Errorf("created without mergeConfig: config %s", show(got))
	}
	in := input(nil, true)
	delete(in, "config")
	if r := s.Do(w.alice, `mutation($in: ClusterInput!) { createCluster(input: $in) { id } }`, map[string]any{"in": in}); r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["field"] != "mergeConfig" {
		t.Errorf("mergeConfig without config: %+v", r.Errors)
	}

	// The macros checked are the merged config's.
	bad := map[string]any{"php": map[string]any{"directives": map[string]any{"x": "%join(host.service.a)%"}}}
	if r := s.Do(w.alice, `mutation($in: ClusterInput!) { previewCluster(input: $in) { planHash } }`, map[string]any{"in": input(bad, true)}); r.Code() != "INVALID_INPUT" || r.Errors[0].Extensions["field"] != "config.php.directives.x" {
		t.Errorf("bad macro in the patch: %+v", r.Errors)
	}
}
