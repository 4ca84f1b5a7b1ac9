package catalog

import (
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/internal/cooprcompat"
)

// strictFuzz adds properties that known bugs break (see validate_test.go,
// TestValidatorAgreesWithModel): no "internal" decode errors and a decoded
// value that validates again. Off by default so that `go test` stays green.
var strictFuzz = flag.Bool("catalog.strictfuzz", false, "fuzz targets also check the checker agrees with the model")

// seedDirs are the catalogs whose files seed the fuzzers: the repository's
// own, and Coopr's where COOPR_COMPAT_DIR holds them (the fuzzers run
// without, on fewer seeds).
func seedDirs() []string {
	dirs := slices.Sorted(maps.Values(ownCatalogs))
	if d, ok := cooprcompat.Dir(); ok {
		dirs = append(dirs, filepath.Join(d, "catalogs", "coopr-templates"), filepath.Join(d, "catalogs", "coopr-plugin-types"))
	}
	return dirs
}

// seedFiles returns every *.json file of the seed catalogs.
func seedFiles(f *testing.F) [][]byte {
	f.Helper()
	var out [][]byte
	for _, root := range seedDirs() {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") {
				return err
			}
			data, err := os.ReadFile(p)
			out = append(out, data)
			return err
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	if len(out) < 50 {
		f.Fatalf("only %d seed files", len(out))
	}
	return out
}

