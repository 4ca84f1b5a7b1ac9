package macro

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		macros  []Macro
		literal string // concatenated literal text
		wantErr bool
	}{
		{in: "plain", literal: "plain"},
		{in: "hdfs://%host.service.nn%/hbase", literal: "hdfs:///hbase", macros: []Macro{{Name: "host.service.nn", Index: -1}}},
		{in: "%host.service.zk[2]%", macros: []Macro{{Name: "host.service.zk", Index: 2}}},
		{in: "%join(map(host.service.zk,'$:2181'),',')%", macros: []Macro{{Name: "host.service.zk", Index: -1, HasMap: true, Map: "$:2181", HasJoin: true, Join: ","}}},
		{in: `%join(ip.service.c,"; ")%`, macros: []Macro{{Name: "ip.service.c", Index: -1, HasJoin: true, Join: "; "}}},
		{in: "%map(ip.self,'x$')%", macros: []Macro{{Name: "ip.self", Index: -1, HasMap: true, Map: "x$"}}},
		{in: "100%% sure", literal: "100%% sure"},
		{in: "50% of 60%", literal: "50% of 60%"},
		{in: "lone % sign", literal: "lone % sign"},
		{in: "%join(host.service.zk)%", wantErr: true},
		{in: "%host.service.zk[]%", wantErr: true},
		{in: "%host.service.zk[1%", wantErr: true},
		{in: "%map(host.service.zk,'unterminated)%", wantErr: true},
		{in: "%join(map(a,'x'),',')extra%", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			segs, err := Parse(tt.in)
			if tt.wantErr {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("Parse(%q) error = %v, want *SyntaxError", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			var lit string
			var got []Macro
			for _, s := range segs {
				if s.Macro == nil {
					lit += s.Text
				} else {
					got = append(got, *s.Macro)
				}
			}
			if lit != tt.literal {
				t.Errorf("literal = %q, want %q", lit, tt.literal)
			}
			if len(got) != len(tt.macros) {
				t.Fatalf("macros = %+v, want %+v", got, tt.macros)
			}
			for i := range got {
				if got[i] != tt.macros[i] {
					t.Errorf("macro %d = %+v, want %+v", i, got[i], tt.macros[i])
				}
			}
		})
	}
}
