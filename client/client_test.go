package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

func TestResponseErr(t *testing.T) {
	for _, tc := range []struct {
		code, msg, want string
	}{
		{"CONFLICT", "conflict: cluster 7 is TERMINATED", "CONFLICT: cluster 7 is TERMINATED"},
		{"NOT_FOUND", "cluster 1: not found", "NOT_FOUND: cluster 1: not found"},
		{"", "boom", "boom"},
	} {
		e := Error{Message: tc.msg}
		if tc.code != "" {
			e.Extensions = map[string]any{"code": tc.code}
		}
		r := &Response{Errors: []Error{e}}
		if got := r.Err().Error(); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.code, tc.msg, got, tc.want)
		}
	}
}

// A server that is not there is named, with where its address came from.
func TestDoNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = (&Client{URL: url}).Do(context.Background(), `{ me { name } }`, nil)
	if err == nil || !strings.Contains(err.Error(), "no coopr server answers at "+url) {
		t.Fatalf("err %v", err)
	}
}

// A subscription whose server goes away ends in a ConnectionError that
// says how; one the server refuses (4403: a bad token) does not, since a
// retry would be refused too.
func TestSubscriptionLost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		end    func(*websocket.Conn)
		reason string // "" for no ConnectionError
	}{
		{"dropped", func(c *websocket.Conn) { _ = c.CloseNow() }, "connection closed"},
		{"shutdown", func(c *websocket.Conn) { _ = c.Close(websocket.StatusGoingAway, "server shutting down") }, "server shutting down"},
		{"refused", func(c *websocket.Conn) { _ = c.Close(4403, "Forbidden") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"graphql-transport-ws"}})
				if err != nil {
					return
				}
				ctx := r.Context()
				var m wsMessage
				_ = wsjson.Read(ctx, c, &m) // connection_init
				_ = wsjson.Write(ctx, c, wsMessage{Type: "connection_ack"})
				_ = wsjson.Read(ctx, c, &m) // subscribe
				tc.end(c)
			}))
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sub, err := (&Client{URL: srv.URL}).Subscribe(ctx, `subscription { x }`, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			_, _, err = sub.Next(ctx)
			var ce *ConnectionError
			switch {
			case err == nil:
				t.Fatal("Next: no error")
			case tc.reason == "" && errors.As(err, &ce):
				t.Errorf("%v is a ConnectionError", err)
			case tc.reason != "" && !errors.As(err, &ce):
				t.Errorf("%v is not a ConnectionError", err)
			case tc.reason != "" && ce.Reason() != tc.reason:
				t.Errorf("reason %q, want %q (%v)", ce.Reason(), tc.reason, err)
			}
		})
	}
	// No server at all: a ConnectionError too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, err = (&Client{URL: url}).Subscribe(context.Background(), `subscription { x }`, nil)
	var ce *ConnectionError
	if !errors.As(err, &ce) || ce.Reason() != "connection refused" {
		t.Errorf("subscribing with no server: %v", err)
	}
}

// Errors are told apart by their code.
func TestErrorCode(t *testing.T) {
	r := &Response{Errors: []Error{{Message: "cluster 1: not found", Extensions: map[string]any{"code": "NOT_FOUND"}}}}
	if got := ErrorCode(fmt.Errorf("show: %w", r.Err())); got != "NOT_FOUND" {
		t.Errorf("code %q", got)
	}
	if got := ErrorCode(errors.New("NOT_FOUND: lookalike")); got != "" {
		t.Errorf("code %q of an error without one", got)
	}
}

// DoInto decodes a response's data in one pass, and tells errors, null
// answers and bodies that are not GraphQL apart as Do does.
func TestDoInto(t *testing.T) {
	type answer struct {
		Exchange struct {
			Assignments []struct {
				TaskID  string          `json:"taskId"`
				Payload json.RawMessage `json:"payload"`
			} `json:"assignments"`
		} `json:"exchange"`
	}
	for _, tc := range []struct {
		name, body string
		task       string // the decoded answer's first task
		code       string // the first GraphQL error's code
		err        string // the error's start
	}{
		{"data", `{"data":{"exchange":{"assignments":[{"taskId":"t1","payload":{"a":[1,"x"]}}]}}}`, "t1", "", ""},
		{"errors", `{"errors":[{"message":"no","extensions":{"code":"AGENT_UNKNOWN"}}],"data":null}`, "", "AGENT_UNKNOWN", ""},
		{"null data", `{"data":null}`, "", "", "empty GraphQL response"},
		{"empty", `{}`, "", "", "empty GraphQL response"},
		{"not GraphQL", `<html>`, "", "", "HTTP 200, not GraphQL"},
		{"data of another shape", `{"data":{"exchange":{"assignments":"x"}}}`, "", "", "decoding the response's data"},
		{"errors beside data of another shape", `{"errors":[{"message":"no","extensions":{"code":"AGENT_UNKNOWN"}}],"data":{"exchange":{"assignments":"x"}}}`, "", "AGENT_UNKNOWN", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			var out answer
			errs, err := (&Client{URL: srv.URL}).DoInto(t.Context(), "{ x }", nil, &out)
			switch {
			case tc.err != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.code != "":
				if len(errs) != 1 || errs[0].Code() != tc.code {
					t.Errorf("errors %+v, want one %s", errs, tc.code)
				}
			default:
				if len(errs) != 0 || len(out.Exchange.Assignments) != 1 || out.Exchange.Assignments[0].TaskID != tc.task ||
					string(out.Exchange.Assignments[0].Payload) != `{"a":[1,"x"]}` {
					t.Errorf("errors %+v, answer %+v", errs, out)
				}
			}
		})
	}
}

// Answers' bodies share buffers: what one answer decoded stays as it was
// when the next is read into the same buffer.
func TestAnswersKeepTheirData(t *testing.T) {
	bodies := []string{`{"data":{"payload":{"long":"` + strings.Repeat("x", 5000) + `"}}}`, `{"data":{"payload":{"a":1}}}`}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(bodies[n%len(bodies)]))
		n++
	}))
	defer srv.Close()
	c := &Client{URL: srv.URL}
	var got []json.RawMessage
	for range 4 {
		var out struct{ Payload json.RawMessage }
		if errs, err := c.DoInto(t.Context(), "{ x }", nil, &out); err != nil || errs != nil {
			t.Fatal(errs, err)
		}
		got = append(got, out.Payload)
	}
	for i, p := range got {
		want := bodies[i%2][len(`{"data":{"payload":`) : len(bodies[i%2])-2]
		if string(p) != want {
			t.Errorf("answer %d decoded %.40s..., want %.40s...", i, p, want)
		}
	}
}
