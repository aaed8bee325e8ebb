package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
)

// TestCacheHitsSpendNoTokens: with the cache on the LM, a hit is reported
// to the trace as cached, with no tokens, as Result counts it (newcomer
// review 3, item 2: LMCallDone summed 975 tokens where Result.Usage summed
// 325).
func TestCacheHitsSpendNoTokens(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nParis").WithUsage(300, 25))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
	var events []adapter.LMCallDoneInfo
	tr := &adapter.Trace{LMCallDone: func(i adapter.LMCallDoneInfo) { events = append(events, i) }}
	total := 0
	for range 3 {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseTrace(tr))
		require.NoError(t, err)
		total += res.Usage.TotalTokens
	}
	assert.Equal(t, 325, total)
	require.Len(t, events, 3)
	traced := 0
	for i, e := range events {
		traced += e.Usage.TotalTokens
		assert.Equal(t, i > 0, e.Cached, "event %d", i)
		if e.Cached {
			assert.Zero(t, e.Response.Usage, "a hit's response reports no usage")
		}
	}
	assert.Equal(t, total, traced)
}

// TestRetriesNumbered: each retry of a request is reported with its own
// number, to the trace and in predict.Logger's lines (newcomer review 3,
// item 7: attempt=1 for every retry).
func TestRetriesNumbered(t *testing.T) {
	sig := mustParse(t, "q -> a")
	busy := lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
	srv := lmtest.NewServer(busy, busy, lmtest.Text("[[ ## a ## ]]\nok").WithUsage(10, 2))
	defer srv.Close()
	var retries []int
	var logs bytes.Buffer
	tr := &adapter.Trace{LMCallDone: func(i adapter.LMCallDoneInfo) { retries = append(retries, i.Retry) }}
	res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.UseTrace(tr),
		adapter.UseTrace(predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil)))),
		adapter.WithRetry(adapter.RetryPolicy{BaseDelay: time.Microsecond}))
	require.NoError(t, err)
	assert.Equal(t, 2, res.Retries)
	assert.Equal(t, []int{0, 1, 2}, retries)
	var attempts []float64
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		attempts = append(attempts, m["attempt"].(float64))
	}
	assert.Equal(t, []float64{1, 2, 3}, attempts)
}

