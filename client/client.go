// Package client talks to a coopr server's GraphQL API: requests over HTTP
// and subscriptions over websockets (graphql-transport-ws). The CLI and the
// tests use it.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// Client is a server URL (http://host:port) and a token.
type Client struct {
	URL   string
	Token string
	HTTP  *http.Client // nil: http.DefaultClient
}

// Error is one GraphQL error.
type Error struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// Code is the error's extensions.code.
func (e Error) Code() string { s, _ := e.Extensions["code"].(string); return s }

// Response is a GraphQL response.
type Response struct {
	Data   json.RawMessage `json:"data"`
	Errors []Error         `json:"errors"`
}

// Code is the first error's code, "" without errors.
func (r *Response) Code() string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Code()
}

// Err is the response's errors as one *ResponseError, nil without any.
func (r *Response) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	return &ResponseError{Errors: r.Errors}
}

// ResponseError is the GraphQL errors of a response. Callers tell them
// apart by code (ErrorCode), never by their text.
type ResponseError struct {
	Errors []Error
}

// Code is the first error's extensions.code.
func (e *ResponseError) Code() string { return e.Errors[0].Code() }

func (e *ResponseError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, e := range e.Errors {
		msgs[i] = e.Message
		if c := e.Code(); c != "" {
			// "CONFLICT: conflict: …" says it twice.
			msg := e.Message
			if p := strings.ToLower(c) + ": "; strings.HasPrefix(strings.ToLower(msg), p) {
				msg = msg[len(p):]
			}
			msgs[i] = c + ": " + msg
		}
	}
	return strings.Join(msgs, "; ")
}

// ErrorCode is the extensions.code of the first GraphQL error in err's
// chain, "" when it holds none.
func ErrorCode(err error) string {
	var re *ResponseError
	if errors.As(err, &re) {
		return re.Code()
	}
	return ""
}

// ConnectionError is a server that could not be reached or went away
// mid-conversation: retrying later may work, unlike a GraphQL error.
type ConnectionError struct {
	Err error
}

func (e *ConnectionError) Error() string { return e.Err.Error() }
func (e *ConnectionError) Unwrap() error { return e.Err }

