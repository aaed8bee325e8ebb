package rediscache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
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

// unreachable is a client of a loopback port nothing listens on: every
// command fails at once, and a Limiter on it decides in the process.
func unreachable(t testing.TB) *redis.Client {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// tokenKeys lists the limiter token keys (their TAT) under p.
func tokenKeys(t *testing.T, rdb redis.UniversalClient, p string) []string {
	t.Helper()
	keys, err := rdb.Keys(t.Context(), p+"limit:*:t").Result()
	require.NoError(t, err)
	return keys
}

// implausible returns the errors in log that report an implausible usage,
// each checked to be an *Error of the settle.
func implausible(t *testing.T, log *errorLog) []error {
	t.Helper()
	var out []error
	for _, err := range log.all() {
		if !errors.Is(err, rediscache.ErrImplausibleUsage) {
			continue // the unreachable Redis's failures
		}
		var re *rediscache.Error
		if assert.ErrorAs(t, err, &re) {
			assert.Equal(t, "settle", re.Op)
			assert.True(t, strings.HasSuffix(re.Key, ":t"), "the tokens' key: %s", re.Key)
		}
		out = append(out, err)
	}
	return out
}

// TestLimiterImplausibleUsage is the review's scenario (security review 4,
// P3): replica A's reply claims a billion tokens against a limit of
// 100 000 a minute. It is charged at most a minute's budget, counted and
// reported, so that replica B's next call goes within its 30 s deadline
// and the tokens' key lives about a minute, not days. With Redis
// unreachable the in-process fallback, whose arithmetic overflowed on such
// a usage, admits the next call as promptly.
func TestLimiterImplausibleUsage(t *testing.T) {
	const ok = "[[ ## a ## ]]\nok"
	limit := rediscache.RateLimit{RPM: 500, TPM: 100_000}
	sig := mustParse(t, "q -> a")
	for name, rdb := range map[string]func(testing.TB) *redis.Client{"redis": client, "unreachable": unreachable} {
		t.Run(name, func(t *testing.T) {
			r := rdb(t)
			p := prefix(t)
			srv := lmtest.NewServer(lmtest.Text(ok).WithUsage(1_000_000_000, 0), lmtest.Text(ok))
			defer srv.Close()
			var log errorLog
			a := rediscache.NewLimiter(r, "openai-prod", limit, rediscache.WithPrefix(p), slack, rediscache.WithOnError(log.add))
			b := a // without Redis a replica's fallback is its own: the next call is A's
			if name == "redis" {
				b = rediscache.NewLimiter(r, "openai-prod", limit, rediscache.WithPrefix(p), slack)
			}
			res, err := adapter.Call(t.Context(), adapter.WithMiddleware(srv.Client(), a.Middleware()), sig, nil, adapter.Values{"q": "x"})
			require.NoError(t, err)
			require.Equal(t, 1_000_000_000, res.Usage.TotalTokens, "the reply's usage reached the limiter")

			if name == "redis" {
				keys := tokenKeys(t, r, p)
				require.Len(t, keys, 1)
				ttl, err := r.PTTL(t.Context(), keys[0]).Result()
				require.NoError(t, err)
				assert.LessOrEqual(t, ttl, 2*time.Minute, "the tokens' TAT is at most about a minute out")
			}

			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err = adapter.Call(ctx, adapter.WithMiddleware(srv.Client(), b.Middleware()), sig, nil, adapter.Values{"q": "y"})
			require.NoError(t, err, "the next call is admitted within its deadline")
			assert.Equal(t, "ok", res.Outputs[0]["a"])
			assert.Equal(t, 2, len(srv.Requests()))

			assert.Equal(t, int64(1), a.Stats().Implausible)
			if name == "redis" {
				assert.Zero(t, b.Stats().Implausible)
				assert.Zero(t, a.Stats().Fallbacks+b.Stats().Fallbacks, "Redis decided")
			} else {
				assert.GreaterOrEqual(t, a.Stats().Fallbacks, int64(2), "the fallback decided (each call, and again after a wait)")
			}
			errs := implausible(t, &log)
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0].Error(), "1000000000 tokens")
			assert.Contains(t, errs[0].Error(), "at most 100000")
		})
	}
}