var fuzzSeedsMalformed = []string{
	"", " ", "null", "[]", "{}", "{", "}", `{"name":}`, "{\n  \"name\": \"x\"\n  \"label\": \"y\"\n}", "{} x", "{}{}",
	`{"name":"x","MaxAttempts":-1}`,
	`{"name":"x","provisioner":{"actions":{"start":{"type":"shell","timeout":"99999999999999999999d"}}}}`,
	`{"name":"x","constraints":{"services":{"a":{"quantities":{"min":3,"max":1}}},"size":{"min":0}}}`,
	`{"name":"x","administration":{"leaseduration":{"initial":0,"max":"1h"}}}`,
	`{"name":"x","defaults":{"services":[{"name":"a","config":null},{"config":{}}],"config":{"a":"%host.service.x[%"}}}`,
	`{"name":"x","parameters":{"admin":{"required":[["a"]]}},"resourceTypes":{"r":{"format":"archive","permissions":"0400"}}}`,
	`{"name":"x","providermap":{"aws":{"flavor":1}}}`,
	`{"name":"x","providertype":"aws","network":{"fields":{}}}`,
	`{"name":"x","extends":{"name":"y"},"includes":[{"name":"z"}]}`,
	`{"name":"\u0000"}`, "{\"name\":\"\xff\"}", `{"name":"x","name":"y"}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
}

// fuzzSeedsKnownBugs trigger bugs that -catalog.strictfuzz reports; they are
// left out in that mode so that the fuzzer can look for new ones.
var fuzzSeedsKnownBugs = []string{
	`{"name":"x","version":1.5}`, `{"name":"x","immutable":"yes"}`,
	`{"name":"x","provisioner":{"actions":{"start":{"type":"shell","MaxAttempts":-1}}}}`,
}

// checkParsed holds the properties every ParseEntity result must have.
func checkParsed(t *testing.T, k Kind, file string, data []byte, v any, issues Issues) {
	t.Helper()
	if v == nil && !issues.HasErrors() {
		t.Fatalf("%s: rejected without an error: %q", k, issueStrings(issues))
	}
	if v != nil && issues.HasErrors() {
		t.Fatalf("%s: accepted with errors: %q", k, issueStrings(issues))
	}
	for _, is := range issues {
		if is.File != file || is.Message == "" {
			t.Fatalf("%s: malformed issue %+v", k, is)
		}
		if is.Severity != SeverityError && is.Severity != SeverityWarning {
			t.Fatalf("%s: severity %d", k, is.Severity)
		}
		if *strictFuzz && strings.HasPrefix(is.Message, "internal") {
			t.Fatalf("%s: the checker accepted what the model cannot hold: %v", k, is)
		}
	}
	if v == nil {
		return
	}
	if reflect.TypeOf(v) != reflect.TypeOf(newValue(k)) {
		t.Fatalf("%s: value of type %T", k, v)
	}
	if name := entityName(v); !ValidName(name) {
		t.Fatalf("%s: accepted invalid name %q", k, name)
	}
	if *strictFuzz {
		// The decoded value, written back, must pass validation again: a
		// failure means a value reached the model without being checked.
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: marshal: %v", k, err)
		}
		if v2, is2 := ParseEntity(k, file, b); v2 == nil {
			t.Fatalf("%s: decoded value does not validate again: %q\ninput %q\nvalue %s", k, issueStrings(is2), data, b)
		}
	}
}

func FuzzParseEntity(f *testing.F) {
	for _, data := range seedFiles(f) {
		for i := range Kinds {
			f.Add(uint8(i), data)
		}
	}
	seeds := fuzzSeedsMalformed
	if !*strictFuzz {
		seeds = append(seeds[:len(seeds):len(seeds)], fuzzSeedsKnownBugs...)
	}
	for _, s := range seeds {
		for i := range Kinds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, ki uint8, data []byte) {
		k := Kinds[int(ki)%len(Kinds)]
		const file = "fuzz.json"
		v, issues := ParseEntity(k, file, data)
		checkParsed(t, k, file, data, v, issues)
		// Deterministic.
		v2, issues2 := ParseEntity(k, file, data)
		if !reflect.DeepEqual(v, v2) || !reflect.DeepEqual(issues, issues2) {
			t.Fatalf("%s: two parses differ", k)
		}
		// AddDocument agrees with ParseEntity (unless the document is a bundle).
		c := New()
		added := c.AddDocument(k, file, data)
		if v != nil {
			e, ok := c.Get(k, entityName(v))
			if added.HasErrors() || !ok || !reflect.DeepEqual(e.Value, v) {
				t.Fatalf("%s: ParseEntity accepts, AddDocument gives %q", k, issueStrings(added))
			}
		} else if tree, err := decodeTree(data); err != nil || !isBundleTree(tree) {
			if !added.HasErrors() || c.Len() != 0 {
				t.Fatalf("%s: ParseEntity rejects, AddDocument gives %q", k, issueStrings(added))
			}
		}
		_ = c.Check()
	})
}

func FuzzAddDocument(f *testing.F) {
	for _, dir := range seedDirs() {
		c, _, err := LoadPath(dir)
		if err != nil {
			f.Fatal(err)
		}
		b, err := c.Bundle()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// Each seed file wrapped in a bundle under a kind it could be.
	for i, data := range seedFiles(f) {
		k := Kinds[i%len(Kinds)]
		f.Add([]byte(`{"` + string(k) + `":[` + string(data) + `]}`))
	}
	for _, s := range []string{
		`{"services":[{"name":"a"},{"name":"a"}],"tenant":1}`,
		`{"services":null,"providers":{},"clustertemplates":[1,"x",null,{"name":"t","extends":{"name":"t"}}]}`,
		`{"clustertemplates":[{"name":"a","extends":{"name":"b"}},{"name":"b","extends":{"name":"a"}}]}`,
		`{"partialtemplates":[{"name":"p","immutable":true,"defaults":{"config":{"k":1}}}],"clustertemplates":[{"name":"t","includes":[{"name":"p"},{"name":"p"}],"defaults":{"services":["s"],"provider":"x","config":{"k":2}}}]}`,
		`{"name":"x","services":[]}`, `{}`, `[]`, ``, `{"services":[{"name":"s","dependencies":{"install":{"requires":["nope"]}}}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := New()
		issues := c.AddDocument("", "bundle.json", data)
		for _, is := range issues {
			if is.File != "bundle.json" || is.Message == "" {
				t.Fatalf("malformed issue %+v", is)
			}
			if *strictFuzz && strings.HasPrefix(is.Message, "internal") {
				t.Fatalf("internal error: %v", is)
			}
		}
		if _, err := decodeTree(data); err != nil && (len(issues) != 1 || !issues.HasErrors() || c.Len() != 0) {
			t.Fatalf("malformed JSON: %q", issueStrings(issues))
		}
		for _, k := range Kinds {
			for _, e := range c.Entities(k) {
				if e.Kind != k || !ValidName(e.Name) || entityName(e.Value) != e.Name {
					t.Fatalf("bad entity %+v", e)
				}
				v, is := ParseEntity(k, "raw.json", e.Raw)
				if is.HasErrors() || !reflect.DeepEqual(v, e.Value) {
					t.Fatalf("%s %s: Raw does not parse back to the value: %q", k, e.Name, issueStrings(is))
				}
			}
		}
		_ = c.Check()
		templates, partials := c.ClusterTemplates(), c.PartialTemplates()
		for name := range templates {
			if out, err := Resolve(name, templates, partials); err != nil {
				var re *ResolveError
				if !errors.As(err, &re) || re.Code == "" || re.Message == "" || out != nil {
					t.Fatalf("Resolve(%s) = %v, %v", name, out, err)
				}
			}
		}
		b, err := c.Bundle()
		if err != nil {
			t.Fatalf("Bundle: %v", err)
		}
		c2 := New()
		if is := c2.AddDocument("", "again.json", b); is.HasErrors() || (c.Len() == 0 && len(is) != 0) {
			t.Fatalf("bundle does not re-import: %q", issueStrings(is))
		}
		if c.Len() != c2.Len() {
			t.Fatalf("Len %d != %d", c.Len(), c2.Len())
		}
		for _, k := range Kinds {
			for _, e := range c.Entities(k) {
				e2, ok := c2.Get(k, e.Name)
				if !ok || !reflect.DeepEqual(e.Value, e2.Value) || string(e.Raw) != string(e2.Raw) {
					t.Fatalf("%s %s changed by the bundle round trip", k, e.Name)
				}
			}
		}
	})
}

func isBundleTree(tree any) bool {
	obj, ok := tree.(map[string]any)
	return ok && isBundle(obj)
}
