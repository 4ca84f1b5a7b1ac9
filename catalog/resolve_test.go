package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/internal/cooprcompat"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// tset is a set of cluster and partial templates parsed from JSON.
type tset struct {
	templates, partials map[string]*Template
}

func newTset() *tset {
	return &tset{templates: map[string]*Template{}, partials: map[string]*Template{}}
}

func (s *tset) add(t *testing.T, kind Kind, doc string) *tset {
	t.Helper()
	v, issues := ParseEntity(kind, "", []byte(doc))
	if issues.HasErrors() {
		t.Fatalf("bad test template %s: %v", doc, issues)
	}
	tm := v.(*Template)
	if kind == KindPartialTemplate {
		s.partials[tm.Name] = tm
	} else {
		s.templates[tm.Name] = tm
	}
	return s
}

func (s *tset) ct(t *testing.T, doc string) *tset {
	t.Helper()
	return s.add(t, KindClusterTemplate, doc)
}
func (s *tset) pt(t *testing.T, doc string) *tset {
	t.Helper()
	return s.add(t, KindPartialTemplate, doc)
}

func (s *tset) resolve(t *testing.T, name string) *Template {
	t.Helper()
	out, err := Resolve(name, s.templates, s.partials)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", name, err)
	}
	return out
}

// resolveErr resolves name expecting a *ResolveError with code.
func (s *tset) resolveErr(t *testing.T, name, code string) *ResolveError {
	t.Helper()
	out, err := Resolve(name, s.templates, s.partials)
	var re *ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("Resolve(%s) = %+v, %v; want a *ResolveError %s", name, out, err, code)
	}
	if out != nil {
		t.Errorf("Resolve(%s) returned a template with an error", name)
	}
	if re.Code != code {
		t.Errorf("Resolve(%s): code %s (%s), want %s", name, re.Code, re.Message, code)
	}
	if re.Error() != re.Message {
		t.Errorf("Error() = %q, Message = %q", re.Error(), re.Message)
	}
	return re
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func intp(i int) *int { return &i }

// mergeTable builds the example of TestResolveMergeTable: a three-level extends
// chain with partials included at two levels.
//
//	seq(child) = g, p1, parent, p2, child
func mergeTable(t *testing.T) *tset {
	return newTset().
		ct(t, `{"name":"g","label":"G","description":"grandparent","icon":"g.png","version":4,
			"defaults":{"services":["a"],"provider":"p1","hardwaretype":"h1","imagetype":"i1","dnsSuffix":"g.example",
				"config":{"x":1,"y":{"g":1}}},
			"compatibility":{"services":["a","b"],"hardwaretypes":["h1"]},
			"constraints":{"layout":{"mustcoexist":[["a","b"]],"cantcoexist":[["a","c"]]},
				"services":{"a":{"quantities":{"max":1}},"b":{"hardwaretypes":["h1"]}},"size":{"min":2,"max":5}},
			"administration":{"leaseduration":{"initial":"1h","max":"1d"}},
			"links":[{"label":"A","url":"http://a/"},{"label":"B","url":"http://b/"}]}`).
		pt(t, `{"name":"p1","defaults":{"services":["c"],"hardwaretype":"h2","config":{"y":{"p":1},"z":2}},
			"compatibility":{"services":["c"]},
			"constraints":{"size":{"min":9},"services":{"a":{"quantities":{"min":7}}},"layout":{"mustcoexist":[["x","y"]]}},
			"administration":{"leaseduration":{"initial":"5m","max":"5m"}},
			"links":[{"label":"P","url":"http://p/"}]}`).
		ct(t, `{"name":"parent","extends":{"name":"g"},"includes":[{"name":"p1"}],
			"defaults":{"services":["b","a"],"provider":"p2","config":{"x":3}},
			"constraints":{"layout":{"mustcoexist":[["b","a"]]},"services":{"a":{"quantities":{"min":1}}}},
			"administration":{},
			"links":[{"label":"A","url":"http://a/"},{"label":"C","url":"http://c/"}]}`).
		pt(t, `{"name":"p2","defaults":{"imagetype":"i2","dnsSuffix":"p2.example"},"compatibility":{"imagetypes":["i2"]}}`).
		ct(t, `{"name":"child","label":"Child","description":"the child","extends":{"name":"parent"},"includes":[{"name":"p2"}],
			"defaults":{"services":["d"],"config":{"w":4}}}`)
}

