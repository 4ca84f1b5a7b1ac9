package model

import (
	"io"

	"github.com/99designs/gqlgen/graphql"
)

// Encoded is JSON the server encoded itself with encoding/json (a task's
// payload): valid and compact, so a JSON field that holds it writes the
// bytes as they are. graphql.MarshalAny would run them through an
// encoder's validation and compaction once more, for every task claimed.
type Encoded []byte

// MarshalAny writes the JSON scalar: Encoded as it is, anything else as
// gqlgen does.
func MarshalAny(v any) graphql.Marshaler {
	if e, ok := v.(Encoded); ok {
		return graphql.WriterFunc(func(w io.Writer) { _, _ = w.Write(e) })
	}
	return graphql.MarshalAny(v)
}

// UnmarshalAny reads the JSON scalar as gqlgen does.
func UnmarshalAny(v any) (any, error) { return graphql.UnmarshalAny(v) }
