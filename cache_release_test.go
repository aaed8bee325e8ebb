package adapter_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// ledger is a Cache that, like a shared cache with leases, holds a key from
// each miss until the entry is stored (Put) or the miss released
// (Release), and counts each.
type ledger struct {
	mu       sync.Mutex
	entries  map[string]adapter.CacheEntry
	open     map[string]int // misses not yet stored or released
	misses   int
	puts     int
	releases int
	unheld   []string // a store or release of a key with no open miss
}

func newLedger() *ledger {
	return &ledger{entries: map[string]adapter.CacheEntry{}, open: map[string]int{}}
}

func (l *ledger) Get(_ context.Context, key string) (adapter.CacheEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.entries[key]; ok {
		return e, true
	}
	l.misses++
	l.open[key]++
	return adapter.CacheEntry{}, false
}

func (l *ledger) Put(_ context.Context, key string, e adapter.CacheEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.puts++
	l.entries[key] = e
	l.close(key, "put")
}

func (l *ledger) Release(ctx context.Context, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		l.unheld = append(l.unheld, "released with a cancelled context")
	}
	l.releases++
	l.close(key, "release")
}

func (l *ledger) close(key, op string) {
	if l.open[key] == 0 {
		l.unheld = append(l.unheld, op+" of a key with no open miss")
		return
	}
	l.open[key]--
}

// settled reports whether every miss was stored or released.
func (l *ledger) settled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.misses == l.puts+l.releases
}

var _ adapter.CacheReleaser = (*ledger)(nil)

// TestCacheReleaseProperty: through Cached, every miss ends in exactly one
// store or one Release — whatever the reply (accepted, unparseable,
// truncated, refused, an HTTP error), by Call or Stream, with the cache on
// the LM (coalescing) or among the call's middlewares, for one caller or
// several at once, and when the callers give up before the reply — so that
// a cache holding a key from its miss (a lease other replicas wait on) is
// never left holding it. Before CacheReleaser, a miss whose call stored
// nothing was never released.
func TestCacheReleaseProperty(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	replies := map[string]func() lmtest.Reply{
		"accepted":    func() lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\n4") },
		"unparseable": func() lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nfour, or five") },
		"truncated":   func() lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\n4").WithFinish("length") },
		"refused":     func() lmtest.Reply { return lmtest.Text("").WithRefusal("I cannot help with that.") },
		"http error": func() lmtest.Reply {
			return lmtest.Error(http.StatusBadRequest, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
		},
		"given up": func() lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\n4").Delay(time.Second) },
	}
	for kind, reply := range replies {
		for _, stream := range []bool{false, true} {
			for _, onLM := range []bool{true, false} {
				for _, callers := range []int{1, 3} {
					name := fmt.Sprintf("%s/stream=%v/onLM=%v/callers=%d", kind, stream, onLM, callers)
					t.Run(name, func(t *testing.T) {
						srv := lmtest.NewServer()
						defer srv.Close()
						srv.Handle(func(lmtest.Request) lmtest.Reply { return reply() })
						l := newLedger()
						lm := adapter.LM(srv.Client())
						var opts []adapter.CallOption
						if onLM {
							lm = adapter.WithMiddleware(srv.Client(), adapter.Cached(l))
						} else {
							opts = append(opts, adapter.UseMiddleware(adapter.Cached(l)))
						}
						ctx := t.Context()
						if kind == "given up" {
							c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
							defer cancel()
							ctx = c
						}
						var wg sync.WaitGroup
						for range callers {
							wg.Go(func() {
								in := adapter.Values{"q": "x"}
								if stream {
									_, _ = streamResult(adapter.Stream(ctx, lm.(adapter.StreamingLM), sig, nil, in, opts...))
								} else {
									_, _ = adapter.Call(ctx, lm, sig, nil, in, opts...)
								}
							})
						}
						wg.Wait()
						eventually(t, "every miss stored or released", l.settled)
						l.mu.Lock()
						defer l.mu.Unlock()
						assert.Empty(t, l.unheld)
						assert.Positive(t, l.misses)
						if kind == "accepted" {
							assert.Zero(t, l.releases, "an accepted reply is stored, not released")
							assert.Positive(t, l.puts)
						} else {
							assert.Zero(t, l.puts, "nothing stored")
						}
					})
				}
			}
		}
	}
}

// TestCacheReleaseThenHit: a released miss leaves nothing behind: the
// next request asks the LM, and once its reply is stored, a hit neither
// misses nor releases.
func TestCacheReleaseThenHit(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\n4").WithFinish("length"), lmtest.Text("[[ ## a ## ]]\n4"))
	defer srv.Close()
	l := newLedger()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(l))
	in := adapter.Values{"q": "x"}
	_, err := adapter.Call(t.Context(), lm, sig, nil, in)
	require.ErrorIs(t, err, adapter.ErrTruncated)
	eventually(t, "the miss released", l.settled)
	res, err := adapter.Call(t.Context(), lm, sig, nil, in)
	require.NoError(t, err)
	assert.Equal(t, 4, res.Outputs[0]["a"])
	res, err = adapter.Call(t.Context(), lm, sig, nil, in)
	require.NoError(t, err)
	assert.Equal(t, 1, res.CacheHits)
	l.mu.Lock()
	defer l.mu.Unlock()
	assert.Equal(t, [3]int{2, 1, 1}, [3]int{l.misses, l.puts, l.releases}, "misses, puts, releases")
	assert.Len(t, srv.Requests(), 2)
}