func TestResolveMergeTable(t *testing.T) {
	out := mergeTable(t).resolve(t, "child")

	t.Run("base fields from T", func(t *testing.T) {
		if out.Name != "child" || out.Label != "Child" || out.Description != "the child" || out.Icon != "" || out.Version != 0 {
			t.Errorf("base = %+v", out.Base)
		}
		if out.Extends == nil || out.Extends.Name != "parent" || !reflect.DeepEqual(out.Includes, []NameRef{{Name: "p2"}}) {
			t.Errorf("extends/includes = %+v %+v", out.Extends, out.Includes)
		}
		if out.Immutable {
			t.Errorf("immutable set")
		}
	})
	t.Run("services union", func(t *testing.T) {
		if got := sortedCopy(out.Defaults.ServiceNames()); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
			t.Errorf("services = %v", out.Defaults.ServiceNames())
		}
	})
	t.Run("later non-blank provider, types and dnsSuffix win", func(t *testing.T) {
		d := out.Defaults
		if d.Provider != "p2" || d.HardwareType != "h2" || d.ImageType != "i2" || d.DNSSuffix != "p2.example" {
			t.Errorf("defaults = %+v", d)
		}
	})
	t.Run("shallow config merge", func(t *testing.T) {
		want := `{"w":4,"x":3,"y":{"p":1},"z":2}`
		if got := asJSON(t, out.Defaults.Config); got != want {
			t.Errorf("config = %s, want %s", got, want)
		}
	})
	t.Run("compatibility union from every element", func(t *testing.T) {
		c := out.Compatibility
		if got := sortedCopy(c.Services); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("services = %v", c.Services)
		}
		if !slices.Equal(c.HardwareTypes, []string{"h1"}) || !slices.Equal(c.ImageTypes, []string{"i2"}) {
			t.Errorf("compatibility = %+v", c)
		}
	})
	t.Run("coexist groups union from cluster templates only", func(t *testing.T) {
		l := out.Constraints.Layout
		if len(l.MustCoexist) != 1 || !slices.Equal(sortedCopy(l.MustCoexist[0]), []string{"a", "b"}) {
			t.Errorf("mustcoexist = %v (p1's [x y] must be ignored, [b a] = [a b])", l.MustCoexist)
		}
		if !reflect.DeepEqual(l.CantCoexist, [][]string{{"a", "c"}}) {
			t.Errorf("cantcoexist = %v", l.CantCoexist)
		}
	})
	t.Run("constraints.services per-service merge from cluster templates", func(t *testing.T) {
		want := map[string]ServiceConstraint{
			"a": {Quantities: &Quantities{Min: 1}},
			"b": {HardwareTypes: []string{"h1"}},
		}
		if !reflect.DeepEqual(out.Constraints.Services, want) {
			t.Errorf("constraints.services = %s", asJSON(t, out.Constraints.Services))
		}
	})
	t.Run("size from the last cluster template with constraints", func(t *testing.T) {
		// parent has non-empty constraints but no size; child has none.
		if out.Constraints.Size != (SizeConstraint{}) {
			t.Errorf("size = %s, want {} (parent's)", asJSON(t, out.Constraints.Size))
		}
	})
	t.Run("administration: last non-empty", func(t *testing.T) {
		if out.Administration == nil || out.Administration.LeaseDuration != (Lease{Initial: 3600000, Max: 86400000}) {
			t.Errorf("administration = %s, want g's (parent's is empty, p1's ignored)", asJSON(t, out.Administration))
		}
	})
	t.Run("links concatenated without duplicates, partials ignored", func(t *testing.T) {
		want := []Link{{"A", "http://a/"}, {"B", "http://b/"}, {"C", "http://c/"}}
		if !reflect.DeepEqual(out.Links, want) {
			t.Errorf("links = %+v", out.Links)
		}
	})
	t.Run("Merge gives the same before validation", func(t *testing.T) {
		s := mergeTable(t)
		m, err := Merge("child", s.templates, s.partials)
		if err != nil || !reflect.DeepEqual(m, out) {
			t.Errorf("Merge = %+v, %v", m, err)
		}
	})
}

