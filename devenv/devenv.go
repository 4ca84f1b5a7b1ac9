// Package devenv runs what `coopr dev` needs beside the server: private
// Postgres and Redis servers under a directory, which listen on loopback
// only, die with the process that started them, and leave their data in
// the directory for the next run; and supervised children (the dev agent)
// started again whenever they die.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Packages lists the Debian packages whose tools are missing here, by
// the command each provides.
func Packages() []string {
	var need []string
	if pgBin() == "" {
		need = append(need, "postgresql")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		need = append(need, "redis-server")
	}
	return need
}

// Install installs Debian packages with apt-get; only root may.
func Install(ctx context.Context, log *slog.Logger, pkgs ...string) error {
	if len(pkgs) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("missing %s: run `sudo apt-get install -y %s`", strings.Join(pkgs, ", "), strings.Join(pkgs, " "))
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("missing %s and no apt-get here: install them with your package manager", strings.Join(pkgs, ", "))
	}
	log.Info("installing packages", "packages", pkgs)
	for _, args := range [][]string{{"update", "-qq"}, append([]string{"install", "-y", "-qq"}, pkgs...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, lastLines(string(out), 10))
		}
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pgBin is the newest installed Postgres's bin directory, or "".
func pgBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			ok = append(ok, d)
		}
	}
	if len(ok) == 0 {
		return ""
	}
	sort.Slice(ok, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(ok[j])))
		return vi < vj
	})
	return ok[len(ok)-1]
}

// Process is a server running as our child.
type Process struct {
	Name    string
	URL     string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process is reaped
	waitErr error
}

// Stop asks the server to shut down and waits for it, killing it when it
// takes longer than ten seconds.
func (p *Process) Stop() error {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return nil
	}
	// SIGINT is Postgres's fast shutdown and Redis's clean one.
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
		return exitErr(p.waitErr)
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within 10 s and was killed", p.Name)
	}
}

func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() && ee.ExitCode() == 0 {
		return nil
	}
	if errors.As(err, &ee) && !ee.Exited() {
		return nil // ended by our signal
	}
	return err
}

// start runs cmd as a child that the kernel kills if we die, so a crash
// of `coopr dev` leaves no server behind.
func start(name string, cmd *exec.Cmd, logPath string) (*Process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true // a Ctrl-C at the terminal is ours to relay, in order
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// portFree fails when something already listens on 127.0.0.1:port: a
// server of ours would fail to bind, and waiting for the port would find
// the stranger instead.
func portFree(name string, port int) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s: port %d on 127.0.0.1 is taken by another process: %w", name, port, err)
	}
	return ln.Close()
}

// waitPort waits until addr accepts connections or the process exits.
func waitPort(ctx context.Context, p *Process, addr, logPath string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s exited before listening on %s (%v); its log %s ends:\n%s", p.Name, addr, p.waitErr, logPath, lastLines(string(b), 15))
		case <-ctx.Done():
			_ = p.Stop()
			return fmt.Errorf("%s did not listen on %s within 30 s; see %s", p.Name, addr, logPath)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// FreePort is port when it is free on 127.0.0.1, else one the kernel picks.
func FreePort(port int) (int, error) {
	if port > 0 {
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			ln.Close()
			return port, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartPostgres runs a private Postgres with its data in dir/postgres
// (made on first use, trust auth on loopback), listening on 127.0.0.1:port,
// and makes database db. Postgres refuses to run as root: as root it runs
// as the postgres user, which then owns the data directory.
func StartPostgres(ctx context.Context, dir string, port int, db string, log *slog.Logger) (*Process, error) {
	bin := pgBin()
	if bin == "" {
		return nil, errors.New("postgres is not installed: run `apt-get install -y postgresql`")
	}
	if err := portFree("postgres", port); err != nil {
		return nil, err
	}
	data, run := filepath.Join(dir, "postgres", "data"), filepath.Join(dir, "postgres", "run")
	var cred *syscall.Credential
	var uid, gid = -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("postgres must not run as root and there is no postgres user: %w", err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	for _, d := range []string{filepath.Join(dir, "postgres"), run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if uid >= 0 {
			if err := os.Chown(d, uid, gid); err != nil {
				return nil, err
			}
		}
	}
	logPath := filepath.Join(dir, "postgres", "postgres.log")
	if uid >= 0 {
		// The log is opened by us; the server only inherits it.
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		log.Info("initialising a private Postgres", "dir", data)
		// initdb into a temporary directory, renamed once complete: an
		// interrupted init never leaves a half cluster that later runs trip on.
		tmp := data + ".init"
		_ = os.RemoveAll(tmp)
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", tmp, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("initdb: %w\n%s", err, lastLines(string(out), 10))
		}
		if err := os.Rename(tmp, data); err != nil {
			return nil, err
		}
	}
	waitStalePostmaster(ctx, data, log)
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", run,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "max_connections=200")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	p, err := start("postgres", cmd, logPath)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitPort(ctx, p, addr, logPath); err != nil {
		return nil, err
	}
	if err := createDB(ctx, bin, run, port, db, cred); err != nil {
		_ = p.Stop()
		return nil, err
	}
	p.URL = fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, db)
	return p, nil
}

// waitStalePostmaster waits, ten seconds at most, for the postmaster an
// earlier run left in postmaster.pid to be gone: killed with that run, it
// may take a moment to go (and to be reaped), and Postgres refuses to
// start while it is there. One still there after that is Postgres's to
// refuse, with its own message.
func waitStalePostmaster(ctx context.Context, data string, log *slog.Logger) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		if i == 0 {
			log.Info("waiting for the Postgres an earlier run left to exit", "pid", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createDB makes db unless it exists; the port accepting connections may
// come a moment before the server accepts queries, so it retries briefly.
func createDB(ctx context.Context, bin, sock string, port int, db string, cred *syscall.Credential) error {
	var last error
	for i := 0; i < 50; i++ {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "psql"), "-h", sock, "-p", strconv.Itoa(port), "-U", "postgres", "-d", "postgres",
			"-tAc", fmt.Sprintf("SELECT 1 FROM pg_database WHERE datname = '%s'", db))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			last = fmt.Errorf("psql: %w: %s", err, strings.TrimSpace(string(out)))
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if strings.TrimSpace(string(out)) == "1" {
			return nil
		}
		cmd = exec.CommandContext(ctx, filepath.Join(bin, "createdb"), "-h", sock, "-p", strconv.Itoa(port), "-U", "postgres", db)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("createdb %s: %w: %s", db, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	return last
}

// StartRedis runs a private Redis on 127.0.0.1:port that keeps nothing on
// disk: Postgres is the source of truth and the engine re-publishes queued
// work into an empty Redis.
func StartRedis(ctx context.Context, dir string, port int, log *slog.Logger) (*Process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis is not installed: run `apt-get install -y redis-server`")
	}
	if err := portFree("redis", port); err != nil {
		return nil, err
	}
	rd := filepath.Join(dir, "redis")
	if err := os.MkdirAll(rd, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(rd, "redis.log")
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", rd, "--daemonize", "no")
	p, err := start("redis", cmd, logPath)
	if err != nil {
		return nil, err
	}
	if err := waitPort(ctx, p, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), logPath); err != nil {
		return nil, err
	}
	p.URL = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	return p, nil
}

// Alive reports whether the process still runs (for tests and status).
func (p *Process) Alive() bool {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Pid is the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }
