// Package gqlws serves GraphQL over websockets with the
// graphql-transport-ws protocol
// (https://github.com/enisdenjo/graphql-ws/blob/master/PROTOCOL.md).
//
// gqlgen has a websocket transport; this one exists for subscriptions
// watched by many clients at once. gqlgen encodes every response twice per
// subscriber (the result, then the message around it, scanning the result
// again); here a response is encoded by Encode, which may hand every
// subscriber of a shared response the same bytes (see graph/fanout), and
// each message is framed around them with a copy. At a thousand
// subscribers that encoding was an eighth of the server's work.
package gqlws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Subprotocol is the websocket subprotocol this transport speaks.
const Subprotocol = "graphql-transport-ws"

// Close codes of the protocol.
const (
	CloseBadRequest      websocket.StatusCode = 4400
	CloseUnauthorized    websocket.StatusCode = 4401
	CloseForbidden       websocket.StatusCode = 4403
	CloseInitTimeout     websocket.StatusCode = 4408
	CloseDuplicateID     websocket.StatusCode = 4409
	CloseTooManyInits    websocket.StatusCode = 4429
	defaultInitTimeout                        = 10 * time.Second
	defaultWriteTimeout                       = 15 * time.Second
	defaultReadLimit                          = 1 << 20
	defaultMaxOperations                      = 100
)

// Transport is a gqlgen transport for websocket requests.
type Transport struct {
	// AcceptOptions are the websocket's; Subprotocols is set here.
	AcceptOptions websocket.AcceptOptions
	// Init is called with connection_init's payload; the context it returns
	// is the one operations run in. An error closes the connection with
	// 4403 and the error's text.
	Init transport.WebsocketInitFunc
	// InitTimeout is how long a connection may wait before connection_init
	// (10 s when zero).
	InitTimeout time.Duration
	// Authenticated, when set, reports whether Init's context carries an
	// identity. A connection whose does not is closed with 4401 once
	// InitTimeout has passed since it opened: acknowledged or not, a
	// client without one holds no socket for long.
	Authenticated func(ctx context.Context) bool
	// WriteTimeout is how long one write to the network may block before
	// the client counts as gone and the connection is dropped (15 s when
	// zero): a client that stops reading would otherwise hold its
	// operations' goroutines until the network gives up on it.
	WriteTimeout time.Duration
	// ReadLimit bounds one client message in bytes (1 MiB when zero).
	ReadLimit int64
	// MaxOperations bounds the operations running at once on one
	// connection (100 when zero): a subscribe over it is answered with an
	// error message, before anything of it is read or run.
	MaxOperations int
	// Admit, when set, is asked with the operations' context (Init's)
	// before each subscribe and ping is acted on, in the order they came:
	// a rate limit. A subscribe it refuses gets an error message with its
	// error (a *gqlerror.Error keeps its extensions), a ping no pong.
	Admit func(ctx context.Context) error
	// KeepAlive is how often an idle connection gets a ping, so that
	// proxies with idle timeouts keep it open (never when zero).
	KeepAlive time.Duration
	// Encode renders a response as a next message's payload (json.Marshal
	// when nil). It must not keep or change resp.
	Encode func(resp *graphql.Response) ([]byte, error)
	// Legacy serves clients that do not offer graphql-transport-ws (the
	// older graphql-ws protocol); without it they are refused.
	Legacy graphql.Transport
}

var _ graphql.Transport = Transport{}

// Supports reports a websocket upgrade.
func (t Transport) Supports(r *http.Request) bool {
	return r.Header.Get("Upgrade") != ""
}

