package catalog

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/internal/cooprcompat"
)

// roundTrips are the catalogs the round-trip tests import and export, by
// subtest name: the repository's own, and Coopr's (skipped where absent).
func roundTrips() map[string]func(t *testing.T) string {
	m := map[string]func(t *testing.T) string{}
	for name, dir := range ownCatalogs {
		m[name] = func(*testing.T) string { return dir }
	}
	for _, name := range []string{"coopr-templates", "coopr-plugin-types"} {
		m[name] = func(t *testing.T) string { return cooprcompat.Catalog(t, name) }
	}
	return m
}

// semantic decodes JSON keeping numbers exact, so two documents compare equal
// iff they hold the same values (key order and spacing aside).
func semantic(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%v in %.200s", err, data)
	}
	return v
}

func mustLoad(t *testing.T, dir string) (*Catalog, Issues) {
	t.Helper()
	c, issues, err := LoadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if issues.HasErrors() {
		t.Fatalf("%s: %v", dir, issues.Err())
	}
	return c, issues
}

// placeless renders issues without their file, sorted, minus the warnings
// about a name that differs from its file name (export fixes those).
func placeless(is Issues) []string {
	var out []string
	for _, i := range is {
		if strings.Contains(i.Message, "differs from the file name") {
			continue
		}
		i.File = ""
		out = append(out, i.String())
	}
	sort.Strings(out)
	return out
}

// sameCatalogs compares two catalogs entity by entity: same names per kind,
// equal decoded values, semantically equal documents.
func sameCatalogs(t *testing.T, a, b *Catalog) {
	t.Helper()
	if a.Len() != b.Len() {
		t.Errorf("Len %d != %d", a.Len(), b.Len())
	}
	for _, k := range Kinds {
		if an, bn := a.Names(k), b.Names(k); !slices.Equal(an, bn) {
			t.Errorf("%s: names %v != %v", k, an, bn)
			continue
		}
		for _, ea := range a.Entities(k) {
			eb, _ := b.Get(k, ea.Name)
			if eb.Kind != k || eb.Name != ea.Name {
				t.Errorf("%s %s: kind/name %s/%s", k, ea.Name, eb.Kind, eb.Name)
			}
			if !reflect.DeepEqual(ea.Value, eb.Value) {
				t.Errorf("%s %s: values differ:\n%#v\n%#v", k, ea.Name, ea.Value, eb.Value)
			}
			if !reflect.DeepEqual(semantic(t, ea.Raw), semantic(t, eb.Raw)) {
				t.Errorf("%s %s: documents differ:\n%s\n%s", k, ea.Name, ea.Raw, eb.Raw)
			}
		}
	}
}

func TestRoundTripExport(t *testing.T) {
	for name, dir := range roundTrips() {
		t.Run(name, func(t *testing.T) {
			dir := dir(t)
			c1, is1 := mustLoad(t, dir)
			if c1.Len() == 0 {
				t.Fatal("empty catalog")
			}
			// Import keeps every document's values: Raw is the file.
			for _, k := range Kinds {
				for _, e := range c1.Entities(k) {
					orig, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.File)))
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(semantic(t, orig), semantic(t, e.Raw)) {
						t.Errorf("%s: Raw is not the file:\n%s", e.File, e.Raw)
					}
				}
			}

			out1 := t.TempDir()
			if err := c1.Export(out1); err != nil {
				t.Fatal(err)
			}
			c2, is2 := mustLoad(t, out1)
			sameCatalogs(t, c1, c2)
			if a, b := placeless(is1), placeless(is2); !slices.Equal(a, b) {
				t.Errorf("issues changed by the round trip:\n%q\n%q", a, b)
			}
			for _, i := range is2 {
				if strings.Contains(i.Message, "differs from the file name") {
					t.Errorf("export wrote a file not named after its entity: %v", i)
				}
			}
			// Every exported file is where Coopr's layout puts it and holds
			// the original document.
			for _, k := range Kinds {
				for _, e := range c1.Entities(k) {
					p := filepath.Join(out1, string(k), e.Name+".json")
					data, err := os.ReadFile(p)
					if err != nil {
						t.Errorf("%v", err)
						continue
					}
					if !reflect.DeepEqual(semantic(t, data), semantic(t, e.Raw)) {
						t.Errorf("%s does not hold the document", p)
					}
					if !bytes.HasSuffix(data, []byte("}\n")) || !bytes.HasPrefix(data, []byte("{\n  \"")) {
						t.Errorf("%s is not an indented document ending in a newline", p)
					}
				}
			}
			// Only non-empty kinds get a directory.
			ents, err := os.ReadDir(out1)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ents {
				k, ok := ParseKind(d.Name())
				if !ok || !d.IsDir() || len(c1.Names(k)) == 0 {
					t.Errorf("unexpected %s in the export", d.Name())
				}
			}
			// Export is idempotent: exporting the re-import gives the same bytes.
			out2 := t.TempDir()
			if err := c2.Export(out2); err != nil {
				t.Fatal(err)
			}
			sameTrees(t, out1, out2)
		})
	}
}