func TestResolveSize(t *testing.T) {
	s := newTset().
		ct(t, `{"name":"g","defaults":{"services":["a"],"provider":"p"},"constraints":{"size":{"min":2,"max":5}}}`).
		ct(t, `{"name":"keeps","extends":{"name":"g"}}`).
		ct(t, `{"name":"sets","extends":{"name":"g"},"constraints":{"size":{"min":3}}}`).
		ct(t, `{"name":"other","extends":{"name":"g"},"constraints":{"layout":{"cantcoexist":[["a","b"]]}}}`).
		pt(t, `{"name":"big","constraints":{"size":{"min":100}}}`).
		ct(t, `{"name":"partial-size","extends":{"name":"g"},"includes":[{"name":"big"}]}`)
	for name, want := range map[string]SizeConstraint{
		"g":            {Min: 2, Max: intp(5)},
		"keeps":        {Min: 2, Max: intp(5)},
		"sets":         {Min: 3},
		"other":        {},
		"partial-size": {Min: 2, Max: intp(5)},
	} {
		if got := s.resolve(t, name).Constraints.Size; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: size = %s, want %s", name, asJSON(t, got), asJSON(t, want))
		}
	}
}

func TestResolveDefaultsDetails(t *testing.T) {
	s := newTset().
		ct(t, `{"name":"g","defaults":{"services":["a",{"name":"b","config":{"port":1}}],"provider":"p","config":{"a":{"x":1},"keep":true}}}`).
		pt(t, `{"name":"svc","defaults":{"services":[{"name":"c"},{"name":"a","config":{"y":2}}]}}`).
		ct(t, `{"name":"t","extends":{"name":"g"},"includes":[{"name":"svc"}],"defaults":{"services":["b"],"config":{}}}`).
		ct(t, `{"name":"blank","extends":{"name":"g"},"defaults":{},"compatibility":{},"constraints":{},"links":[]}`)
	out := s.resolve(t, "t")
	// The object form of defaults.services sets config[<service>] to its config.
	if got, want := asJSON(t, out.Defaults.Config), `{"a":{"y":2},"b":{"port":1},"c":{},"keep":true}`; got != want {
		t.Errorf("config = %s, want %s", got, want)
	}
	// Services of the result are plain names, each once.
	for _, r := range out.Defaults.Services {
		if r.Config != nil {
			t.Errorf("service ref %s keeps its config", r.Name)
		}
	}
	if got := sortedCopy(out.Defaults.ServiceNames()); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("services = %v", got)
	}
	if out.Defaults.Provider != "p" {
		t.Errorf("a blank provider must not win: %q", out.Defaults.Provider)
	}
	// Entirely empty blocks contribute nothing.
	g, b := s.resolve(t, "g"), s.resolve(t, "blank")
	if !reflect.DeepEqual(g.Defaults, b.Defaults) || !reflect.DeepEqual(g.Constraints, b.Constraints) || !reflect.DeepEqual(g.Compatibility, b.Compatibility) {
		t.Errorf("empty blocks changed the result:\n%s\n%s", asJSON(t, g), asJSON(t, b))
	}
}

func TestResolvePartialBlocksIgnored(t *testing.T) {
	s := newTset().
		pt(t, `{"name":"p","defaults":{"services":["a"],"provider":"x"},
			"constraints":{"layout":{"mustcoexist":[["a","b"]]},"services":{"a":{"quantities":{"max":1}}},"size":{"max":3}},
			"administration":{"leaseduration":{"initial":"1h","max":"2h"}},
			"links":[{"label":"L","url":"http://l/"}]}`).
		ct(t, `{"name":"t","includes":[{"name":"p"}]}`)
	out := s.resolve(t, "t")
	if !out.Constraints.Empty() || out.Administration != nil || len(out.Links) != 0 {
		t.Errorf("a partial's constraints, administration and links must be ignored: %s", asJSON(t, out))
	}
	if out.Defaults.Provider != "x" || !slices.Equal(out.Defaults.ServiceNames(), []string{"a"}) {
		t.Errorf("a partial's defaults must apply: %+v", out.Defaults)
	}
}

