package adapter_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// budgetServer answers every request with usage (prompt, completion) and
// counts the tokens it billed.
func budgetServer(t *testing.T, prompt, completion int) (*lmtest.Server, func() int) {
	srv := lmtest.NewServer()
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	billed := 0
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		mu.Lock()
		billed += prompt + completion
		mu.Unlock()
		return lmtest.Text("[[ ## answer ## ]]\nok").WithUsage(prompt, completion)
	})
	return srv, func() int { mu.Lock(); defer mu.Unlock(); return billed }
}

// TestBudgetStopsBeforeTheLimit: calls sharing a token budget run until
// the next request could pass it; that request is not sent, its error
// matches ErrBudget and says what is left; what the server billed never
// passes the limit. Call and Stream alike.
func TestBudgetStopsBeforeTheLimit(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv, billed := budgetServer(t, 300, 50)
			b, err := adapter.NewBudget(adapter.Limit{Tokens: 6000})
			require.NoError(t, err)
			req := adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", MaxTokens: 100})
			ok := 0
			var last error
			for range 100 {
				_, err := fallbackCall(t.Context(), srv.Client(), stream, req, adapter.WithBudget(b))
				if err != nil {
					last = err
					break
				}
				ok++
			}
			require.ErrorIs(t, last, adapter.ErrBudget)
			var be *adapter.BudgetError
			require.ErrorAs(t, last, &be)
			assert.Equal(t, "tokens", be.Unit)
			assert.Equal(t, 6000.0, be.Limit)
			assert.Equal(t, float64(350*ok), be.Spent, "settled from the usage each reply reported")
			assert.Greater(t, be.Spent+be.Need, be.Limit)
			assert.Contains(t, last.Error(), "over budget")
			assert.Len(t, srv.Requests(), ok, "the refused request was not sent")
			assert.LessOrEqual(t, billed(), 6000)
			assert.Greater(t, ok, 5, "the budget is not held by settled requests")
			assert.Equal(t, float64(billed()), b.Spent())
		})
	}
}

// TestBudgetConcurrent: many calls at once on one budget never spend past
// it together: each request holds its bound while it is in flight.
func TestBudgetConcurrent(t *testing.T) {
	srv, billed := budgetServer(t, 200, 100)
	b, err := adapter.NewBudget(adapter.Limit{Tokens: 10_000})
	require.NoError(t, err)
	req := adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", MaxTokens: 100})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := fallbackCall(t.Context(), srv.Client(), false, req, adapter.WithBudget(b))
			if errors.Is(err, adapter.ErrBudget) {
				mu.Lock()
				refused++
				mu.Unlock()
			} else {
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, billed(), 10_000)
	assert.Positive(t, refused)
	assert.Equal(t, 60-refused, len(srv.Requests()))
	assert.Equal(t, float64(billed()), b.Spent())
	assert.Equal(t, 10_000-b.Spent(), b.Remaining(), "nothing held once every call returned")
}

// TestBudgetCost: a budget in money prices the reservation at the
// request's model and settles at the answering model's price, cached
// prompt tokens at CachedInput.
func TestBudgetCost(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		return lmtest.Text("[[ ## answer ## ]]\nok").WithUsage(1000, 100)
	})
	prices := adapter.Prices{"m": {Input: 1, Output: 10}}
	b, err := adapter.NewBudget(adapter.Limit{Cost: 0.01, Prices: prices})
	require.NoError(t, err)
	res, err := fallbackCall(t.Context(), srv.Client(), false, adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", MaxTokens: 100}), adapter.WithBudget(b))
	require.NoError(t, err)
	cost, err := res.Cost(prices)
	require.NoError(t, err)
	assert.InDelta(t, 0.002, cost, 1e-12)
	assert.InDelta(t, cost, b.Spent(), 1e-12, "the budget and Result.Cost agree")

	_, err = fallbackCall(t.Context(), srv.Client(), false, adapter.WithRequest(openai.ChatCompletionRequest{Model: "unpriced", MaxTokens: 100}), adapter.WithBudget(b))
	require.Error(t, err)
	assert.NotErrorIs(t, err, adapter.ErrBudget)
	assert.Contains(t, err.Error(), `no price for model "unpriced"`)
	assert.Len(t, srv.Requests(), 1)
}

