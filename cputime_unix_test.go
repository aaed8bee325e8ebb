//go:build unix

package adapter_test

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoopbackCPUTime measures the CPU time (client and in-process server
// together, not wall time) of each loopbackPath, alternating them round by
// round so that other load on the machine affects all alike, and reports
// what Call and Stream cost over go-openai alone. Wall-clock loopback
// benchmarks on a small machine vary by tens of microseconds from run to
// run; CPU time does not count the waiting. It runs only with
// SIDE_BY_SIDE=1:
//
//	SIDE_BY_SIDE=1 go test -run LoopbackCPUTime -v .
func TestLoopbackCPUTime(t *testing.T) {
	if os.Getenv("SIDE_BY_SIDE") == "" {
		t.Skip("set SIDE_BY_SIDE=1")
	}
	srv := loopbackServer()
	defer srv.Close()
	paths := loopbackPaths(srv.Client())
	const rounds, iters = 21, 300
	per := make([][]float64, len(paths))
	for range rounds {
		for i, p := range paths {
			runtime.GC()
			start := cpuTime()
			for range iters {
				if err := p.run(); err != nil {
					t.Fatal(err)
				}
			}
			per[i] = append(per[i], float64(cpuTime()-start)/iters/1000)
		}
	}
	med := map[string]float64{}
	for i, p := range paths {
		slices.Sort(per[i])
		med[p.name] = per[i][len(per[i])/2]
		t.Logf("%-16s %7.1f µs CPU per call (median of %d rounds of %d; quartiles %.1f–%.1f)",
			p.name, med[p.name], rounds, iters, per[i][rounds/4], per[i][3*rounds/4])
	}
	t.Logf("Call   − baseline:        %+.1f µs", med["chat"]-med["baseline"])
	t.Logf("Stream − stream-baseline: %+.1f µs", med["stream"]-med["stream-baseline"])
}