// sameTrees compares two directory trees byte for byte.
func sameTrees(t *testing.T, a, b string) {
	t.Helper()
	files := func(root string) map[string][]byte {
		m := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			m[rel] = data
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	fa, fb := files(a), files(b)
	if len(fa) != len(fb) {
		t.Errorf("%d files != %d files", len(fa), len(fb))
	}
	for p, da := range fa {
		if db, ok := fb[p]; !ok || !bytes.Equal(da, db) {
			t.Errorf("%s differs", p)
		}
	}
}

func TestRoundTripBundle(t *testing.T) {
	for name, dir := range roundTrips() {
		t.Run(name, func(t *testing.T) {
			dir := dir(t)
			c1, is1 := mustLoad(t, dir)
			b1, err := c1.Bundle()
			if err != nil {
				t.Fatal(err)
			}
			c2 := New()
			issues := c2.AddDocument("", "bundle.json", b1)
			if issues.HasErrors() {
				t.Fatal(issues.Err())
			}
			issues = append(issues, c2.Check()...)
			sameCatalogs(t, c1, c2)
			// Issues inside a bundle are placed by list index.
			for i := range issues {
				kind, rest, ok := strings.Cut(issues[i].Path, "[")
				if _, isKind := ParseKind(kind); ok && isKind {
					if _, after, ok := strings.Cut(rest, "]."); ok {
						issues[i].Path = after
					}
				}
			}
			if a, b := placeless(is1), placeless(issues); !slices.Equal(a, b) {
				t.Errorf("issues changed by the round trip:\n%q\n%q", a, b)
			}
			for _, e := range c2.Entities(KindService) {
				if e.File != "bundle.json" {
					t.Errorf("%s: File = %q", e.Name, e.File)
				}
			}
			b2, err := c2.Bundle()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b1, b2) {
				t.Errorf("Bundle is not stable across a round trip")
			}
			// The bundle lists every kind, entities in name order.
			var shape map[string][]struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(b1, &shape); err != nil {
				t.Fatal(err)
			}
			if len(shape) != len(Kinds) {
				t.Errorf("bundle keys = %d", len(shape))
			}
			for _, k := range Kinds {
				list, ok := shape[string(k)]
				if !ok || list == nil {
					t.Errorf("bundle lacks %s", k)
				}
				var names []string
				for _, e := range list {
					names = append(names, e.Name)
				}
				if !slices.Equal(names, c1.Names(k)) && len(names)+len(c1.Names(k)) > 0 {
					t.Errorf("%s: bundle names %v, catalog %v", k, names, c1.Names(k))
				}
			}
			// A bundle exports to the same tree as the directory import.
			outA, outB := t.TempDir(), t.TempDir()
			if err := c1.Export(outA); err != nil {
				t.Fatal(err)
			}
			if err := c2.Export(outB); err != nil {
				t.Fatal(err)
			}
			sameTrees(t, outA, outB)
		})
	}
}

func TestRoundTripEmptyAndMerge(t *testing.T) {
	b, err := New().Bundle()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string][]any
	if err := json.Unmarshal(b, &m); err != nil || len(m) != len(Kinds) {
		t.Fatalf("empty bundle %s: %v", b, err)
	}
	c := New()
	if issues := c.AddDocument("", "b.json", b); len(issues) != 0 || c.Len() != 0 {
		t.Errorf("empty bundle: %q, Len %d", issueStrings(issues), c.Len())
	}
	dir := t.TempDir()
	if err := New().Export(dir); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("empty export wrote %d entries", len(ents))
	}

	// Merge replaces same-named entities and keeps the rest.
	a := New()
	a.AddDocument("", "a.json", []byte(`{"services":[{"name":"x","label":"a"},{"name":"y"}]}`))
	o := New()
	o.AddDocument("", "o.json", []byte(`{"services":[{"name":"x","label":"o"}],"providers":[{"name":"p","providertype":"aws"}]}`))
	a.Merge(o)
	if a.Len() != 3 || a.Services()["x"].Label != "o" || a.Services()["y"] == nil || a.Providers()["p"] == nil {
		t.Errorf("Merge: %v", a.Names(KindService))
	}
	// Put replaces.
	a.Put(&Entity{Kind: KindService, Name: "y", Value: &Service{Base: Base{Name: "y", Label: "put"}}, Raw: json.RawMessage(`{"name":"y","label":"put"}`)})
	if a.Services()["y"].Label != "put" || a.Len() != 3 {
		t.Errorf("Put did not replace")
	}
}

// TestRoundTripExactNumbers: numbers are kept as written (no float64 detour)
// and odd characters survive.
func TestRoundTripExactNumbers(t *testing.T) {
	c, _ := mustLoad(t, filepath.Join("testdata", "partials"))
	e, ok := c.Get(KindProvider, "joyent")
	if !ok {
		t.Fatal("joyent missing")
	}
	for _, want := range []string{`"ratio":1.50`, `"big":12345678901234567890`, `"exp":1e3`, `"nested":-0.0`} {
		if !bytes.Contains(e.Raw, []byte(want)) {
			t.Errorf("Raw lacks %s: %s", want, e.Raw)
		}
	}
	dir := t.TempDir()
	if err := c.Export(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "providers", "joyent.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ratio": 1.50`, `"big": 12345678901234567890`, `"exp": 1e3`, `"nested": -0.0`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("export lacks %s:\n%s", want, data)
		}
	}
	p := c.Providers()["joyent"]
	if p.Description != `Joyent <east> & "west" — ünïcödé` || p.Version != 3 {
		t.Errorf("provider = %+v", p.Base)
	}
}
