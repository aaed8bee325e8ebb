package adapter_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// brokenStore is a cache whose store is down: every lookup and store
// fails, as a Redis that cannot be reached does.
type brokenStore struct{ err error }

func (b brokenStore) Get(context.Context, string) (adapter.CacheEntry, bool) {
	return adapter.CacheEntry{}, false
}
func (b brokenStore) Put(context.Context, string, adapter.CacheEntry) {}
func (b brokenStore) Lookup(context.Context, string) (adapter.CacheEntry, bool, error) {
	return adapter.CacheEntry{}, false, b.err
}
func (b brokenStore) Store(context.Context, string, adapter.CacheEntry) error { return b.err }

// cacheErrorLog collects a trace's CacheError events.
type cacheErrorLog struct {
	mu     sync.Mutex
	events []adapter.CacheErrorInfo
}

func (l *cacheErrorLog) trace() *adapter.Trace {
	return &adapter.Trace{CacheError: func(i adapter.CacheErrorInfo) {
		l.mu.Lock()
		l.events = append(l.events, i)
		l.mu.Unlock()
	}}
}

func (l *cacheErrorLog) ops() []adapter.CacheOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ops []adapter.CacheOp
	for _, e := range l.events {
		ops = append(ops, e.Op)
	}
	return ops
}

// TestCacheErrorsCountedAndTraced: a cache that fails (FallibleCache)
// fails open — the call goes to the LM and gets its reply — and each
// failure is counted in Result.CacheErrors and reported to
// Trace.CacheError with the call's id, in Call and Stream, for a cache on
// the LM (WithMiddleware) and among the call's own (UseMiddleware).
func TestCacheErrorsCountedAndTraced(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nfrom the LM") })
	down := errors.New("dial tcp 127.0.0.1:6390: connection refused")
	for _, stream := range []bool{false, true} {
		for _, onLM := range []bool{true, false} {
			var log cacheErrorLog
			lm := adapter.LM(srv.Client())
			opts := []adapter.CallOption{adapter.UseTrace(log.trace())}
			if onLM {
				lm = adapter.WithMiddleware(srv.Client(), adapter.Cached(brokenStore{down}))
			} else {
				opts = append(opts, adapter.UseMiddleware(adapter.Cached(brokenStore{down})))
			}
			var res *adapter.Result
			var err error
			if stream {
				res, err = streamResult(adapter.Stream(t.Context(), lm.(adapter.StreamingLM), sig, nil, adapter.Values{"q": "x"}, opts...))
			} else {
				res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, opts...)
			}
			require.NoError(t, err, "stream %v, on the LM %v", stream, onLM)
			assert.Equal(t, "from the LM", res.Outputs[0]["a"])
			assert.Equal(t, 2, res.CacheErrors, "a failed lookup and a failed store (stream %v, on the LM %v)", stream, onLM)
			assert.Equal(t, []adapter.CacheOp{adapter.CacheLookup, adapter.CacheStore}, log.ops())
			for _, e := range log.events {
				assert.ErrorIs(t, e.Err, down)
				assert.NotZero(t, e.CallID)
				assert.NotEmpty(t, e.Key)
				assert.NotNil(t, e.Context)
			}
		}
	}
}

// TestDiskCacheErrorsTraced: a disk cache entry that cannot be served
// (corrupt) is a miss that the call counts and traces, matching
// ErrCorruptCacheEntry; a missing entry is no error.
func TestDiskCacheErrorsTraced(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nfrom the LM") })
	dir := t.TempDir()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(openDisk(t, dir)))
	var log cacheErrorLog
	res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseTrace(log.trace()))
	require.NoError(t, err)
	assert.Zero(t, res.CacheErrors, "a miss is not an error")
	assert.Empty(t, log.ops())

	files := diskFiles(t, dir)
	require.Len(t, files, 1)
	require.NoError(t, os.WriteFile(files[0], []byte("\x00 not a cache file"), 0o600))
	res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseTrace(log.trace()))
	require.NoError(t, err)
	assert.Equal(t, "from the LM", res.Outputs[0]["a"])
	assert.Equal(t, 1, res.CacheErrors)
	require.Equal(t, []adapter.CacheOp{adapter.CacheLookup}, log.ops())
	assert.ErrorIs(t, log.events[0].Err, adapter.ErrCorruptCacheEntry)
}