// Do serves one websocket until the client leaves or r's context ends.
func (t Transport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	if t.Legacy != nil && !offers(r, Subprotocol) {
		t.Legacy.Do(w, r, exec)
		return
	}
	opts := t.AcceptOptions
	opts.Subprotocols = []string{Subprotocol}
	hw := &hijackWriter{ResponseWriter: w, writeTimeout: t.WriteTimeout}
	if hw.writeTimeout <= 0 {
		hw.writeTimeout = defaultWriteTimeout
	}
	ws, err := websocket.Accept(hw, r, &opts)
	if err != nil {
		return // Accept answered the request
	}
	if ws.Subprotocol() != Subprotocol {
		_ = ws.Close(websocket.StatusPolicyViolation, "the "+Subprotocol+" subprotocol is required")
		return
	}
	limit := t.ReadLimit
	if limit == 0 {
		limit = defaultReadLimit
	}
	ws.SetReadLimit(limit)
	c := &conn{t: t, ws: ws, net: hw.conn, exec: exec, headers: r.Header, active: map[string]*running{}}
	c.serve(r.Context())
}

// offers reports whether the client offered the subprotocol.
func offers(r *http.Request, proto string) bool {
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for p := range strings.SplitSeq(h, ",") {
			if strings.TrimSpace(p) == proto {
				return true
			}
		}
	}
	return false
}

type conn struct {
	t       Transport
	ws      *websocket.Conn
	net     *batchConn
	exec    graphql.GraphExecutor
	headers http.Header
	ctx     context.Context // operations', from Init
	inited  atomic.Bool     // connection_init came (Init may still run)
	acked   atomic.Bool
	// Set when Init has run: whether its context is authenticated.
	initRan, authed atomic.Bool
	initBy          time.Time // InitTimeout after the connection opened

	mu     sync.Mutex
	active map[string]*running
	ops    sync.WaitGroup
}

// running is an operation whose id is in use.
type running struct{ cancel context.CancelFunc }

type message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (c *conn) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	c.ctx = ctx
	defer func() {
		cancel()
		// Operations blocked writing to a client that stopped reading end
		// when the socket does.
		_ = c.ws.CloseNow()
		c.ops.Wait()
	}()
	// A server shutting down closes the connection with 1001, which ends
	// the read (reading with ctx instead would drop the socket at once,
	// before the close frame).
	stop := context.AfterFunc(ctx, func() {
		c.net.stopHolding()
		_ = c.ws.Close(websocket.StatusGoingAway, "server shutting down")
	})
	defer stop()
	timeout := c.t.InitTimeout
	if timeout == 0 {
		timeout = defaultInitTimeout
	}
	c.initBy = time.Now().Add(timeout)
	initTimer := time.AfterFunc(timeout, func() {
		switch {
		case !c.inited.Load():
			c.close(CloseInitTimeout, "Connection initialisation timeout")
		case c.initRan.Load() && !c.authed.Load():
			c.close(CloseUnauthorized, "Unauthorized: no valid token within the initialisation timeout")
		}
		// Init still running: init sees to it when it returns.
	})
	defer initTimer.Stop()
	if c.t.KeepAlive > 0 {
		go c.keepAlive(ctx, c.t.KeepAlive)
	}
	for {
		_, data, err := c.ws.Read(context.WithoutCancel(ctx))
		if err != nil {
			return
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
			c.close(CloseBadRequest, "Invalid message: not a JSON object with a type")
			return
		}
		switch m.Type {
		case "connection_init":
			if c.inited.Swap(true) {
				c.close(CloseTooManyInits, "Too many initialisation requests")
				return
			}
			if !c.init(ctx, m.Payload) {
				return
			}
		case "ping":
			if c.t.Admit != nil && c.t.Admit(c.ctx) != nil {
				continue
			}
			c.write(message{Type: "pong", Payload: m.Payload})
		case "pong":
		case "subscribe":
			if c.ctx.Err() != nil {
				continue // closing: Init's context ended
			}
			if !c.acked.Load() {
				c.close(CloseUnauthorized, "Unauthorized")
				return
			}
			if m.ID == "" {
				c.close(CloseBadRequest, "Invalid message: subscribe without an id")
				return
			}
			if err := c.admit(m.ID); err != nil {
				(&op{c: c, id: m.ID}).errors(err)
				continue
			}
			if !c.subscribe(m) {
				c.close(CloseDuplicateID, "Subscriber for "+m.ID+" already exists")
				return
			}
		case "complete":
			// The id is the client's again at once, as the protocol has it,
			// even while the operation winds down.
			c.mu.Lock()
			op := c.active[m.ID]
			delete(c.active, m.ID)
			c.mu.Unlock()
			if op != nil {
				op.cancel()
			}
		default:
			c.close(CloseBadRequest, "Invalid message type "+m.Type)
			return
		}
	}
}

