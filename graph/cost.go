package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cooprhq/coopr/graph/model"
)

// What a request costs, in units of about one scalar field resolved and
// written out. The weights were measured (docs/api.md, Limits): a
// database read is worth about fifty fields, decoding and encoding a JSON
// document about twenty, and a mutation (several statements in a
// transaction, perhaps the solver and the planner) about a thousand.
const (
	// QueryCost is added for every resolution of a field whose resolver
	// reads the database: every root query and subscription field, and
	// the nested fields in dbFields.
	QueryCost = 50
	// MutationCost is added for every mutation field.
	MutationCost = 1000
	// JSONCost is added for every JSON-valued field in the estimate; as it
	// resolves, such a field is charged a unit per JSONBytes of it instead.
	JSONCost = 20
	// JSONBytes is the size of a JSON value that costs a unit.
	JSONBytes = 256
	// DefaultListEstimate is the size assumed for a list of objects that
	// neither has a first argument nor an entry in listEstimates.
	DefaultListEstimate = 10
	// MaxPage is the largest first the paged lists take.
	MaxPage = 500
)

// dbFields are the nested fields whose resolvers read the database each
// time they run (once per parent object).
var dbFields = map[string]bool{
	"Agent.slots": true, "Catalog.entities": true, "Catalog.entity": true, "Catalog.export": true,
	"CatalogEntity.versions": true, "Cluster.config": true, "Cluster.nodes": true, "Cluster.latestJob": true, "Cluster.jobs": true,
	"Job.counts": true, "Job.tasks": true, "Job.task": true, "Task.attempts": true,
}

// listEstimates are the sizes the estimate assumes for lists without a
// first argument: a typical cluster, job or tenant. A list that turns out
// longer is charged what it holds when it resolves (see CostLimit), so an
// estimate bounds nothing by itself; it refuses the plainly too large
// before any work.
var listEstimates = map[string]int{
	"Cluster.nodes": 10, "Cluster.jobs": 5, "Job.tasks": 50, "Task.attempts": 2,
	"Query.tenants": 20, "Query.users": 20, "Query.apiTokens": 20, "Query.agents": 10, "Query.resources": 20,
	"Catalog.entities": 20, "Agent.slots": 4, "AgentSetup.assignments": 4,
	"ClusterPreview.nodes": 10, "ClusterPreview.tasks": 50, "OperationPreview.added": 10,
	"OperationPreview.changed": 10, "OperationPreview.tasks": 50,
	// The page's size is Query.clusters' first, counted there.
	"ClusterConnection.nodes": 1,
}

// multiplier is how many times the estimate counts f's selection: a
// list's estimated size, clusters' first (default 50, at most MaxPage),
// Job.tasks' first (at most MaxTaskPage), claimTasks' number of slots; 1
// for anything else.
func multiplier(f *ast.Field, vars map[string]any) int {
	key := f.ObjectDefinition.Name + "." + f.Name
	switch key {
	case "Query.clusters":
		n := 50
		if v, ok := intArg(f.ArgumentMap(vars)["first"]); ok {
			n = v
		}
		return min(max(n, 1), MaxPage)
	case "Job.tasks":
		// A page weighs its first; every task, the estimate below (and
		// what the list holds once read).
		if v, ok := intArg(f.ArgumentMap(vars)["first"]); ok {
			return min(max(v, 1), MaxTaskPage)
		}
	case "Mutation.claimTasks":
		if in, ok := f.ArgumentMap(vars)["input"].(map[string]any); ok {
			if slots, ok := in["slots"].([]any); ok {
				return min(max(len(slots), 1), 256)
			}
		}
		return 256
	}
	if f.Definition.Type.Elem == nil {
		return 1
	}
	if n, ok := listEstimates[key]; ok {
		return n
	}
	if len(f.SelectionSet) == 0 || strings.HasPrefix(f.ObjectDefinition.Name, "__") {
		return 1 // scalars, and introspection: charged as they resolve
	}
	return DefaultListEstimate
}

func intArg(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), true
	case json.Number:
		n, err := v.Int64()
		return int(n), err == nil
	}
	return 0, false
}

// weight is what one resolution of f costs, its selection aside.
func weight(f *ast.Field) int {
	if f.ObjectDefinition == nil || f.Definition == nil || strings.HasPrefix(f.Name, "__") {
		return 1
	}
	w := 1
	switch f.ObjectDefinition.Name {
	case "Query", "Subscription":
		w += QueryCost
	case "Mutation":
		w += MutationCost
	default:
		if dbFields[f.ObjectDefinition.Name+"."+f.Name] {
			w += QueryCost
		}
	}
	if f.Definition.Type.Name() == "JSON" {
		w += JSONCost
	}
	return w
}

