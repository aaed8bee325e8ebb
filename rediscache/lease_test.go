package rediscache_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/rediscache"
)

// slowEcho answers as echoServer does, after d, so that replicas asking
// at once are all in flight together; fail, when it returns true for the
// request's number (from 1), makes that request fail with a 400 (not
// retried).
func slowEcho(t testing.TB, d time.Duration, fail func(n int64) bool) *lmtest.Server {
	srv := lmtest.NewServer()
	t.Cleanup(srv.Close)
	var n atomic.Int64
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		if fail != nil && fail(n.Add(1)) {
			return lmtest.Error(http.StatusBadRequest, `{"error":{"message":"the holder's call fails","type":"invalid_request_error"}}`).Delay(d)
		}
		msgs := r.Chat.Messages
		q := msgs[len(msgs)-1].Content
		q = q[strings.Index(q, "[[ ## q ## ]]\n")+len("[[ ## q ## ]]\n"):]
		q = q[:strings.IndexByte(q, '\n')]
		return lmtest.Text("[[ ## a ## ]]\nanswer to " + q).Delay(d)
	})
	return srv
}

// replicaResult is what one replica's call got.
type replicaResult struct {
	res *adapter.Result
	err error
}

// askTogether makes each cache a replica of its own (its own Cache value
// and adapter.Cached, as separate processes have), asks q through all of
// them at once, the odd ones by Stream, and returns what each got.
func askTogether(t *testing.T, srv *lmtest.Server, caches []*rediscache.Cache, q string, during func()) []replicaResult {
	return askTogetherIn(t.Context(), t, srv, caches, q, during)
}

// askTogetherIn is askTogether with the callers' context.
func askTogetherIn(ctx context.Context, t *testing.T, srv *lmtest.Server, caches []*rediscache.Cache, q string, during func()) []replicaResult {
	sig := mustParse(t, "q -> a")
	out := make([]replicaResult, len(caches))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range caches {
		lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(c))
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				out[i].res, out[i].err = adapter.Call(ctx, lm, sig, nil, adapter.Values{"q": q})
				return
			}
			for ch, err := range adapter.Stream(ctx, lm.(adapter.StreamingLM), sig, nil, adapter.Values{"q": q}) {
				if err != nil {
					out[i].err = err
				}
				if ch.Result != nil {
					out[i].res = ch.Result
				}
			}
		})
	}
	close(start)
	if during != nil {
		during()
	}
	wg.Wait()
	return out
}

// TestLeaseOneCallAcrossReplicas: replicas (each its own Cache on one
// Redis) asking one new prompt at the same moment make one LM call; the
// others wait for its entry and get it as a hit.
func TestLeaseOneCallAcrossReplicas(t *testing.T) {
	srv := slowEcho(t, 200*time.Millisecond, nil)
	p := prefix(t)
	const n = 8
	caches := make([]*rediscache.Cache, n)
	for i := range caches {
		caches[i] = rediscache.New(client(t), rediscache.WithPrefix(p), slack, rediscache.WithLease(30*time.Second))
	}
	hits := 0
	for i, r := range askTogether(t, srv, caches, "x", nil) {
		require.NoError(t, r.err, "replica %d", i)
		require.NotNil(t, r.res, "replica %d", i)
		assert.Equal(t, "answer to x", r.res.Outputs[0]["a"], "replica %d", i)
		hits += r.res.CacheHits
	}
	assert.Equal(t, 1, len(srv.Requests()), "%d replicas asking one new prompt at once: one LM call", n)
	assert.Equal(t, n-1, hits)
	var leases, waits int64
	for _, c := range caches {
		st := c.Stats()
		leases += st.Leases
		waits += st.Waits
		assert.Zero(t, st.WaitTimeouts)
		assert.Zero(t, st.Errors)
	}
	assert.Equal(t, int64(1), leases)
	assert.Equal(t, int64(n-1), waits)
	assert.Len(t, cacheKeys(t, client(t), p), 1, "the entry; the lease was released when it was stored")
}

// TestLeaseHolderFails: the lease holder's LM call fails, so it stores
// nothing; the others go on (the lease released, or its short bound
// passed), call the LM themselves and get the right reply.
func TestLeaseHolderFails(t *testing.T) {
	srv := slowEcho(t, 50*time.Millisecond, func(n int64) bool { return n == 1 })
	p := prefix(t)
	const n = 5
	caches := make([]*rediscache.Cache, n)
	for i := range caches {
		caches[i] = rediscache.New(client(t), rediscache.WithPrefix(p), slack, rediscache.WithLease(300*time.Millisecond))
	}
	failed := 0
	for i, r := range askTogether(t, srv, caches, "x", nil) {
		if r.err != nil {
			failed++
			assert.ErrorContains(t, r.err, "the holder's call fails")
			continue
		}
		require.NotNil(t, r.res, "replica %d", i)
		assert.Equal(t, "answer to x", r.res.Outputs[0]["a"], "replica %d", i)
	}
	assert.Equal(t, 1, failed, "the holder's call alone failed")
	calls := len(srv.Requests())
	assert.GreaterOrEqual(t, calls, 2, "the holder's failed call, then another's")
	assert.LessOrEqual(t, calls, n)
	var leases, timeouts int64
	for _, c := range caches {
		leases += c.Stats().Leases
		timeouts += c.Stats().WaitTimeouts
	}
	t.Logf("%d replicas, the holder's call failed: %d LM calls, %d leases taken, %d waits ran out", n, calls, leases, timeouts)
	assert.GreaterOrEqual(t, leases+timeouts, int64(2), "a waiter took the lapsed lease over, or stopped waiting")
}