func TestResolveImmutable(t *testing.T) {
	base := func(t *testing.T) *tset {
		return newTset().
			ct(t, `{"name":"root","defaults":{"services":["a"],"provider":"p","config":{"k":"root","other":1}}}`).
			pt(t, `{"name":"frozen","immutable":true,"defaults":{"config":{"k":"frozen","m":"frozen"},"services":[{"name":"svc","config":{"v":1}}]}}`).
			pt(t, `{"name":"loose","defaults":{"config":{"k":"loose"}}}`).
			pt(t, `{"name":"frozen2","immutable":true,"defaults":{"config":{"m":"frozen2"}}}`)
	}
	t.Run("frozen key rewritten by the template", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"t","extends":{"name":"root"},"includes":[{"name":"frozen"}],"defaults":{"config":{"k":"mine"}}}`)
		re := s.resolveErr(t, "t", CodeTemplateImmutable)
		if want := `template t: config key "k" is set by immutable partial template frozen and cannot be changed by t`; re.Message != want {
			t.Errorf("message = %q, want %q", re.Message, want)
		}
	})
	t.Run("frozen key rewritten by a later partial", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"t","extends":{"name":"root"},"includes":[{"name":"frozen"},{"name":"loose"}]}`)
		re := s.resolveErr(t, "t", CodeTemplateImmutable)
		for _, w := range []string{`"k"`, "frozen", "loose"} {
			if !strings.Contains(re.Message, w) {
				t.Errorf("message %q does not name %s", re.Message, w)
			}
		}
	})
	t.Run("two immutable partials writing one key", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"t","extends":{"name":"root"},"includes":[{"name":"frozen"},{"name":"frozen2"}]}`)
		re := s.resolveErr(t, "t", CodeTemplateImmutable)
		if want := `template t: config key "m" is set by immutable partial template frozen and cannot be changed by frozen2`; re.Message != want {
			t.Errorf("message = %q", re.Message)
		}
	})
	t.Run("frozen through the object form of defaults.services", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"t","extends":{"name":"root"},"includes":[{"name":"frozen"}],"defaults":{"services":[{"name":"svc","config":{"v":2}}]}}`)
		re := s.resolveErr(t, "t", CodeTemplateImmutable)
		if !strings.Contains(re.Message, `config key "svc"`) {
			t.Errorf("message = %q", re.Message)
		}
	})
	t.Run("frozen key rewritten by a child template", func(t *testing.T) {
		s := base(t).
			ct(t, `{"name":"mid","extends":{"name":"root"},"includes":[{"name":"frozen"}]}`).
			ct(t, `{"name":"t","extends":{"name":"mid"},"defaults":{"config":{"m":"child"}}}`)
		re := s.resolveErr(t, "t", CodeTemplateImmutable)
		if want := `template t: config key "m" is set by immutable partial template frozen and cannot be changed by t`; re.Message != want {
			t.Errorf("message = %q", re.Message)
		}
	})
	t.Run("earlier writes are overridden, other keys are free", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"t","extends":{"name":"root"},"includes":[{"name":"loose"},{"name":"frozen"}],"defaults":{"config":{"other":2,"new":3}}}`)
		out := s.resolve(t, "t")
		if got, want := asJSON(t, out.Defaults.Config), `{"k":"frozen","m":"frozen","new":3,"other":2,"svc":{"v":1}}`; got != want {
			t.Errorf("config = %s, want %s", got, want)
		}
	})
	t.Run("a non-immutable partial freezes nothing", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"t","extends":{"name":"root"},"includes":[{"name":"loose"}],"defaults":{"config":{"k":"mine"}}}`)
		if got := s.resolve(t, "t").Defaults.Config["k"]; got != "mine" {
			t.Errorf("k = %v", got)
		}
	})
	t.Run("immutable on a cluster template freezes nothing", func(t *testing.T) {
		s := base(t).
			ct(t, `{"name":"imm","immutable":true,"defaults":{"services":["a"],"provider":"p","config":{"k":1}}}`).
			ct(t, `{"name":"t","extends":{"name":"imm"},"defaults":{"config":{"k":2}}}`)
		if got := asJSON(t, s.resolve(t, "t").Defaults.Config["k"]); got != "2" {
			t.Errorf("k = %s", got)
		}
	})
	t.Run("template named like the immutable partial", func(t *testing.T) {
		s := base(t).ct(t, `{"name":"frozen","extends":{"name":"root"},"includes":[{"name":"frozen"}],"defaults":{"config":{"k":"mine"}}}`)
		re := s.resolveErr(t, "frozen", CodeTemplateImmutable)
		if !strings.Contains(re.Message, `config key "k"`) {
			t.Errorf("message = %q", re.Message)
		}
	})
}

