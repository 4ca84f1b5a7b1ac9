package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

const solveTemplateQ = `query($t: JSON!, $n: Int!) { solveTemplate(template: $t, size: $n) {
	layout { count hardwaretype imagetype services } failure { code message reasons } warnings { path message } } }`

type solveTemplateResult struct {
	SolveTemplate struct {
		Layout []struct {
			Count                   int
			Hardwaretype, Imagetype string
			Services                []string
		}
		Failure *struct {
			Code, Message string
			Reasons       []string
		}
		Warnings []struct{ Path, Message string }
	}
}

// draftLAMP is the test catalog's lamp template, changed by edit, as the
// template builder would send it before saving.
func draftLAMP(t *testing.T, edit func(map[string]any)) map[string]any {
	t.Helper()
	b := loadBundle(t, templatesDir)
	for _, x := range b["clustertemplates"].([]any) {
		if m := x.(map[string]any); m["name"] == "lamp" {
			edit(m)
			return m
		}
	}
	t.Fatal("no lamp template in the test catalog")
	return nil
}

// TestSolveTemplate: a draft template is solved against the stored
// catalog without being stored; a draft the solver cannot lay out says
// why, a draft the catalog refuses names the field; only admins ask.
func TestSolveTemplate(t *testing.T) {
	w := newWorld(t)
	s := w.s
	layout := func(r solveTemplateResult) string {
		var parts []string
		for _, e := range r.SolveTemplate.Layout {
			parts = append(parts, fmt.Sprintf("%d×%s/%s[%s]", e.Count, e.Hardwaretype, e.Imagetype, strings.Join(e.Services, " ")))
		}
		return strings.Join(parts, " ")
	}

	tests := []struct {
		name     string
		edit     func(map[string]any)
		size     int
		layout   string // when it solves
		failCode string // when it does not
		reason   string // a substring of the failure's message
	}{
		{name: "stored lamp", edit: func(map[string]any) {}, size: 2,
			layout: "1×medium/ubuntu24[apache-httpd base mysql-server php php-modules] 1×medium/ubuntu24[apache-httpd base php php-modules]"},
		{name: "mysql apart", size: 3, edit: func(m map[string]any) {
			layout := m["constraints"].(map[string]any)["layout"].(map[string]any)
			layout["cantcoexist"] = []any{[]any{"mysql-server", "apache-httpd"}}
			m["constraints"].(map[string]any)["services"].(map[string]any)["mysql-server"] = map[string]any{
				"quantities": map[string]any{"min": 1, "max": 1}}
		}, layout: "2×medium/ubuntu24[apache-httpd base php php-modules] 1×medium/ubuntu24[base mysql-server]"},
		{name: "size below the minimum", size: 1, edit: func(m map[string]any) {
			m["constraints"].(map[string]any)["size"] = map[string]any{"min": 3}
		}, failCode: "INVALID_INPUT", reason: "3"},
		{name: "mysql on every node", size: 2, edit: func(m map[string]any) {
			m["constraints"].(map[string]any)["services"].(map[string]any)["mysql-server"] = map[string]any{
				"quantities": map[string]any{"min": 3}}
		}, failCode: "LAYOUT_UNSATISFIABLE", reason: "mysql-server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r solveTemplateResult
			s.Must(w.admin, solveTemplateQ, map[string]any{"t": draftLAMP(t, tt.edit), "n": tt.size}, &r)
			f := r.SolveTemplate.Failure
			if tt.failCode == "" {
				if f != nil {
					t.Fatalf("failure %+v, want layout %s", *f, tt.layout)
				}
				if got := layout(r); got != tt.layout {
					t.Errorf("layout\n got %s\nwant %s", got, tt.layout)
				}
				return
			}
			if f == nil {
				t.Fatalf("layout %s, want failure %s", layout(r), tt.failCode)
			}
			if f.Code != tt.failCode || !strings.Contains(f.Message+strings.Join(f.Reasons, " "), tt.reason) {
				t.Errorf("failure %+v, want %s mentioning %q", *f, tt.failCode, tt.reason)
			}
		})
	}

	// Nothing was stored: the stored lamp has no size constraint.
	var e struct {
		Catalog struct{ Entity struct{ Version int } }
	}
	s.Must(w.admin, `{ catalog { entity(kind: CLUSTERTEMPLATES, name: "lamp") { version } } }`, nil, &e)
	if e.Catalog.Entity.Version != 1 {
		t.Errorf("lamp is at version %d after solving drafts, want 1", e.Catalog.Entity.Version)
	}

	// A draft the catalog refuses: INVALID_INPUT with issues naming the field.
	bad := draftLAMP(t, func(m map[string]any) {
		m["defaults"].(map[string]any)["hardwaretype"] = "huge"
		m["constraints"].(map[string]any)["size"] = map[string]any{"min": "two"}
	})
	resp := s.Do(w.admin, solveTemplateQ, map[string]any{"t": bad, "n": 2})
	if len(resp.Errors) != 1 || resp.Errors[0].Code() != "INVALID_INPUT" {
		t.Fatalf("bad draft: %+v, want one INVALID_INPUT", resp.Errors)
	}
	issues, _ := json.Marshal(resp.Errors[0].Extensions["issues"])
	if !strings.Contains(string(issues), `"path":"constraints.size.min"`) {
		t.Errorf("issues %s do not name constraints.size.min", issues)
	}

	// Sizes outside 1..the cap name the argument.
	resp = s.Do(w.admin, solveTemplateQ, map[string]any{"t": draftLAMP(t, func(map[string]any) {}), "n": 0})
	if len(resp.Errors) != 1 || resp.Errors[0].Code() != "INVALID_INPUT" || resp.Errors[0].Extensions["field"] != "size" {
		t.Errorf("size 0: %+v, want INVALID_INPUT on size", resp.Errors)
	}

	// A draft as big as putCatalogEntity takes is solved: its cap is that
	// of an entity, not the 64 KiB of other JSON arguments.
	big := draftLAMP(t, func(m map[string]any) {
		m["defaults"].(map[string]any)["config"] = map[string]any{"notes": strings.Repeat("x", 100<<10)}
	})
	var r solveTemplateResult
	s.Must(w.admin, solveTemplateQ, map[string]any{"t": big, "n": 2}, &r)
	if r.SolveTemplate.Failure != nil || len(r.SolveTemplate.Layout) == 0 {
		t.Errorf("a 100 KiB draft: %+v", r.SolveTemplate)
	}

	// Users cannot ask.
	resp = s.Do(w.alice, solveTemplateQ, map[string]any{"t": draftLAMP(t, func(map[string]any) {}), "n": 2})
	if len(resp.Errors) != 1 || resp.Errors[0].Code() != "FORBIDDEN" {
		t.Errorf("user: %+v, want FORBIDDEN", resp.Errors)
	}
}
