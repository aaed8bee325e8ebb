package signature_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

// memoKey is a Memo key of this package's own type, as Memo asks.
type memoKey int

// TestMemoKeepsOneValuePerKey: goroutines asking for the same keys at
// once, more keys than the memo's lock-free list holds, all get the one
// value kept for each key; every key is built at least once and at most
// once per asking goroutine; another signature (an edit) starts empty.
func TestMemoKeepsOneValuePerKey(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	const keys, goroutines = 40, 8
	var builds [keys]atomic.Int64
	got := make([][keys]any, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for round := range 3 {
				for k := range keys {
					k := (k + g*5) % keys
					v := sig.Memo(memoKey(k), func() any {
						builds[k].Add(1)
						return new(int) // a value of its own per build
					})
					if round > 0 {
						assert.Same(t, got[g][k], v, "key %d changed its value", k)
					}
					got[g][k] = v
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		n := builds[k].Load()
		assert.True(t, n >= 1 && n <= goroutines, "key %d built %d times", k, n)
		for g := 1; g < goroutines; g++ {
			assert.Same(t, got[0][k], got[g][k], "key %d: goroutines got different values", k)
		}
	}

	edited := sig.WithInstructions("Answer briefly.")
	v := edited.Memo(memoKey(0), func() any { return "fresh" })
	assert.Equal(t, "fresh", v, "an edit has its own, empty memo")
	assert.Same(t, got[0][0], sig.Memo(memoKey(0), func() any { return "rebuilt" }), "the original keeps its value")
}

// TestMemoLookupAllocates nothing once a key is kept.
func TestMemoLookupAllocates(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	build := func() any { return 1 }
	for k := range 12 {
		sig.Memo(memoKey(k), build)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		sig.Memo(memoKey(3), build)
		sig.Memo(memoKey(11), build)
	}))
}