func TestResolveCycles(t *testing.T) {
	full := `"defaults":{"services":["a"],"provider":"p"}`
	s := newTset().
		ct(t, `{"name":"a","extends":{"name":"b"},`+full+`}`).
		ct(t, `{"name":"b","extends":{"name":"a"}}`).
		ct(t, `{"name":"self","extends":{"name":"self"},`+full+`}`).
		ct(t, `{"name":"x","extends":{"name":"a"},`+full+`}`).
		ct(t, `{"name":"c1","extends":{"name":"c2"}}`).
		ct(t, `{"name":"c2","extends":{"name":"c3"}}`).
		ct(t, `{"name":"c3","extends":{"name":"c1"}}`)
	for name, want := range map[string]string{
		"a":    "extends cycle: a → b → a",
		"b":    "extends cycle: b → a → b",
		"self": "extends cycle: self → self",
		"x":    "extends cycle: a → b → a",
		"c2":   "extends cycle: c2 → c3 → c1 → c2",
	} {
		re := s.resolveErr(t, name, CodeTemplateInvalid)
		if re.Message != want {
			t.Errorf("%s: message = %q, want %q", name, re.Message, want)
		}
		if _, err := Merge(name, s.templates, s.partials); err == nil || err.Error() != want {
			t.Errorf("Merge(%s) = %v", name, err)
		}
	}
}

// chain builds t0 extends t1 ... extends t(n-1); t(n-1) has the defaults.
func chain(t *testing.T, n int) *tset {
	s := newTset()
	for i := 0; i < n-1; i++ {
		s.ct(t, fmt.Sprintf(`{"name":"t%d","extends":{"name":"t%d"},"defaults":{"services":["s%d"]}}`, i, i+1, i))
	}
	return s.ct(t, fmt.Sprintf(`{"name":"t%d","defaults":{"services":["root"],"provider":"p"}}`, n-1))
}

func TestResolveDepth(t *testing.T) {
	out := chain(t, 16).resolve(t, "t0")
	if len(out.Defaults.Services) != 16 {
		t.Errorf("16-deep chain: services = %v", out.Defaults.ServiceNames())
	}
	for _, n := range []int{18, 40} {
		re := chain(t, n).resolveErr(t, "t0", CodeTemplateInvalid)
		if !strings.HasPrefix(re.Message, "extends chain deeper than 16: t0 → t1 → ") {
			t.Errorf("%d-deep: message = %q", n, re.Message)
		}
	}
	// A deep chain is not mistaken for a cycle, and a cycle beyond the depth
	// limit is still reported as too deep rather than looping.
	s := chain(t, 40)
	s.templates["t39"].Extends = &NameRef{Name: "t0"}
	s.resolveErr(t, "t0", CodeTemplateInvalid)
	_, err := Resolve("t0", chain(t, 17).templates, nil)
	t.Logf("17 templates (16 extends hops): %v", err)
}

