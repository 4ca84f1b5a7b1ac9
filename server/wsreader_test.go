package server_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// wsReader is a websocket client pared down to what a benchmark subscriber
// needs: the opening handshake, masked text frames out, and frames read
// into one reused buffer. A thousand of them share the machine with the
// server under test, so each message should cost the client a header
// parse, not the allocations and goroutine hand-offs of a full client
// library; what the benchmark then measures is the server's work.
type wsReader struct {
	conn net.Conn
	br   *bufio.Reader
	buf  []byte
}

// dialReader opens a graphql-transport-ws websocket to base's /graphql; a
// stalled reader gets a 4 KiB receive buffer.
func dialReader(ctx context.Context, base string, stalled bool) (*wsReader, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	d := &net.Dialer{}
	if stalled {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
			if err != nil {
				return err
			}
			return serr
		}
	}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	req := fmt.Sprintf("GET /graphql HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n",
		u.Host, base64.StdEncoding.EncodeToString(key))
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	return &wsReader{conn: conn, br: br}, nil
}

// writeJSON sends v as one masked text frame.
func (w *wsReader) writeJSON(v any) error {
	p, err := json.Marshal(v)
	if err != nil {
		return err
	}
	hdr := []byte{0x81}
	switch n := len(p); {
	case n < 126:
		hdr = append(hdr, 0x80|byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 0x80|126, byte(n>>8), byte(n))
	default:
		hdr = binary.BigEndian.AppendUint64(append(hdr, 0x80|127), uint64(n))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	for i := range p {
		p[i] ^= mask[i%4]
	}
	_, err = w.conn.Write(append(hdr, p...))
	return err
}

// read returns the next text message, valid until the next call. Control
// frames are skipped (the server sends no pings in graphql-transport-ws).
func (w *wsReader) read() ([]byte, error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		if h[0]&0x80 == 0 {
			return nil, errors.New("fragmented message: not expected from this server")
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var ext [2]byte
			if _, err := io.ReadFull(w.br, ext[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			if _, err := io.ReadFull(w.br, ext[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(ext[:])
		}
		if n > 16<<20 {
			return nil, fmt.Errorf("frame of %d bytes", n)
		}
		if uint64(cap(w.buf)) < n {
			w.buf = make([]byte, n)
		}
		p := w.buf[:n]
		if _, err := io.ReadFull(w.br, p); err != nil {
			return nil, err
		}
		switch h[0] & 0x0f {
		case 0x1:
			return p, nil
		case 0x8:
			return nil, io.EOF
		}
	}
}

// start sends connection_init with the token, waits for the ack and
// subscribes to the cluster's events as subscription "1".
func (w *wsReader) start(token, cluster string) error {
	if err := w.writeJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"Authorization": "Bearer " + token}}); err != nil {
		return err
	}
	_ = w.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	msg, err := w.read()
	if err != nil {
		return err
	}
	if !strings.Contains(string(msg), `"connection_ack"`) {
		return fmt.Errorf("expected connection_ack, got %s", msg)
	}
	_ = w.conn.SetReadDeadline(time.Time{})
	return w.writeJSON(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription($id: ID!) { clusterEvents(clusterId: $id) { kind state at } }`, "variables": map[string]any{"id": cluster}}})
}

func (w *wsReader) Close() error { return w.conn.Close() }
