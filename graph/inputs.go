package graph

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Caps on arguments, checked before any resolver runs (InputLimits): a
// String or ID holds at most DefaultMaxChars characters unless textCaps
// says otherwise, a JSON value at most DefaultMaxJSON bytes unless
// jsonCaps does, and neither may hold a NUL (Postgres stores none). Keys
// are Type.field for fields of input types, field(argument) for
// arguments. docs/api.md lists them.
const (
	DefaultMaxChars = 255
	DefaultMaxJSON  = 64 << 10
)

// What is kept of agents' output (see agentOutput), in bytes.
const (
	maxMessage = 8 << 10
	maxOutput  = 64 << 10
)

var textCaps = map[string]int{
	"ClusterInput.description": 4096,
	"TenantInput.description":  4096,
	"ReleaseInput.reason":      1024,
	// An RSA key of 16384 bits is under 3000; room enough that a pasted
	// private key reaches the resolver and is refused as one.
	"addSSHKey(publicKey)": 16 << 10,
	// The bytes, base64: bounded by the request's size.
	"ResourceUploadInput.content": 0,
}

// agentOutput is what agents report of a run: kept, not refused (a
// refused result would leave the task to its lease), with NULs replaced
// and cut to its cap where it is stored (see finishTask, reportProgress).
var agentOutput = map[string]bool{
	"TaskResultInput.message": true, "TaskResultInput.stdoutTail": true, "TaskResultInput.stderrTail": true,
	"ProgressInput.chunk": true, "OutputLineInput.chunk": true,
}

var jsonCaps = map[string]int{
	"ClusterInput.providerFields":   16 << 10,
	"OperationInput.providerFields": 16 << 10,
	"deleteCluster(providerFields)": 16 << 10,
	"putCatalogEntity(entity)":      1 << 20,
	"solveTemplate(template)":       1 << 20, // what putCatalogEntity would store
	"importCatalog(document)":       0,       // a whole catalog: bounded by the request's size
	"TaskResultInput.ipaddresses":   DefaultMaxJSON,
	"TaskResultInput.facts":         DefaultMaxJSON,
	"TaskResultInput.secrets":       DefaultMaxJSON,
	"ClusterInput.config":           DefaultMaxJSON,
	"OperationInput.config":         DefaultMaxJSON,
}

// InputLimits refuses, before its resolver runs, a field whose arguments
// break the caps above: INVALID_INPUT naming the argument's path, never
// repeating its value.
type InputLimits struct{ schema *ast.Schema }

var _ interface {
	graphql.HandlerExtension
	graphql.FieldInterceptor
} = &InputLimits{}

func (*InputLimits) ExtensionName() string { return "InputLimits" }
func (l *InputLimits) Validate(es graphql.ExecutableSchema) error {
	l.schema = es.Schema()
	return nil
}

func (l *InputLimits) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil || fc.Field.Definition == nil || len(fc.Field.Definition.Arguments) == 0 {
		return next(ctx)
	}
	args := fc.Field.ArgumentMap(graphql.GetOperationContext(ctx).Variables)
	for _, a := range fc.Field.Definition.Arguments {
		if err := l.check(a.Name, fc.Field.Name+"("+a.Name+")", a.Type, args[a.Name]); err != nil {
			return nil, err
		}
	}
	return next(ctx)
}

// check checks v, of type t, at path; key names it in the caps.
func (l *InputLimits) check(path, key string, t *ast.Type, v any) error {
	if v == nil {
		return nil
	}
	if t.Elem != nil {
		items, _ := v.([]any)
		for i, x := range items {
			if err := l.check(path+"["+strconv.Itoa(i)+"]", key, t.Elem, x); err != nil {
				return err
			}
		}
		return nil
	}
	switch t.NamedType {
	case "String", "ID":
		s, _ := v.(string)
		if agentOutput[key] {
			return nil
		}
		if strings.IndexByte(s, 0) >= 0 {
			return invalid(path, "holds a NUL byte")
		}
		max, ok := textCaps[key]
		if !ok {
			max = DefaultMaxChars
		}
		if max > 0 && len(s) > max {
			if n := utf8.RuneCountInString(s); n > max {
				return invalid(path, "%d characters, over the limit of %d", n, max)
			}
		}
		return nil
	case "JSON":
		max, ok := jsonCaps[key]
		if !ok {
			max = DefaultMaxJSON
		}
		if max > 0 && jsonSize(v, int64(max)+1) > int64(max) {
			return invalid(path, "over the limit of %d bytes", max)
		}
		return jsonNUL(path, v)
	}
	def := l.schema.Types[t.NamedType]
	if def == nil || def.Kind != ast.InputObject {
		return nil
	}
	m, _ := v.(map[string]any)
	for _, f := range def.Fields {
		if err := l.check(path+"."+f.Name, def.Name+"."+f.Name, f.Type, m[f.Name]); err != nil {
			return err
		}
	}
	return nil
}

// jsonNUL refuses a NUL in any string or key of a JSON value, naming
// where.
func jsonNUL(path string, v any) error {
	switch v := v.(type) {
	case string:
		if strings.IndexByte(v, 0) >= 0 {
			return invalid(path, "holds a NUL byte")
		}
	case map[string]any:
		for k, x := range v {
			if strings.IndexByte(k, 0) >= 0 {
				return invalid(path, "holds a key with a NUL byte")
			}
			if err := jsonNUL(path+"."+k, x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := jsonNUL(path+"["+strconv.Itoa(i)+"]", x); err != nil {
				return err
			}
		}
	}
	return nil
}

// cleanOutput is agent-reported text as it is kept: NULs (which Postgres
// refuses) and invalid UTF-8 replaced, cut to max bytes (0: uncut).
func cleanOutput(s string, max int) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
