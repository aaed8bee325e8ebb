package dspygo

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
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

// budgets are issue 32's, the JSON and typed ones issue 48's (3 demos:
// JSON ≤ 0.4, typed ≤ 0.25), each the ratio of two paths' CPU time per call
// (or, with den "", a path's CPU time in µs); a max of 0 is a measure
// printed without a budget.
var budgets = []struct {
	name     string
	num, den string
	max      float64
}{
	{"JSON / dspy-go JSON", "sigwire/json", "dspy-go/json", 0.4},
	{"JSON, structured outputs / dspy-go JSON", "sigwire/json-structured", "dspy-go/json", 0.5},
	{"JSON, structured outputs / JSON", "sigwire/json-structured", "sigwire/json", 1.2},
	{"typed Predict / dspy-go typed", "sigwire/typed", "dspy-go/typed", 0.25},
	{"Chat / dspy-go text", "sigwire/chat", "dspy-go/text", 0.25},
	{"XML / dspy-go XML", "sigwire/xml", "dspy-go/xml", 0.15},
	{"Chat format, µs", "sigwire/chat-format", "", 1},
	{"Chat format / formatFloor", "sigwire/chat-format", "sigwire/format-floor", 0},
	{"Chat format / json.Unmarshal", "sigwire/chat-format", "baseline/unmarshal", 0.4},
	{"Chat parse / json.Unmarshal", "sigwire/chat-parse", "baseline/unmarshal", 0.4},
	{"Chat format / json.Unmarshal into a map", "sigwire/chat-format", "baseline/unmarshal-map", 0.4},
	{"Chat parse / json.Unmarshal into a map", "sigwire/chat-parse", "baseline/unmarshal-map", 0.4},
}

// TestCPUTimeSideBySide measures CPU time per call (not wall time) of this
// library's and dspy-go's paths on the reference workload, bare and
// described (instructions and field descriptions), and of encoding/json
// decoding the JSON reply; it prints each of issue 32's budgets as the
// ratio of two paths (median of the rounds' ratios, with the quartiles).
// The paths alternate round by round (in turn forwards and backwards)
// with GOMAXPROCS=1, so that other load on the machine affects all alike.
// It asserts nothing about time. It runs only with SIDE_BY_SIDE=1
// (ROUNDS=n sets the number of rounds, 15 by default):
//
//	SIDE_BY_SIDE=1 GOTOOLCHAIN=go1.27.0 go test -run CPUTime -v
func TestCPUTimeSideBySide(t *testing.T) {
	if os.Getenv("SIDE_BY_SIDE") == "" {
		t.Skip("set SIDE_BY_SIDE=1")
	}
	rounds := 15
	if n, err := strconv.Atoi(os.Getenv("ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var paths []path
	for _, w := range workloads {
		for _, lib := range []struct {
			name  string
			paths func(testing.TB, bool) []path
		}{{"sigwire", sigwirePaths}, {"dspy-go", dspygoPaths}} {
			for _, p := range lib.paths(t, w.described) {
				paths = append(paths, path{lib.name + "/" + w.name + "/" + p.name, p.run})
			}
		}
	}
	for _, p := range baselinePaths(t, false) {
		paths = append(paths, path{"baseline/" + p.name, p.run})
	}
	// Each path runs about 30 ms of CPU per round.
	iters := make([]int, len(paths))
	for i, p := range paths {
		start, n := cpuTime(), 0
		for ; n < 100 || cpuTime()-start < 5*time.Millisecond; n++ {
			if err := p.run(); err != nil {
				t.Fatal(p.name, err)
			}
		}
		iters[i] = max(100, int(30*time.Millisecond*time.Duration(n)/(cpuTime()-start)))
	}
	per := make([][]float64, len(paths)) // µs per call, by path and round
	order := make([]int, len(paths))
	for i := range order {
		order[i] = i
	}
	for range rounds {
		for _, i := range order {
			runtime.GC()
			start := cpuTime()
			for range iters[i] {
				_ = paths[i].run()
			}
			per[i] = append(per[i], float64(cpuTime()-start)/float64(iters[i])/1000)
		}
		slices.Reverse(order)
	}
	byName := map[string][]float64{}
	for i, p := range paths {
		byName[p.name] = per[i]
		t.Logf("%-40s %7.2f µs CPU per call (median of %d rounds of %d)", p.name, median(per[i]), rounds, iters[i])
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-42s %-10s %6s %-13s %6s\n", "budget", "workload", "ratio", "quartiles", "budget")
	for _, b := range budgets {
		for _, w := range workloads {
			num := byName[strings.Replace(b.num, "/", "/"+w.name+"/", 1)]
			den := byName[strings.Replace(b.den, "/", "/"+w.name+"/", 1)]
			if strings.HasPrefix(b.den, "baseline/") {
				den = byName[b.den]
			}
			r := make([]float64, len(num))
			for k := range num {
				r[k] = num[k]
				if b.den != "" {
					r[k] /= den[k]
				}
			}
			q := quartiles(r)
			verdict := "within"
			switch {
			case b.max == 0:
				verdict = "(a measure, no budget)"
			case q[1] > b.max:
				verdict = "over"
			}
			fmt.Fprintf(&report, "%-42s %-10s %6.2f %5.2f–%-5.2f  ≤ %.2f %s\n", b.name, w.name, q[1], q[0], q[2], b.max, verdict)
		}
	}
	t.Log(report.String())
}

func median(x []float64) float64 { return quartiles(x)[1] }

// quartiles returns the lower quartile, the median and the upper quartile.
func quartiles(x []float64) [3]float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	return [3]float64{s[n/4], s[n/2], s[(3*n)/4]}
}
