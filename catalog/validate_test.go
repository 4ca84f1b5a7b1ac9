package catalog

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
)

// issueStrings renders issues as their String form, sorted, so that tables
// can list the expected lines in any order.
func issueStrings(is Issues) []string {
	out := make([]string, len(is))
	for i, x := range is {
		out[i] = x.String()
	}
	sort.Strings(out)
	return out
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// fileFor is the file name the tables use for a document of kind k.
func fileFor(k Kind) string { return string(k) + "/x.json" }

type validateCase struct {
	name string
	kind Kind
	doc  string
	// want is the exact list of issues (Issue.String(), any order), file
	// included. A nil want means "no issues at all".
	want []string
}

// runValidateCases checks every case through ParseEntity: the exact issues,
// and that the value is nil exactly when an error is present.
func runValidateCases(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := fileFor(tc.kind)
			v, issues := ParseEntity(tc.kind, file, []byte(tc.doc))
			got := issueStrings(issues)
			want := sortedCopy(tc.want)
			if len(got) != len(want) || !slices.Equal(got, want) {
				t.Errorf("issues mismatch\n got: %q\nwant: %q", got, want)
			}
			if issues.HasErrors() != (v == nil) {
				t.Errorf("value nil = %v but HasErrors = %v", v == nil, issues.HasErrors())
			}
			for _, is := range issues {
				if is.File != file {
					t.Errorf("issue %q: File = %q, want %q", is, is.File, file)
				}
			}
		})
	}
}

const (
	pf = "providers/x.json: "
	hf = "hardwaretypes/x.json: "
	mf = "imagetypes/x.json: "
	sf = "services/x.json: "
	cf = "clustertemplates/x.json: "
	tf = "partialtemplates/x.json: "
	yf = "providertypes/x.json: "
	af = "automatortypes/x.json: "
)

const nameRuleMsg = "must be 1-255 characters of A-Z a-z 0-9 _ . -"

func TestValidateCommon(t *testing.T) {
	long := strings.Repeat("a", 256)
	runValidateCases(t, []validateCase{
		{"ok", KindProvider, `{"name":"x","providertype":"aws"}`, nil},
		{"null is absent", KindProvider, `{"name":"x","providertype":"aws","label":null,"description":null,"icon":null,"version":null,"network":null,"provisioner":null}`, nil},
		{"base fields", KindProvider, `{"name":"x","providertype":"aws","label":"L","description":"D","icon":"i.png","version":7}`, nil},
		{"missing name", KindProvider, `{"providertype":"aws"}`, []string{pf + "name: is required"}},
		{"null name", KindProvider, `{"name":null,"providertype":"aws"}`, []string{pf + "name: is required"}},
		{"name not a string", KindProvider, `{"name":5,"providertype":"aws"}`, []string{pf + "name: must be a string, not a number"}},
		{"name with space", KindProvider, `{"name":"my provider","providertype":"aws"}`, []string{pf + `name: "my provider" ` + nameRuleMsg}},
		{"empty name", KindProvider, `{"name":"","providertype":"aws"}`, []string{pf + `name: "" ` + nameRuleMsg}},
		{"name with slash", KindProvider, `{"name":"a/b","providertype":"aws"}`, []string{pf + `name: "a/b" ` + nameRuleMsg}},
		{"name non-ascii", KindProvider, `{"name":"caf\u00e9","providertype":"aws"}`, []string{pf + `name: "café" ` + nameRuleMsg}},
		{"name 255 ok", KindProvider, `{"name":"` + long[:255] + `","providertype":"aws"}`, nil},
		{"name 256", KindProvider, `{"name":"` + long + `","providertype":"aws"}`, []string{pf + `name: "` + long + `" ` + nameRuleMsg}},
		{"name all allowed chars", KindProvider, `{"name":"Az09_.-","providertype":"aws"}`, nil},
		{"version string", KindProvider, `{"name":"x","providertype":"aws","version":"1"}`, []string{pf + "version: must be an integer, not a string"}},
		{"label number", KindProvider, `{"name":"x","providertype":"aws","label":1,"description":[],"icon":{}}`, []string{
			pf + "description: must be a string, not an array",
			pf + "icon: must be a string, not an object",
			pf + "label: must be a string, not a number",
		}},
		{"not an object: array", KindProvider, `[{"name":"x"}]`, []string{pf + "a provider must be a JSON object, not an array"}},
		{"not an object: string", KindService, `"x"`, []string{sf + "a service must be a JSON object, not a string"}},
		{"not an object: null", KindClusterTemplate, `null`, []string{cf + "a cluster template must be a JSON object, not null"}},
		{"not an object: number", KindAutomatorType, `12`, []string{af + "a automator type must be a JSON object, not a number"}},
		{"unknown keys warn", KindProvider, `{"name":"x","providertype":"aws","region":"us","extra":{"a":1}}`, []string{
			pf + "extra: warning: unknown field, ignored",
			pf + "region: warning: unknown field, ignored",
		}},
	})
}

func TestValidateProvider(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"missing providertype", KindProvider, `{"name":"x"}`, []string{pf + `providertype: is required: the name of a provider type, e.g. "aws"`}},
		{"wrong types", KindProvider, `{"name":"x","providertype":5,"provisioner":[],"network":"hosts"}`, []string{
			pf + "network: must be an object, not a string",
			pf + "providertype: must be a string, not a number",
			pf + "provisioner: must be an object of field values, not an array",
		}},
		{"bad providertype name", KindProvider, `{"name":"x","providertype":"a b"}`, []string{pf + `providertype: "a b" ` + nameRuleMsg}},
		{"provisioner any values", KindProvider, `{"name":"x","providertype":"aws","provisioner":{"a":"s","b":1,"c":true,"d":{"e":[]}}}`, nil},
		{"network ok", KindProvider, `{"name":"x","providertype":"aws","network":{"type":"hosts","fields":{"cidr":"10.0.0.0/8"}}}`, nil},
		{"network missing type and bad fields", KindProvider, `{"name":"x","providertype":"aws","network":{"fields":{"a":1,"b":"ok","c":null},"mtu":9000}}`, []string{
			pf + "network.fields.a: must be a string, not a number",
			pf + "network.fields.c: must be a string, not null",
			pf + "network.mtu: warning: unknown field, ignored",
			pf + `network.type: is required: the name of a network driver, e.g. "hosts"`,
		}},
		{"network fields not object", KindProvider, `{"name":"x","providertype":"aws","network":{"type":"hosts","fields":["a"]}}`, []string{
			pf + "network.fields: must be an object of strings, not an array",
		}},
		{"several errors at once", KindProvider, `{"name":"bad name","label":false,"network":{"type":1}}`, []string{
			pf + "label: must be a string, not a boolean",
			pf + `name: "bad name" ` + nameRuleMsg,
			pf + "network.type: must be a string, not a number",
			pf + `providertype: is required: the name of a provider type, e.g. "aws"`,
		}},
	})
}

func TestValidateMachineTypes(t *testing.T) {
	runValidateCases(t, []validateCase{
		{"hardware ok", KindHardwareType, `{"name":"x","providermap":{"aws":{"flavor":"m1.small","cost":"3"},"google":null}}`, nil},
		{"no providermap", KindHardwareType, `{"name":"x"}`, nil},
		{"hardware providermap not object", KindHardwareType, `{"name":"x","providermap":["aws"]}`, []string{
			hf + `providermap: must be an object mapping provider names to {"flavor": ...}, not an array`,
		}},
		{"image providermap not object", KindImageType, `{"name":"x","providermap":"aws"}`, []string{
			mf + `providermap: must be an object mapping provider names to {"image": ...}, not a string`,
		}},
		{"bad provider key and values", KindImageType, `{"name":"x","providermap":{"bad key":{"image":1},"aws":[],"gce":{"image":"i","sshuser":false}}}`, []string{
			mf + "providermap.aws: must be an object of strings, not an array",
			mf + `providermap.bad key: provider name "bad key" ` + nameRuleMsg,
			mf + "providermap.bad key.image: must be a string, not a number",
			mf + "providermap.gce.sshuser: must be a string, not a boolean",
		}},
		{"unknown key", KindHardwareType, `{"name":"x","flavor":"m1"}`, []string{hf + "flavor: warning: unknown field, ignored"}},
	})
}

const unitRuleMsg = `is not a systemd unit name: letters, digits and :_.@\- only, not starting with - or ., e.g. "nginx.service"`

