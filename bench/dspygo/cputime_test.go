package dspygo

import (
	"context"
	"os"
	"runtime"
	"sort"
	"syscall"
	"testing"
	"time"

	adapter "github.com/sigwire/adapter"
)

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCPUTimeSideBySide measures CPU time per call (not wall time) of this
// library's and dspy-go's paths on the reference workload, alternating
// them round by round with GOMAXPROCS=1, so that other load on the machine
// (which inflates wall-clock benchmarks) affects both alike. It runs only
// with SIDE_BY_SIDE=1:
//
//	SIDE_BY_SIDE=1 GOTOOLCHAIN=go1.27.0 go test -run CPUTime -v
func TestCPUTimeSideBySide(t *testing.T) {
	if os.Getenv("SIDE_BY_SIDE") == "" {
		t.Skip("set SIDE_BY_SIDE=1")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	sig, ds, in := sigwireWorkload(&testing.B{})
	paths := []struct {
		name string
		run  func()
	}{}
	for _, c := range []struct {
		name  string
		a     adapter.Adapter
		reply string
	}{{"sigwire chat", adapter.Chat{}, chatReply}, {"sigwire json", adapter.JSON{}, jsonReply}, {"sigwire xml", adapter.XML{}, xmlReply}} {
		lm, opts := fakeLM{c.reply}, []adapter.CallOption{adapter.UseAdapter(c.a), adapter.NoRetry()}
		paths = append(paths, struct {
			name string
			run  func()
		}{c.name, func() {
			if _, err := adapter.Call(context.Background(), lm, sig, ds, in, opts...); err != nil {
				t.Fatal(err)
			}
		}})
	}
	paths = append(paths, struct {
		name string
		run  func()
	}{"sigwire chat format", func() { _, _ = adapter.Chat{}.Format(sig, ds, in) }})
	paths = append(paths, struct {
		name string
		run  func()
	}{"sigwire json format", func() { _, _ = adapter.JSON{}.Format(sig, ds, in) }})
	paths = append(paths, struct {
		name string
		run  func()
	}{"sigwire json parse", func() { _, _ = adapter.JSON{}.Parse(sig, jsonReply) }})
	for _, c := range []struct{ name, mode, reply string }{{"dspy-go text", "text", textReply}, {"dspy-go json", "json", jsonReply}, {"dspy-go xml", "xml", xmlReply}} {
		p := dspygoPredict(c.mode)
		p.SetLLM(newFakeLLM(c.reply))
		inputs := map[string]any{"question": question, "context": context_}
		paths = append(paths, struct {
			name string
			run  func()
		}{c.name, func() {
			if _, err := p.Process(context.Background(), inputs); err != nil {
				t.Fatal(err)
			}
		}})
	}
	const rounds, iters = 15, 3000
	per := make([][]float64, len(paths))
	for r := 0; r < rounds; r++ {
		for i, p := range paths {
			runtime.GC()
			start := cpuTime()
			for range iters {
				p.run()
			}
			per[i] = append(per[i], float64(cpuTime()-start)/iters/1000)
		}
	}
	med := func(x []float64) float64 {
		s := append([]float64(nil), x...)
		sort.Float64s(s)
		return s[len(s)/2]
	}
	m := map[string]float64{}
	for i, p := range paths {
		m[p.name] = med(per[i])
		t.Logf("%-20s %6.2f µs CPU per call (median of %d rounds of %d)", p.name, m[p.name], rounds, iters)
	}
	t.Logf("json / dspy-go json: %.2f", m["sigwire json"]/m["dspy-go json"])
	t.Logf("chat / dspy-go text: %.2f", m["sigwire chat"]/m["dspy-go text"])
	t.Logf("xml  / dspy-go xml:  %.2f", m["sigwire xml"]/m["dspy-go xml"])
}
