package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// depthLimit refuses operations nested deeper than max: a cheap guard
// against queries that walk cluster → jobs → tasks → ... without end.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	if n := depth(op.SelectionSet, oc.Doc.Fragments, 0); n > d.max {
		err := gqlerror.Errorf("operation nests %d levels deep, over the limit of %d", n, d.max)
		err.Extensions = map[string]any{"code": "LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

func depth(ss ast.SelectionSet, frags ast.FragmentDefinitionList, seen int) int {
	if seen > 64 { // fragment cycles are refused by validation; be safe anyway
		return seen
	}
	deepest := 0
	for _, s := range ss {
		var d int
		switch s := s.(type) {
		case *ast.Field:
			switch {
			case len(s.SelectionSet) == 0:
				d = 1
			case s.Name == "ofType" && s.Definition != nil && s.Definition.Type.Name() == "__Type":
				// Introspection unwraps list and non-null types through a
				// chain of ofType, nine deep in the standard introspection
				// query (GraphiQL's): one type each, no fan-out, so the
				// chain does not count.
				d = depth(s.SelectionSet, frags, seen+1)
			default:
				d = 1 + depth(s.SelectionSet, frags, seen+1)
			}
		case *ast.InlineFragment:
			d = depth(s.SelectionSet, frags, seen+1)
		case *ast.FragmentSpread:
			if f := frags.ForName(s.Name); f != nil {
				d = depth(f.SelectionSet, frags, seen+1)
			}
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// The document cache keeps at most docCacheBytes of query text (about
// twenty times that once parsed), none of a document over docCacheMaxDoc.
const (
	docCacheBytes  = 512 << 10
	docCacheMaxDoc = 32 << 10
)

// requireToken refuses a request without a valid token before anything of
// it is read: nothing is parsed or kept for someone who may not ask; its
// address is charged for it. A websocket goes on: its token comes in
// connection_init (documentGate refuses its operations until then).
// Preflight OPTIONS go on too.
func (l *addressLimiter) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := auth.FromContext(r.Context())
		switch {
		case ok, r.Method == http.MethodOptions:
		case r.Header.Get("Upgrade") != "":
			if r.Header.Get("Authorization") != "" {
				l.charge(r.Context()) // a bad token; without one, connection_init is charged
			}
		default:
			l.charge(r.Context())
			w.Header().Set("WWW-Authenticate", `Bearer realm="coopr"`)
			writeGraphQLError(w, http.StatusUnauthorized, "UNAUTHENTICATED",
				`no valid API token: send "Authorization: Bearer <token>"; make one with `+"`coopr token create`")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// documentGate runs before a document is parsed: it refuses operations of
// callers without a valid token (websockets acknowledged without one) and
// documents over maxBytes, whose parsing alone would cost what no
// request may.
type documentGate struct{ maxBytes int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
} = documentGate{}

func (documentGate) ExtensionName() string                   { return "DocumentGate" }
func (documentGate) Validate(graphql.ExecutableSchema) error { return nil }
func (g documentGate) MutateOperationParameters(ctx context.Context, p *graphql.RawParams) *gqlerror.Error {
	if _, ok := auth.FromContext(ctx); !ok {
		err := gqlerror.Errorf("no valid API token: send {\"Authorization\": \"Bearer <token>\"} in connection_init's payload")
		err.Extensions = map[string]any{"code": "UNAUTHENTICATED"}
		return err
	}
	if g.maxBytes > 0 && len(p.Query) > g.maxBytes {
		err := gqlerror.Errorf("a document of %d bytes, over the limit of %d: send large values as variables", len(p.Query), g.maxBytes)
		err.Extensions = map[string]any{"code": "LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

// limitBody caps request bodies; a catalog import is the largest thing a
// client sends.
func limitBody(n int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			writeGraphQLError(w, http.StatusRequestEntityTooLarge, "LIMIT_EXCEEDED",
				"request body over the limit of "+humanBytes(n))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, n)
		next.ServeHTTP(w, r)
	})
}

// readBody reads a body of unknown length (chunked) before the handler
// does, so that one over limitBody's limit is answered 413 (gqlgen would
// answer 200 with a decoding error). It runs after the rate limit: a
// refused request is not read.
func readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength >= 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(r.Body)
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeGraphQLError(w, http.StatusRequestEntityTooLarge, "LIMIT_EXCEEDED",
				"request body over the limit of "+humanBytes(tooLarge.Limit))
			return
		case err != nil:
			writeGraphQLError(w, http.StatusBadRequest, "INVALID_INPUT", "reading the request body: "+err.Error())
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		next.ServeHTTP(w, r)
	})
}

func humanBytes(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func writeGraphQLError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []any{map[string]any{"message": msg,
		"extensions": map[string]any{"code": code}}}})
}

