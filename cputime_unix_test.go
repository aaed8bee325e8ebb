//go:build unix

package adapter_test

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/lmtest"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoopbackCPUTime measures the client's CPU time (not wall time) of
// each loopbackPath against a server in another process (this test binary
// run as TestLoopbackServerProcess), so the figure holds the client's
// work alone: go-openai's, and the library's on top of it. The paths
// alternate round by round so that other load on the machine affects all
// alike, and the overhead is the median of the rounds' differences.
// Wall-clock loopback benchmarks on a small machine vary by tens of
// microseconds from run to run; CPU time does not count the waiting. It
// runs only with SIDE_BY_SIDE=1:
//
//	SIDE_BY_SIDE=1 go test -run LoopbackCPUTime -v .
func TestLoopbackCPUTime(t *testing.T) {
	if os.Getenv("SIDE_BY_SIDE") == "" {
		t.Skip("set SIDE_BY_SIDE=1")
	}
	paths := loopbackPaths(openai.NewClientWithConfig(serverProcess(t, 0)))

	const rounds, iters = 31, 300
	cpu := make([][]float64, len(paths))  // µs of client CPU per call, by path and round
	wall := make([][]float64, len(paths)) // µs of wall clock per call
	for range rounds {
		for i, p := range paths {
			runtime.GC()
			start, began := cpuTime(), time.Now()
			for range iters {
				if err := p.run(); err != nil {
					t.Fatal(err)
				}
			}
			cpu[i] = append(cpu[i], float64(cpuTime()-start)/iters/1000)
			wall[i] = append(wall[i], float64(time.Since(began))/iters/1000)
		}
	}
	idx := map[string]int{}
	for i, p := range paths {
		idx[p.name] = i
		c, w := slices.Sorted(slices.Values(cpu[i])), slices.Sorted(slices.Values(wall[i]))
		t.Logf("%-16s %7.1f µs client CPU per call (quartiles %.1f–%.1f), %7.1f µs wall (%.1f–%.1f); medians of %d rounds of %d",
			p.name, c[rounds/2], c[rounds/4], c[3*rounds/4], w[rounds/2], w[rounds/4], w[3*rounds/4], rounds, iters)
	}
	for _, d := range [][2]string{{"chat", "baseline"}, {"stream", "stream-baseline"}} {
		a, b := idx[d[0]], idx[d[1]]
		c, w := pairedDiff(cpu[a], cpu[b]), pairedDiff(wall[a], wall[b])
		t.Logf("%-6s − %-15s %+.1f µs client CPU (quartiles %+.1f to %+.1f), %+.1f µs wall (%+.1f to %+.1f): medians of the rounds' differences",
			d[0], d[1]+":", c[len(c)/2], c[len(c)/4], c[3*len(c)/4], w[len(w)/2], w[len(w)/4], w[3*len(w)/4])
	}
}

// pairedDiff returns a[r] − b[r] for every round r, sorted.
func pairedDiff(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for r := range a {
		d[r] = a[r] - b[r]
	}
	slices.Sort(d)
	return d
}

// TestLoopbackServerProcess is TestLoopbackCPUTime's server: with
// LOOPBACK_SERVER=1 it serves loopbackServer, prints its URL and runs
// until its standard input closes.
func TestLoopbackServerProcess(t *testing.T) {
	if os.Getenv("LOOPBACK_SERVER") == "" {
		t.Skip("run by TestLoopbackCPUTime")
	}
	srv := loopbackServer()
	defer srv.Close()
	if d, err := time.ParseDuration(os.Getenv("LOOPBACK_DELAY")); err == nil && d > 0 {
		srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(benchCompletion).Delay(d) })
	}
	fmt.Println(srv.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
}
