package macro

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// cluster is three nodes listed out of nodenum order; n2 runs the task.
func cluster(self string) *Env {
	return NewEnv([]Node{
		{ID: "n1", NodeNum: 1001, Hostname: "web1.c", IPs: map[string]string{"bind_v4": "10.0.0.1", "access_v4": "1.1.1.1"}, Services: []string{"base", "web"}},
		{ID: "n2", NodeNum: 1002, Hostname: "web2.c", IPs: map[string]string{"bind_v4": "10.0.0.2", "access_v4": "1.1.1.2"}, Services: []string{"base", "web", "cache"}},
		{ID: "n0", NodeNum: 1000, Hostname: "db.c", IPs: map[string]string{"bind_v4": "10.0.0.3"}, Services: []string{"base", "db"}},
	}, self, "alice")
}

func TestExpand(t *testing.T) {
	tests := []struct {
		in, want string
		self     string // default n2
		err      string // substring of the error
	}{
		{in: "no macros here", want: "no macros here"},
		{in: "%host.service.web%", want: "web1.c,web2.c"},
		{in: "%host.service.base%", want: "db.c,web1.c,web2.c"}, // by nodenum, not listing order
		{in: "%host.service.web[1]%", want: "web2.c"},
		{in: "%host.service.base[0]%", want: "db.c"},
		{in: "%ip.service.web%", want: "10.0.0.1,10.0.0.2"},
		{in: "%ip.access_v4.service.web%", want: "1.1.1.1,1.1.1.2"},
		{in: "%ip.access_v4.service.web[0]%", want: "1.1.1.1"},
		{in: "%ip.self%", want: "10.0.0.2"},
		{in: "%ip.access_v4.self%", want: "1.1.1.2"},
		{in: "%host.self%", want: "web2.c"},
		{in: "%num.service.web%", want: "2"},
		{in: "%num.service.none%", want: "0"},
		{in: "%instance.self.service.web%", want: "2"},
		{in: "%instance.self.service.base%", want: "3"},
		{in: "%cluster.owner%", want: "alice"},
		{in: "%join(map(ip.service.web,'$:11211'),' ')%", want: "10.0.0.1:11211 10.0.0.2:11211"},
		{in: "%join(host.service.web,';')%", want: "web1.c;web2.c"},
		{in: "%map(host.service.web,'$$$')%", want: "$web1.c,$web2.c"},
		{in: "zk=%join(map(host.service.base,'$:2181'),',')%/hbase", want: "zk=db.c:2181,web1.c:2181,web2.c:2181/hbase"},
		// Unexpanded: left exactly as written when nothing expands...
		{in: "%host.service.none%", want: "%host.service.none%"},
		{in: "%instance.self.service.db%", want: "%instance.self.service.db%"},
		{in: "100%% of %host.service.none%", want: "100%% of %host.service.none%"},
		{in: "%unknown.thing%", want: "%unknown.thing%"},
		// ...and emptied once another macro in the string expands.
		{in: "a=%host.service.none%,n=%num.service.web%", want: "a=,n=2"},
		{in: "100%% on %host.self%", want: "100%% on web2.c"},
		{in: "50% of 60%", want: "50% of 60%"},
		// Cluster scope: self forms stay unexpanded.
		{in: "%host.self% %ip.self%", self: "-", want: "%host.self% %ip.self%"},
		{in: "%instance.self.service.web%", self: "-", want: "%instance.self.service.web%"},
		// Errors.
		{in: "%host.service.web[2]%", err: "index 2 out of range"},
		{in: "%host.service.none[0]%", err: "index 0 out of range"},
		{in: "%ip.access_v4.service.base%", err: "node n0 has no access_v4 address"},
		{in: "%ip.access_v4.self%", self: "n0", err: "this node (n0) has no access_v4 address"},
		{in: "%join(host.service.web)%", err: "expected ','"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			self := tt.self
			switch self {
			case "":
				self = "n2"
			case "-":
				self = ""
			}
			got, err := cluster(self).Expand(tt.in)
			if tt.err != "" {
				var me *Error
				if !errors.As(err, &me) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Expand(%q) = %q, %v; want an *Error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestExpandHostnameMissing(t *testing.T) {
	env := NewEnv([]Node{{ID: "a", NodeNum: 1, Services: []string{"web"}}}, "a", "")
	if _, err := env.Expand("%host.service.web%"); err == nil || !strings.Contains(err.Error(), "node a has no hostname") {
		t.Fatalf("error %v, want one naming the node without a hostname", err)
	}
	// %host.self% without a hostname is unexpanded, not an error.
	if got, err := env.Expand("%host.self%"); err != nil || got != "%host.self%" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestExpandJSON(t *testing.T) {
	var cfg any
	in := `{"hbase":{"zk":["%host.service.web[0]%","static"],"%host.self%":"key stays","n":3,"ok":true},"top":"%ip.self%"}`
	if err := json.Unmarshal([]byte(in), &cfg); err != nil {
		t.Fatal(err)
	}
	got, err := cluster("n2").ExpandJSON(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	_ = json.Unmarshal([]byte(`{"hbase":{"zk":["web1.c","static"],"%host.self%":"key stays","n":3,"ok":true},"top":"10.0.0.2"}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	var orig any
	_ = json.Unmarshal([]byte(in), &orig)
	if !reflect.DeepEqual(cfg, orig) {
		t.Fatal("ExpandJSON changed its input")
	}

	_ = json.Unmarshal([]byte(`{"a":{"list":["x","%host.service.web[9]%"]}}`), &cfg)
	_, err = cluster("n2").ExpandJSON(cfg)
	var me *Error
	if !errors.As(err, &me) || me.Path != "a.list[1]" || me.Macro != "host.service.web[9]" {
		t.Fatalf("error %#v, want path a.list[1] and the macro", err)
	}
	if !strings.HasPrefix(err.Error(), "a.list[1]: macro %host.service.web[9]%") {
		t.Fatalf("message %q", err.Error())
	}
}

func TestServiceOf(t *testing.T) {
	for in, want := range map[string]string{
		"host.service.web": "web", "ip.service.db": "db", "ip.access_v4.service.zk": "zk",
		"num.service.a.b": "a.b", "instance.self.service.x": "x", "host.self": "", "ip.self": "", "cluster.owner": "",
	} {
		if got := ServiceOf(in); got != want {
			t.Errorf("ServiceOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// An index built once expands for each node as one built for it does.
func TestEnvAt(t *testing.T) {
	nodes := []Node{
		{ID: "a", NodeNum: 1003, Hostname: "a.example", IPs: map[string]string{"bind_v4": "10.0.0.3"}, Services: []string{"web"}},
		{ID: "b", NodeNum: 1001, Hostname: "b.example", IPs: map[string]string{"bind_v4": "10.0.0.1"}, Services: []string{"web", "db"}},
		{ID: "c", NodeNum: 1002, Hostname: "c.example", IPs: map[string]string{"bind_v4": "10.0.0.2"}, Services: []string{"web"}},
	}
	shared := NewEnv(nodes, "", "alice")
	for _, self := range []string{"a", "b", "c", "", "gone"} {
		for _, in := range []string{"%host.self%", "%ip.self%", "%instance.self.service.web%", "%host.service.db%", "%num.service.web%", "%owner%"} {
			want, werr := NewEnv(nodes, self, "alice").Expand(in)
			got, gerr := shared.At(self).Expand(in)
			if got != want || (werr == nil) != (gerr == nil) {
				t.Errorf("self %q, %s: At gives %q (%v), NewEnv %q (%v)", self, in, got, gerr, want, werr)
			}
		}
	}
	if got, _ := shared.Expand("%host.self%"); got != "%host.self%" {
		t.Errorf("the shared index expanded a self form to %q", got)
	}
}

func TestNeedsPeers(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"no macros", map[string]any{"web": map[string]any{"greeting": "hello", "n": 3.0, "pct": "50% of 60%"}}, false},
		{"own", map[string]any{"a": "%host.self%", "b": []any{"%ip.self%", "%ip.access_v4.self%:80"}, "c": "%cluster.owner%"}, false},
		{"escaped", "100%% sure", false},
		{"nil", nil, false},
		{"peers' hosts", map[string]any{"lb": map[string]any{"backends": "%join(host.service.web, ',')%"}}, true},
		{"peers' addresses deep", map[string]any{"a": []any{map[string]any{"b": "x %ip.bind_v4.service.db[0]%"}}}, true},
		{"count", "%num.service.web%", true},
		{"instance", "%instance.self.service.web%", true},
		{"ip of a service named self", "%ip.service.self%", true},
		{"unknown macro", "%who.knows%", true},
		{"syntax error", "%join(host.service.web)%", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsPeers(tc.v); got != tc.want {
				t.Errorf("NeedsPeers(%v) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}
