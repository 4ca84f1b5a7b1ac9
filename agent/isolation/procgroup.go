package isolation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cooprhq/coopr/drivers"
)

// runGroup runs the task process as the leader of a new process group.
func (r *Runner) runGroup(ctx context.Context, payload []byte, out drivers.Output, log *slog.Logger) drivers.Result {
	// Plain pipes rather than exec's copying goroutines: Wait must not wait
	// on readers that a process which escaped the group keeps open.
	p, err := newPipes()
	if err != nil {
		return drivers.Result{Status: 1, Message: err.Error()}
	}
	defer p.closeParent()
	cmd := exec.Command(r.cfg.Command[0], r.cfg.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.inR, p.outW, p.errW
	cmd.Env = childEnv(os.Environ())
	cmd.Dir = r.cfg.Dir
	// Pdeathsig: if the agent dies, its task processes stop instead of
	// running on unsupervised while the server retries them elsewhere.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	err = cmd.Start()
	p.closeChild()
	if err != nil {
		return drivers.Result{Status: 1, Message: fmt.Sprintf("start the task process: %v", err)}
	}
	pgid := cmd.Process.Pid
	st := p.start(payload, out, log)

	exited := make(chan error, 1)
	go func() { exited <- waitExited(pgid) }()
	select {
	case err = <-exited:
	case <-ctx.Done():
		signalGroup(pgid, unix.SIGTERM, log)
		select {
		case err = <-exited:
		case <-time.After(r.cfg.KillGrace):
			log.Warn("task process outlived its grace after SIGTERM: killing it", "grace", r.cfg.KillGrace)
			signalGroup(pgid, unix.SIGKILL, log)
			err = <-exited
		}
	}
	if err != nil {
		log.Warn("cannot wait for the task process", "err", err)
	}
	// The leader is a zombie until Wait reaps it, so the group id cannot
	// have been reused: whatever is left in it is this task's, to kill.
	signalGroup(pgid, unix.SIGKILL, log)
	waitErr := cmd.Wait()
	res := st.finish(time.Second)
	if res != nil {
		return *res
	}
	return ended(ctx, waitErr, st.stderr.tail())
}

// waitExited blocks until the process pid has exited, without reaping it.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func signalGroup(pgid int, sig unix.Signal, log *slog.Logger) {
	if err := unix.Kill(-pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		log.Warn("cannot signal the task's processes", "signal", sig, "err", err)
	}
}

// pipes are the task process's stdin, stdout and stderr: the child's ends
// (inR, outW, errW) and ours.
type pipes struct {
	inR, inW, outR, outW, errR, errW *os.File
}

func newPipes() (*pipes, error) {
	var p pipes
	for _, pair := range []struct{ r, w **os.File }{{&p.inR, &p.inW}, {&p.outR, &p.outW}, {&p.errR, &p.errW}} {
		r, w, err := os.Pipe()
		if err != nil {
			p.closeChild()
			p.closeParent()
			return nil, fmt.Errorf("task process pipes: %w", err)
		}
		*pair.r, *pair.w = r, w
	}
	return &p, nil
}

// closeChild closes our copies of the child's ends once it (or systemd)
// holds its own, so that our reads see EOF when the child is gone.
func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.inR, p.outW, p.errW} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *pipes) closeParent() {
	for _, f := range []*os.File{p.inW, p.outR, p.errR} {
		if f != nil {
			f.Close()
		}
	}
}

// streams is the running exchange with a task process.
type streams struct {
	p               *pipes
	stderr          *logStderr
	log             *slog.Logger
	outDone, errEnd chan struct{}
	res             *drivers.Result
	relayErr        error
}

// start writes the payload and begins relaying the task's output.
func (p *pipes) start(payload []byte, out drivers.Output, log *slog.Logger) *streams {
	s := &streams{p: p, stderr: &logStderr{log: log}, log: log, outDone: make(chan struct{}), errEnd: make(chan struct{})}
	go func() {
		// A child that died unread makes this fail (EPIPE); its exit says more.
		_, _ = p.inW.Write(payload)
		p.inW.Close()
	}()
	go func() {
		defer close(s.errEnd)
		s.stderr.read(p.errR)
	}()
	go func() {
		defer close(s.outDone)
		s.res, s.relayErr = relay(p.outR, out, log)
	}()
	return s
}

// finish waits up to drain for the output to end, once the task's
// processes are gone, and returns the result the task sent, if any. A
// process that escaped (setsid, or outside a unit's control) may hold the
// pipes open; it must not hold the task.
func (s *streams) finish(drain time.Duration) *drivers.Result {
	deadline := time.NewTimer(drain)
	defer deadline.Stop()
	for _, ch := range []chan struct{}{s.outDone, s.errEnd} {
		select {
		case <-ch:
		case <-deadline.C:
			s.log.Warn("a process the task started still holds its output open")
			s.p.closeParent() // ends the reads
			<-ch
		}
	}
	if s.relayErr != nil {
		s.log.Warn("reading the task process's output", "err", s.relayErr)
	}
	return s.res
}