// errTooCostly ends a walk that passed its budget.
type errTooCostly struct{}

func (errTooCostly) Error() string { return "over budget" }

// selectionTooLarge is a selection set of more fields than allowed.
type selectionTooLarge struct{ n, max int }

func (e selectionTooLarge) Error() string {
	return fmt.Sprintf("a selection set of %d fields, over the limit of %d", e.n, e.max)
}

// walker prices selection sets.
type walker struct {
	vars map[string]any
	// maxFields bounds the fields of one selection set, fragments
	// expanded: gqlgen merges a selection set's fields by comparing each
	// with those before it, so its time grows with their square.
	maxFields int
	fields    []*ast.Field // scratch
}

// set prices ss within budget: with estimate, lists count their estimated
// size times their selection; without, a list counts only its own weight
// (its items are charged when it resolves). It fails with errTooCostly
// once past budget, so its own work stays within budget, and with
// selectionTooLarge.
func (w *walker) set(ss ast.SelectionSet, estimate bool, budget int) (int, error) {
	start := len(w.fields)
	w.fields = w.flatten(ss, w.fields, 0)
	fields := w.fields[start:]
	defer func() { w.fields = w.fields[:start] }()
	if w.maxFields > 0 && len(fields) > w.maxFields {
		return 0, selectionTooLarge{len(fields), w.maxFields}
	}
	total := 0
	for i := range fields {
		f := fields[i]
		total += weight(f)
		if total > budget {
			return 0, errTooCostly{}
		}
		if len(f.SelectionSet) == 0 {
			continue
		}
		list := f.Definition != nil && f.Definition.Type.Elem != nil
		n := 1
		if estimate {
			n = multiplier(f, w.vars)
		} else if list {
			continue
		}
		child, err := w.set(f.SelectionSet, estimate, (budget-total)/n)
		if err != nil {
			return 0, err
		}
		if list {
			child++ // the item itself, as the meter charges it
		}
		total += n * child
		if total > budget {
			return 0, errTooCostly{}
		}
	}
	return total, nil
}

// flatten appends ss's fields to out, fragments expanded.
func (w *walker) flatten(ss ast.SelectionSet, out []*ast.Field, depth int) []*ast.Field {
	for _, s := range ss {
		switch s := s.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			out = w.flatten(s.SelectionSet, out, depth+1)
		case *ast.FragmentSpread:
			// Validation refuses fragment cycles; the depth is a second guard.
			if s.Definition != nil && depth < 32 {
				out = w.flatten(s.Definition.SelectionSet, out, depth+1)
			}
		}
	}
	return out
}

// CostLimit refuses operations that would cost more than Max, before and
// while they run. Before: an estimate in which lists weigh their first (or
// their estimated size) times the cost of one item's selection, nested
// lists multiplying. While: every list is charged its actual length times
// the cost of one item when it resolves, so data larger than estimated
// cannot carry a request past Max either; the list that would is an error
// and lists after it are not read. Subscriptions are metered per message.
//
// It also refuses selection sets of more than MaxFields fields.
type CostLimit struct {
	Max       int
	MaxFields int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
	graphql.ResponseInterceptor
	graphql.FieldInterceptor
} = CostLimit{}

const costExtension = "CostLimit"

// Cost is what the estimate found for an operation, in Stats.
type Cost struct {
	// Estimate is the estimated cost; Base what the operation costs with
	// every list empty, where the meter starts.
	Estimate, Base int
}

func (CostLimit) ExtensionName() string                   { return costExtension }
func (CostLimit) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext refuses an operation estimated over Max.
func (c CostLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	w := &walker{vars: oc.Variables, maxFields: c.MaxFields}
	est, err := w.set(op.SelectionSet, true, c.Max)
	var big selectionTooLarge
	switch {
	case err == nil:
	case errors.As(err, &big):
		e := gqlerror.Errorf("a selection set of %d fields (fragments expanded), over the limit of %d: split the request", big.n, big.max)
		e.Extensions = map[string]any{"code": "LIMIT_EXCEEDED"}
		return e
	default:
		e := gqlerror.Errorf("operation's estimated cost is over the limit of %d: each list weighs its first "+
			"(or its estimated size) times what one item asks for; ask for fewer items or fields, or split the request", c.Max)
		e.Extensions = map[string]any{"code": "COMPLEXITY_LIMIT_EXCEEDED"}
		return e
	}
	base, err := w.set(op.SelectionSet, false, c.Max)
	if err != nil {
		base = est // cannot be: the base is at most the estimate
	}
	oc.Stats.SetExtension(costExtension, &Cost{Estimate: est, Base: base})
	return nil
}

