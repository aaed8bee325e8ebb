package rediscache_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/rediscache"
	"github.com/sigwire/adapter/signature"
)

// Every replica of a service builds its LM the same way: the shared cache
// first, so that hits spend no rate, then the shared limiter, inside the
// retries. (It needs a Redis, so it is compiled, not run.)
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	cache := rediscache.New(rdb,
		rediscache.WithTTL(24*time.Hour),
		rediscache.WithOnError(func(ctx context.Context, err error) {
			slog.WarnContext(ctx, "LM cache", "err", err) // the call went to the LM
		}))
	limit := rediscache.NewLimiter(rdb, "openai-prod", rediscache.RateLimit{RPM: 500, TPM: 200_000})

	cfg := openai.DefaultConfig("sk-...")
	cfg.HTTPClient = adapter.HTTPDoer(nil) // a 429's Retry-After reaches the limiter
	lm := adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(cache), limit.Middleware())

	sig, _ := signature.Parse("question -> answer")
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs[0]["answer"], res.CacheHits)
	fmt.Printf("%+v\n", cache.Stats())
}

// Five replicas share the account's limit through Redis; while Redis is
// unreachable, each keeps a fifth of it on its own. A call that would wait
// more than 30 s for the limit (or a provider's Retry-After) fails at once
// with a *LimitError, which matches adapter.ErrRateLimited. (It needs a
// Redis, so it is compiled, not run.)
func ExampleNewLimiter() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	limit := rediscache.NewLimiter(rdb, "openai-prod", rediscache.RateLimit{RPM: 500, TPM: 200_000},
		rediscache.WithFallback(rediscache.RateLimit{RPM: 100, TPM: 40_000}),
		rediscache.WithMaxWait(30*time.Second),
	)
	lm := adapter.WithMiddleware(openai.NewClient("sk-..."), limit.Middleware())

	sig, _ := signature.Parse("question -> answer")
	_, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"})
	if errors.Is(err, adapter.ErrRateLimited) {
		fmt.Println("over the limit:", err)
	}
}

// Replicas that may ask the same new prompt at the same moment (a burst
// of identical requests behind a load balancer) pay for it once: the
// first to miss takes a lease and calls the LM, the others wait for its
// entry, for at most 30 s (above the LM's slowest usual reply), then call
// the LM themselves. (It needs a Redis, so it is compiled, not run.)
func ExampleWithLease() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	cache := rediscache.New(rdb, rediscache.WithLease(30*time.Second))
	lm := adapter.WithMiddleware(openai.NewClient("sk-..."), adapter.Cached(cache))

	sig, _ := signature.Parse("question -> answer")
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs[0]["answer"], res.CacheHits)
	st := cache.Stats()
	fmt.Println("leases taken:", st.Leases, "waits:", st.Waits, "waits that ran out:", st.WaitTimeouts)
}

// Every replica gives a tenant's calls the tenant's daily budget: $5 at
// the account's prices, shared through Redis. A request the budget
// cannot hold is not sent (adapter.ErrBudget); when Redis cannot say,
// the budget fails closed (rediscache.ErrBudgetUnavailable). (It needs a
// Redis, so it is compiled, not run.)
func ExampleNewBudget() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	prices := adapter.Prices{"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.6}}
	budget, err := rediscache.NewBudget(rdb, "tenant-42", adapter.Limit{Cost: 5, Prices: prices},
		rediscache.WithWindow(24*time.Hour),
		rediscache.WithOnError(func(ctx context.Context, err error) {
			slog.WarnContext(ctx, "LM budget", "err", err)
		}))
	if err != nil {
		panic(err)
	}

	sig, _ := signature.Parse("question -> answer")
	_, err = adapter.Call(context.Background(), openai.NewClient("sk-..."), sig, nil, adapter.Values{"question": "Capital of France?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini", MaxTokens: 500}), // a hard bound on each reply
		adapter.WithBudget(budget))
	switch {
	case errors.Is(err, adapter.ErrBudget):
		fmt.Println("the tenant's budget for today is spent:", err)
	case errors.Is(err, rediscache.ErrBudgetUnavailable):
		fmt.Println("the budget could not be checked; nothing was sent:", err)
	}
	left, _ := budget.Remaining(context.Background())
	fmt.Printf("$%.2f left today\n", left)
}