func TestValidateService(t *testing.T) {
	const okActions = `"provisioner":{"actions":{"install":{"type":"shell","fields":{"script":"i.sh"}},"start":{"type":"shell","fields":{"script":"s.sh"},"timeout":"5m","maxAttempts":5},"stop":null}}`
	runValidateCases(t, []validateCase{
		{"spec example", KindService, `{ "name": "app", "description": "order service",
  "dependencies": { "provides": ["http-backend"], "conflicts": ["legacy-app"],
    "install": {"requires": ["base"], "uses": ["db"]}, "runtime": {"requires": ["sql", "proxy"], "uses": ["metrics"]} },
  "provisioner": { "actions": {
    "install": {"type": "shell", "fields": {"script": "app-install.sh"}},
    "start": {"type": "shell", "fields": {"script": "app-ctl.sh", "args": "start"}, "timeout": "5m", "maxAttempts": 5} } },
  "links": [ {"label": "Admin UI", "url": "http://%host.self%:8080/"} ] }`, nil},
		{"all actions", KindService, `{"name":"x","provisioner":{"actions":{"install":{"type":"a"},"remove":{"type":"a"},"initialize":{"type":"a"},"configure":{"type":"a"},"start":{"type":"a"},"stop":{"type":"a"}}}}`, nil},
		{"ok with null action", KindService, `{"name":"x",` + okActions + `}`, nil},
		{"bad action name", KindService, `{"name":"x","provisioner":{"actions":{"deploy":{"type":"shell"}}}}`, []string{
			sf + `provisioner.actions.deploy: unknown action "deploy": allowed are install, remove, initialize, configure, start, stop, status`,
		}},
		{"uppercase action name", KindService, `{"name":"x","provisioner":{"actions":{"INSTALL":{"type":"shell"}}}}`, []string{
			sf + `provisioner.actions.INSTALL: unknown action "INSTALL": allowed are install, remove, initialize, configure, start, stop, status`,
		}},
		{"action missing type", KindService, `{"name":"x","provisioner":{"actions":{"install":{"fields":{"script":"a"}}}}}`, []string{
			sf + `provisioner.actions.install.type: is required: the name of an automator type, e.g. "shell"`,
		}},
		{"action type bad name", KindService, `{"name":"x","provisioner":{"actions":{"install":{"type":"chef solo"}}}}`, []string{
			sf + `provisioner.actions.install.type: "chef solo" ` + nameRuleMsg,
		}},
		{"maxAttempts 0", KindService, `{"name":"x","provisioner":{"actions":{"start":{"type":"shell","maxAttempts":0}}}}`, []string{
			sf + "provisioner.actions.start.maxAttempts: must be >= 1 (got 0)",
		}},
		{"maxAttempts negative", KindService, `{"name":"x","provisioner":{"actions":{"start":{"type":"shell","maxAttempts":-3}}}}`, []string{
			sf + "provisioner.actions.start.maxAttempts: must be >= 1 (got -3)",
		}},
		{"maxAttempts fraction", KindService, `{"name":"x","provisioner":{"actions":{"start":{"type":"shell","maxAttempts":1.5}}}}`, []string{
			sf + "provisioner.actions.start.maxAttempts: must be an integer, not 1.5",
		}},
		{"maxAttempts string", KindService, `{"name":"x","provisioner":{"actions":{"start":{"type":"shell","maxAttempts":"3"}}}}`, []string{
			sf + "provisioner.actions.start.maxAttempts: must be an integer, not a string",
		}},
		{"timeouts", KindService, `{"name":"x","provisioner":{"actions":{
			"install":{"type":"shell","timeout":"5x"},
			"remove":{"type":"shell","timeout":-1},
			"start":{"type":"shell","timeout":true},
			"stop":{"type":"shell","timeout":""},
			"configure":{"type":"shell","timeout":"1.5h"},
			"initialize":{"type":"shell","timeout":"-5m"}}}}`, []string{
			sf + `provisioner.actions.configure.timeout: "1.5h" is not a duration: want a non-negative integer of milliseconds or <int><s|m|h|d>`,
			sf + `provisioner.actions.initialize.timeout: "-5m" is not a duration: want a non-negative integer of milliseconds or <int><s|m|h|d>`,
			sf + `provisioner.actions.install.timeout: "5x" is not a duration: want a non-negative integer of milliseconds or <int><s|m|h|d>`,
			sf + "provisioner.actions.remove.timeout: must be >= 0 (got -1)",
			sf + `provisioner.actions.start.timeout: must be milliseconds or a duration string such as "90m", not a boolean`,
			sf + `provisioner.actions.stop.timeout: "" is not a duration: empty duration`,
		}},
		{"action fields not strings", KindService, `{"name":"x","provisioner":{"actions":{"install":{"type":"shell","fields":{"script":1,"args":["a"]}}}}}`, []string{
			sf + "provisioner.actions.install.fields.args: must be a string, not an array",
			sf + "provisioner.actions.install.fields.script: must be a string, not a number",
		}},
		{"actions not object", KindService, `{"name":"x","provisioner":{"actions":["install"]}}`, []string{
			sf + "provisioner.actions: must be an object of actions, not an array",
		}},
		{"action not object", KindService, `{"name":"x","provisioner":{"actions":{"install":"shell"}}}`, []string{
			sf + "provisioner.actions.install: must be an object, not a string",
		}},
		{"provisioner unknown key", KindService, `{"name":"x","provisioner":{"actions":{},"automator":"chef"}}`, []string{
			sf + "provisioner.automator: warning: unknown field, ignored",
		}},
		{"action unknown key", KindService, `{"name":"x","provisioner":{"actions":{"install":{"type":"shell","retries":2}}}}`, []string{
			sf + "provisioner.actions.install.retries: warning: unknown field, ignored",
		}},
		{"dependencies wrong types", KindService, `{"name":"x","dependencies":{"provides":"db","conflicts":[1],"install":{"requires":"base","uses":[null]},"runtime":[],"after":[]}}`, []string{
			sf + "dependencies.after: warning: unknown field, ignored",
			sf + "dependencies.conflicts[0]: must be a string, not a number",
			sf + "dependencies.install.requires: must be an array, not a string",
			sf + "dependencies.install.uses[0]: must be a string, not null",
			sf + "dependencies.provides: must be an array, not a string",
			sf + "dependencies.runtime: must be an object, not an array",
		}},
		{"dependency names invalid", KindService, `{"name":"x","dependencies":{"provides":["ok","bad name"],"runtime":{"requires":["a b"]}}}`, []string{
			sf + `dependencies.provides[1]: "bad name" ` + nameRuleMsg,
			sf + `dependencies.runtime.requires[0]: "a b" ` + nameRuleMsg,
		}},
		{"links", KindService, `{"name":"x","links":[{"label":"no url"},{"label":"bad macro","url":"http://%host.service.x[%/"},{"url":5},"http://x",{"label":"ok","url":"http://%host.self%:80/ 50% of 60%"}]}`, []string{
			sf + "links[0].url: is required",
			sf + "links[1].url: macro %host.service.x[%: expected digits after '[' at offset 15",
			sf + "links[2].url: must be a string, not a number",
			sf + "links[3]: must be an object, not a string",
		}},
		{"links not array", KindService, `{"name":"x","links":{"label":"a","url":"b"}}`, []string{sf + "links: must be an array, not an object"}},
		{"units", KindService, `{"name":"x","units":["nginx.service","getty@tty1.service","dev-disk-by\\x2duuid-1.device","sshd"]}`, nil},
		{"bad units", KindService, `{"name":"x","units":["-H","a b.service","$(reboot)","","nginx.service",5,".hidden"]}`, []string{
			sf + `units[0]: "-H" ` + unitRuleMsg,
			sf + `units[1]: "a b.service" ` + unitRuleMsg,
			sf + `units[2]: "$(reboot)" ` + unitRuleMsg,
			sf + `units[3]: "" ` + unitRuleMsg,
			sf + "units[5]: must be a string, not a number",
			sf + `units[6]: ".hidden" ` + unitRuleMsg,
		}},
		{"units not array", KindService, `{"name":"x","units":"nginx.service"}`, []string{sf + "units: must be an array, not a string"}},
		{"every error in one file", KindService, `{"name":"x y","label":3,
			"dependencies":{"provides":[""]},
			"provisioner":{"actions":{"deploy":{},"install":{},"start":{"type":"shell","maxAttempts":0,"timeout":"soon"}}},
			"links":[{"url":"%join(host.service.web)%"}],
			"colour":"red"}`, []string{
			sf + "colour: warning: unknown field, ignored",
			sf + `dependencies.provides[0]: "" ` + nameRuleMsg,
			sf + "label: must be a string, not a number",
			sf + "links[0].url: macro %join(host.service.web)%: expected ',' at offset 21",
			sf + `name: "x y" ` + nameRuleMsg,
			sf + `provisioner.actions.deploy: unknown action "deploy": allowed are install, remove, initialize, configure, start, stop, status`,
			sf + `provisioner.actions.install.type: is required: the name of an automator type, e.g. "shell"`,
			sf + "provisioner.actions.start.maxAttempts: must be >= 1 (got 0)",
			sf + `provisioner.actions.start.timeout: "soon" is not a duration: want a non-negative integer of milliseconds or <int><s|m|h|d>`,
		}},
	})
}