// rateLimiter is a token bucket per API token, in this server's memory:
// with several servers each grants the rate.
type rateLimiter struct {
	user, agent rate
	buckets     buckets
}

type rate struct {
	perSecond float64
	burst     float64
}

func newRateLimiter(user, agent rate) *rateLimiter {
	return &rateLimiter{user: user, agent: agent}
}

// allow takes one request from the principal's bucket; when empty it says
// how long until the next one is allowed.
func (l *rateLimiter) allow(p store.Principal) (bool, time.Duration) {
	r := l.user
	if p.Kind == store.TokenAgent {
		r = l.agent
	}
	return l.buckets.take(p.TokenID, r, 1)
}

// buckets are token buckets by key.
type buckets struct {
	mu  sync.Mutex
	m   map[string]*bucket
	now func() time.Time // time.Now when nil
}

type bucket struct {
	tokens float64
	last   time.Time
}

// take takes n (0: none, to look) from key's bucket if it holds at least
// one; when it does not, it says how long until it will. A rate of 0
// allows everything.
func (b *buckets) take(key string, r rate, n float64) (bool, time.Duration) {
	if r.perSecond <= 0 {
		return true, 0
	}
	now := time.Now()
	if b.now != nil {
		now = b.now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.m[key]
	if k == nil {
		if b.m == nil || len(b.m) > 100_000 {
			b.m = map[string]*bucket{} // forget idle keys rather than grow without bound
		}
		k = &bucket{tokens: r.burst, last: now}
		b.m[key] = k
	}
	k.tokens = math.Min(r.burst, k.tokens+now.Sub(k.last).Seconds()*r.perSecond)
	k.last = now
	if k.tokens < 1 {
		return false, time.Duration((1 - k.tokens) / r.perSecond * float64(time.Second))
	}
	k.tokens -= n
	return true, 0
}

// refusalTTL is how long a token refused by the database is refused again
// without asking.
const refusalTTL = 10 * time.Second

// addressLimiter limits, per client address, the requests that bring no
// valid token, so that guessing at tokens costs the database nothing past
// the rate: an address whose bucket is empty is refused before its token
// is looked up (valid or not, it cannot be known without the lookup). A
// request is charged once it proves to have no valid token. Addresses are
// the connection's (behind a proxy, the proxy's: raise or disable the
// limit there); IPv6 addresses count by their /64.
type addressLimiter struct {
	rate    rate
	buckets buckets
}

type addressKey struct{}

// clientAddress is r's client address, IPv6 by its /64.
func clientAddress(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// gate refuses requests from an address out of tries, and notes the
// address for charge.
func (l *addressLimiter) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := clientAddress(r)
		if ok, wait := l.buckets.take(addr, l.rate, 0); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			writeGraphQLError(w, http.StatusTooManyRequests, wire.CodeRateLimited,
				"too many requests without a valid token from this address; retry after "+wait.Round(time.Millisecond).String())
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), addressKey{}, addr)))
	})
}

// charge counts a request of ctx that brought no valid token against its
// address.
func (l *addressLimiter) charge(ctx context.Context) {
	if addr, ok := ctx.Value(addressKey{}).(string); ok {
		l.buckets.take(addr, l.rate, 1)
	}
}

func (l *rateLimiter) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := auth.FromContext(r.Context()); ok {
			if ok, wait := l.allow(p); !ok {
				w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
				writeGraphQLError(w, http.StatusTooManyRequests, wire.CodeRateLimited,
					"too many requests for this token; retry after "+wait.Round(time.Millisecond).String())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
