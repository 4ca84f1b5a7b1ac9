// Package fanout renders a subscription's value once for all the
// subscribers of the same operation.
//
// gqlgen executes a subscription's selection set for every value and every
// subscriber. When a thousand clients watch one cluster, each change is the
// same value rendered by the same document a thousand times, and that
// rendering was a fifth of the server's work. A resolver that opts in with
// Stream gives each value a key; the first subscriber of a group (same
// tenant, document, operation and variables) to reach a key renders it with
// its own execution and the others send that response as it is. Values
// without a key (a subscriber's own snapshot or lagged marker) are rendered
// by the subscriber's own execution, as without this package.
package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// keep is how many rendered values a group holds: enough for the
// subscribers furthest behind in a burst to find theirs; one that falls out
// is only rendered again.
const keep = 1024

// Groups holds the groups of subscribers whose responses are shared.
type Groups struct {
	// Tenant names the caller's tenant in a request's context: groups never
	// span tenants.
	Tenant func(context.Context) string

	mu     sync.Mutex
	groups map[string]*group

	// shared maps each response in a group's cache to its entry, for
	// Encode.
	shared sync.Map

	// Rendered and Shared count responses rendered by an execution and
	// sent from a group's cache, Encoded the cached responses encoded, for
	// tests and metrics.
	Rendered, Shared, Encoded atomic.Int64
}

// Encode is json.Marshal for responses, run once for a response a group
// shares: a transport that sends what it returns as it is spares each
// subscriber the encoding.
func (g *Groups) Encode(resp *graphql.Response) ([]byte, error) {
	v, ok := g.shared.Load(resp)
	if !ok {
		return json.Marshal(resp)
	}
	e := v.(*entry)
	e.encode.Do(func() {
		g.Encoded.Add(1)
		e.payload, e.err = json.Marshal(resp)
	})
	return e.payload, e.err
}

// Executor wraps exec so that the subscriptions it dispatches share
// rendered values.
func (g *Groups) Executor(exec graphql.GraphExecutor) graphql.GraphExecutor {
	return &executor{GraphExecutor: exec, groups: g}
}

type executor struct {
	graphql.GraphExecutor
	groups *Groups
}

type offerKey struct{}

// offer is where a resolver leaves its stream for the executor: next
// receives the next value and returns its key, render hands that value to
// the subscriber's own execution.
type offer struct {
	next   func(ctx context.Context) (key string, ok bool)
	render func()
}

