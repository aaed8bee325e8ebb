package rediscache_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/rediscache"
)

// httpDoerClient is the server's client with adapter.HTTPDoer, through
// which a 429's Retry-After is seen.
func httpDoerClient(srv *lmtest.Server) *openai.Client {
	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(nil)
	return openai.NewClientWithConfig(cfg)
}

// TestLimiterShared: two replicas (their own client and Limiter, one
// name) share one budget: with 3 requests a minute, the fourth request,
// whichever replica makes it, waits and (within a short deadline) is
// refused with ErrRateLimited before reaching the LM.
func TestLimiterShared(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	p := prefix(t)
	replica := func() (adapter.LM, *rediscache.Limiter) {
		l := rediscache.NewLimiter(client(t), "acct", rediscache.RateLimit{RPM: 3}, rediscache.WithPrefix(p), slack)
		return adapter.WithMiddleware(srv.Client(), l.Middleware()), l
	}
	a, la := replica()
	b, lb := replica()
	for _, lm := range []adapter.LM{a, b, a} {
		_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second) // the next slot is 20 s away
	defer cancel()
	_, err := adapter.Call(ctx, b, sig, nil, adapter.Values{"q": "x"})
	require.ErrorIs(t, err, adapter.ErrRateLimited)
	var le *rediscache.LimitError
	require.ErrorAs(t, err, &le)
	assert.False(t, le.Blocked)
	assert.Greater(t, le.Wait, 10*time.Second)
	assert.Len(t, srv.Requests(), 3)
	assert.Equal(t, int64(2), la.Stats().Admitted)
	assert.Equal(t, int64(1), lb.Stats().Refused)
	assert.Zero(t, la.Stats().Fallbacks+lb.Stats().Fallbacks)

	// Another model is another budget.
	_, err = adapter.Call(t.Context(), b, sig, nil, adapter.Values{"q": "x"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "other"}))
	require.NoError(t, err)
}

// TestLimiterAtomic: many goroutines of two replicas racing for a budget
// of 10 get exactly 10 admissions: the decision is atomic in Redis.
func TestLimiterAtomic(t *testing.T) {
	p := prefix(t)
	var admitted atomic.Int64
	ok := func(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		admitted.Add(1)
		return openai.ChatCompletionResponse{}, nil
	}
	var wg sync.WaitGroup
	var limiters []*rediscache.Limiter
	for range 2 {
		l := rediscache.NewLimiter(client(t), "acct", rediscache.RateLimit{RPM: 10}, rediscache.WithPrefix(p), slack, rediscache.WithMaxWait(time.Millisecond))
		limiters = append(limiters, l)
		inv := l.Middleware()(ok)
		for range 20 {
			wg.Go(func() {
				_, err := inv(t.Context(), openai.ChatCompletionRequest{Model: "m"})
				if err != nil {
					assert.ErrorIs(t, err, adapter.ErrRateLimited)
				}
			})
		}
	}
	wg.Wait()
	assert.Equal(t, int64(10), admitted.Load())
	for _, l := range limiters {
		assert.Zero(t, l.Stats().Fallbacks, "Redis decided every time")
	}
}

// TestLimiterTokens: tokens are charged by estimate before the call and
// corrected to the reply's usage after it, so that a small reply frees
// the budget its estimate reserved.
func TestLimiterTokens(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nok").WithUsage(50, 10) })
	p := prefix(t)
	big := adapter.WithRequest(openai.ChatCompletionRequest{MaxTokens: 600})
	l := rediscache.NewLimiter(client(t), "acct", rediscache.RateLimit{TPM: 1000}, rediscache.WithPrefix(p), slack, rediscache.WithMaxWait(time.Second))
	lm := adapter.WithMiddleware(srv.Client(), l.Middleware())

	_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, big)
	require.NoError(t, err, "~650 of 1000 reserved, 60 spent")
	_, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, big)
	require.NoError(t, err, "the first reservation was corrected to 60")

	// Estimates alone: the first fills the minute, the second must wait.
	est := rediscache.RateLimit{TPM: 1000, Estimate: func(openai.ChatCompletionRequest) int { return 700 }}
	noUsage := lmtest.NewServer()
	defer noUsage.Close()
	noUsage.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nok").WithUsage(0, 0) })
	l2 := rediscache.NewLimiter(client(t), "acct2", est, rediscache.WithPrefix(p), slack, rediscache.WithMaxWait(time.Second))
	lm2 := adapter.WithMiddleware(noUsage.Client(), l2.Middleware())
	_, err = adapter.Call(t.Context(), lm2, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	_, err = adapter.Call(t.Context(), lm2, sig, nil, adapter.Values{"q": "x"})
	require.ErrorIs(t, err, adapter.ErrRateLimited, "no usage reported: the estimate stands")
	assert.Len(t, noUsage.Requests(), 1)
}