func TestValidateClusterTemplate(t *testing.T) {
	long192 := strings.Repeat("a.", 95) + "ab" // 192 characters
	runValidateCases(t, []validateCase{
		{"minimal", KindClusterTemplate, `{"name":"x"}`, nil},
		{"lamp min > max", KindClusterTemplate, `{"name":"lamp","constraints":{"services":{"mysql-server":{"quantities":{"min":3,"max":1}}}}}`, []string{
			cf + "constraints.services.mysql-server.quantities.min: must be <= max (3 > 1)",
		}},
		{"full ok", KindClusterTemplate, `{"name":"x",
			"defaults":{"services":["base",{"name":"web","config":{"port":"%num.service.web%"}},{"name":"db"}],"provider":"aws","hardwaretype":"small","imagetype":"ubuntu","dnsSuffix":".example.com","config":{"a":{"b":["%host.service.web[0]%","%join(map(ip.service.cache,'$:11211'),' ')%"]},"n":1,"t":true,"z":null}},
			"compatibility":{"services":["base"],"hardwaretypes":["small"],"imagetypes":[]},
			"constraints":{"layout":{"mustcoexist":[["a","b"]],"cantcoexist":[["c","d"]]},"services":{"web":{"hardwaretypes":["small"],"imagetypes":["ubuntu"],"quantities":{"min":0,"max":0}},"db":{},"cache":null},"size":{"min":1,"max":1}},
			"administration":{"leaseduration":{"initial":"1h","max":"1d","step":3600000}},
			"links":[{"label":"UI","url":"http://%host.service.web%/"}],
			"extends":{"name":"base"},"includes":[{"name":"p1"},{"name":"p2"}]}`, nil},
		{"quantities min negative", KindClusterTemplate, `{"name":"x","constraints":{"services":{"web":{"quantities":{"min":-1,"max":"2"}}}}}`, []string{
			cf + "constraints.services.web.quantities.max: must be an integer, not a string",
			cf + "constraints.services.web.quantities.min: must be >= 0 (got -1)",
		}},
		{"size min 0", KindClusterTemplate, `{"name":"x","constraints":{"size":{"min":0}}}`, []string{cf + "constraints.size.min: must be >= 1 (got 0)"}},
		{"size max 0", KindClusterTemplate, `{"name":"x","constraints":{"size":{"max":0}}}`, []string{cf + "constraints.size.max: must be >= 1 (got 0)"}},
		{"size min > max", KindClusterTemplate, `{"name":"x","constraints":{"size":{"min":3,"max":2}}}`, []string{cf + "constraints.size.min: must be <= max (3 > 2)"}},
		{"size only max", KindClusterTemplate, `{"name":"x","constraints":{"size":{"max":2}}}`, nil},
		{"constraints service name invalid", KindClusterTemplate, `{"name":"x","constraints":{"services":{"bad svc":{"hardwaretypes":["a b"]},"ok":[]}}}`, []string{
			cf + `constraints.services.bad svc: service name "bad svc" ` + nameRuleMsg,
			cf + `constraints.services.bad svc.hardwaretypes[0]: "a b" ` + nameRuleMsg,
			cf + "constraints.services.ok: must be an object, not an array",
		}},
		{"constraints services not object", KindClusterTemplate, `{"name":"x","constraints":{"services":[]}}`, []string{
			cf + "constraints.services: must be an object mapping service names to constraints, not an array",
		}},
		{"empty coexist groups", KindClusterTemplate, `{"name":"x","constraints":{"layout":{"mustcoexist":[[],["a"]],"cantcoexist":[["a","b"],[],"c",[1]]}}}`, []string{
			cf + "constraints.layout.cantcoexist[1]: a group must not be empty",
			cf + "constraints.layout.cantcoexist[2]: must be an array, not a string",
			cf + "constraints.layout.cantcoexist[3][0]: must be a string, not a number",
			cf + "constraints.layout.mustcoexist[0]: a group must not be empty",
		}},
		{"dnsSuffix ok forms", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"a-1.B2.example"}}`, nil},
		{"dnsSuffix empty ok", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":""}}`, nil},
		{"dnsSuffix label ends in dash", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"bad-.example.com"}}`, []string{
			cf + `defaults.dnsSuffix: label "bad-" must be 1-63 characters of A-Z a-z 0-9 - and not end in -`,
		}},
		{"dnsSuffix empty label", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"a..b"}}`, []string{
			cf + `defaults.dnsSuffix: label "" must be 1-63 characters of A-Z a-z 0-9 - and not end in -`,
		}},
		{"dnsSuffix underscore", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"my_domain.com"}}`, []string{
			cf + `defaults.dnsSuffix: label "my_domain" must be 1-63 characters of A-Z a-z 0-9 - and not end in -`,
		}},
		{"dnsSuffix label 64", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"` + strings.Repeat("a", 64) + `.com"}}`, []string{
			cf + `defaults.dnsSuffix: label "` + strings.Repeat("a", 64) + `" must be 1-63 characters of A-Z a-z 0-9 - and not end in -`,
		}},
		{"dnsSuffix 192 chars", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"` + long192 + `"}}`, []string{
			cf + "defaults.dnsSuffix: must be at most 191 characters (got 192)",
		}},
		{"dnsSuffix 191 chars", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":"` + long192[1:] + `"}}`, nil},
		{"dnsSuffix not string", KindClusterTemplate, `{"name":"x","defaults":{"dnsSuffix":5}}`, []string{cf + "defaults.dnsSuffix: must be a string, not a number"}},
		{"lease initial 0 with finite max", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":0,"max":"1h","step":0}}}`, []string{
			cf + "administration.leaseduration.initial: must not be 0 (unlimited) when max is finite (3600000 ms)",
		}},
		{"check interval too short", KindClusterTemplate, `{"name":"x","administration":{"checkinterval":"30s"}}`, []string{
			cf + "administration.checkinterval: must be at least 1m (or 0: no periodic checks)",
		}},
		{"check interval too long", KindClusterTemplate, `{"name":"x","administration":{"checkinterval":"1000000000d"}}`, []string{
			cf + "administration.checkinterval: must be at most 365d (or 0: no periodic checks)",
		}},
		{"check interval a year", KindClusterTemplate, `{"name":"x","administration":{"checkinterval":"365d"}}`, nil},
		{"lease initial > max", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":"2h","max":"1h"}}}`, []string{
			cf + "administration.leaseduration.initial: must be <= max (7200000 > 3600000 ms)",
		}},
		{"lease initial = max", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":"60m","max":"1h"}}}`, nil},
		{"lease finite initial unlimited max", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":"1h","max":0}}}`, nil},
		{"lease all unlimited", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":0,"max":0,"step":0}}}`, nil},
		{"lease bad durations", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":"1w","max":-5,"step":[],"grace":1}}}`, []string{
			cf + `administration.leaseduration.grace: warning: unknown field, ignored`,
			cf + `administration.leaseduration.initial: "1w" is not a duration: want a non-negative integer of milliseconds or <int><s|m|h|d>`,
			cf + "administration.leaseduration.max: must be >= 0 (got -5)",
			cf + `administration.leaseduration.step: must be milliseconds or a duration string such as "90m", not an array`,
		}},
		{"lease duration too large", KindClusterTemplate, `{"name":"x","administration":{"leaseduration":{"initial":"99999999999999999d"}}}`, []string{
			cf + `administration.leaseduration.initial: "99999999999999999d" is not a duration: duration too large`,
		}},
		{"administration unknown key", KindClusterTemplate, `{"name":"x","administration":{"owner":"me"}}`, []string{cf + "administration.owner: warning: unknown field, ignored"}},
		{"config bad macros", KindClusterTemplate, `{"name":"x","defaults":{"config":{"a":{"b":["ok","%host.service.x[%"]},"c":"%map(ip.service.a)%","%bad[%":"keys are not checked","d":"50% of 60% %% literal"}}}`, []string{
			cf + "defaults.config.a.b[1]: macro %host.service.x[%: expected digits after '[' at offset 15",
			cf + "defaults.config.c: macro %map(ip.service.a)%: expected ',' at offset 16",
		}},
		{"config not object", KindClusterTemplate, `{"name":"x","defaults":{"config":["a"]}}`, []string{cf + "defaults.config: must be an object, not an array"}},
		{"defaults.services forms", KindClusterTemplate, `{"name":"x","defaults":{"services":["ok","bad name",{"config":{}},3,{"name":"web","config":[]},{"name":"db","config":{"url":"%join(host.service.db,'x'%"}},{"name":"c","cfg":{}}]}}`, []string{
			cf + `defaults.services[1]: "bad name" ` + nameRuleMsg,
			cf + "defaults.services[2].name: is required",
			cf + "defaults.services[3]: must be an object, not a number",
			cf + "defaults.services[4].config: must be an object, not an array",
			cf + "defaults.services[5].config.url: macro %join(host.service.db,'x'%: expected ')' at offset 24",
			cf + "defaults.services[6].cfg: warning: unknown field, ignored",
		}},
		{"defaults references invalid", KindClusterTemplate, `{"name":"x","defaults":{"provider":"a b","hardwaretype":1,"imagetype":"","size":"big"}}`, []string{
			cf + `defaults.hardwaretype: must be a string, not a number`,
			cf + `defaults.imagetype: "" ` + nameRuleMsg,
			cf + `defaults.provider: "a b" ` + nameRuleMsg,
			cf + "defaults.size: warning: unknown field, ignored",
		}},
		{"compatibility", KindClusterTemplate, `{"name":"x","compatibility":{"services":"base","hardwaretypes":["a b"],"imagetypes":[null],"providers":[]}}`, []string{
			cf + `compatibility.hardwaretypes[0]: "a b" ` + nameRuleMsg,
			cf + "compatibility.imagetypes[0]: must be a string, not null",
			cf + "compatibility.providers: warning: unknown field, ignored",
			cf + "compatibility.services: must be an array, not a string",
		}},
		{"links bad macro", KindClusterTemplate, `{"name":"x","links":[{"label":"x","url":"http://%join(host.service.web)%/"},{"label":"self ok","url":"http://%host.self%/"}]}`, []string{
			cf + "links[0].url: macro %join(host.service.web)%: expected ',' at offset 21",
		}},
		{"extends and includes malformed", KindClusterTemplate, `{"name":"x","extends":{"template":"base"},"includes":[{"name":"a b"},{},"p"]}`, []string{
			cf + "extends.name: is required: the parent cluster template",
			cf + "extends.template: warning: unknown field, ignored",
			cf + `includes[0].name: "a b" ` + nameRuleMsg,
			cf + "includes[1].name: is required: a partial template",
			cf + "includes[2]: must be an object, not a string",
		}},
		{"includes not array", KindClusterTemplate, `{"name":"x","includes":{"name":"p"}}`, []string{cf + "includes: must be an array, not an object"}},
		{"immutable is a partial field", KindClusterTemplate, `{"name":"x","immutable":true}`, []string{cf + "immutable: warning: unknown field, ignored"}},
		{"many errors in one file", KindClusterTemplate, `{"name":"lamp","defaults":{"dnsSuffix":"-."},
			"constraints":{"services":{"mysql-server":{"quantities":{"min":3,"max":1}}},"size":{"min":0},"layout":{"mustcoexist":[[]]}},
			"administration":{"leaseduration":{"initial":0,"max":"1h"}},
			"links":[{"url":"%host.service.a[x]%"}]}`, []string{
			cf + "administration.leaseduration.initial: must not be 0 (unlimited) when max is finite (3600000 ms)",
			cf + "constraints.layout.mustcoexist[0]: a group must not be empty",
			cf + "constraints.services.mysql-server.quantities.min: must be <= max (3 > 1)",
			cf + "constraints.size.min: must be >= 1 (got 0)",
			cf + `defaults.dnsSuffix: label "-" must be 1-63 characters of A-Z a-z 0-9 - and not end in -`,
			cf + "links[0].url: macro %host.service.a[x]%: expected digits after '[' at offset 15",
		}},
	})
	// The lamp example is given verbatim by the issue.
	v, issues := ParseEntity(KindClusterTemplate, "clustertemplates/lamp.json", []byte(`{"name":"lamp","constraints":{"services":{"mysql-server":{"quantities":{"min":3,"max":1}}}}}`))
	if v != nil || len(issues) != 1 || issues[0].String() != "clustertemplates/lamp.json: constraints.services.mysql-server.quantities.min: must be <= max (3 > 1)" {
		t.Fatalf("lamp: got %v %q", v, issueStrings(issues))
	}
}

