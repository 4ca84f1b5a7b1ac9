package devenv

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Restart backoff of a supervised child: it doubles from restartFirst to
// restartMax while the child keeps dying young, and starts over once it
// has run for restartReset.
const (
	restartFirst = time.Second
	restartMax   = 30 * time.Second
	restartReset = time.Minute
)

// Supervised is a child process kept running, as systemd's Restart=
// would: whenever it exits it is started again after a backoff, until
// Stop. Like the servers, it runs in its own process group (a Ctrl-C at
// the terminal is the parent's to relay, in order) and dies with the
// process that started it.
type Supervised struct {
	name   string
	newCmd func() *exec.Cmd
	log    *slog.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd     // the running child
	exited   chan struct{} // closed when cmd is reaped
	starts   int
	started  chan struct{} // closed and replaced at every start
	stopping bool
	stop     chan struct{} // closed by Stop
	done     chan struct{} // closed when the supervision ends
}

// Supervise starts the command newCmd returns (a fresh one for every
// start) and keeps it running. Only the first start's failure is
// returned; later ones are logged and retried.
func Supervise(name string, newCmd func() *exec.Cmd, log *slog.Logger) (*Supervised, error) {
	s := &Supervised{name: name, newCmd: newCmd, log: log, started: make(chan struct{}), stop: make(chan struct{}),
		done: make(chan struct{})}
	if err := s.start(); err != nil {
		return nil, err
	}
	go s.supervise()
	return s, nil
}

// errStopped is a start after Stop.
var errStopped = errors.New("stopped")

func (s *Supervised) start() error {
	cmd := s.newCmd()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return errStopped
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	s.starts++
	close(s.started)
	s.started = make(chan struct{})
	return nil
}

// supervise waits for each run of the child and starts the next.
func (s *Supervised) supervise() {
	defer close(s.done)
	backoff := restartFirst
	for {
		s.mu.Lock()
		cmd, exited := s.cmd, s.exited
		s.mu.Unlock()
		began := time.Now()
		err := cmd.Wait()
		// What it left in its process group goes with it, as systemd
		// stops a unit's whole cgroup: a dead agent's commands must not
		// run on beside its successor's retries.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(exited)
		select {
		case <-s.stop:
			return
		default:
		}
		ran := time.Since(began)
		if ran >= restartReset {
			backoff = restartFirst
		}
		s.log.Warn(s.name+" exited; starting it again", "pid", cmd.Process.Pid, "status", status(err),
			"ran", ran.Round(time.Millisecond), "restart_in", backoff)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, restartMax)
			if err := s.start(); errors.Is(err, errStopped) {
				return
			} else if err != nil {
				s.log.Error(s.name+" did not start", "err", err, "retry_in", backoff)
				continue
			}
			s.log.Info(s.name+" started again", "pid", s.Pid())
			break
		}
	}
}

// status says how a child ended.
func status(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ProcessState.String() // "exit status 1", "signal: killed"
	}
	if err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// Pid is the running child's process id (the last one's between runs).
func (s *Supervised) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Starts counts the child's starts, the first included, and returns a
// channel closed at the next one.
func (s *Supervised) Starts() (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts, s.started
}

// Stop ends the supervision: the child gets SIGTERM and grace to exit
// (an agent hands its tasks back meanwhile), then its process group gets
// SIGKILL. It returns how the child ended when that was not clean.
func (s *Supervised) Stop(grace time.Duration) error {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		<-s.done
		return nil
	}
	s.stopping = true
	close(s.stop)
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-exited:
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		err = fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", s.name, grace)
	}
	<-s.done
	if err == nil && cmd.ProcessState != nil && !cmd.ProcessState.Success() && cmd.ProcessState.Exited() {
		err = fmt.Errorf("%s: %s", s.name, cmd.ProcessState)
	}
	return err
}