// TestLimiter429Shared: a 429 with Retry-After seen by one replica blocks
// the other: within a deadline shorter than the Retry-After it is refused
// without reaching the LM; with time to wait, it waits and goes through.
func TestLimiter429Shared(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	p := prefix(t)
	limit := rediscache.RateLimit{RPM: 1000}
	la := rediscache.NewLimiter(client(t), "acct", limit, rediscache.WithPrefix(p), slack)
	lb := rediscache.NewLimiter(client(t), "acct", limit, rediscache.WithPrefix(p), slack)
	a := adapter.WithMiddleware(httpDoerClient(srv), la.Middleware())
	b := adapter.WithMiddleware(httpDoerClient(srv), lb.Middleware())

	srv.Push(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`).WithHeader("Retry-After", "1"))
	_, err := adapter.Call(t.Context(), a, sig, nil, adapter.Values{"q": "x"}, adapter.NoRetry())
	require.ErrorIs(t, err, adapter.ErrRateLimited)
	assert.Equal(t, int64(1), la.Stats().Blocks)

	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err = adapter.Call(ctx, b, sig, nil, adapter.Values{"q": "y"})
	var le *rediscache.LimitError
	require.ErrorAs(t, err, &le)
	assert.True(t, le.Blocked, "refused for the 429, not the rate")
	assert.Contains(t, le.Error(), "WithMaxWait", "the error names the knob that bounds the wait")
	assert.Len(t, srv.Requests(), 1, "B's request never reached the LM")

	res, err := adapter.Call(t.Context(), b, sig, nil, adapter.Values{"q": "y"})
	require.NoError(t, err)
	assert.Equal(t, "answer to y", res.Outputs[0]["a"])
	assert.Equal(t, int64(1), lb.Stats().Waits, "B waited for the block")
	assert.Len(t, srv.Requests(), 2)
}

// TestLimiterBlocksWithRetries: with retries on, the replica that got the
// 429 retries after its Retry-After, and its limiter lets the retry go
// once the shared block is over.
func TestLimiterBlocksWithRetries(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	l := rediscache.NewLimiter(client(t), "acct", rediscache.RateLimit{}, rediscache.WithPrefix(prefix(t)), slack)
	lm := adapter.WithMiddleware(httpDoerClient(srv), l.Middleware())
	srv.Push(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`).WithHeader("Retry-After", "1"))
	res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, "answer to x", res.Outputs[0]["a"])
	assert.Equal(t, 1, res.Retries)
	assert.Equal(t, int64(1), l.Stats().Blocks)
	assert.Equal(t, int64(2), l.Stats().Admitted)
}