func TestValidatePartialTemplate(t *testing.T) {
	const ignored = "warning: ignored in a partial template: only defaults and compatibility take part in resolution"
	runValidateCases(t, []validateCase{
		{"ok", KindPartialTemplate, `{"name":"x","immutable":true,"defaults":{"services":["a"],"config":{"k":"v"}},"compatibility":{"services":["a"]}}`, nil},
		{"immutable false", KindPartialTemplate, `{"name":"x","immutable":false}`, nil},
		{"immutable not bool", KindPartialTemplate, `{"name":"x","immutable":"yes"}`, []string{tf + "immutable: must be true or false, not a string"}},
		{"extends is an error", KindPartialTemplate, `{"name":"x","extends":{"name":"base"}}`, []string{tf + `extends: a partial template must not have "extends"`}},
		{"includes is an error", KindPartialTemplate, `{"name":"x","includes":[{"name":"p"}]}`, []string{tf + `includes: a partial template must not have "includes"`}},
		{"empty includes is still an error", KindPartialTemplate, `{"name":"x","includes":[]}`, []string{tf + `includes: a partial template must not have "includes"`}},
		{"null extends is absent", KindPartialTemplate, `{"name":"x","extends":null,"includes":null}`, nil},
		{"constraints, administration, links warn", KindPartialTemplate, `{"name":"x","constraints":{"size":{"min":2}},"administration":{"leaseduration":{"initial":"1h"}},"links":[{"label":"a","url":"http://a/"}]}`, []string{
			tf + "administration: " + ignored,
			tf + "constraints: " + ignored,
			tf + "links: " + ignored,
		}},
		{"ignored blocks are still validated", KindPartialTemplate, `{"name":"x","constraints":{"size":{"min":3,"max":1}}}`, []string{
			tf + "constraints: " + ignored,
			tf + "constraints.size.min: must be <= max (3 > 1)",
		}},
		{"both errors and warnings", KindPartialTemplate, `{"name":"x","extends":{"name":"a"},"includes":[{"name":"b"}],"constraints":{},"defaults":{"config":{"a":"%host.service.x[%"}}}`, []string{
			tf + "constraints: " + ignored,
			tf + "defaults.config.a: macro %host.service.x[%: expected digits after '[' at offset 15",
			tf + `extends: a partial template must not have "extends"`,
			tf + `includes: a partial template must not have "includes"`,
		}},
	})
}

func TestValidatePluginTypes(t *testing.T) {
	const specExample = `{ "name": "aws", "description": "...",
  "parameters": {
    "admin": { "fields": { "api_key": {"label": "Key", "type": "password", "sensitive": true},
      "region": {"label": "Region", "type": "select", "options": ["us-east-1"], "default": "us-east-1", "override": true} },
      "required": [["api_key", "region"]] },
    "user": { "fields": { "ssh_key": {"label": "SSH key", "type": "text", "sensitive": true} }, "required": [[]] } },
  "resourceTypes": { "ssh_keys": {"format": "file", "permissions": "0400"}, "playbooks": {"format": "archive"} } }`
	runValidateCases(t, []validateCase{
		{"spec example provider type", KindProviderType, specExample, nil},
		{"spec example automator type", KindAutomatorType, specExample, nil},
		{"classname ignored silently", KindAutomatorType, `{"name":"x","classname":"co.cask.Shell","parameters":{}}`, nil},
		{"default of any type", KindProviderType, `{"name":"x","parameters":{"admin":{"fields":{"a":{"label":"A","type":"checkbox","default":true},"b":{"label":"B","type":"text","default":{"x":[1]}}}}}}`, nil},
		{"permissions on archive", KindAutomatorType, `{"name":"x","resourceTypes":{"playbooks":{"format":"archive","permissions":"0644"}}}`, []string{
			af + `resourceTypes.playbooks.permissions: is allowed only for format "file"`,
		}},
		{"resource types bad", KindProviderType, `{"name":"x","resourceTypes":{"a":{"format":"zip"},"b":{},"c":{"format":"file","permissions":"0999"},"d":{"format":"file","permissions":"04000"},"e":{"format":"file","permissions":400},"f":"file","g":{"format":"file","permissions":"400","owner":"root"},"h":null}}`, []string{
			yf + `resourceTypes.a.format: "zip" is not a format: use "file" or "archive"`,
			yf + `resourceTypes.b.format: is required: "file" or "archive"`,
			yf + `resourceTypes.c.permissions: "0999" must be a 3-4 digit octal string such as "0400"`,
			yf + `resourceTypes.d.permissions: "04000" must be a 3-4 digit octal string such as "0400"`,
			yf + "resourceTypes.e.permissions: must be a string, not a number",
			yf + "resourceTypes.f: must be an object, not a string",
			yf + "resourceTypes.g.owner: warning: unknown field, ignored",
		}},
		{"resource types not object", KindProviderType, `{"name":"x","resourceTypes":[]}`, []string{yf + "resourceTypes: must be an object, not an array"}},
		{"required names undeclared field", KindProviderType, `{"name":"x","parameters":{"admin":{"fields":{"key":{"label":"K","type":"text"}},"required":[["key","region"],["secret"]]},"user":{"required":[["ssh_key"]]}}}`, []string{
			yf + `parameters.admin.required[0][1]: "region" is not declared in fields`,
			yf + `parameters.admin.required[1][0]: "secret" is not declared in fields`,
			yf + `parameters.user.required[0][0]: "ssh_key" is not declared in fields`,
		}},
		{"required shape", KindAutomatorType, `{"name":"x","parameters":{"admin":{"fields":{"a":{"label":"A","type":"text"}},"required":[["a"],"a",[1]]}}}`, []string{
			af + "parameters.admin.required[1]: must be an array, not a string",
			af + "parameters.admin.required[2][0]: must be a string, not a number",
		}},
		{"field schemas", KindAutomatorType, `{"name":"x","parameters":{"admin":{"fields":{"a":{},"b":{"label":1,"type":"select","options":"x","override":"no","sensitive":1,"tip":[]},"c":"text","d":null,"e":{"label":"E","type":"select","options":["x",2],"width":3}}}}}`, []string{
			af + "parameters.admin.fields.a.label: is required",
			af + "parameters.admin.fields.a.type: is required",
			af + "parameters.admin.fields.b.label: must be a string, not a number",
			af + "parameters.admin.fields.b.options: must be an array, not a string",
			af + "parameters.admin.fields.b.override: must be true or false, not a string",
			af + "parameters.admin.fields.b.sensitive: must be true or false, not a number",
			af + "parameters.admin.fields.b.tip: must be a string, not an array",
			af + "parameters.admin.fields.c: must be an object, not a string",
			af + "parameters.admin.fields.e.options[1]: must be a string, not a number",
			af + "parameters.admin.fields.e.width: warning: unknown field, ignored",
		}},
		{"fields not object", KindProviderType, `{"name":"x","parameters":{"admin":{"fields":[]},"owner":{}}}`, []string{
			yf + "parameters.admin.fields: must be an object mapping field names to field schemas, not an array",
			yf + "parameters.owner: warning: unknown field, ignored",
		}},
	})
}

