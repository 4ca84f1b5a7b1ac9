package ansible

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cooprhq/coopr/drivers"
)

// play runs ansible-playbook in a process group of its own, streams its
// lines to out and rep, and ends the whole group when ctx ends.
func (d *Driver) play(ctx context.Context, program string, args []string, p prepared, dir string, rep *report, out drivers.Output, log *slog.Logger) (outcome, error) {
	// Pipes of our own rather than cmd's copying: Wait must not wait for
	// a straggler that still holds them.
	outR, outW, err := os.Pipe()
	if err != nil {
		return outcome{}, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return outcome{}, err
	}
	defer outR.Close()
	defer errR.Close()
	cmd := exec.Command(program, args...)
	cmd.Dir = dir
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		return outcome{}, fmt.Errorf("start %s: %w", program, err)
	}
	pgid := cmd.Process.Pid

	// Output implementations need not be safe for concurrent use.
	var mu sync.Mutex
	emit := func(stream string, line string) {
		mu.Lock()
		defer mu.Unlock()
		rep.line(line)
		if stream == "stdout" {
			out.Stdout(line)
		} else {
			out.Stderr(line)
		}
	}
	var readers sync.WaitGroup
	readers.Go(func() { readLines(outR, func(l string) { emit("stdout", l) }) })
	readers.Go(func() { readLines(errR, func(l string) { emit("stderr", l) }) })

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var werr, cancelled error
	select {
	case werr = <-exited:
	case <-ctx.Done():
		cancelled = context.Cause(ctx)
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		grace := time.NewTimer(d.grace)
		select {
		case werr = <-exited:
			grace.Stop()
		case <-grace.C:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			werr = <-exited
		}
	}
	// Whatever is left of the group (a worker or an ssh whose parent
	// died) goes too: nothing of a run outlives it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	stopMasters(p, log)

	done := make(chan struct{})
	go func() { readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		// A process that left the group still holds a pipe: stop
		// reading; closing unblocks the readers.
		outR.Close()
		errR.Close()
		<-done
	}
	o, err := exitOf(werr)
	if cancelled != nil {
		return outcome{cancelled: cancelled}, nil
	}
	return o, err
}

// stopMasters ends the run's OpenSSH control masters, which detach into
// sessions of their own, out of reach of the group kill. A master removes
// its socket as it exits.
func stopMasters(p prepared, log *slog.Logger) {
	if p.masters == "" {
		return
	}
	socks, _ := filepath.Glob(filepath.Join(p.masters, "*"))
	for _, sock := range socks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cmd := exec.CommandContext(ctx, "ssh", "-o", "ControlPath="+sock, "-O", "exit", "coopr-node")
		cmd.Env = p.env
		msg, err := cmd.CombinedOutput()
		for err == nil && ctx.Err() == nil {
			if _, serr := os.Lstat(sock); os.IsNotExist(serr) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err != nil {
			log.Warn("ansible: could not stop an ssh control master", "socket", sock, "err", err, "output", strings.TrimSpace(string(msg)))
		}
	}
	// A master still starting when the run was cancelled has no socket
	// yet to be told to exit through: find it by the control path it was
	// given, which only this run's masters name.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, proc := range procs {
		b, err := os.ReadFile(proc)
		if err != nil || !bytes.Contains(b, []byte(p.masters+string(filepath.Separator))) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(proc))); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// readLines calls emit with each line of r, without the line end.