func TestResolveNotFound(t *testing.T) {
	s := newTset().
		ct(t, `{"name":"orphan","extends":{"name":"gone"},"defaults":{"services":["a"],"provider":"p"}}`).
		ct(t, `{"name":"inc","includes":[{"name":"ok"},{"name":"nope"}],"defaults":{"services":["a"],"provider":"p"}}`).
		ct(t, `{"name":"deep","extends":{"name":"inc"}}`).
		pt(t, `{"name":"ok"}`).
		pt(t, `{"name":"pt-only","defaults":{"services":["a"],"provider":"p"}}`)
	for name, want := range map[string]string{
		"orphan":  "cluster template orphan extends gone, which does not exist",
		"inc":     "cluster template inc includes partial template nope, which does not exist",
		"deep":    "cluster template inc includes partial template nope, which does not exist",
		"missing": "cluster template missing does not exist",
		"pt-only": "cluster template pt-only does not exist",
	} {
		if re := s.resolveErr(t, name, CodeNotFound); re.Message != want {
			t.Errorf("%s: %q, want %q", name, re.Message, want)
		}
	}
	if _, err := Resolve("x", nil, nil); err == nil {
		t.Errorf("nil maps: want NOT_FOUND")
	}
	// An includes entry naming a cluster template is not found either.
	s.ct(t, `{"name":"wrongkind","includes":[{"name":"orphan"}],"defaults":{"services":["a"],"provider":"p"}}`)
	s.resolveErr(t, "wrongkind", CodeNotFound)
}

func TestResolveValidatesResult(t *testing.T) {
	s := newTset().
		ct(t, `{"name":"nosvc","defaults":{"provider":"p"}}`).
		ct(t, `{"name":"noprov","defaults":{"services":["a"]}}`).
		ct(t, `{"name":"nothing"}`).
		pt(t, `{"name":"prov","defaults":{"provider":"p"}}`).
		ct(t, `{"name":"fixed","extends":{"name":"noprov"},"includes":[{"name":"prov"}]}`)
	for name, want := range map[string]string{
		"nosvc":   "template nosvc: defaults.services is empty: list at least one service",
		"noprov":  "template noprov: defaults.provider is not set: name the provider to use",
		"nothing": "template nothing: defaults.services is empty: list at least one service; defaults.provider is not set: name the provider to use",
	} {
		if re := s.resolveErr(t, name, CodeTemplateInvalid); re.Message != want {
			t.Errorf("%s: %q, want %q", name, re.Message, want)
		}
		// Merge does not validate.
		if _, err := Merge(name, s.templates, s.partials); err != nil {
			t.Errorf("Merge(%s) = %v", name, err)
		}
	}
	s.resolve(t, "fixed")
	// A dnsSuffix can only be bad in a template built in code.
	bad := &Template{Base: Base{Name: "bad"}, Defaults: Defaults{Services: []ServiceRef{{Name: "a"}}, Provider: "p", DNSSuffix: "bad-"}}
	_, err := Resolve("bad", map[string]*Template{"bad": bad}, nil)
	var re *ResolveError
	if !errors.As(err, &re) || re.Code != CodeTemplateInvalid || re.Message != `template bad: defaults.dnsSuffix label "bad-" must be 1-63 characters of A-Z a-z 0-9 - and not end in -` {
		t.Errorf("bad dnsSuffix: %v", err)
	}
	if err := CheckResolved(&Template{Base: Base{Name: "ok"}, Defaults: Defaults{Services: []ServiceRef{{Name: "a"}}, Provider: "p", DNSSuffix: ".ok.example"}}); err != nil {
		t.Errorf("CheckResolved = %v", err)
	}
}

// TestResolvePure: resolving neither changes its inputs nor depends on
// anything but them.
func TestResolvePure(t *testing.T) {
	s := mergeTable(t)
	beforeT := asJSON(t, []any{s.templates, s.partials})
	first := s.resolve(t, "child")
	for range 20 {
		if again := s.resolve(t, "child"); !reflect.DeepEqual(first, again) {
			t.Fatalf("not deterministic:\n%s\n%s", asJSON(t, first), asJSON(t, again))
		}
	}
	if after := asJSON(t, []any{s.templates, s.partials}); after != beforeT {
		t.Errorf("inputs changed:\n%s\n%s", beforeT, after)
	}
	if s.templates["child"].Version != 0 || s.templates["g"].Version != 4 {
		t.Errorf("versions changed")
	}
}