// TestValidateDecodedValues checks that accepted documents decode into the
// model with Coopr's semantics (durations, defaults, service refs).
func TestValidateDecodedValues(t *testing.T) {
	v, issues := ParseEntity(KindService, "s.json", []byte(`{"name":"s","provisioner":{"actions":{"start":{"type":"shell","timeout":"90m","maxAttempts":4},"stop":{"type":"shell","timeout":1500}}},"dependencies":{"install":{"requires":["b","a"]},"runtime":{"requires":["a","c"]}}}`))
	if issues.HasErrors() {
		t.Fatal(issues)
	}
	s := v.(*Service)
	if got := s.Provisioner.Actions["start"]; got.Timeout != 5400000 || got.MaxAttempts != 4 || got.Type != "shell" {
		t.Errorf("start = %+v", got)
	}
	if got := s.Provisioner.Actions["stop"].Timeout; got != 1500 {
		t.Errorf("stop timeout = %d", got)
	}
	if got := s.Requires(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("Requires = %v", got)
	}
	if !s.HasAction("start") || s.HasAction("install") {
		t.Errorf("HasAction wrong")
	}

	v, issues = ParseEntity(KindClusterTemplate, "t.json", []byte(`{"name":"t","defaults":{"services":["a",{"name":"b","config":{"x":1}},{"name":"c"}]},"administration":{"leaseduration":{"initial":"1h","max":"2d","step":"30s"}},"constraints":{"services":{"a":{"quantities":{"min":1}}}}}`))
	if issues.HasErrors() {
		t.Fatal(issues)
	}
	tm := v.(*Template)
	want := []ServiceRef{{Name: "a"}, {Name: "b", Config: json.RawMessage(`{"x":1}`)}, {Name: "c", Config: json.RawMessage(`{}`)}}
	if !reflect.DeepEqual(tm.Defaults.Services, want) {
		t.Errorf("services = %+v", tm.Defaults.Services)
	}
	if got := tm.Defaults.ServiceNames(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("ServiceNames = %v", got)
	}
	if got := tm.Administration.LeaseDuration; got != (Lease{Initial: 3600000, Max: 2 * 86400000, Step: 30000}) {
		t.Errorf("lease = %+v", got)
	}
	if q := tm.Constraints.Services["a"].Quantities; q == nil || q.Min != 1 || q.Max != nil {
		t.Errorf("quantities = %+v", q)
	}
	b, err := json.Marshal(tm.Defaults.Services)
	if err != nil || string(b) != `["a",{"name":"b","config":{"x":1}},{"name":"c","config":{}}]` {
		t.Errorf("ServiceRef marshal = %s %v", b, err)
	}

	v, _ = ParseEntity(KindImageType, "i.json", []byte(`{"name":"i","providermap":{"aws":{"image":"ami-1","sshuser":"ubuntu"},"gce":{"image":"img"}}}`))
	im := v.(*MachineType)
	if im.Image("aws") != "ami-1" || im.SSHUser("aws") != "ubuntu" || im.SSHUser("gce") != "root" || im.Image("none") != "" {
		t.Errorf("image type accessors wrong: %+v", im)
	}
	v, _ = ParseEntity(KindHardwareType, "h.json", []byte(`{"name":"h","providermap":{"aws":{"flavor":"m1"}}}`))
	if hw := v.(*MachineType); hw.Flavor("aws") != "m1" || hw.Flavor("gce") != "" {
		t.Errorf("flavor wrong: %+v", hw)
	}
	for _, k := range Kinds {
		v, issues := ParseEntity(k, "", []byte(`{"name":"n","providertype":"aws"}`))
		if v == nil {
			t.Errorf("%s: %v", k, issues)
			continue
		}
		if got := entityName(v); got != "n" {
			t.Errorf("%s: name %q", k, got)
		}
		if got := reflect.TypeOf(v); got != reflect.TypeOf(newValue(k)) {
			t.Errorf("%s: type %v", k, got)
		}
	}
}

// TestValidatorAgreesWithModel: whatever the checker warns is ignored must
// really be ignored, and what it accepts must decode. encoding/json matches
// keys case-insensitively, so a key the checker calls unknown can still fill
// a field with an unvalidated value.
func TestValidatorAgreesWithModel(t *testing.T) {
	t.Run("case-variant keys must not bypass validation", func(t *testing.T) {
		cases := []struct {
			kind  Kind
			doc   string
			check func(v any) bool // reports whether the bad value leaked in
		}{
			{KindService, `{"name":"s","provisioner":{"actions":{"start":{"type":"shell","MaxAttempts":-5}}}}`,
				func(v any) bool { return v.(*Service).Provisioner.Actions["start"].MaxAttempts == -5 }},
			{KindService, `{"name":"s","Provisioner":{"actions":{"bogus":{}}}}`,
				func(v any) bool { return v.(*Service).HasAction("bogus") }},
			{KindClusterTemplate, `{"name":"t","Constraints":{"size":{"min":5,"max":1}}}`,
				func(v any) bool { return v.(*Template).Constraints.Size.Min == 5 }},
			{KindClusterTemplate, `{"name":"t","defaults":{"DNSSuffix":"-bad-"}}`,
				func(v any) bool { return v.(*Template).Defaults.DNSSuffix == "-bad-" }},
			{KindPartialTemplate, `{"name":"p","Extends":{"name":"x"}}`,
				func(v any) bool { return v.(*Template).Extends != nil }},
		}
		for _, tc := range cases {
			v, issues := ParseEntity(tc.kind, "f.json", []byte(tc.doc))
			if v != nil && tc.check(v) {
				t.Errorf("%s %s: accepted with the unvalidated value (issues %q)", tc.kind, tc.doc, issueStrings(issues))
			}
		}
	})
	t.Run("non-integer version names its path", func(t *testing.T) {
		for _, ver := range []string{"1.5", "1e30", "99999999999999999999"} {
			_, issues := ParseEntity(KindService, "f.json", []byte(`{"name":"s","version":`+ver+`}`))
			if len(issues) != 1 || issues[0].Path != "version" || strings.HasPrefix(issues[0].Message, "internal") {
				t.Errorf("version %s: %q", ver, issueStrings(issues))
			}
		}
	})
	t.Run("ignored immutable on a cluster template", func(t *testing.T) {
		v, issues := ParseEntity(KindClusterTemplate, "f.json", []byte(`{"name":"t","immutable":"yes"}`))
		if v == nil || issues.HasErrors() {
			t.Errorf("got %v %q, want accepted with one warning", v, issueStrings(issues))
		}
	})
	t.Run("no internal errors on the catalog samples", func(t *testing.T) {
		for _, doc := range []string{
			`{"name":"s","dependencies":{"install":{}},"provisioner":{"actions":{}},"links":[]}`,
			`{"name":"t","constraints":{"services":{"a":{"quantities":{"max":9223372036854775807}}}}}`,
			`{"name":"t","administration":{"leaseduration":{"initial":"106751d","max":9223372036854775807}}}`,
		} {
			for _, k := range []Kind{KindService, KindClusterTemplate} {
				_, issues := ParseEntity(k, "f.json", []byte(doc))
				for _, is := range issues {
					if strings.HasPrefix(is.Message, "internal") {
						t.Errorf("%s %s: %v", k, doc, is)
					}
				}
			}
		}
	})
}

// TestLeaseMissingInitial: an absent duration is 0, unlimited, and a finite
// max forbids initial 0 (docs/catalog.md#lease-settings), so an absent (or
// null) initial with a finite max is the same error as an explicit 0.
func TestLeaseMissingInitial(t *testing.T) {
	for _, ld := range []string{`{"max":"1h"}`, `{"initial":null,"max":"1h"}`, `{"max":3600000,"step":"1m"}`} {
		_, issues := ParseEntity(KindClusterTemplate, "t.json", []byte(`{"name":"t","administration":{"leaseduration":`+ld+`}}`))
		want := "t.json: administration.leaseduration.initial: must not be 0 (unlimited) when max is finite (3600000 ms)"
		if got := issueStrings(issues.Errors()); len(got) != 1 || got[0] != want {
			t.Errorf("%s: got %q, want %q", ld, got, want)
		}
	}
}

