package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cooprhq/coopr/server"
)

// Issue 17, point 6: connections trickling a body, idle keep-alives and
// websockets acknowledged without a token were all held for as long as
// their clients liked.
func TestConnectionTimeouts(t *testing.T) {
	const timeout = 500 * time.Millisecond
	w := newAttackWorld(t, 0, func(c *server.Config) {
		c.RateLimit, c.ReadTimeout, c.IdleTimeout, c.WebsocketInitTimeout = 0, timeout, timeout, timeout
	})
	addr := strings.TrimPrefix(w.s.URL, "http://")
	// closedWithin reports whether the server closes conn within d,
	// reading (and dropping) whatever it sends first.
	closedWithin := func(conn net.Conn, r io.Reader, d time.Duration) bool {
		_ = conn.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, r)
		var ne net.Error
		return !errors.As(err, &ne) || !ne.Timeout()
	}

	t.Run("a body trickled in is cut off", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
					"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr, w.alice)
				go func() {
					for {
						time.Sleep(100 * time.Millisecond)
						if _, err := conn.Write([]byte(" ")); err != nil {
							return
						}
					}
				}()
				if !closedWithin(conn, conn, 10*timeout) {
					t.Errorf("connection %d: still open after %s", i, 10*timeout)
				}
			})
		}
		wg.Wait()
	})

	t.Run("an idle kept-alive connection is closed", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !closedWithin(conn, br, 10*timeout) {
			t.Errorf("an idle connection still open after %s", 10*timeout)
		}
	})

	t.Run("a websocket acknowledged without a token is closed", func(t *testing.T) {
		c := dialWS(t, w.s)
		c.send(`{"type":"connection_init"}`)
		c.expect("connection_ack", "")
		c.expectClose(4401)
	})

	t.Run("so is one of the older graphql-ws protocol", func(t *testing.T) {
		c := dialWS(t, w.s, "graphql-ws")
		c.send(`{"type":"connection_init"}`)
		c.expect("connection_ack", "")
		c.expectClose(websocket.StatusNormalClosure)
	})

	t.Run("a websocket with a token outlives the read and idle timeouts", func(t *testing.T) {
		c := dialWS(t, w.s)
		c.init(w.alice)
		time.Sleep(3 * timeout) // what is tested is that nothing happens
		c.send(`{"type":"ping"}`)
		c.expect("pong", "")
	})
}
