package isolation

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cooprhq/coopr/drivers"
)

// message is one line of a task process's stdout: a line of output, or
// the result, last.
type message struct {
	Stream  string          `json:"stream,omitempty"` // stdout, stderr or status
	Line    string          `json:"line,omitempty"`
	Percent float64         `json:"percent,omitempty"`
	Result  *drivers.Result `json:"result,omitempty"`
}

// RunTask is the task process's side: it reads one task payload from in,
// runs it with the driver of reg that the task calls for, and writes the
// driver's output and then its result to out, one JSON message a line.
// Failures to run the driver are results too; the error is only for a
// protocol that broke (bad stdin, out closed).
func RunTask(ctx context.Context, reg *drivers.Registry, in io.Reader, out io.Writer) error {
	w := &writer{enc: json.NewEncoder(out)}
	res := runTask(ctx, reg, in, w)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.enc.Encode(message{Result: &res}); err != nil && w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("task output: %w", w.err)
	}
	return nil
}

func runTask(ctx context.Context, reg *drivers.Registry, in io.Reader, w *writer) drivers.Result {
	no := false
	payload, err := io.ReadAll(in)
	if err != nil {
		return drivers.Result{Status: 1, Message: fmt.Sprintf("read the task payload: %v", err)}
	}
	t, err := drivers.Decode(payload)
	if err != nil {
		return drivers.Result{Status: 1, Message: err.Error(), Retryable: &no}
	}
	drv, _, err := reg.For(t)
	if err != nil {
		return drivers.Result{Status: 1, Message: err.Error()}
	}
	// The agent times the task out too; timing it here as well lets the
	// driver see the deadline as its own and say so in its result.
	if t.TimeoutSeconds > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t.TimeoutSeconds)*time.Second)
		defer cancel()
	}
	return drv.Run(ctx, t, w)
}

// writer is the task process's drivers.Output; drivers may write from
// several goroutines.
type writer struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error // the first failure; later lines are dropped
}

func (w *writer) send(m message) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.enc.Encode(m)
	}
}

func (w *writer) Stdout(line string) { w.send(message{Stream: "stdout", Line: line}) }
func (w *writer) Stderr(line string) { w.send(message{Stream: "stderr", Line: line}) }
func (w *writer) Status(line string, percent float64) {
	w.send(message{Stream: "status", Line: line, Percent: percent})
}

// TakeStdout gives the task process's stdout to the protocol alone: it
// returns a close-on-exec copy of fd 1 for RunTask's out and points fd 1
// at stderr, so that a driver or library printing to stdout cannot
// corrupt the messages, and the processes a driver starts never inherit
// the channel the result travels on.
func TakeStdout() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(unix.Stdout), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, fmt.Errorf("copy stdout: %w", err)
	}
	if err := unix.Dup3(unix.Stderr, unix.Stdout, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("point stdout at stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "task-output"), nil
}

// relay forwards a task process's messages to out until r ends, and
// returns the result if one came.
func relay(r io.Reader, out drivers.Output, log *slog.Logger) (*drivers.Result, error) {
	br := bufio.NewReader(r)
	var res *drivers.Result
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			var m message
			switch {
			case json.Unmarshal(line, &m) != nil:
				// Not the line itself: it may hold anything, secrets included.
				log.Warn("task process wrote a line that is not a message", "bytes", len(line))
			case m.Result != nil:
				if res != nil {
					log.Warn("task process sent a second result; keeping the first")
					continue
				}
				res = m.Result
			case res != nil:
				log.Warn("task process wrote output after its result", "stream", m.Stream)
			case m.Stream == "stdout":
				out.Stdout(m.Line)
			case m.Stream == "stderr":
				out.Stderr(m.Line)
			case m.Stream == "status":
				out.Status(m.Line, m.Percent)
			default:
				log.Warn("task process wrote a message of unknown kind", "stream", m.Stream)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				err = nil
			}
			return res, err
		}
	}
}

// logStderr logs what the task process wrote on its own stderr (its
// logs, a panic) into the agent's log and keeps the last line for the
// message of a process that died without a result.
type logStderr struct {
	log    *slog.Logger
	mu     sync.Mutex
	last   string
	sticky bool // last is a Go panic's first line: the frames after it say less
}

func (l *logStderr) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		l.log.Info("task process: " + line)
		l.mu.Lock()
		if panicked := strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: "); panicked || !l.sticky {
			l.last, l.sticky = line, panicked
		}
		l.mu.Unlock()
	}
}

func (l *logStderr) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	const max = 300 // a message is one line for people
	if len(l.last) > max {
		return l.last[:max] + "…"
	}
	return l.last
}
