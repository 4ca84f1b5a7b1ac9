package model_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/99designs/gqlgen/graphql"

	"github.com/cooprhq/coopr/graph/model"
)

// The JSON scalar writes the server's own encodings as they are and
// everything else as gqlgen does.
func TestMarshalAny(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"encoded", model.Encoded(`{"taskId":"t1","secrets":{"k":"\u003cv\u003e"}}`), `{"taskId":"t1","secrets":{"k":"\u003cv\u003e"}}`},
		{"raw message", json.RawMessage(`{ "a" : 1 }`), "{\"a\":1}\n"},
		{"map", map[string]any{"a": "<b>"}, "{\"a\":\"\\u003cb\\u003e\"}\n"},
		{"string", "x", "\"x\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			model.MarshalAny(tc.v).MarshalGQL(&got)
			if got.String() != tc.want {
				t.Errorf("wrote %q, want %q", got.String(), tc.want)
			}
			if _, ok := tc.v.(model.Encoded); ok {
				return
			}
			var gqlgen bytes.Buffer
			graphql.MarshalAny(tc.v).MarshalGQL(&gqlgen)
			if got.String() != gqlgen.String() {
				t.Errorf("wrote %q, gqlgen writes %q", got.String(), gqlgen.String())
			}
		})
	}
}