// Reason says in a few words how the connection ended.
func (e *ConnectionError) Reason() string {
	switch {
	case websocket.CloseStatus(e.Err) == websocket.StatusGoingAway:
		return "server shutting down"
	case websocket.CloseStatus(e.Err) != -1:
		return fmt.Sprintf("closed with status %d", websocket.CloseStatus(e.Err))
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(e.Err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(e.Err, io.EOF), errors.Is(e.Err, io.ErrUnexpectedEOF), errors.Is(e.Err, net.ErrClosed):
		return "connection closed"
	}
	var ne net.Error
	if errors.As(e.Err, &ne) && ne.Timeout() {
		return "timed out"
	}
	return e.Err.Error()
}

// lost wraps err as a ConnectionError unless ctx ended (a caller that
// gave up is not told the server went away) or the server closed the
// websocket to refuse something (4400–4499 in graphql-transport-ws, such
// as 4401 and 4403 for a bad token; 1008), which a retry would not change.
func lost(ctx context.Context, err error) error {
	st := websocket.CloseStatus(err)
	if ctx.Err() != nil || st == websocket.StatusPolicyViolation || (st >= 4400 && st < 4500) {
		return err
	}
	return &ConnectionError{Err: err}
}

// Decode unmarshals data into v, failing on GraphQL errors.
func (r *Response) Decode(v any) error {
	if err := r.Err(); err != nil {
		return err
	}
	return json.Unmarshal(r.Data, v)
}

// Do posts a request.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any) (*Response, error) {
	var out Response
	err := c.post(ctx, query, vars, func(data []byte, status int) error {
		if err := json.Unmarshal(data, &out); err != nil {
			return fmt.Errorf("HTTP %d, not GraphQL: %.200s", status, data)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.Data == nil && out.Errors == nil {
		return nil, errors.New("empty GraphQL response")
	}
	return &out, nil
}

// DoInto posts a request and decodes its data into out (a pointer) in
// the same pass as the rest of the response, where Do and Decode go over
// the data twice; agents' task exchanges take this path, once per round
// of tasks. The GraphQL errors come back as they are, to be told apart
// by code; out is then not to be read.
func (c *Client) DoInto(ctx context.Context, query string, vars map[string]any, out any) ([]Error, error) {
	// A null data field empties the interface, so r.Data == nil below
	// tells a null from an answer.
	r := struct {
		Data   any     `json:"data"`
		Errors []Error `json:"errors"`
	}{Data: out}
	named := false
	err := c.post(ctx, query, vars, func(data []byte, status int) error {
		if err := json.Unmarshal(data, &r); err != nil {
			var plain Response
			if json.Unmarshal(data, &plain) == nil {
				// The errors still say why, by code; a data shape out
				// of step with them must not hide a refusal.
				if len(plain.Errors) > 0 {
					r.Errors = plain.Errors
					return nil
				}
				return fmt.Errorf("decoding the response's data: %w", err)
			}
			return fmt.Errorf("HTTP %d, not GraphQL: %.200s", status, data)
		}
		// Without the key the interface keeps out: the body then does
		// not name it.
		named = bytes.Contains(data, []byte(`"data"`))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(r.Errors) > 0 {
		return r.Errors, nil
	}
	if r.Data == nil || !named {
		return nil, errors.New("empty GraphQL response")
	}
	return nil, nil
}

// bodies are buffers for answers' bodies: an agent reads one every round
// of tasks, and io.ReadAll grew a new one from 512 bytes each time. Every
// reader decodes the body (encoding/json copies what it keeps) before the
// buffer goes back.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer kept for the next answer.
const maxPooledBody = 1 << 20

// post sends a request and hands its answer's body to read, which must
// not keep it.
func (c *Client) post(ctx context.Context, query string, vars map[string]any, read func(data []byte, status int) error) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			err = fmt.Errorf("no coopr server answers at %s (is it running? the address comes from COOPR_SERVER or --server): %w", c.URL, err)
		}
		return lost(ctx, err)
	}
	defer resp.Body.Close()
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			bodies.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return lost(ctx, err)
	}
	return read(buf.Bytes(), resp.StatusCode)
}

// Subscription is one subscription on its own websocket.
type Subscription struct {
	conn *websocket.Conn
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Subscribe opens a websocket, authenticates in connection_init (browsers
// cannot set headers on websockets, so the server reads the token there)
// and starts the subscription. A server that cannot be reached, or that
// drops the connection before it answers, is a *ConnectionError.
func (c *Client) Subscribe(ctx context.Context, query string, vars map[string]any) (*Subscription, error) {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: c.HTTP})
	if err != nil {
		return nil, lost(ctx, err)
	}
	conn.SetReadLimit(16 << 20)
	fail := func(err error) (*Subscription, error) {
		_ = conn.CloseNow()
		return nil, lost(ctx, err)
	}
	init, _ := json.Marshal(map[string]any{"Authorization": "Bearer " + c.Token})
	if err := wsjson.Write(ctx, conn, wsMessage{Type: "connection_init", Payload: init}); err != nil {
		return fail(err)
	}
	var ack wsMessage
	if err := wsjson.Read(ctx, conn, &ack); err != nil {
		return fail(err)
	}
	if ack.Type != "connection_ack" {
		_ = conn.Close(websocket.StatusPolicyViolation, "")
		return nil, fmt.Errorf("connection_init answered %s %s", ack.Type, ack.Payload)
	}
	payload, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err := wsjson.Write(ctx, conn, wsMessage{ID: "1", Type: "subscribe", Payload: payload}); err != nil {
		return fail(err)
	}
	return &Subscription{conn: conn}, nil
}

// Next waits for the next result: data, or GraphQL errors; done when the
// server completed the subscription. A connection that drops is a
// *ConnectionError. A ctx that ends closes the websocket (coder/websocket's
// reads cannot be abandoned otherwise).
func (s *Subscription) Next(ctx context.Context) (r *Response, done bool, err error) {
	for {
		var m wsMessage
		if err := wsjson.Read(ctx, s.conn, &m); err != nil {
			return nil, false, lost(ctx, err)
		}
		switch m.Type {
		case "next":
			var out Response
			if err := json.Unmarshal(m.Payload, &out); err != nil {
				return nil, false, err
			}
			return &out, false, nil
		case "error":
			var errs []Error
			if err := json.Unmarshal(m.Payload, &errs); err != nil {
				return nil, false, err
			}
			return &Response{Errors: errs}, false, nil
		case "complete":
			return nil, true, nil
		case "ping":
			if err := wsjson.Write(ctx, s.conn, wsMessage{Type: "pong"}); err != nil {
				return nil, false, lost(ctx, err)
			}
		}
	}
}

// Close ends the subscription and its connection.
func (s *Subscription) Close() { _ = s.conn.Close(websocket.StatusNormalClosure, "") }