// TestBudgetFallbackAndRetries: every request of a call reserves, retries
// and a model fallback's included; a request refused with a status spends
// nothing.
func TestBudgetFallbackAndRetries(t *testing.T) {
	down := lmtest.NewServer()
	defer down.Close()
	down.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Error(503, `{"error":{"message":"down"}}`) })
	up, billed := budgetServer(t, 100, 10)
	b, err := adapter.NewBudget(adapter.Limit{Tokens: 100_000})
	require.NoError(t, err)
	lm := adapter.Fallback(0, adapter.Target{LM: down.Client(), Model: "a"}, adapter.Target{LM: up.Client(), Model: "b"})
	res, err := fallbackCall(t.Context(), lm, false, adapter.WithRequest(openai.ChatCompletionRequest{MaxTokens: 50}), adapter.WithBudget(b))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Requests)
	assert.Equal(t, float64(billed()), b.Spent(), "the 503s spent nothing")
	assert.Equal(t, 110.0, b.Spent())
}

// TestNewBudgetRefusesNothing: a limit that counts nothing, both units,
// or cost without prices is an error, not a budget that lets all through.
func TestNewBudgetRefusesNothing(t *testing.T) {
	for _, l := range []adapter.Limit{{}, {Tokens: -1}, {Tokens: 1, Cost: 1, Prices: adapter.Prices{"m": {}}}, {Cost: 1}} {
		_, err := adapter.NewBudget(l)
		assert.Error(t, err, "%+v", l)
	}
}

// TestMaxSpend: the reservation's bound: every byte of the prompt, the
// reply's max tokens per choice, DefaultReplyTokens when unset.
func TestMaxSpend(t *testing.T) {
	text := "héllo wörld, a prompt of some length"
	req := openai.ChatCompletionRequest{Model: "m", N: 3, MaxCompletionTokens: 20, MaxTokens: 99,
		Messages: []openai.ChatCompletionMessage{{Role: "system", Content: text}, {Role: "user", Content: text}}}
	s := adapter.MaxSpend(req)
	assert.Equal(t, "m", s.Model)
	assert.Equal(t, 60, s.CompletionTokens, "max_completion_tokens × n")
	assert.GreaterOrEqual(t, s.PromptTokens, 2*len(text))
	req.MaxCompletionTokens, req.MaxTokens, req.N = 0, 0, 0
	assert.Equal(t, adapter.DefaultReplyTokens, adapter.MaxSpend(req).CompletionTokens)
}

// TestBudgetStopsReask: a re-ask is one more request of the call: when
// the budget cannot hold it, it is not sent, and the call fails with an
// error matching ErrBudget, its Result saying why the re-ask was wanted
// (ReaskCause, the first reply's parse error). Call and Stream alike.
func TestBudgetStopsReask(t *testing.T) {
	sig, err := signature.Parse("question -> answer: int")
	require.NoError(t, err)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := lmtest.NewServer()
			defer srv.Close()
			var first atomic.Int64 // what the first request was billed
			srv.Handle(func(r lmtest.Request) lmtest.Reply {
				s := adapter.MaxSpend(r.Chat)
				first.Store(int64(s.PromptTokens + s.CompletionTokens))
				return lmtest.Text(reaskBad).WithUsage(s.PromptTokens, s.CompletionTokens)
			})
			// The first request fits; the re-ask, whose prompt holds the
			// first's and more, does not.
			req := openai.ChatCompletionRequest{Model: "m", MaxTokens: 50}
			opts := []adapter.CallOption{adapter.WithRequest(req), adapter.WithReask(1), adapter.NoFallback()}
			msgs, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"question": "q"})
			require.NoError(t, err)
			req.Messages = msgs
			s := adapter.MaxSpend(req)
			b, err := adapter.NewBudget(adapter.Limit{Tokens: int64(2 * (s.PromptTokens + s.CompletionTokens))})
			require.NoError(t, err)
			opts = append(opts, adapter.WithBudget(b))
			var res *adapter.Result
			if stream {
				for ch, e := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, opts...) {
					res, err = ch.Result, e
				}
			} else {
				res, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, opts...)
			}
			require.ErrorIs(t, err, adapter.ErrBudget)
			var lmErr *adapter.LMError
			assert.ErrorAs(t, err, &lmErr)
			require.NotNil(t, res)
			assert.Equal(t, 1, res.Reasks)
			var pe *adapter.ParseError
			assert.ErrorAs(t, res.ReaskCause, &pe, "why the re-ask was wanted")
			assert.Len(t, srv.Requests(), 1, "the re-ask was not sent")
			assert.Equal(t, 1, res.Requests)
			assert.Equal(t, float64(first.Load()), b.Spent(), "the first request's settled; the re-ask's none")
		})
	}
}