type meterKey struct{}

// meter is one response's running cost.
type meter struct {
	max   int64
	spent atomic.Int64
	over  atomic.Bool
	// stop cancels the response's context once it is over: reads queued
	// for a database connection give up.
	stop  context.CancelFunc
	items sync.Map // *ast.Field -> int64: what one item of that list costs
	vars  map[string]any
}

// InterceptResponse gives each response (each message of a subscription)
// a meter starting at the operation's base cost.
func (c CostLimit) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if !graphql.HasOperationContext(ctx) {
		return next(ctx) // a request refused before it had one
	}
	oc := graphql.GetOperationContext(ctx)
	cost, _ := oc.Stats.GetExtension(costExtension).(*Cost)
	if cost == nil {
		return next(ctx)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	m := &meter{max: int64(c.Max), vars: oc.Variables, stop: stop}
	m.spent.Store(int64(cost.Base))
	return next(context.WithValue(ctx, meterKey{}, m))
}

// InterceptField charges a list, once resolved, its length times what
// one item's selection costs, and a JSON value its size. Once the
// response is over its limit, fields that would read or build more fail
// at once.
func (c CostLimit) InterceptField(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Field.Field == nil || fc.Field.Definition == nil {
		return next(ctx)
	}
	t := fc.Field.Definition.Type
	isJSON := t.Elem == nil && t.NamedType == "JSON"
	if t.Elem == nil && !isJSON && weight(fc.Field.Field) == 1 {
		return next(ctx)
	}
	m, _ := ctx.Value(meterKey{}).(*meter)
	if m == nil {
		return next(ctx)
	}
	if m.over.Load() {
		return nil, m.refusal()
	}
	res, err := next(ctx)
	if m.over.Load() {
		return nil, m.refusal()
	}
	if err != nil || res == nil {
		return res, err
	}
	var cost int64
	if isJSON {
		cost = jsonSize(res, JSONBytes*(m.max+1)) / JSONBytes
	} else if v := reflect.ValueOf(res); v.Kind() == reflect.Slice {
		cost = int64(v.Len()) * m.item(fc.Field)
	}
	if m.spent.Add(cost) > m.max {
		m.over.Store(true)
		m.stop()
		return nil, m.refusal()
	}
	return res, nil
}

// jsonSize is about the size of v written as JSON, counted up to limit.
func jsonSize(v any, limit int64) int64 {
	var n int64
	var walk func(v any)
	walk = func(v any) {
		if n > limit {
			return
		}
		switch v := v.(type) {
		case string:
			n += int64(len(v)) + 2
		case map[string]any:
			n += 2
			for k, x := range v {
				n += int64(len(k)) + 4
				walk(x)
			}
		case []any:
			n += 2
			for _, x := range v {
				n++
				walk(x)
			}
		case map[string]string:
			for k, x := range v {
				n += int64(len(k)+len(x)) + 6
			}
		case json.RawMessage:
			n += int64(len(v))
		case model.Encoded:
			n += int64(len(v))
		case []byte:
			n += int64(len(v))
		default:
			n += 8
		}
	}
	walk(v)
	return n
}

// item is what one item of the list f costs: 1, and its selection with
// nested lists empty (they are charged when they resolve).
func (m *meter) item(f graphql.CollectedField) int64 {
	if v, ok := m.items.Load(f.Field); ok {
		return v.(int64)
	}
	w := &walker{vars: m.vars}
	n, err := w.set(f.Selections, false, int(m.max))
	cost := int64(1 + n)
	if err != nil {
		cost = m.max + 1
	}
	m.items.Store(f.Field, cost)
	return cost
}

func (m *meter) refusal() error {
	e := gqlerror.Errorf("the data asked for costs more than the limit of %d (lists hold more than estimated): "+
		"ask for fewer items or fields, or split the request", m.max)
	e.Extensions = map[string]any{"code": "COMPLEXITY_LIMIT_EXCEEDED"}
	return e
}
