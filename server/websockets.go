package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cooprhq/coopr/graph/fanout"
	"github.com/cooprhq/coopr/server/auth"
	"github.com/cooprhq/coopr/server/gqlws"
	"github.com/cooprhq/coopr/store"
	"github.com/cooprhq/coopr/wire"
)

// A websocket is one request that lives on: its operations, its messages
// and the socket itself are bounded here. Operations per connection are
// the transports' (gqlws.Transport.MaxOperations, opLimiter for the older
// protocol); websockets per token are counted by tokenSockets; every
// subscribe (and, on graphql-transport-ws, every ping) takes a request
// from the token's rate, as an HTTP request does.

// sharingWebsocket is the websocket transport whose subscriptions share
// rendered values (see fanout).
type sharingWebsocket struct {
	gqlws.Transport
	groups *fanout.Groups
}

type socketKey struct{}

// socket is one websocket request's hold on its token's count, taken at
// connection_init and given back when the connection ends, and how to end
// it when its token or session does.
type socket struct {
	release func()
	// keys are what it authenticated with: "token:<id>", and for a web UI
	// session also "session:<store.SessionKey>".
	keys []string
	end  context.CancelCauseFunc
}

func (t sharingWebsocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	s := &socket{}
	defer func() {
		if s.release != nil {
			s.release()
		}
	}()
	t.Transport.Do(w, r.WithContext(context.WithValue(r.Context(), socketKey{}, s)), t.groups.Executor(exec))
}

func authenticated(ctx context.Context) bool {
	_, ok := auth.FromContext(ctx)
	return ok
}

// closeAnonymous makes init's connections that have no valid token end
// after timeout (gqlgen's graphql-ws transport closes a connection when
// the context its init returned ends).
func closeAnonymous(init transport.WebsocketInitFunc, timeout time.Duration) transport.WebsocketInitFunc {
	return func(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
		ctx, ack, err := init(ctx, p)
		if err != nil || authenticated(ctx) {
			return ctx, ack, err
		}
		ctx, cancel := context.WithCancel(transport.AppendCloseReason(ctx, "no valid token within the initialisation timeout"))
		time.AfterFunc(timeout, cancel)
		return ctx, ack, nil
	}
}

// tokenSockets counts each token's open websockets on this server, and
// ends them when their token or session stops being valid
// (docs/security.md#ending-access).
type tokenSockets struct {
	user, agent int

	mu    sync.Mutex
	open  map[string]int
	socks map[*socket]struct{}
	// ended holds the keys ended lately: a websocket authenticated just
	// before its token was revoked, and counted just after the news came,
	// is refused rather than left to the next re-check.
	ended map[string]time.Time
}

func newTokenSockets(user, agent int) *tokenSockets {
	return &tokenSockets{user: user, agent: agent, open: map[string]int{}, socks: map[*socket]struct{}{},
		ended: map[string]time.Time{}}
}

// errAccessEnded is why a websocket was closed: its client sees it.
var errAccessEnded = errors.New("the token was revoked or the session ended")

// tokenKey and sessionKey name what a websocket authenticated with, as
// the notifications of their end do (migration 00022).
func tokenKey(id string) string    { return "token:" + id }
func sessionKey(key string) string { return "session:" + key }

const endedMemory = time.Minute

// take counts a websocket of p's token (and of the web UI session
// session, if not "") for the request of ctx, or refuses it when the
// token has as many open as it may. The context returned ends when the
// token or the session does; the transports then close the connection.
func (c *tokenSockets) take(ctx context.Context, p store.Principal, session string) (context.Context, error) {
	s, _ := ctx.Value(socketKey{}).(*socket)
	if s == nil || s.release != nil {
		return ctx, nil
	}
	max := c.user
	if p.Kind == store.TokenAgent {
		max = c.agent
	}
	keys := []string{tokenKey(p.TokenID)}
	if session != "" {
		keys = append(keys, sessionKey(session))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if _, ok := c.ended[k]; ok {
			return ctx, errAccessEnded
		}
	}
	if max > 0 && c.open[p.TokenID] >= max {
		return ctx, fmt.Errorf("this token has %d websockets open on this server, the most it may: close one first", max)
	}
	// The older graphql-ws transport sends the reason in a connection_error.
	ctx, end := context.WithCancelCause(transport.AppendCloseReason(ctx, errAccessEnded.Error()))
	s.keys, s.end = keys, end
	c.open[p.TokenID]++
	c.socks[s] = struct{}{}
	s.release = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.open[p.TokenID]--; c.open[p.TokenID] <= 0 {
			delete(c.open, p.TokenID)
		}
		delete(c.socks, s)
		end(nil)
	}
	return ctx, nil
}

