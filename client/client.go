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
	"net/http"
	"strings"
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

// Err is the response's errors as one error, nil without any.
func (r *Response) Err() error {
	if len(r.Errors) == 0 {
		return nil
	}
	msgs := make([]string, len(r.Errors))
	for i, e := range r.Errors {
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
	return errors.New(strings.Join(msgs, "; "))
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
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		return nil, err
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
			return nil, fmt.Errorf("no coopr server answers at %s (is it running? the address comes from COOPR_SERVER or --server): %w", c.URL, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out Response
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("HTTP %d, not GraphQL: %.200s", resp.StatusCode, data)
	}
	if out.Data == nil && out.Errors == nil {
		return nil, errors.New("empty GraphQL response")
	}
	return &out, nil
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
// and starts the subscription.
func (c *Client) Subscribe(ctx context.Context, query string, vars map[string]any) (*Subscription, error) {
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPClient: c.HTTP})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(16 << 20)
	init, _ := json.Marshal(map[string]any{"Authorization": "Bearer " + c.Token})
	if err := wsjson.Write(ctx, conn, wsMessage{Type: "connection_init", Payload: init}); err != nil {
		return nil, err
	}
	var ack wsMessage
	if err := wsjson.Read(ctx, conn, &ack); err != nil {
		return nil, err
	}
	if ack.Type != "connection_ack" {
		_ = conn.Close(websocket.StatusPolicyViolation, "")
		return nil, fmt.Errorf("connection_init answered %s %s", ack.Type, ack.Payload)
	}
	payload, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err := wsjson.Write(ctx, conn, wsMessage{ID: "1", Type: "subscribe", Payload: payload}); err != nil {
		return nil, err
	}
	return &Subscription{conn: conn}, nil
}

// Next waits for the next result: data, or GraphQL errors; done when the
// server completed the subscription. A ctx that ends closes the websocket
// (coder/websocket's reads cannot be abandoned otherwise).
func (s *Subscription) Next(ctx context.Context) (r *Response, done bool, err error) {
	for {
		var m wsMessage
		if err := wsjson.Read(ctx, s.conn, &m); err != nil {
			return nil, false, err
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
				return nil, false, err
			}
		}
	}
}

// Close ends the subscription and its connection.
func (s *Subscription) Close() { _ = s.conn.Close(websocket.StatusNormalClosure, "") }