// TestLimiterFallback: with Redis unreachable, the limiter keeps the
// limit in the process (its WithFallback), remembers the 429s it sees, and
// says so (stats, WithOnError).
func TestLimiterFallback(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	dead := privateRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: dead.addr})
	defer rdb.Close()
	dead.stop()
	var log errorLog
	l := rediscache.NewLimiter(rdb, "acct", rediscache.RateLimit{RPM: 1000}, rediscache.WithFallback(rediscache.RateLimit{RPM: 2}),
		rediscache.WithOnError(log.add), rediscache.WithMaxWait(time.Second))
	lm := adapter.WithMiddleware(httpDoerClient(srv), l.Middleware())
	for range 2 {
		_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
	}
	_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
	require.ErrorIs(t, err, adapter.ErrRateLimited, "the fallback's 2 a minute")
	st := l.Stats()
	assert.Equal(t, int64(3), st.Fallbacks)
	assert.Positive(t, st.Errors)
	var re *rediscache.Error
	require.NotEmpty(t, log.all())
	require.ErrorAs(t, log.all()[0], &re)
	assert.Equal(t, "admit", re.Op)
	assert.Len(t, srv.Requests(), 2)

	// A 429 blocks this process even without Redis.
	l2 := rediscache.NewLimiter(rdb, "acct", rediscache.RateLimit{})
	lm2 := adapter.WithMiddleware(httpDoerClient(srv), l2.Middleware())
	srv.Push(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`).WithHeader("Retry-After", "30"))
	_, err = adapter.Call(t.Context(), lm2, sig, nil, adapter.Values{"q": "x"}, adapter.NoRetry())
	require.ErrorIs(t, err, adapter.ErrRateLimited)
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	_, err = adapter.Call(ctx, lm2, sig, nil, adapter.Values{"q": "x"})
	var le *rediscache.LimitError
	require.True(t, errors.As(err, &le) && le.Blocked, "%v", err)
}

// TestLimiterNamesSeparate: limits are kept per limiter name (the provider
// account) and model, not per LM identity: two names on one Redis and
// prefix keep separate budgets; one name shares its budget across Limiter
// values (replicas) and across LMs of other endpoints or keys (an
// account's keys share the provider's limit).
func TestLimiterNamesSeparate(t *testing.T) {
	sig := mustParse(t, "q -> a")
	p := prefix(t)
	keyA, keyB := echoServer(t), echoServer(t) // two endpoints, two keys: two LM identities
	lm := func(srv *lmtest.Server, key, name string) adapter.LM {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = srv.URL()
		l := rediscache.NewLimiter(client(t), name, rediscache.RateLimit{RPM: 2}, rediscache.WithPrefix(p), slack)
		return adapter.WithMiddleware(openai.NewClientWithConfig(cfg), l.Middleware())
	}
	ask := func(lm adapter.LM) error {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second) // the next slot is 30 s away
		defer cancel()
		_, err := adapter.Call(ctx, lm, sig, nil, adapter.Values{"q": "x"})
		return err
	}
	// Account "a": its budget of 2 spent by two replicas through two keys.
	require.NoError(t, ask(lm(keyA, "sk-1", "a")))
	require.NoError(t, ask(lm(keyB, "sk-2", "a")))
	assert.ErrorIs(t, ask(lm(keyA, "sk-1", "a")), adapter.ErrRateLimited, "a third replica of account a, same name: the shared budget is spent")
	assert.ErrorIs(t, ask(lm(keyB, "sk-3", "a")), adapter.ErrRateLimited, "another key of account a: the same budget")
	// Account "b", on the same Redis, prefix, endpoint and key: its own budget.
	require.NoError(t, ask(lm(keyA, "sk-1", "b")))
	require.NoError(t, ask(lm(keyA, "sk-1", "b")))
	assert.ErrorIs(t, ask(lm(keyA, "sk-1", "b")), adapter.ErrRateLimited)
	assert.Len(t, keyA.Requests(), 3)
	assert.Len(t, keyB.Requests(), 1)
}

// TestLimiterRedisKilledMidRun: Redis dies in the middle of a run; the
// limiter goes on admitting calls by its in-process WithFallback (and refuses
// past it), counted; once Redis is back and the cooldown over, Redis
// decides again.
func TestLimiterRedisKilledMidRun(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	redisSrv := privateRedis(t)
	l := rediscache.NewLimiter(dial(t, redisSrv.addr), "acct", rediscache.RateLimit{RPM: 1000},
		rediscache.WithFallback(rediscache.RateLimit{RPM: 5}), rediscache.WithCooldown(20*time.Millisecond), slack,
		rediscache.WithMaxWait(5*time.Second)) // the fallback's next slot, past its 5, is 12 s away
	lm := adapter.WithMiddleware(srv.Client(), l.Middleware())
	ask := func() error {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		if err == nil {
			assert.Equal(t, "answer to x", res.Outputs[0]["a"])
		}
		return err
	}
	for i := range 10 {
		require.NoError(t, ask(), "call %d: Redis lives", i)
	}
	assert.Zero(t, l.Stats().Fallbacks, "Redis decided while it lived")

	redisSrv.stop()
	for i := range 5 {
		require.NoError(t, ask(), "call %d after the kill: the fallback admits 5 a minute", i)
	}
	require.ErrorIs(t, ask(), adapter.ErrRateLimited, "past the fallback's limit")
	st := l.Stats()
	assert.Equal(t, int64(6), st.Fallbacks, "each decision after the kill made in the process")
	assert.Positive(t, st.Errors)
	assert.Len(t, srv.Requests(), 15)

	require.NoError(t, redisSrv.start()) // back, empty: the shared budget is full again
	for i := 0; ; i++ {
		before := l.Stats().Fallbacks
		err := ask()
		if err == nil && l.Stats().Fallbacks == before {
			break // admitted by Redis
		}
		require.Less(t, i, 100, "Redis never decided again after it came back")
		time.Sleep(20 * time.Millisecond) // the cooldown
	}
}