// end ends the websockets that authenticated with key, and refuses new
// ones for a while; it returns how many it ended.
func (c *tokenSockets) end(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.ended[key] = now
	for k, at := range c.ended {
		if now.Sub(at) > endedMemory {
			delete(c.ended, k)
		}
	}
	n := 0
	for s := range c.socks {
		if slices.Contains(s.keys, key) {
			s.end(errAccessEnded)
			n++
		}
	}
	return n
}

// keys lists the tokens and sessions the open websockets authenticated
// with.
func (c *tokenSockets) keys() (tokens, sessions []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for s := range c.socks {
		for _, k := range s.keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			if id, ok := strings.CutPrefix(k, "token:"); ok {
				tokens = append(tokens, id)
			} else if key, ok := strings.CutPrefix(k, "session:"); ok {
				sessions = append(sessions, key)
			}
		}
	}
	return tokens, sessions
}

// admit takes one request from the rate of ctx's principal: a websocket
// message counts as an HTTP request does.
func (l *rateLimiter) admit(ctx context.Context) error {
	p, ok := auth.FromContext(ctx)
	if !ok {
		return nil // documentGate refuses its operations
	}
	if ok, wait := l.allow(p); !ok {
		return &gqlerror.Error{Message: "too many requests for this token; retry after " + wait.Round(time.Millisecond).String(),
			Extensions: map[string]any{"code": wire.CodeRateLimited, "retryAfter": strconv.Itoa(int(math.Ceil(wait.Seconds())))}}
	}
	return nil
}

// legacyWebsocket is gqlgen's transport for the older graphql-ws
// protocol, with the same bounds on operations as gqlws.Transport.
type legacyWebsocket struct {
	transport.Websocket
	maxOps int
	admit  func(context.Context) error
}

func (t legacyWebsocket) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	t.Websocket.Do(w, r, &opLimiter{GraphExecutor: exec, max: int64(t.maxOps), admit: t.admit})
}

// opLimiter bounds one connection's operations, before their documents
// are read: at most max at once, each admitted (rate limited) first. An
// operation counts from its start until the context it runs in ends
// (gqlgen's graphql-ws transport cancels it when the operation does).
type opLimiter struct {
	graphql.GraphExecutor
	max    int64
	admit  func(context.Context) error
	active atomic.Int64
}

func (l *opLimiter) CreateOperationContext(ctx context.Context, params *graphql.RawParams) (*graphql.OperationContext, gqlerror.List) {
	if l.active.Add(1) > l.max {
		l.active.Add(-1)
		return &graphql.OperationContext{}, gqlerror.List{{Message: fmt.Sprintf(
			"%d operations are running on this connection, the most it may run: stop one first", l.max),
			Extensions: map[string]any{"code": "LIMIT_EXCEEDED"}}}
	}
	if err := l.admit(ctx); err != nil {
		l.active.Add(-1)
		var gqlErr *gqlerror.Error
		if !errors.As(err, &gqlErr) {
			gqlErr = &gqlerror.Error{Message: err.Error()}
		}
		return &graphql.OperationContext{}, gqlerror.List{gqlErr}
	}
	rc, errs := l.GraphExecutor.CreateOperationContext(ctx, params)
	if errs != nil {
		l.active.Add(-1)
	}
	return rc, errs
}

func (l *opLimiter) DispatchOperation(ctx context.Context, rc *graphql.OperationContext) (graphql.ResponseHandler, context.Context) {
	context.AfterFunc(ctx, func() { l.active.Add(-1) })
	return l.GraphExecutor.DispatchOperation(ctx, rc)
}
