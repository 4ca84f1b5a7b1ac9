package devenv

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq"
	"github.com/redis/go-redis/v9"
)

func TestPrivateServers(t *testing.T) {
	if need := Packages(); len(need) > 0 {
		t.Fatalf("missing packages %v: .ci/run installs them", need)
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	// As root the server runs as postgres, which must reach its directory.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pgPort, err := FreePort(0)
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for round := 0; round < 2; round++ { // the second run reuses the data
		pg, err := StartPostgres(ctx, dir, pgPort, "coopr", log)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("postgres", pg.URL)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if _, err := db.Exec(`CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)`); err != nil {
				t.Fatal(err)
			}
		}
		var v int
		if err := db.QueryRow(`SELECT v FROM kept`).Scan(&v); err != nil || v != 42 {
			t.Errorf("round %d: kept row %d, %v", round, v, err)
		}
		db.Close()
		pids["postgres"] = pg.Pid()
		if err := pg.Stop(); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
		if pg.Alive() || syscall.Kill(pids["postgres"], 0) == nil {
			out, _ := exec.Command("ps", "-o", "pid,stat,user,cmd", "-p", strconv.Itoa(pids["postgres"])).CombinedOutput()
			t.Errorf("postgres %d still runs after Stop: %s", pids["postgres"], out)
		}
	}

	rPort, err := FreePort(0)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := StartRedis(ctx, dir, rPort, log)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := redis.ParseURL(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Errorf("ping private redis: %v", err)
	}
	c.Close()
	pid := rd.Pid()
	if err := rd.Stop(); err != nil {
		t.Errorf("stop redis: %v", err)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("redis %d still runs after Stop", pid)
	}
}

func TestPortInUse(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	// Something already listens there: Redis fails and says so.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if _, err := StartRedis(context.Background(), dir, port, log); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Errorf("a private redis on a port in use: %v, want an error saying it is taken", err)
	}
	if _, err := StartPostgres(context.Background(), dir, port, "coopr", log); err == nil || !strings.Contains(err.Error(), "taken") {
		t.Errorf("a private postgres on a port in use: %v, want an error saying it is taken", err)
	}
}

// A run killed with its Postgres leaves postmaster.pid naming a process
// that takes a moment to go: the next start waits for it instead of
// failing on Postgres's "lock file already exists".
func TestPostgresAfterKilledRun(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port, err := FreePort(0)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := StartPostgres(ctx, dir, port, "coopr", log)
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "postgres", "data", "postmaster.pid")
	lock, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	// The dying postmaster: a process of Postgres's user still there for
	// half a second (one of another user's Postgres knows is not its own).
	fi, err := os.Stat(filepath.Dir(pidFile))
	if err != nil {
		t.Fatal(err)
	}
	owner := fi.Sys().(*syscall.Stat_t)
	dying := exec.Command("sleep", "30")
	if os.Geteuid() == 0 {
		dying.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: owner.Uid, Gid: owner.Gid}}
	}
	if err := dying.Start(); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(lock), "\n")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(dying.Process.Pid)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(pidFile, int(owner.Uid), int(owner.Gid)); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = dying.Process.Kill()
		_ = dying.Wait()
	}()
	pg, err = StartPostgres(ctx, dir, port, "coopr", log)
	if err != nil {
		t.Fatalf("start after a killed run: %v", err)
	}
	if err := pg.Stop(); err != nil {
		t.Error(err)
	}
}