func TestMalformedJSON(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"missing comma on line 3", "{\n  \"name\": \"x\"\n  \"label\": \"y\"\n}", `line 3, column 3: invalid character '"' after object key:value pair`},
		{"trailing comma in array", "{\"name\":\"x\",\n \"a\": [1,2,]}", "line 2, column 12: invalid character ']' looking for beginning of value"},
		{"bad literal", `{"a": tru}`, "line 1, column 10: invalid character '}' in literal true (expecting 'e')"},
		{"control character in string", "{\"a\": \"\x01\"}", `line 1, column 8: invalid character '\x01' in string literal`},
		{"bare word", "{\n\n\tname: 1}", "line 3, column 2: invalid character 'n' looking for beginning of object key string"},
		{"past the first read buffer", strings.Repeat(" ", 2000) + "\n{\"a\": x}", "line 2, column 7: invalid character 'x' looking for beginning of value"},
		{"deep in a long file", "{\"b\":\"" + strings.Repeat("y", 5000) + "\",\n\n x}", "line 3, column 2: invalid character 'x' looking for beginning of object key string"},
		{"second value", "{}\n{}", "line 2, column 1: unexpected data after the JSON value"},
		{"second value after long first", "{\"b\":\"" + strings.Repeat("y", 600) + "\"}\n\n {", "line 3, column 2: unexpected data after the JSON value"},
		{"empty file", "", "line 1, column 1: the file is empty"},
		{"blank file", "  \n\t", "line 2, column 1: the file is empty"},
		{"truncated", "{\"a\":[1,", "unexpected end of JSON input"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, issues := ParseEntity(KindService, "services/x.json", []byte(tc.doc))
			if v != nil || len(issues) != 1 {
				t.Fatalf("got %v %q", v, issueStrings(issues))
			}
			is := issues[0]
			if is.Severity != SeverityError || is.File != "services/x.json" || is.Path != "" {
				t.Errorf("issue = %+v", is)
			}
			if !strings.HasSuffix(is.Message, tc.want) || (strings.HasPrefix(tc.want, "line") && is.Message != tc.want) {
				t.Errorf("message = %q, want %q", is.Message, tc.want)
			}
			if got := is.String(); got != "services/x.json: "+is.Message {
				t.Errorf("String = %q", got)
			}
			// The same through AddDocument and Load.
			if got := New().AddDocument(KindService, "services/x.json", []byte(tc.doc)); !reflect.DeepEqual(got, issues) {
				t.Errorf("AddDocument = %q", issueStrings(got))
			}
			_, li, err := Load(fstest.MapFS{"services/x.json": {Data: []byte(tc.doc)}}, ".")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(issueStrings(li), "services/x.json: "+is.Message) {
				t.Errorf("Load issues = %q", issueStrings(li))
			}
		})
	}
	var se *SyntaxError
	if err := func() error { _, err := decodeTree([]byte("{\n  \"a\" 1}")); return err }(); !errors.As(err, &se) || se.Line != 2 || se.Column != 7 {
		t.Errorf("decodeTree error = %#v", err)
	}
}

// TestMalformedJSONTrailingData: garbage after the JSON value must be located
// where it is.
func TestMalformedJSONTrailingData(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"{} x", "line 1, column 4: invalid character 'x' looking for beginning of value"},
		{"{} ]", "line 1, column 4: invalid character ']' looking for beginning of value"},
		{"{}\n\n  x", "line 3, column 3: invalid character 'x' looking for beginning of value"},
		{"{\"a\":1}\n" + strings.Repeat(" ", 600) + "\n x", "line 3, column 2: invalid character 'x' looking for beginning of value"},
	}
	for _, tc := range cases {
		_, err := decodeTree([]byte(tc.doc))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.doc, err, tc.want)
		}
	}
}

func TestIssues(t *testing.T) {
	is := Issues{
		{File: "a.json", Path: "x", Message: "bad"},
		{File: "a.json", Path: "y", Message: "odd", Severity: SeverityWarning},
		{Message: "no place"},
	}
	if got := is[0].String(); got != "a.json: x: bad" {
		t.Errorf("%q", got)
	}
	if got := is[1].String(); got != "a.json: y: warning: odd" {
		t.Errorf("%q", got)
	}
	if got := is[2].String(); got != "no place" {
		t.Errorf("%q", got)
	}
	if len(is.Errors()) != 2 || len(is.Warnings()) != 1 || !is.HasErrors() {
		t.Errorf("filters wrong")
	}
	err := is.Err()
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Issues) != 2 {
		t.Fatalf("Err = %#v", err)
	}
	if got := err.Error(); got != "2 errors:\na.json: x: bad\nno place" {
		t.Errorf("Error() = %q", got)
	}
	if got := is[:1].Err().Error(); got != "a.json: x: bad" {
		t.Errorf("single Error() = %q", got)
	}
	if err := is[1:2].Err(); err != nil {
		t.Errorf("warnings only: Err = %v", err)
	}
	if Issues(nil).HasErrors() || Issues(nil).Err() != nil {
		t.Errorf("nil issues")
	}
	b, _ := json.Marshal(is[0])
	if string(b) != `{"file":"a.json","path":"x","message":"bad"}` {
		t.Errorf("json = %s", b)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]Duration{
		"0": 0, "1500": 1500, "90m": 5400000, "2h": 7200000, "1d": 86400000, "30s": 30000, " 5s ": 5000, "0m": 0,
	}
	for s, want := range good {
		if got, err := ParseDuration(s); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", " ", "m", "-1", "-1s", "1.5h", "1w", "1 h", "1hm", "99999999999999999999", "9999999999999999d", "0x10"} {
		if got, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %d, want error", s, got)
		}
	}
	var d Duration
	for in, want := range map[string]Duration{`"90m"`: 5400000, `1000`: 1000, `null`: 0, `"7"`: 7} {
		d = 99
		if err := json.Unmarshal([]byte(in), &d); err != nil || d != want {
			t.Errorf("Unmarshal %s = %d, %v", in, d, err)
		}
	}
	for _, in := range []string{`-1`, `"x"`, `1.5`, `true`, `{}`} {
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal %s: want error", in)
		}
	}
}

func TestCheckDNSSuffixAndNames(t *testing.T) {
	for _, s := range []string{"example.com", ".example.com", "a", "A-1.b-2", strings.Repeat("a", 63), strings.Repeat("a.", 95) + "a"} {
		if err := CheckDNSSuffix(s); err != nil {
			t.Errorf("CheckDNSSuffix(%q) = %v", s, err)
		}
	}
	for _, s := range []string{".", "..a", "a.", "a-", "a_b", "a b", strings.Repeat("a", 64), strings.Repeat("a.", 96), "é.com"} {
		if err := CheckDNSSuffix(s); err == nil {
			t.Errorf("CheckDNSSuffix(%q) = nil, want error", s)
		}
	}
	for _, s := range []string{"a", "A.b-c_d", "0", strings.Repeat("x", 255), "..."} {
		if !ValidName(s) {
			t.Errorf("ValidName(%q) = false", s)
		}
	}
	for _, s := range []string{"", "a b", "a/b", "a:b", "é", strings.Repeat("x", 256), "a\n"} {
		if ValidName(s) {
			t.Errorf("ValidName(%q) = true", s)
		}
	}
}

func TestKinds(t *testing.T) {
	want := map[Kind]string{
		KindProvider: "provider", KindHardwareType: "hardware type", KindImageType: "image type", KindService: "service",
		KindClusterTemplate: "cluster template", KindPartialTemplate: "partial template",
		KindProviderType: "provider type", KindAutomatorType: "automator type",
	}
	if len(Kinds) != len(want) {
		t.Fatalf("Kinds = %v", Kinds)
	}
	for _, k := range Kinds {
		if k.Singular() != want[k] {
			t.Errorf("%s.Singular() = %q", k, k.Singular())
		}
		if got, ok := ParseKind(string(k)); !ok || got != k {
			t.Errorf("ParseKind(%q) = %q %v", k, got, ok)
		}
		if k.Shared() != (k == KindProviderType || k == KindAutomatorType) {
			t.Errorf("%s.Shared() = %v", k, k.Shared())
		}
	}
	for _, s := range []string{"", "service", "Services", "plugins", "tenants"} {
		if _, ok := ParseKind(s); ok {
			t.Errorf("ParseKind(%q) ok", s)
		}
	}
}

// mapFS builds an in-memory file system from path → content.
func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for p, s := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(s)}
	}
	return fsys
}

func loadFiles(t *testing.T, files map[string]string) (*Catalog, Issues) {
	t.Helper()
	c, issues, err := Load(mapFS(files), ".")
	if err != nil {
		t.Fatal(err)
	}
	return c, issues
}

// baseCatalog is a small consistent catalog; tests copy and change it.
func baseCatalog() map[string]string {
	return map[string]string{
		"providers/aws.json":        `{"name":"aws","providertype":"aws","provisioner":{"region":"us-east-1"}}`,
		"hardwaretypes/small.json":  `{"name":"small","providermap":{"aws":{"flavor":"m1.small"}}}`,
		"imagetypes/ubuntu.json":    `{"name":"ubuntu","providermap":{"aws":{"image":"ami-1","sshuser":"ubuntu"}}}`,
		"services/base.json":        `{"name":"base","provisioner":{"actions":{"install":{"type":"shell","fields":{"script":"base.sh"}}}}}`,
		"services/web.json":         `{"name":"web","dependencies":{"provides":["http"],"install":{"requires":["base"]}},"provisioner":{"actions":{"start":{"type":"shell","fields":{"script":"web.sh"}}}}}`,
		"clustertemplates/web.json": `{"name":"web","defaults":{"services":["base","web"],"provider":"aws","hardwaretype":"small","imagetype":"ubuntu"}}`,
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(out, kv[i])
		} else {
			out[kv[i]] = kv[i+1]
		}
	}
	return out
}

func TestLoadBaseCatalog(t *testing.T) {
	c, issues := loadFiles(t, baseCatalog())
	if len(issues) != 0 {
		t.Fatalf("issues: %q", issueStrings(issues))
	}
	if c.Len() != 6 {
		t.Errorf("Len = %d", c.Len())
	}
	if got := c.Names(KindService); !slices.Equal(got, []string{"base", "web"}) {
		t.Errorf("services = %v", got)
	}
	e, ok := c.Get(KindService, "web")
	if !ok || e.File != "services/web.json" || e.Kind != KindService || e.Name != "web" {
		t.Errorf("entity = %+v", e)
	}
	if _, ok := c.Get(KindClusterTemplate, "base"); ok {
		t.Errorf("kinds are separate name spaces")
	}
	if c.Providers()["aws"].ProviderType != "aws" || c.HardwareTypes()["small"].Flavor("aws") != "m1.small" ||
		c.ImageTypes()["ubuntu"].Image("aws") != "ami-1" || c.ClusterTemplates()["web"].Defaults.Provider != "aws" ||
		len(c.PartialTemplates()) != 0 || len(c.ProviderTypes()) != 0 || len(c.AutomatorTypes()) != 0 {
		t.Errorf("typed accessors wrong")
	}
}

// TestCrossReferences: which dangling references are errors and which are
// warnings (issue text and docs/catalog.md#validation).
func TestCrossReferences(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string // exact issues, any order
	}{
		{"requires not provided", with(baseCatalog(),
			"services/web.json", `{"name":"web","dependencies":{"install":{"requires":["base","jdk"]},"runtime":{"requires":["zk"]}}}`),
			[]string{
				`services/web.json: dependencies.install.requires[1]: "jdk" is not a service and no service provides it: add that service or remove the requirement`,
				`services/web.json: dependencies.runtime.requires[0]: "zk" is not a service and no service provides it: add that service or remove the requirement`,
			}},
		{"requires satisfied by provides", with(baseCatalog(),
			"services/app.json", `{"name":"app","dependencies":{"runtime":{"requires":["http"]},"install":{"requires":["web"]}}}`),
			nil},
		{"dangling conflicts, uses and compatibility warn", with(baseCatalog(),
			"services/app.json", `{"name":"app","dependencies":{"conflicts":["legacy"],"install":{"uses":["db"]},"runtime":{"uses":["metrics","http"]}}}`,
			"clustertemplates/web.json", `{"name":"web","defaults":{"services":["base"],"provider":"aws"},"compatibility":{"services":["base","nosvc"],"hardwaretypes":["nohw"],"imagetypes":["ubuntu","noimg"]},"constraints":{"services":{"ghost":{"quantities":{"max":1}}}}}`),
			[]string{
				`clustertemplates/web.json: compatibility.hardwaretypes[0]: warning: hardware type "nohw" is not in the catalog`,
				`clustertemplates/web.json: compatibility.imagetypes[1]: warning: image type "noimg" is not in the catalog`,
				`clustertemplates/web.json: compatibility.services[1]: warning: service "nosvc" is not in the catalog`,
				`clustertemplates/web.json: constraints.services.ghost: warning: service "ghost" is not in the catalog`,
				`services/app.json: dependencies.conflicts[0]: warning: "legacy" is not a service and no service provides it`,
				`services/app.json: dependencies.install.uses[0]: warning: "db" is not a service and no service provides it`,
				`services/app.json: dependencies.runtime.uses[0]: warning: "metrics" is not a service and no service provides it`,
			}},
		{"dangling default service is a warning", with(baseCatalog(),
			"clustertemplates/web.json", `{"name":"web","defaults":{"services":["base","later"],"provider":"aws"}}`),
			[]string{`clustertemplates/web.json: defaults.services[1]: warning: service "later" is not in the catalog: clusters from this template will fail until it is added`}},
		{"missing template defaults are errors", with(baseCatalog(),
			"clustertemplates/web.json", `{"name":"web","defaults":{"services":["base"],"provider":"gce","hardwaretype":"huge","imagetype":"arch"}}`),
			[]string{
				`clustertemplates/web.json: defaults.hardwaretype: hardware type "huge" does not exist: add it to the catalog or change the default`,
				`clustertemplates/web.json: defaults.imagetype: image type "arch" does not exist: add it to the catalog or change the default`,
				`clustertemplates/web.json: defaults.provider: provider "gce" does not exist: add it to the catalog or change the default`,
			}},
		{"missing partial defaults are errors too", with(baseCatalog(),
			"partialtemplates/p.json", `{"name":"p","defaults":{"provider":"gce","services":["ghost"]},"compatibility":{"hardwaretypes":["nohw"]}}`),
			[]string{
				`partialtemplates/p.json: compatibility.hardwaretypes[0]: warning: hardware type "nohw" is not in the catalog`,
				`partialtemplates/p.json: defaults.provider: provider "gce" does not exist: add it to the catalog or change the default`,
				`partialtemplates/p.json: defaults.services[0]: warning: service "ghost" is not in the catalog: clusters from this template will fail until it is added`,
			}},
		{"missing parent and partial", with(baseCatalog(),
			"clustertemplates/child.json", `{"name":"child","extends":{"name":"nope"},"includes":[{"name":"missing"}]}`),
			[]string{
				`clustertemplates/child.json: extends.name: cluster template "nope" does not exist`,
				`clustertemplates/child.json: includes[0].name: partial template "missing" does not exist`,
			}},
		{"partial named like a cluster template is not a partial", with(baseCatalog(),
			"clustertemplates/child.json", `{"name":"child","extends":{"name":"web"},"includes":[{"name":"web"}]}`),
			[]string{`clustertemplates/child.json: includes[0].name: partial template "web" does not exist`}},
		{"extends cycle", with(baseCatalog(),
			"clustertemplates/a.json", `{"name":"a","extends":{"name":"b"},"defaults":{"services":["base"],"provider":"aws"}}`,
			"clustertemplates/b.json", `{"name":"b","extends":{"name":"a"}}`),
			[]string{
				`clustertemplates/a.json: extends cycle: a → b → a`,
				`clustertemplates/b.json: extends cycle: b → a → b`,
			}},
		{"self extends", with(baseCatalog(),
			"clustertemplates/a.json", `{"name":"a","extends":{"name":"a"}}`),
			[]string{`clustertemplates/a.json: extends cycle: a → a`}},
		{"unresolvable template", with(baseCatalog(),
			"clustertemplates/empty.json", `{"name":"empty"}`),
			[]string{`clustertemplates/empty.json: template empty: defaults.services is empty: list at least one service; defaults.provider is not set: name the provider to use`}},
		{"extends and includes ok", with(baseCatalog(),
			"partialtemplates/sizes.json", `{"name":"sizes","defaults":{"hardwaretype":"small"}}`,
			"clustertemplates/child.json", `{"name":"child","extends":{"name":"web"},"includes":[{"name":"sizes"}]}`),
			nil},
		{"immutable violation is reported", with(baseCatalog(),
			"partialtemplates/frozen.json", `{"name":"frozen","immutable":true,"defaults":{"config":{"k":1}}}`,
			"clustertemplates/child.json", `{"name":"child","extends":{"name":"web"},"includes":[{"name":"frozen"}],"defaults":{"config":{"k":2}}}`),
			[]string{`clustertemplates/child.json: template child: config key "k" is set by immutable partial template frozen and cannot be changed by child`}},
		{"duplicate names across files", with(baseCatalog(),
			"services/web2.json", `{"name":"web"}`),
			[]string{`services/web2.json: name: service "web" is also defined in services/web.json`}},
		{"name differs from file name", with(baseCatalog(),
			"services/base.json", "",
			"services/other.json", `{"name":"base"}`),
			[]string{`services/other.json: name: warning: name "base" differs from the file name; export will write base.json`}},
		{"driver descriptors are checked when present", with(baseCatalog(),
			"automatortypes/shell.json", `{"name":"shell","parameters":{"admin":{"fields":{"script":{"label":"S","type":"text"},"args":{"label":"A","type":"text"}},"required":[["script"]]}}}`,
			"providertypes/gce.json", `{"name":"gce"}`,
			"services/x.json", `{"name":"x","provisioner":{"actions":{"install":{"type":"chef-solo"},"start":{"type":"shell","fields":{"args":"a","extra":"b"}}}}}`,
			"hardwaretypes/small.json", `{"name":"small","providermap":{"aws":{"flavor":"m1.small"},"rackspace":{"flavor":"2"}}}`),
			[]string{
				`hardwaretypes/small.json: providermap.rackspace: warning: provider "rackspace" is not in the catalog`,
				`providers/aws.json: providertype: warning: provider type "aws" is not in the catalog`,
				`services/x.json: provisioner.actions.install.type: warning: automator type "chef-solo" is not in the catalog`,
				`services/x.json: provisioner.actions.start.fields: warning: no required set of fields is complete; one of [[script]] is needed`,
				`services/x.json: provisioner.actions.start.fields.extra: warning: field is not declared by the automator type`,
			}},
		{"invalid entity is left out and reported", with(baseCatalog(),
			"services/bad.json", `{"name":"bad","provisioner":{"actions":{"deploy":{"type":"shell"}}}}`,
			"services/needsbad.json", `{"name":"needsbad","dependencies":{"runtime":{"requires":["bad"]}}}`),
			[]string{
				`services/bad.json: provisioner.actions.deploy: unknown action "deploy": allowed are install, remove, initialize, configure, start, stop, status`,
				`services/needsbad.json: dependencies.runtime.requires[0]: "bad" is not a service and no service provides it: add that service or remove the requirement`,
			}},
		{"files outside kind directories are ignored", with(baseCatalog(),
			"README.json", `not json at all`,
			"services/notes.txt", `not json`,
			"plugins/LICENSE", `x`,
			"services/sub/ignored.json", `{}`),
			nil},
		{"kind directories at any depth", with(baseCatalog(),
			"plugins/automatortypes/shell.json", `{"name":"shell","parameters":{"admin":{"fields":{"script":{"label":"Script","type":"text"}}}}}`),
			nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, issues := loadFiles(t, tc.files)
			got, want := issueStrings(issues), sortedCopy(tc.want)
			if len(got) != len(want) || !slices.Equal(got, want) {
				t.Errorf("issues mismatch\n got: %q\nwant: %q", got, want)
			}
			// Load sorts issues by file then path.
			for i := 1; i < len(issues); i++ {
				a, b := issues[i-1], issues[i]
				if a.File > b.File || (a.File == b.File && a.Path > b.Path) {
					t.Errorf("issues not sorted: %v before %v", a, b)
				}
			}
		})
	}
}

