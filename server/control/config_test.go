package control

import (
	"encoding/json"
	"testing"
)

// The examples of RFC 7396, appendix A, whose target and patch are
// objects (a config is always one).
func TestMergeConfigRFC7396(t *testing.T) {
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tt := range tests {
		var target, patch map[string]any
		if err := json.Unmarshal([]byte(tt.target), &target); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.patch), &patch); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(mergeConfig(target, patch))
		if string(got) != tt.want {
			t.Errorf("merge %s into %s = %s, want %s", tt.patch, tt.target, got, tt.want)
		}
		if again, _ := json.Marshal(target); string(again) != string(mustCompact(t, tt.target)) {
			t.Errorf("merging changed the target: %s", again)
		}
	}
}

func mustCompact(t *testing.T, s string) []byte {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}
