package devenv

import (
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// zombie says whether pid has exited and waits to be reaped (by whoever
// inherited it).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// A supervised child killed with SIGKILL is started again, with what it
// left in its process group killed; Stop ends it with SIGTERM and no
// restart follows.
func TestSupervisedRestarts(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The child leaves a grandchild in its group, as an agent's commands.
	s, err := Supervise("sleeper", func() *exec.Cmd {
		return exec.Command("sh", "-c", "sleep 300 & echo $! > /dev/null; exec sleep 300")
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	first := s.Pid()
	n, next := s.Starts()
	if n != 1 {
		t.Fatalf("%d starts, want 1", n)
	}
	group := groupMembers(t, first)
	if len(group) < 2 {
		t.Fatalf("process group %d: %v, want the child and its grandchild", first, group)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-next:
	case <-time.After(10 * time.Second):
		t.Fatal("not started again within 10 s")
	}
	if n, _ := s.Starts(); n != 2 || s.Pid() == first || !alive(s.Pid()) {
		t.Fatalf("%d starts, pid %d (first %d)", n, s.Pid(), first)
	}
	for _, pid := range group {
		if alive(pid) && !zombie(pid) {
			t.Errorf("process %d of the killed child's group survives it", pid)
		}
	}
	second := s.Pid()
	_, next = s.Starts()
	if err := s.Stop(5 * time.Second); err != nil {
		t.Errorf("stop: %v", err)
	}
	if alive(second) {
		t.Errorf("child %d survives Stop", second)
	}
	select {
	case <-next:
		t.Error("started again after Stop")
	case <-time.After(1500 * time.Millisecond):
	}
}

// A child that ignores SIGTERM is killed after the grace, and Stop says so.
func TestSupervisedStopKills(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := Supervise("stubborn", func() *exec.Cmd {
		return exec.Command("sh", "-c", `trap "" TERM; sleep 300 & wait; sleep 300`)
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	pid := s.Pid()
	group := groupMembers(t, pid)
	start := time.Now()
	err = s.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("stop: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stop took %s", took)
	}
	// SIGKILL is delivered asynchronously: a loaded machine may show a
	// killed process for a moment longer.
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range group {
		for alive(p) && !zombie(p) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if alive(p) && !zombie(p) {
			t.Errorf("process %d of the group survives", p)
		}
	}
}

// groupMembers lists the processes of process group pgid, waiting for
// more than one to show up.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("pgrep", "-g", strconv.Itoa(pgid)).Output()
		var pids []int
		for _, f := range strings.Fields(string(out)) {
			if p, err := strconv.Atoi(f); err == nil {
				pids = append(pids, p)
			}
		}
		if len(pids) > 1 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}
