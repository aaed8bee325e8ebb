package adapter_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
)

// bytesPerRun is testing.AllocsPerRun for bytes: the heap bytes f
// allocates per run, averaged over n runs after a warm-up. Like
// allocation counts, byte counts are exact (no timing).
func bytesPerRun(n int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// TestCallCost: what a Chat Call of the reference workload allocates
// (issue 32). The run of a call (its config, a request template among
// it, 1736 bytes) lived on the heap, 37 % of the call's bytes: 4904
// bytes in 17 allocations per call. Now only what others point to (the
// call's state, the run state on its context, the Result) is allocated,
// and the run itself stays on the caller's stack. Then 17 → 11: the
// usage map for a reply that reported none, the call's context value and
// each request's body slot made apart from what holds them, the Outputs
// and Completions slices of a one-choice reply.
func TestCallCost(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	lm := &fakeLM{replies: []string{benchCompletion}}
	opts := []adapter.CallOption{adapter.UseAdapter(adapter.Chat{}), adapter.NoRetry()}
	call := func() {
		if _, err := adapter.Call(context.Background(), lm, benchSig, benchDemos, benchInputs, opts...); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(100, call)
	bytes := bytesPerRun(100, call)
	t.Logf("Chat call: %v allocations, %v bytes", allocs, bytes)
	assert.LessOrEqual(t, allocs, 11.0)
	assert.LessOrEqual(t, bytes, 3300.0)

	// With the default retries: their invoker and the retry slot on the
	// request's context (the slot and the context value were two).
	opts = opts[:1]
	assert.LessOrEqual(t, testing.AllocsPerRun(100, call), 13.0)
}