// TestAccountingAgrees: over generated mixes of cache hits, misses,
// retries, fallbacks, failures, Calls and Streams, on two models, and of
// identical calls at once that share one LM call (coalesced), the Result,
// the trace's LM calls and predict.Logger's lines agree on tokens and
// calls, the cost is the price of the Result's usage (Decision 21), and
// the Results together count every token the server sent, once.
func TestAccountingAgrees(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	prices := adapter.Prices{"m1": {Input: 2, CachedInput: 1, Output: 8}, "m2": {Input: 0.5, Output: 1}}
	seen := map[string]int{}
	joined := joins(t)
	for seed := range 12 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		var mu sync.Mutex
		pick := func(n int) int {
			mu.Lock()
			defer mu.Unlock()
			return rng.IntN(n)
		}
		sent := 0 // the tokens the server reported
		var held atomic.Pointer[gate]
		srv := lmtest.NewServer()
		srv.Handle(func(r lmtest.Request) lmtest.Reply {
			<-held.Load().ch // held while a group of identical calls joins the first
			mu.Lock()
			defer mu.Unlock()
			p, c := 10+rng.IntN(90), 1+rng.IntN(20)
			x := rng.IntN(20)
			if x >= 5 {
				sent += p + c
			}
			switch {
			case x < 4:
				return lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
			case x < 5:
				return lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"oops"}}`)
			case x < 8:
				return lmtest.Text("no markers here").WithUsage(p, c) // Chat fails: the JSON fallback runs
			case x < 9:
				return lmtest.Text(`{"a": 1`).WithFinish("length").WithUsage(p, c) // truncated: an error
			}
			u := fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":%d}}`, p, c, p+c, rng.IntN(p))
			if r.Chat.Stream {
				return lmtest.Text(`{"a": 42}`).WithUsage(p, c)
			}
			return lmtest.Raw(200, http.Header{"Content-Type": {"application/json"}}, []byte(`{"id":"x","object":"chat.completion","model":"`+r.Chat.Model+
				`","choices":[{"index":0,"message":{"role":"assistant","content":"{\"a\": 42}"},"finish_reason":"stop"}],`+u+`}`))
		})
		lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(100)))
		counted, requests := 0, 0 // the tokens and the requests the Results counted
		for call := range 15 {
			// One call, or a group of identical calls at once, whose first
			// request is held until the others joined it (a question never
			// asked before: no cache entry answers it).
			n, in := 1, adapter.Values{"q": fmt.Sprint(pick(3))}
			if pick(3) == 0 {
				n, in = 2+pick(3), adapter.Values{"q": fmt.Sprintf("group %d", call)}
			}
			model := []string{"m1", "m2"}[pick(2)]
			type run struct {
				stream bool
				done   []adapter.LMCallDoneInfo
				result *adapter.Result
				logs   bytes.Buffer
				err    error
			}
			runs := make([]*run, n)
			var wg sync.WaitGroup
			before := joined.Load()
			g := newGate(t)
			held.Store(g)
			if n == 1 {
				g.open()
			}
			for i := range runs {
				r := &run{stream: pick(2) == 0}
				runs[i] = r
				opts := []adapter.CallOption{
					adapter.WithRequest(openai.ChatCompletionRequest{Model: model}),
					adapter.WithRetry(adapter.RetryPolicy{BaseDelay: time.Microsecond, MaxRetries: 2}),
					adapter.UseTrace(&adapter.Trace{
						LMCallDone: func(i adapter.LMCallDoneInfo) { r.done = append(r.done, i) },
						CallDone:   func(i adapter.CallDoneInfo) { r.result = i.Result },
					}),
					adapter.UseTrace(predict.Logger(slog.New(slog.NewJSONHandler(&r.logs, nil)))),
				}
				wg.Go(func() {
					if r.stream {
						_, _, r.err = drain(adapter.Stream(t.Context(), lm, sig, nil, in, opts...))
						return
					}
					res, err := adapter.Call(t.Context(), lm, sig, nil, in, opts...)
					r.err = err
					assert.Same(t, res, r.result)
				})
			}
			if n > 1 {
				eventually(t, "the group joined its first call", func() bool { return joined.Load()-before == int64(n-1) })
				g.open()
			}
			wg.Wait()

			for _, r := range runs {
				result, stream, err := r.result, r.stream, r.err
				name := fmt.Sprintf("seed %d call %d of %d (stream %v, err %v)", seed, call, n, stream, err)
				require.NotNil(t, result, name)
				kind := map[bool]string{false: "call", true: "stream"}[stream]
				seen[kind]++
				if err != nil {
					seen[kind+" failed"]++
				}
				if result.CacheHits > 0 {
					seen[kind+" with a hit"]++
				}
				if result.Coalesced > 0 {
					seen[kind+" coalesced"]++
				}
				if result.Retries > 0 {
					seen[kind+" retried"]++
				}
				if result.FallbackCause != nil || result.Calls > 1 {
					seen[kind+" fell back"]++
				}

				var traced openai.Usage
				hits, coalesced, logged, tracedRequests := 0, 0, 0, 0
				for _, e := range r.done {
					traced.PromptTokens += e.Usage.PromptTokens
					traced.CompletionTokens += e.Usage.CompletionTokens
					traced.TotalTokens += e.Usage.TotalTokens
					if e.Cached {
						hits++
						assert.Zero(t, e.Usage, name)
						assert.NoError(t, e.Err, name)
					}
					if e.Coalesced {
						coalesced++
						assert.Zero(t, e.Usage, name)
						assert.Zero(t, e.Response.Usage, name)
					}
					sentOne := 1
					if e.Cached || e.Coalesced {
						sentOne = 0
					}
					assert.Equal(t, sentOne, e.Requests, "%s: an LM call sends one request unless a cache or a call in flight answered it", name)
					tracedRequests += e.Requests
				}
				for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
					var m map[string]any
					require.NoError(t, json.Unmarshal([]byte(line), &m), name)
					if m["msg"] == "lm call" {
						logged += int(m["prompt_tokens"].(float64) + m["completion_tokens"].(float64))
					}
				}
				u := result.Usage
				counted += u.TotalTokens
				assert.Equal(t, [3]int{u.PromptTokens, u.CompletionTokens, u.TotalTokens}, [3]int{traced.PromptTokens, traced.CompletionTokens, traced.TotalTokens}, name)
				assert.Equal(t, u.TotalTokens, logged, name)
				assert.Equal(t, result.CacheHits, hits, name)
				assert.Equal(t, result.Coalesced, coalesced, name)
				assert.Len(t, r.done, result.Calls+result.Retries, name)
				assert.Equal(t, result.Requests, tracedRequests, name)
				assert.Equal(t, result.Calls+result.Retries-result.CacheHits-result.Coalesced, result.Requests, name)
				requests += result.Requests

				var byModel int
				for _, mu := range result.UsageByModel {
					byModel += mu.TotalTokens
				}
				assert.Equal(t, u.TotalTokens, byModel, name)
				cost, err := result.Cost(prices)
				require.NoError(t, err, name)
				want := 0.0
				for m, mu := range result.UsageByModel {
					cached := 0
					if mu.PromptTokensDetails != nil {
						cached = mu.PromptTokensDetails.CachedTokens
					}
					p := prices[m]
					ci := p.CachedInput
					if ci == 0 {
						ci = p.Input
					}
					want += (float64(mu.PromptTokens-cached)*p.Input + float64(cached)*ci + float64(mu.CompletionTokens)*p.Output) / 1e6
				}
				assert.InDelta(t, want, cost, 1e-12, name)
				if u.TotalTokens == 0 {
					assert.Zero(t, cost, name)
				}
			}
		}
		srv.Close()
		mu.Lock()
		assert.Equal(t, sent, counted, "seed %d: the tokens the server sent, counted once", seed)
		assert.Equal(t, len(srv.Requests()), requests, "seed %d: the requests the server answered, counted once", seed)
		mu.Unlock()
	}
	for _, kind := range []string{"call", "stream"} {
		for _, what := range []string{"", " failed", " with a hit", " coalesced", " retried", " fell back"} {
			assert.NotZero(t, seen[kind+what], "the generated mix has a %s%s", kind, what)
		}
	}
	t.Log(seen)
}