func TestLoadDuplicateKeepsFirst(t *testing.T) {
	c, issues := loadFiles(t, with(baseCatalog(), "services/web2.json", `{"name":"web","label":"second"}`))
	if !issues.HasErrors() {
		t.Fatal("want a duplicate error")
	}
	e, _ := c.Get(KindService, "web")
	if e.File != "services/web.json" || e.Value.(*Service).Label != "" {
		t.Errorf("the first definition must stay: %+v", e)
	}
}

func TestLoadBundle(t *testing.T) {
	bundle := `{
  "providers": [{"name":"aws","providertype":"aws"}],
  "hardwaretypes": [{"name":"small","providermap":{"aws":{"flavor":"m1"}}}],
  "imagetypes": [],
  "services": [{"name":"base"},{"name":"web","dependencies":{"runtime":{"requires":["base"]}}}],
  "clustertemplates": [{"name":"web","defaults":{"services":["web","base"],"provider":"aws","hardwaretype":"small"}}],
  "partialtemplates": null,
  "automatortypes": [{"name":"shell","classname":"co.cask.coopr.Shell","parameters":{"admin":{"fields":{"script":{"label":"Script","type":"text"}}}}}],
  "tenant": "ignored"
}`
	check := func(t *testing.T, c *Catalog, issues Issues, file string) {
		t.Helper()
		if got := issueStrings(issues); !slices.Equal(got, []string{file + ": tenant: warning: unknown field, ignored"}) {
			t.Errorf("issues = %q", got)
		}
		if c.Len() != 6 {
			t.Errorf("Len = %d", c.Len())
		}
		if e, ok := c.Get(KindService, "web"); !ok || e.File != file {
			t.Errorf("web = %+v", e)
		}
	}
	t.Run("AddDocument without kind", func(t *testing.T) {
		c := New()
		issues := c.AddDocument("", "bundle.json", []byte(bundle))
		issues = append(issues, c.Check()...)
		check(t, c, issues, "bundle.json")
	})
	t.Run("Load of a single file", func(t *testing.T) {
		c, issues, err := Load(mapFS(map[string]string{"export/bundle.json": bundle}), "export/bundle.json")
		if err != nil {
			t.Fatal(err)
		}
		// A single file is named relative to the parent of its directory.
		check(t, c, issues, "export/bundle.json")
	})
	t.Run("bundle inside a kind directory", func(t *testing.T) {
		c, issues := loadFiles(t, map[string]string{"services/bundle.json": bundle})
		want := []string{"services/bundle.json: tenant: warning: unknown field, ignored"}
		if got := issueStrings(issues); !slices.Equal(got, want) {
			t.Errorf("issues = %q", got)
		}
		if c.Len() != 6 {
			t.Errorf("Len = %d", c.Len())
		}
	})
	t.Run("errors carry the list index", func(t *testing.T) {
		c := New()
		issues := c.AddDocument("", "b.json", []byte(`{"services":[{"name":"ok"},{"name":"bad name"},{"name":"ok"}],"providers":{"name":"p"},"clustertemplates":[{"name":"t","constraints":{"size":{"min":0}}}]}`))
		want := []string{
			`b.json: clustertemplates[0].constraints.size.min: must be >= 1 (got 0)`,
			`b.json: providers: must be an array of provider objects, not an object`,
			`b.json: services[1].name: "bad name" ` + nameRuleMsg,
			`b.json: services[2].name: service "ok" is also defined in b.json`,
		}
		if got := issueStrings(issues); !slices.Equal(got, want) {
			t.Errorf("issues mismatch\n got: %q\nwant: %q", got, want)
		}
		if c.Len() != 1 {
			t.Errorf("only the valid entity is added, Len = %d", c.Len())
		}
	})
	t.Run("a list element that is not an object", func(t *testing.T) {
		issues := New().AddDocument("", "b.json", []byte(`{"services":["x"]}`))
		want := []string{`b.json: services[0]: a service must be a JSON object, not a string`}
		if got := issueStrings(issues); !slices.Equal(got, want) {
			t.Errorf("issues mismatch\n got: %q\nwant: %q", got, want)
		}
	})
	t.Run("a named document is not a bundle", func(t *testing.T) {
		c := New()
		issues := c.AddDocument(KindService, "services/services.json", []byte(`{"name":"services","services":[]}`))
		if got := issueStrings(issues); !slices.Equal(got, []string{"services/services.json: services: warning: unknown field, ignored"}) {
			t.Errorf("issues = %q", got)
		}
		if _, ok := c.Get(KindService, "services"); !ok {
			t.Errorf("not added")
		}
	})
	t.Run("no kind and not a bundle", func(t *testing.T) {
		issues := New().AddDocument("", "x.json", []byte(`{"name":"x"}`))
		if len(issues) != 1 || !issues.HasErrors() || !strings.Contains(issues[0].Message, "cannot tell the entity kind") {
			t.Errorf("issues = %q", issueStrings(issues))
		}
	})
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load(mapFS(nil), "missing"); err == nil {
		t.Errorf("missing root: want error")
	}
	_, issues, err := Load(fstest.MapFS{"empty": {Mode: 0o755 | 1<<31}}, "empty")
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 1 || !strings.HasPrefix(issues[0].String(), "empty: no catalog files found: expected *.json files in directories named providertypes/, automatortypes/, providers/") {
		t.Errorf("issues = %q", issueStrings(issues))
	}
	// A single file outside a kind directory cannot be told apart.
	_, issues, err = Load(mapFS(map[string]string{"x/web.json": `{"name":"web"}`}), "x/web.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(issues) != 1 || issues[0].File != "x/web.json" || !strings.Contains(issues[0].Message, "cannot tell the entity kind") {
		t.Errorf("issues = %q", issueStrings(issues))
	}
	// A single entity file in a kind directory.
	c, issues, err := Load(mapFS(map[string]string{"cat/services/web.json": `{"name":"web"}`}), "cat/services/web.json")
	if err != nil || len(issues) != 0 || c.Len() != 1 {
		t.Fatalf("single file: %v %q", err, issueStrings(issues))
	}
	if e, _ := c.Get(KindService, "web"); e.File != "services/web.json" {
		t.Errorf("File = %q", e.File)
	}
	// Every error in every file is reported, not just the first.
	_, issues = loadFiles(t, map[string]string{
		"services/a.json":         `{"name":"a","provisioner":{"actions":{"x":{},"y":{}}}}`,
		"services/b.json":         `{"name":"b",}`,
		"clustertemplates/c.json": `{"name":"c","constraints":{"size":{"min":0,"max":0}}}`,
	})
	if got := len(issues.Errors()); got != 5 {
		t.Errorf("want 5 errors, got %q", issueStrings(issues))
	}
}
