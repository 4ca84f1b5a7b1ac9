package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// Subscription is one GraphQL subscription over its own websocket,
// speaking graphql-transport-ws.
type Subscription struct {
	conn *websocket.Conn
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Subscribe opens a websocket, authenticates with token in the
// connection_init payload and starts the subscription.
func (s *Server) Subscribe(token, query string, vars map[string]any) (*Subscription, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(16 << 20)
	init, _ := json.Marshal(map[string]any{"Authorization": "Bearer " + token})
	if err := wsjson.Write(ctx, conn, wsMessage{Type: "connection_init", Payload: init}); err != nil {
		return nil, err
	}
	var ack wsMessage
	if err := wsjson.Read(ctx, conn, &ack); err != nil {
		return nil, err
	}
	if ack.Type != "connection_ack" {
		return nil, fmt.Errorf("connection_init answered %s %s", ack.Type, ack.Payload)
	}
	payload, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err := wsjson.Write(ctx, conn, wsMessage{ID: "1", Type: "subscribe", Payload: payload}); err != nil {
		return nil, err
	}
	return &Subscription{conn: conn}, nil
}

// Next waits up to timeout for the next message: a result (data or
// GraphQL errors), or done when the server completed the subscription.
func (sub *Subscription) Next(timeout time.Duration) (r *Response, done bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		var m wsMessage
		if err := wsjson.Read(ctx, sub.conn, &m); err != nil {
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
			if err := wsjson.Write(ctx, sub.conn, wsMessage{Type: "pong"}); err != nil {
				return nil, false, err
			}
		}
	}
}

// Close ends the subscription and its connection.
func (sub *Subscription) Close() { _ = sub.conn.Close(websocket.StatusNormalClosure, "") }