// TestAccountingTwoStep: the calls an adapter makes while parsing (TwoStep's
// extraction) are counted in the Result as the trace reports them: their
// tokens, calls, retries and cache hits.
func TestAccountingTwoStep(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	main := lmtest.NewServer(lmtest.Text("The answer is seven.").WithUsage(100, 10))
	defer main.Close()
	busy := lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`)
	ext := lmtest.NewServer(busy, lmtest.Text("[[ ## a ## ]]\n7").WithUsage(40, 4))
	defer ext.Close()
	two := adapter.TwoStep{Extractor: adapter.WithMiddleware(ext.Client(), adapter.Cached(adapter.NewLRU(10))),
		ExtractorRequest: openai.ChatCompletionRequest{Model: "small"}}
	lm := adapter.WithMiddleware(main.Client(), adapter.Cached(adapter.NewLRU(10)))
	for i := range 2 {
		var done []adapter.LMCallDoneInfo
		tr := &adapter.Trace{LMCallDone: func(i adapter.LMCallDoneInfo) { done = append(done, i) }}
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseAdapter(two), adapter.UseTrace(tr),
			adapter.WithRetry(adapter.RetryPolicy{BaseDelay: time.Microsecond}))
		require.NoError(t, err)
		assert.Equal(t, 7, res.Outputs[0]["a"])
		traced, hits, retries := 0, 0, 0
		for _, e := range done {
			traced += e.Usage.TotalTokens
			if e.Cached {
				hits++
			}
			if e.Retry > 0 {
				retries++
			}
		}
		assert.Equal(t, res.Usage.TotalTokens, traced)
		assert.Equal(t, res.CacheHits, hits)
		assert.Equal(t, res.Retries, retries)
		assert.Len(t, done, res.Calls+res.Retries)
		if i == 0 {
			assert.Equal(t, 154, res.Usage.TotalTokens)
			assert.Equal(t, 1, res.Retries, "the extractor's retry")
		} else {
			assert.Zero(t, res.Usage.TotalTokens)
			assert.Equal(t, 2, res.CacheHits, "both calls answered by their caches")
		}
	}
}

// TestMiddlewareRequestsCounted: a request a middleware sends through the
// chain it was given is counted in Result.Requests and reported to the
// trace, for a Call and a Stream alike (newcomer review 4: a fallback
// middleware's second request was invisible to the counters and the
// trace). Beneath the trace (WithMiddleware) the LM call reports both
// requests; above it (UseMiddleware) each next is an LM call of its own.
func TestMiddlewareRequestsCounted(t *testing.T) {
	sig := mustParse(t, "q -> a")
	// fallback asks the backup model when the first request fails.
	fallback := func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			resp, err := next(ctx, req)
			if err != nil && !errors.Is(err, adapter.ErrDelivered) {
				req.Model = "backup"
				return next(ctx, req)
			}
			return resp, err
		}
	}
	for _, where := range []string{"lm", "call"} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%s middleware, stream %v", where, stream)
			srv := lmtest.NewServer(lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"down"}}`),
				lmtest.Text("[[ ## a ## ]]\nParis").WithUsage(10, 2))
			lm := adapter.LM(srv.Client())
			var done []adapter.LMCallDoneInfo
			opts := []adapter.CallOption{adapter.NoRetry(), adapter.WithRequest(openai.ChatCompletionRequest{Model: "main"}),
				adapter.UseTrace(&adapter.Trace{LMCallDone: func(i adapter.LMCallDoneInfo) { done = append(done, i) }})}
			if where == "lm" {
				lm = adapter.WithMiddleware(lm, fallback)
			} else {
				opts = append(opts, adapter.UseMiddleware(fallback))
			}
			var res *adapter.Result
			var err error
			if stream {
				var fields map[string]string
				fields, res, err = drain(adapter.Stream(t.Context(), lm.(adapter.StreamingLM), sig, nil, adapter.Values{"q": "x"}, opts...))
				assert.Equal(t, "Paris", fields["a"], name)
			} else {
				res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, opts...)
			}
			require.NoError(t, err, name)
			require.Len(t, srv.Requests(), 2, name)
			assert.Equal(t, "backup", srv.Requests()[1].Chat.Model, name)
			assert.Equal(t, 1, res.Calls, "%s: one call answered", name)
			assert.Equal(t, 2, res.Requests, "%s: two requests sent", name)
			traced := 0
			for _, e := range done {
				traced += e.Requests
			}
			assert.Equal(t, 2, traced, name)
			if where == "lm" {
				require.Len(t, done, 1, "%s: beneath the trace, one LM call", name)
				assert.NoError(t, done[0].Err, name)
			} else {
				require.Len(t, done, 2, "%s: above the trace, each next is an LM call", name)
				assert.Error(t, done[0].Err, name)
				assert.Equal(t, "backup", done[1].Request.Model, name)
			}
			srv.Close()
		}
	}
}