// admit refuses an operation over the connection's limit or its
// principal's rate. An id in use is let through, to be refused for that.
func (c *conn) admit(id string) *gqlerror.Error {
	max := c.t.MaxOperations
	if max == 0 {
		max = defaultMaxOperations
	}
	c.mu.Lock()
	_, inUse := c.active[id]
	n := len(c.active)
	c.mu.Unlock()
	if inUse {
		return nil
	}
	if n >= max {
		return &gqlerror.Error{Message: fmt.Sprintf("%d operations are running on this connection, the most it may run: complete one first", max),
			Extensions: map[string]any{"code": "LIMIT_EXCEEDED"}}
	}
	if c.t.Admit == nil {
		return nil
	}
	if err := c.t.Admit(c.ctx); err != nil {
		var gqlErr *gqlerror.Error
		if !errors.As(err, &gqlErr) {
			gqlErr = &gqlerror.Error{Message: err.Error()}
		}
		return gqlErr
	}
	return nil
}

// keepAlive pings until ctx ends. Clients answer with pong; one that does
// not is not closed for it (a dead peer shows when a write fails).
func (c *conn) keepAlive(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.write(message{Type: "ping"})
		}
	}
}

// close closes the connection with code, waiting (a few seconds at most)
// for the client's answer.
func (c *conn) close(code websocket.StatusCode, reason string) {
	_ = c.ws.Close(code, reason)
}

func (c *conn) init(ctx context.Context, raw json.RawMessage) bool {
	payload := transport.InitPayload{}
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := json.Unmarshal(raw, &payload); err != nil {
			c.close(CloseBadRequest, "Invalid message: connection_init's payload is not an object")
			return false
		}
	}
	var ack *transport.InitPayload
	if c.t.Init != nil {
		next, a, err := c.t.Init(ctx, payload)
		if err != nil {
			c.close(CloseForbidden, "Forbidden: "+err.Error())
			return false
		}
		c.ctx, ack = next, a
		// A context Init returned that ends before the connection does (its
		// token was revoked) closes it, as gqlgen's graphql-ws transport
		// does, with the code of a token refused at connection_init (the web
		// UI takes it for its session's end); the cause is the reason the
		// client sees.
		context.AfterFunc(next, func() {
			if ctx.Err() == nil {
				c.close(CloseForbidden, "Forbidden: "+context.Cause(next).Error())
			}
		})
	}
	c.authed.Store(c.t.Authenticated == nil || c.t.Authenticated(c.ctx))
	c.initRan.Store(true)
	if !c.authed.Load() && !time.Now().Before(c.initBy) {
		c.close(CloseUnauthorized, "Unauthorized: no valid token within the initialisation timeout")
		return false
	}
	m := message{Type: "connection_ack"}
	if ack != nil {
		b, err := json.Marshal(*ack)
		if err != nil {
			c.close(websocket.StatusInternalError, "connection_ack's payload: "+err.Error())
			return false
		}
		m.Payload = b
	}
	c.acked.Store(true)
	c.write(m)
	return true
}

// write sends one protocol message. A failed write means the connection
// is gone, which the read loop notices.
func (c *conn) write(m message) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	_ = c.ws.Write(context.Background(), websocket.MessageText, b)
}