// Stream is what a subscription resolver returns to gqlgen for the values
// pull yields until it reports false or ctx ends; stop is called once
// after. key names the values that render the same for every subscriber
// of an operation ("" for one that does not: one carrying the caller's own
// view). Under a Groups executor the subscription's own goroutine calls
// pull; otherwise a goroutine pumps pull into the returned channel.
func Stream[T any](ctx context.Context, pull func(context.Context) (T, bool), stop func(), key func(T) string) <-chan T {
	var once sync.Once
	end := func() { once.Do(stop) }
	o, _ := ctx.Value(offerKey{}).(*offer)
	if o == nil || o.next != nil {
		out := make(chan T)
		go func() {
			defer close(out)
			defer end()
			for {
				v, ok := pull(ctx)
				if !ok {
					return
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}()
		return out
	}
	// An execution that never asks for a value still ends with ctx.
	context.AfterFunc(ctx, end)
	// gqlgen's execution reads from proxy: each value is put there only
	// when this subscriber renders it itself.
	proxy := make(chan T, 1)
	var pending T
	o.next = func(ctx context.Context) (string, bool) {
		v, ok := pull(ctx)
		if !ok {
			end()
			return "", false
		}
		pending = v
		return key(v), true
	}
	o.render = func() { proxy <- pending }
	return proxy
}

func (e *executor) DispatchOperation(ctx context.Context, rc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	if rc.Operation == nil || rc.Operation.Operation != ast.Subscription || len(rc.Operation.SelectionSet) != 1 {
		return e.GraphExecutor.DispatchOperation(ctx, rc)
	}
	o := &offer{}
	responses, ctx := e.GraphExecutor.DispatchOperation(context.WithValue(ctx, offerKey{}, o), rc)
	if o.next == nil {
		return responses, ctx // the resolver did not offer, or failed
	}
	g := e.groups.join(e.groups.key(ctx, rc))
	var once sync.Once
	leave := func() { once.Do(func() { e.groups.leave(g) }) }
	// Also when gqlgen stops asking for responses without one more call.
	context.AfterFunc(ctx, leave)
	done := false
	return func(ctx context.Context) *graphql.Response {
		if done {
			return nil
		}
		key, ok := o.next(ctx)
		if !ok {
			done = true
			leave()
			return nil
		}
		render := func() *graphql.Response {
			o.render()
			e.groups.Rendered.Add(1)
			return responses(ctx)
		}
		if key == "" {
			resp := render()
			if resp == nil {
				done = true
				leave()
			}
			return resp
		}
		resp, own, mine := g.get(key)
		if !mine {
			e.groups.Shared.Add(1)
			return resp
		}
		resp = render()
		if own != nil {
			if resp != nil {
				// Data may sit in a buffer the execution reuses for its
				// next response; the group's copy must outlive it.
				cp := *resp
				cp.Data = bytes.Clone(resp.Data)
				resp = &cp
			}
			g.publish(own, resp)
		}
		if resp == nil {
			done = true
			leave()
		}
		return resp
	}, ctx
}

// key names an operation's group: same tenant, document, operation name
// and variables. Variables that do not encode give the operation a group
// of its own.
func (g *Groups) key(ctx context.Context, rc *graphql.OperationContext) string {
	vars, err := json.Marshal(rc.Variables)
	if err != nil {
		return ""
	}
	tenant := ""
	if g.Tenant != nil {
		tenant = g.Tenant(ctx)
	}
	var b strings.Builder
	for _, s := range []string{tenant, rc.OperationName, rc.RawQuery, string(vars)} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.String()
}

func (g *Groups) join(key string) *group {
	if key == "" {
		return newGroup(g, "")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.groups == nil {
		g.groups = make(map[string]*group)
	}
	gr := g.groups[key]
	if gr == nil {
		gr = newGroup(g, key)
		g.groups[key] = gr
	}
	gr.members++
	return gr
}

func (g *Groups) leave(gr *group) {
	if gr.key != "" {
		g.mu.Lock()
		defer g.mu.Unlock()
		gr.members--
		if gr.members > 0 {
			return
		}
		delete(g.groups, gr.key)
	}
	gr.mu.Lock()
	defer gr.mu.Unlock()
	gr.gone = true
	for _, e := range gr.entries {
		g.forget(e)
	}
}

// publish sets own's response and wakes the members waiting for it.
func (gr *group) publish(own *entry, resp *graphql.Response) {
	gr.mu.Lock()
	own.resp = resp
	if resp != nil && !gr.gone && !own.evicted {
		gr.groups.shared.Store(resp, own)
	}
	gr.mu.Unlock()
	close(own.ready)
}

func (g *Groups) forget(e *entry) {
	e.evicted = true
	if e.resp != nil {
		g.shared.Delete(e.resp)
	}
}

// Cached is the number of responses held for Encode.
func (g *Groups) Cached() int {
	n := 0
	g.shared.Range(func(_, _ any) bool { n++; return true })
	return n
}

// Len is the number of groups with subscribers.
func (g *Groups) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.groups)
}

type group struct {
	key     string
	groups  *Groups
	members int // under Groups.mu

	mu      sync.Mutex
	entries map[string]*entry
	order   []string // oldest first, for eviction
	gone    bool     // left by its last member
}

type entry struct {
	ready   chan struct{} // closed once resp is set
	resp    *graphql.Response
	evicted bool // under group.mu

	encode  sync.Once
	payload []byte
	err     error
}

func newGroup(g *Groups, key string) *group {
	return &group{key: key, groups: g, entries: make(map[string]*entry)}
}

// get returns the response rendered for key, waiting if another member is
// rendering it. mine reports that the caller must render it itself; own,
// when not nil, is the entry it then publishes its response in (setting
// resp, then closing ready, also when the response is nil).
func (gr *group) get(key string) (resp *graphql.Response, own *entry, mine bool) {
	gr.mu.Lock()
	e := gr.entries[key]
	if e == nil {
		e = &entry{ready: make(chan struct{})}
		gr.entries[key] = e
		gr.order = append(gr.order, key)
		if len(gr.order) > keep {
			gr.groups.forget(gr.entries[gr.order[0]])
			delete(gr.entries, gr.order[0])
			gr.order = gr.order[1:]
		}
		gr.mu.Unlock()
		return nil, e, true
	}
	gr.mu.Unlock()
	<-e.ready
	if e.resp == nil || hasPath(e.resp.Errors) {
		// Its renderer left mid-way, or a field failed: errors that name a
		// path may be the renderer's own; render for this caller.
		return nil, nil, true
	}
	return e.resp, nil, false
}

func hasPath(errs gqlerror.List) bool {
	for _, err := range errs {
		if len(err.Path) > 0 {
			return true
		}
	}
	return false
}
