package solver

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cooprhq/coopr/catalog"
)

// shopNodes lays out a 5-node shop cluster and returns it as live nodes.
func shopNodes(t *testing.T, tmpl *catalog.Template, cat Catalog) []ExistingNode {
	t.Helper()
	sol, err := Solve(Request{Template: tmpl, Catalog: cat, Size: 5}, Cluster{ID: "00000009", Name: "shop"})
	must(t, err)
	var nodes []ExistingNode
	for _, n := range sol.Nodes {
		nodes = append(nodes, ExistingNode{ID: n.ID, NodeNum: n.NodeNum, Services: n.Services, HardwareType: n.HardwareType, ImageType: n.ImageType})
	}
	return nodes
}

// edited returns a copy of tmpl with patch (a JSON object) decoded over it.
func edited(t *testing.T, tmpl *catalog.Template, patch string) *catalog.Template {
	t.Helper()
	b, err := json.Marshal(tmpl)
	must(t, err)
	var out catalog.Template
	must(t, json.Unmarshal(b, &out))
	must(t, json.Unmarshal([]byte(patch), &out))
	return &out
}

func TestSyncTemplate(t *testing.T) {
	tmpl, cat := shopCatalog(t)
	nodes := shopNodes(t, tmpl, cat)
	cat.Services["metrics"] = &catalog.Service{Base: catalog.Base{Name: "metrics"}}
	cat.Services["audit"] = &catalog.Service{Base: catalog.Base{Name: "audit"}}
	cat.Services["needy"] = &catalog.Service{Base: catalog.Base{Name: "needy"},
		Dependencies: catalog.Dependencies{Runtime: catalog.DepSet{Requires: []string{"queue"}}}}
	tests := []struct {
		name  string
		patch string
		// want: services added per node "nodenum:svc,svc" joined by " ",
		// then " | kept" and " | " changes; or the error kind and a
		// fragment of its message.
		want, kind, msg string
	}{
		{name: "unchanged", patch: `{}`, want: " | kept= | changes="},
		{name: "adds an unconstrained service everywhere",
			patch: `{"defaults": {"services": ["base","lb","web","cache","db","metrics"]}}`,
			want:  "1000:metrics 1001:metrics 1002:metrics 1003:metrics 1004:metrics | kept= | changes="},
		{name: "adds a constrained service where its rules let it",
			patch: `{"defaults": {"services": ["base","lb","web","cache","db","audit"]},
				"constraints": {"services": {"lb": {"quantities": {"min": 1, "max": 1}}, "web": {"quantities": {"min": 2}},
					"db": {"hardwaretypes": ["xlarge"], "quantities": {"min": 1, "max": 2}},
					"audit": {"quantities": {"min": 1, "max": 1}}}}}`,
			want: "1000:audit | kept= | changes=constraints.services.audit:  -> {\"quantities\":{\"min\":1,\"max\":1}}"},
		{name: "a dropped default stays",
			patch: `{"defaults": {"services": ["base","lb","web","cache"]}}`,
			want:  " | kept=db | changes="},
		{name: "a looser constraint the layout satisfies",
			patch: `{"constraints": {"size": {"min": 2, "max": 9}}}`,
			want:  " | kept= | changes=constraints.size:  -> {\"min\":2,\"max\":9}"},
		{name: "a quantity the layout breaks",
			patch: `{"constraints": {"services": {"lb": {"quantities": {"min": 1, "max": 1}}, "web": {"quantities": {"min": 2, "max": 3}},
				"db": {"hardwaretypes": ["xlarge"], "quantities": {"min": 1, "max": 2}}}}}`,
			kind: string(KindNoLayout), msg: "web is on 4 nodes, outside 2..3"},
		{name: "a coexistence rule the layout breaks",
			patch: `{"constraints": {"layout": {"mustcoexist": [["web","cache"]], "cantcoexist": [["db","web"],["lb","db"],["lb","cache"]]}}}`,
			kind:  string(KindNoLayout), msg: "violates cantcoexist [cache lb]"},
		{name: "a size the cluster is outside of",
			patch: `{"constraints": {"size": {"max": 4}}}`,
			kind:  string(KindNoLayout), msg: "numMachines must be in 1..4 (got 5)"},
		{name: "a compatibility list without a service the cluster has",
			patch: `{"compatibility": {"services": ["base","lb","web","cache"]}}`,
			kind:  string(KindIncompatibleServices), msg: "db is not in template shop's compatibility list"},
		{name: "an added service whose dependency nothing provides",
			patch: `{"defaults": {"services": ["base","lb","web","cache","db","needy"]}}`,
			kind:  string(KindMissingDependency), msg: "needy requires queue"},
		{name: "an added service with no room",
			patch: `{"defaults": {"services": ["base","lb","web","cache","db","audit"]},
				"constraints": {"services": {"lb": {"quantities": {"min": 1, "max": 1}}, "web": {"quantities": {"min": 2}},
					"db": {"hardwaretypes": ["xlarge"], "quantities": {"min": 1, "max": 2}},
					"audit": {"hardwaretypes": ["huge"], "quantities": {"min": 1}}}}}`,
			kind: string(KindNoLayout), msg: "audit: needs 1..∞ nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := SyncTemplate(SyncRequest{Old: tmpl, New: edited(t, tmpl, tt.patch), Catalog: cat, Nodes: nodes})
			if tt.kind != "" {
				var se *Error
				if !errors.As(err, &se) || string(se.Kind) != tt.kind || !strings.Contains(se.Message, tt.msg) {
					t.Fatalf("err = %#v, want %s containing %q", err, tt.kind, tt.msg)
				}
				if len(se.Reasons) == 0 && se.Kind == KindNoLayout {
					t.Errorf("no reasons in %v", se)
				}
				return
			}
			must(t, err)
			var adds, changes []string
			if s.Update != nil {
				for _, c := range s.Update.Changed {
					adds = append(adds, strings.Join([]string{itoa(c.NodeNum), strings.Join(c.Add, ",")}, ":"))
				}
				if len(s.Update.Nodes) != len(nodes) || len(s.Update.Added)+len(s.Update.Removed) != 0 {
					t.Errorf("the sync added or removed nodes: %+v", s.Update)
				}
			}
			for _, c := range s.Changes {
				changes = append(changes, c.Path+": "+c.Old+" -> "+c.New)
			}
			got := strings.Join(adds, " ") + " | kept=" + strings.Join(s.Kept, ",") + " | changes=" + strings.Join(changes, "; ")
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if s.Update != nil && !slices.Equal(s.Add, s.Update.Changed[0].Add) {
				t.Errorf("Add = %v, first change %v", s.Add, s.Update.Changed[0].Add)
			}
		})
	}
}
