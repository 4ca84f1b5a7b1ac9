package shell_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cooprhq/coopr/drivers"
	"github.com/cooprhq/coopr/drivers/automator/shell"
	"github.com/cooprhq/coopr/drivers/drivertest"
	"github.com/cooprhq/coopr/remote"
	"github.com/cooprhq/coopr/remote/sshdtest"
)

// BenchmarkNoopTask runs a task whose script does nothing but print the
// time twice through the real driver, pool and sshd, and reports what a
// task costs besides its script: start-ms from Run's call to the script's
// start, end-ms from the script's end to Run's return, the sessions and
// dials per task, and the processor time of this process and of the host.
func BenchmarkNoopTask(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts sshdtest.Options
	}{
		{"root", sshdtest.Options{}},
		{"sudo", sshdtest.Options{NonRoot: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := drivertest.NewCluster(b, 1, tc.opts)
			h := c.Hosts[0]
			p := remote.NewPool(remote.Options{})
			b.Cleanup(func() { _ = p.Close() })
			drv := shell.New(p, slog.New(slog.DiscardHandler))
			task := func() *drivers.Task {
				t := c.Task("INSTALL", 0)
				t.Service = &drivers.Service{Name: "web"}
				t.Service.Action.Type = "shell"
				t.Service.Action.Fields = map[string]string{"script": "date +%s%N; date +%s%N"}
				return t
			}
			ctx := context.Background()
			// One task dials; the benchmark measures the tasks after it.
			if r := drv.Run(ctx, task(), &drivertest.Recorder{}); r.Status != 0 {
				b.Fatal(r.Message)
			}
			sessions := func() int { return strings.Count(h.Log(), "Starting session:") }
			s0, d0, h0, c0 := sessions(), p.Dials(), h.CPU(), selfCPU()
			var start, end time.Duration
			b.ResetTimer()
			for b.Loop() {
				t := task()
				out := &drivertest.Recorder{}
				called := time.Now()
				r := drv.Run(ctx, t, out)
				returned := time.Now()
				if r.Status != 0 {
					b.Fatal(r.Message)
				}
				lines := out.Lines("stdout")
				if len(lines) != 2 {
					b.Fatalf("stdout %q", lines)
				}
				first, _ := strconv.ParseInt(lines[0], 10, 64)
				last, _ := strconv.ParseInt(lines[1], 10, 64)
				start += time.Unix(0, first).Sub(called)
				end += returned.Sub(time.Unix(0, last))
			}
			b.StopTimer()
			// sshd may log a session's start a moment after it ran.
			time.Sleep(100 * time.Millisecond)
			n := float64(b.N)
			b.ReportMetric(float64(start.Microseconds())/1000/n, "start-ms/op")
			b.ReportMetric(float64(end.Microseconds())/1000/n, "end-ms/op")
			b.ReportMetric(float64(sessions()-s0)/n, "sessions/op")
			b.ReportMetric(float64(p.Dials()-d0)/n, "dials/op")
			b.ReportMetric(float64((selfCPU()-c0).Microseconds())/1000/n, "client-cpu-ms/op")
			b.ReportMetric(float64((h.CPU()-h0).Microseconds())/1000/n, "host-cpu-ms/op")
		})
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