func readLines(r io.Reader, emit func(string)) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			emit(strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

// report follows ansible's default output for what the result needs: the
// task that failed and why, an unreachable node, the recap of the node,
// and the error ansible stops with.
type report struct {
	mu          sync.Mutex
	host        string
	dir         string
	task        string
	failedTask  string
	failMsg     string
	unreachable string
	// hostKeyRefused: OpenSSH refused the node's host key.
	hostKeyRefused bool
	errLines       []string
	inError        bool // reading the lines after ERROR!
	inRecap        bool
	recap          map[string]int
	noHosts        bool
}

func newReport(host, dir string) *report { return &report{host: host, dir: dir} }

var errorAt = regexp.MustCompile(`^The error appears to be in '([^']*)': (line \d+, column \d+)`)

func (r *report) line(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case strings.HasPrefix(line, "TASK ["):
		name := strings.TrimRight(strings.TrimPrefix(line, "TASK ["), " *")
		r.task = strings.TrimSuffix(name, "]")
		r.inRecap = false
	case strings.HasPrefix(line, "fatal: [") || strings.HasPrefix(line, "failed: ["):
		head, body, _ := strings.Cut(line, " => ")
		msg := resultMessage(body)
		if strings.Contains(head, "UNREACHABLE!") {
			if r.unreachable == "" {
				r.unreachable = msg
				// OpenSSH's warning fills the message; what matters is
				// that the pin held.
				r.hostKeyRefused = strings.Contains(body, "Host key verification failed") ||
					strings.Contains(body, "REMOTE HOST IDENTIFICATION HAS CHANGED")
			}
		} else if r.failedTask == "" {
			r.failedTask, r.failMsg = r.task, msg
		}
	case strings.HasPrefix(line, "PLAY RECAP"):
		r.inRecap = true
	case r.inRecap:
		if name, counts, ok := strings.Cut(line, " : "); ok && strings.TrimSpace(name) == r.host {
			r.recap = parseRecap(counts)
		}
	case strings.Contains(line, "skipping: no hosts matched"):
		r.noHosts = true
	case strings.HasPrefix(line, "ERROR! "):
		if len(r.errLines) == 0 {
			r.errLines = append(r.errLines, strings.TrimPrefix(line, "ERROR! "))
			r.inError = true
		}
	case r.inError && errorAt.MatchString(line):
		m := errorAt.FindStringSubmatch(line)
		r.errLines = append(r.errLines, fmt.Sprintf("(%s, %s)", m[1], m[2]))
		r.inError = false
	case r.inError && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "JSON: ") && len(r.errLines) < 4:
		// The lines between ERROR! and where say what is wrong, as a
		// YAML syntax error's do; the JSON parser's view of YAML is noise.
		r.errLines = append(r.errLines, strings.TrimSpace(line))
	}
}

var recapField = regexp.MustCompile(`(\w+)=(\d+)`)

func parseRecap(counts string) map[string]int {
	m := map[string]int{}
	for _, f := range recapField.FindAllStringSubmatch(counts, -1) {
		n, _ := strconv.Atoi(f[2])
		m[f[1]] = n
	}
	return m
}

// resultMessage is the gist of a task result's JSON: its msg and the last
// line of its stderr.
func resultMessage(body string) string {
	var res struct {
		Msg    any    `json:"msg"`
		Stderr string `json:"stderr"`
		RC     *int   `json:"rc"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(body)), &res); err != nil {
		return shorten(strings.TrimSpace(body))
	}
	var parts []string
	if s := fmt.Sprint(res.Msg); res.Msg != nil && s != "" {
		parts = append(parts, strings.TrimSpace(s))
	}
	if res.RC != nil && *res.RC != 0 {
		parts = append(parts, fmt.Sprintf("rc %d", *res.RC))
	}
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		parts = append(parts, last)
	}
	return shorten(strings.Join(parts, ": "))
}

// shorten makes s one line of at most 400 bytes.
func shorten(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}

// clean drops the run's private directory from paths in a message.
func (r *report) clean(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, r.dir+"/", ""), r.dir, "")
}

func (r *report) errorSuffix() string {
	if len(r.errLines) == 0 {
		return ""
	}
	return ": " + strings.Join(r.errLines, " ")
}

func (r *report) recapLocked() string {
	if r.recap == nil {
		return "no task ran"
	}
	return fmt.Sprintf("ok=%d changed=%d failed=%d skipped=%d", r.recap["ok"], r.recap["changed"], r.recap["failed"], r.recap["skipped"])
}

func (r *report) recapText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recapLocked()
}