// subscribe starts an operation; false when the id is in use.
func (c *conn) subscribe(m message) bool {
	c.mu.Lock()
	if _, ok := c.active[m.ID]; ok {
		c.mu.Unlock()
		return false
	}
	ctx, cancel := context.WithCancel(c.ctx)
	me := &running{cancel: cancel}
	c.active[m.ID] = me
	c.mu.Unlock()
	c.ops.Add(1)
	go func() {
		defer c.ops.Done()
		defer func() {
			c.mu.Lock()
			if c.active[m.ID] == me {
				delete(c.active, m.ID)
			}
			c.mu.Unlock()
			cancel()
		}()
		c.run(ctx, m)
	}()
	return true
}

// run executes one operation, sending its responses then complete; after
// an error message, as the protocol has it, nothing more.
func (c *conn) run(ctx context.Context, m message) {
	start := graphql.Now()
	o := &op{c: c, id: m.ID}
	ctx = graphql.StartOperationTrace(ctx)
	var params graphql.RawParams
	dec := json.NewDecoder(bytes.NewReader(m.Payload))
	dec.UseNumber()
	if err := dec.Decode(&params); err != nil {
		o.errors(&gqlerror.Error{Message: "invalid subscribe payload: " + err.Error()})
		return
	}
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	params.Headers = c.headers
	rc, err := c.exec.CreateOperationContext(ctx, &params)
	if err != nil {
		resp := c.exec.DispatchError(graphql.WithOperationContext(ctx, rc), err)
		if errcode.GetErrorKind(err) == errcode.KindProtocol {
			o.errors(resp.Errors...)
			return
		}
		o.next(&graphql.Response{Errors: err})
		o.complete(ctx)
		return
	}
	ctx = graphql.WithOperationContext(ctx, rc)
	b := &batch{conn: o.c.net}
	ctx = context.WithValue(ctx, batchKey{}, b)
	defer b.release()
	defer func() {
		if p := recover(); p != nil {
			err := rc.Recover(ctx, p)
			var gqlErr *gqlerror.Error
			if !errors.As(err, &gqlErr) {
				gqlErr = &gqlerror.Error{Message: fmt.Sprint(err)}
			}
			o.errors(gqlErr)
		}
	}()
	responses, ctx := c.exec.DispatchOperation(ctx, rc)
	for {
		b.expect()
		resp := responses(ctx)
		if resp == nil || ctx.Err() != nil {
			// Ended, by the client's complete among others: values the
			// resolver had already queued are not sent.
			break
		}
		more := b.holdIfMore()
		if !o.next(resp) {
			return
		}
		if !more {
			b.release()
		}
	}
	b.release()
	o.complete(ctx)
}

// op writes one operation's messages.
type op struct {
	c      *conn
	id     string
	prefix []byte // {"id":…,"type":"next","payload":
	buf    []byte
}

// next sends resp as a next message; false when the connection is gone.
func (o *op) next(resp *graphql.Response) bool {
	encode := o.c.t.Encode
	if encode == nil {
		encode = func(r *graphql.Response) ([]byte, error) { return json.Marshal(r) }
	}
	payload, err := encode(resp)
	if err != nil {
		o.errors(&gqlerror.Error{Message: "encoding the response: " + err.Error()})
		return false
	}
	if o.prefix == nil {
		id, _ := json.Marshal(o.id)
		o.prefix = fmt.Appendf(nil, `{"id":%s,"type":"next","payload":`, id)
	}
	o.buf = append(append(append(o.buf[:0], o.prefix...), payload...), '}')
	return o.c.ws.Write(context.Background(), websocket.MessageText, o.buf) == nil
}

func (o *op) errors(errs ...*gqlerror.Error) {
	payload, err := json.Marshal(errs)
	if err != nil {
		payload = []byte(`[{"message":"encoding the errors failed"}]`)
	}
	o.c.write(message{ID: o.id, Type: "error", Payload: payload})
}

// complete ends the operation for the client, unless the client ended it
// or the connection is ending.
func (o *op) complete(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	o.c.write(message{ID: o.id, Type: "complete"})
}