// TestLeaseReleasedWhenHolderFails: a lease holder whose call fails
// releases the lease at once (adapter.Cached calls Release): with a lease
// of an hour, the waiting replicas do not wait it out — one takes the
// lease over and calls the LM, the others get its entry. Before Release,
// they waited until their callers' contexts ended (a minute here) and
// failed.
func TestLeaseReleasedWhenHolderFails(t *testing.T) {
	srv := slowEcho(t, 50*time.Millisecond, func(n int64) bool { return n == 1 })
	p := prefix(t)
	const n = 5
	caches := make([]*rediscache.Cache, n)
	for i := range caches {
		caches[i] = rediscache.New(client(t), rediscache.WithPrefix(p), slack, rediscache.WithLease(time.Hour))
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard, not a timing assertion
	defer cancel()
	failed := 0
	for i, r := range askTogetherIn(ctx, t, srv, caches, "x", nil) {
		if r.err != nil {
			failed++
			assert.ErrorContains(t, r.err, "the holder's call fails", "replica %d", i)
			continue
		}
		require.NotNil(t, r.res, "replica %d", i)
		assert.Equal(t, "answer to x", r.res.Outputs[0]["a"], "replica %d", i)
	}
	assert.Equal(t, 1, failed, "the holder's call alone failed")
	assert.Equal(t, 2, len(srv.Requests()), "the holder's failed call, then the next holder's")
	var leases, timeouts int64
	for _, c := range caches {
		leases += c.Stats().Leases
		timeouts += c.Stats().WaitTimeouts
	}
	assert.Equal(t, int64(2), leases, "the first holder's, then the one that took it over")
	assert.Zero(t, timeouts, "no wait ran out")
}

// TestLeaseRedisKilled: Redis dies while a lease is held and replicas
// wait for it; every wait ends in a miss (counted as the call's cache
// error), every replica gets the right reply from the LM.
func TestLeaseRedisKilled(t *testing.T) {
	srv := slowEcho(t, 300*time.Millisecond, nil)
	redisSrv := privateRedis(t)
	const n = 5
	caches := make([]*rediscache.Cache, n)
	for i := range caches {
		caches[i] = rediscache.New(dial(t, redisSrv.addr), slack, rediscache.WithCooldown(time.Hour), rediscache.WithLease(time.Minute))
	}
	results := askTogether(t, srv, caches, "x", func() {
		for i := 0; len(srv.Requests()) == 0; i++ { // the holder is calling the LM
			require.Less(t, i, 1000, "no replica called the LM")
			time.Sleep(5 * time.Millisecond)
		}
		redisSrv.stop()
	})
	cacheErrors := 0
	for i, r := range results {
		require.NoError(t, r.err, "replica %d", i)
		require.NotNil(t, r.res, "replica %d", i)
		assert.Equal(t, "answer to x", r.res.Outputs[0]["a"], "replica %d", i)
		cacheErrors += r.res.CacheErrors
	}
	t.Logf("%d replicas, Redis killed while the holder called the LM: %d LM calls, %d cache errors in the calls", n, len(srv.Requests()), cacheErrors)
	assert.Positive(t, cacheErrors, "the failures were counted in the calls")
	assert.LessOrEqual(t, len(srv.Requests()), n)
	for _, c := range caches {
		assert.Zero(t, c.Stats().WaitTimeouts, "no wait ran to the minute's bound")
	}
}

// TestLeaseReleasedWhenNotStored: a reply too large to store releases the
// lease at once, so that no replica waits for an entry that will not
// come; the next lookup takes the lease again rather than waiting.
func TestLeaseReleasedWhenNotStored(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	rdb := client(t)
	p := prefix(t)
	cache := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithLease(time.Hour), rediscache.WithMaxEntryBytes(10))
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
	_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Empty(t, cacheKeys(t, rdb, p), "no entry, and no lease left behind")

	other := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithLease(time.Hour))
	res, err := adapter.Call(t.Context(), adapter.WithMiddleware(srv.Client(), adapter.Cached(other)), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, "answer to x", res.Outputs[0]["a"])
	assert.Equal(t, rediscache.Stats{Misses: 1, Leases: 1}, other.Stats(), "took the lease, did not wait an hour")
}

// TestLeaseWaitBounded: a lookup waiting on another's lease (one planted
// under the documented key, held for an hour) stops at the lease's bound
// (a miss, counted in WaitTimeouts) or when its caller gives up (a miss,
// no error), whichever comes first.
func TestLeaseWaitBounded(t *testing.T) {
	rdb := client(t)
	p := prefix(t)
	const key = "v2:0123abcd"
	require.NoError(t, rdb.Set(t.Context(), p+"lease:v1:{"+p+"cache:v1:"+key+"}", "another replica", time.Hour).Err())

	short := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithLease(50*time.Millisecond))
	_, hit, err := short.Lookup(t.Context(), key)
	require.NoError(t, err)
	assert.False(t, hit)
	assert.Equal(t, rediscache.Stats{Misses: 1, Waits: 1, WaitTimeouts: 1}, short.Stats())

	long := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithLease(time.Hour))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, hit, err = long.Lookup(ctx, key)
	require.NoError(t, err, "the caller gave up: not a failure")
	assert.False(t, hit)
	assert.Equal(t, rediscache.Stats{Misses: 1, Waits: 1}, long.Stats())
}