// TestLimiterUsageBounded: whatever usage a reply reports, from none to
// the largest int, the next request never waits more than a minute plus
// its own cost at the rate, on Redis and in the fallback, whether the
// request bounds its completion (max_tokens) or not. A usage up to what
// the request could cost is charged as reported; above it, it is counted
// Implausible; a usage near the TPM or past it spends the minute's
// budget, so that the next request waits. The request's bound: its JSON
// bytes, plus 16 tokens for each message (and 512 with tools), plus
// max_completion_tokens (else max_tokens) for each choice; with no max
// tokens, or an image, the TPM (a minute's budget).
func TestLimiterUsageBounded(t *testing.T) {
	const tpm, cost = 1000, 100
	limit := rediscache.RateLimit{TPM: tpm, Estimate: func(openai.ChatCompletionRequest) int { return cost }}
	maxWait := time.Minute + time.Duration(cost)*time.Minute/tpm

	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hello"}}
	capped := openai.ChatCompletionRequest{Model: "m", Messages: msgs, MaxTokens: 100}
	js, err := json.Marshal(capped)
	require.NoError(t, err)
	tools := openai.ChatCompletionRequest{Model: "m", Messages: msgs, MaxCompletionTokens: 50, MaxTokens: 400, N: 2,
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "f", Parameters: map[string]any{"type": "object"}}}}}
	toolsJS, err := json.Marshal(tools)
	require.NoError(t, err)
	image := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: "what is this?"},
		{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "https://example.com/a.png"}},
	}}}
	kinds := map[string]struct {
		req   openai.ChatCompletionRequest
		bound int
	}{
		"max_tokens":    {capped, min(len(js)+16+100, tpm)},
		"no max_tokens": {openai.ChatCompletionRequest{Model: "m", Messages: msgs}, tpm},
		// max_completion_tokens first, for each of n choices; 512 for tools
		"tools, n=2": {tools, min(len(toolsJS)+16+512+2*50, tpm)},
		// an image's tokens are no byte count's: a minute's budget
		"image": {openai.ChatCompletionRequest{Model: "m", Messages: image, MaxTokens: 100}, tpm},
	}
	for backend, rdb := range map[string]func(testing.TB) *redis.Client{"redis": client, "unreachable": unreachable} {
		for kind, k := range kinds {
			usages := []int{-1, 0, 1, 50, k.bound - 1, k.bound, k.bound + 1, 2 * tpm, 1e9, 1e12, math.MaxInt32, math.MaxInt64 / 2, math.MaxInt}
			for _, used := range usages {
				t.Run(fmt.Sprintf("%s/%s/%d", backend, kind, used), func(t *testing.T) {
					r := rdb(t)
					p := prefix(t)
					var log errorLog
					l := rediscache.NewLimiter(r, "acct", limit, rediscache.WithPrefix(p), slack,
						rediscache.WithMaxWait(time.Nanosecond), rediscache.WithOnError(log.add))
					first := true
					inv := l.Middleware()(func(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
						if !first {
							return openai.ChatCompletionResponse{}, nil // the next reply's usage is not the question
						}
						first = false
						return openai.ChatCompletionResponse{Usage: openai.Usage{TotalTokens: used}}, nil
					})
					_, err := inv(t.Context(), k.req)
					require.NoError(t, err, "a fresh budget admits the first request")
					if backend == "redis" {
						for _, key := range tokenKeys(t, r, p) {
							ttl, err := r.PTTL(t.Context(), key).Result()
							require.NoError(t, err)
							assert.LessOrEqual(t, ttl, 2*time.Minute+time.Second)
						}
					}
					_, err = inv(t.Context(), k.req)
					if err != nil {
						var le *rediscache.LimitError
						require.ErrorAs(t, err, &le)
						assert.LessOrEqual(t, le.Wait, maxWait, "a usage of %d", used)
						assert.Positive(t, le.Wait)
					}
					// Charged at least up to the bound, never refunded by a
					// wrap: the budget of a usage near the TPM is spent for
					// seconds (50 tokens are 3 s at the rate), and the next
					// request waits.
					if charged := max(min(used, k.bound), 0); charged+cost-tpm >= 50 {
						var le *rediscache.LimitError
						assert.ErrorAs(t, err, &le, "a usage of %d charged %d: the next request must wait", used, charged)
					}
					want := int64(0)
					if used > k.bound {
						want = 1
					}
					assert.Equal(t, want, l.Stats().Implausible, "a usage of %d against a bound of %d", used, k.bound)
					assert.Len(t, implausible(t, &log), int(want))
				})
			}
		}
	}
}

// TestLimiterLargeTPM: a TPM so large that a minute's worth of tokens
// times a minute in nanoseconds passes int64 (2^40 a minute): a request
// estimated at the whole minute's budget is charged exactly a minute, so
// the next one is refused (WithMaxWait is a nanosecond) for a wait of at
// most a minute, on Redis and in the fallback (where the charge
// overflowed to a few milliseconds, and the next request went at once).
func TestLimiterLargeTPM(t *testing.T) {
	const tpm = 1 << 40
	limit := rediscache.RateLimit{TPM: tpm, Estimate: func(openai.ChatCompletionRequest) int { return tpm }}
	for backend, rdb := range map[string]func(testing.TB) *redis.Client{"redis": client, "unreachable": unreachable} {
		t.Run(backend, func(t *testing.T) {
			l := rediscache.NewLimiter(rdb(t), "acct", limit, rediscache.WithPrefix(prefix(t)), slack, rediscache.WithMaxWait(time.Nanosecond))
			inv := l.Middleware()(func(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
				return openai.ChatCompletionResponse{}, nil // no usage: the estimate stands
			})
			_, err := inv(t.Context(), openai.ChatCompletionRequest{Model: "m"})
			require.NoError(t, err)
			_, err = inv(t.Context(), openai.ChatCompletionRequest{Model: "m"})
			var le *rediscache.LimitError
			require.ErrorAs(t, err, &le, "the minute's budget is spent")
			assert.LessOrEqual(t, le.Wait, time.Minute, "a minute's budget, charged once")
		})
	}
}