// TestResolveGolden resolves every cluster template of testdata/partials and
// compares it with testdata/resolved/<name>.json (go test -update rewrites).
func TestResolveGolden(t *testing.T) {
	c, issues, err := LoadPath(filepath.Join("testdata", "partials"))
	if err != nil {
		t.Fatal(err)
	}
	if issues.HasErrors() {
		t.Fatalf("errors: %q", issueStrings(issues))
	}
	names := c.Names(KindClusterTemplate)
	if len(names) != 3 {
		t.Fatalf("cluster templates = %v", names)
	}
	for _, name := range names {
		out, err := Resolve(name, c.ClusterTemplates(), c.PartialTemplates())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		golden := filepath.Join("testdata", "resolved", name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update to create)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: resolved template differs from %s:\n%s", name, golden, got)
		}
		// The golden file is itself a valid cluster template that resolves
		// to itself (minus extends/includes).
		v, is := ParseEntity(KindClusterTemplate, golden, want)
		if is.HasErrors() {
			t.Errorf("%s: %q", golden, issueStrings(is))
			continue
		}
		g := v.(*Template)
		g.Extends, g.Includes = nil, nil
		again, err := Resolve(name, map[string]*Template{name: g}, nil)
		if err != nil {
			t.Errorf("%s: %v", golden, err)
			continue
		}
		again.Extends, again.Includes = out.Extends, out.Includes
		if a, b := asJSON(t, again), asJSON(t, out); a != b {
			t.Errorf("%s: resolving the resolved template changes it:\n%s\n%s", name, a, b)
		}
	}
}

// TestResolveCooprCatalog resolves every template of Coopr's public catalog.
func TestResolveCooprCatalog(t *testing.T) {
	resolveEvery(t, cooprcompat.Catalog(t, "coopr-templates"))
}

// TestResolveOwnCatalogs resolves every template of the repository's
// catalogs.
func TestResolveOwnCatalogs(t *testing.T) {
	for name, dir := range ownCatalogs {
		t.Run(name, func(t *testing.T) { resolveEvery(t, dir) })
	}
}

// resolveEvery resolves every cluster template of the catalog in dir, and
// checks that a template without extends or includes resolves to itself.
func resolveEvery(t *testing.T, dir string) {
	t.Helper()
	c, issues, err := LoadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if issues.HasErrors() {
		t.Fatal(issues.Err())
	}
	for _, name := range c.Names(KindClusterTemplate) {
		out, err := Resolve(name, c.ClusterTemplates(), c.PartialTemplates())
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		src := c.ClusterTemplates()[name]
		if src.Extends == nil && len(src.Includes) == 0 {
			// Without extends or includes the result is the template itself
			// (object-form service configs folded into config).
			if !slices.Equal(out.Defaults.ServiceNames(), src.Defaults.ServiceNames()) || out.Defaults.Provider != src.Defaults.Provider ||
				normConstraints(t, out.Constraints) != normConstraints(t, src.Constraints) || !slices.Equal(out.Links, src.Links) ||
				leaseOf(out) != leaseOf(src) {
				t.Errorf("%s: resolution of a stand-alone template changed it", name)
			}
		}
	}
}

// leaseOf is the effective lease policy of a template (none = all unlimited).
func leaseOf(t *Template) Lease {
	if t.Administration == nil {
		return Lease{}
	}
	return t.Administration.LeaseDuration
}

// normConstraints renders constraints with empty lists and maps as absent.
func normConstraints(t *testing.T, c Constraints) string {
	if len(c.Layout.MustCoexist) == 0 {
		c.Layout.MustCoexist = nil
	}
	if len(c.Layout.CantCoexist) == 0 {
		c.Layout.CantCoexist = nil
	}
	if len(c.Services) == 0 {
		c.Services = nil
	}
	return asJSON(t, c)
}
