package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// fallbackCall runs sig over lm as a Call or a Stream, with fast retries.
func fallbackCall(ctx context.Context, lm adapter.LM, stream bool, opts ...adapter.CallOption) (*adapter.Result, error) {
	opts = append([]adapter.CallOption{adapter.WithRetry(adapter.RetryPolicy{MaxRetries: 1, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})}, opts...)
	if stream {
		return streamResult(adapter.Stream(ctx, lm.(adapter.StreamingLM), signatureQA, nil, adapter.Values{"question": "q"}, opts...))
	}
	return adapter.Call(ctx, lm, signatureQA, nil, adapter.Values{"question": "q"}, opts...)
}

var signatureQA = func() *signature.Signature {
	s, err := signature.Parse("question -> answer")
	if err != nil {
		panic(err)
	}
	return s
}()

// lmCalls records what a trace saw: each LM call's model and error.
type lmCalls struct {
	mu     sync.Mutex
	models []string
	errs   []error
}

func (c *lmCalls) trace() *adapter.Trace {
	return &adapter.Trace{LMCallDone: func(i adapter.LMCallDoneInfo) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.models = append(c.models, i.Request.Model)
		c.errs = append(c.errs, i.Err)
	}}
}

// TestFallbackSecondModelAnswers: the first model is down (503 after the
// retry); the call moves to the second, which answers. Every request is
// counted (3: two to the first, one to the second, as the servers saw),
// traced with its model, and the result names the model that answered,
// its usage under it; Call and Stream agree.
func TestFallbackSecondModelAnswers(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			down := lmtest.NewServer()
			defer down.Close()
			down.Handle(func(lmtest.Request) lmtest.Reply {
				return lmtest.Error(503, `{"error":{"message":"overloaded","type":"server_error"}}`)
			})
			up := lmtest.NewServer()
			defer up.Close()
			up.Handle(func(r lmtest.Request) lmtest.Reply {
				return lmtest.Text("[[ ## answer ## ]]\nfrom "+r.Chat.Model+"\n\n[[ ## completed ## ]]").WithUsage(20, 5)
			})
			lm := adapter.Fallback(0,
				adapter.Target{LM: down.Client(), Model: "big"},
				adapter.Target{LM: up.Client(), Model: "small"})
			var seen lmCalls
			res, err := fallbackCall(adapter.WithTrace(t.Context(), seen.trace()), lm, stream)
			require.NoError(t, err)
			assert.Equal(t, "from small", res.Outputs[0]["answer"])
			assert.Equal(t, "small", res.Model, "the model that answered")
			assert.Equal(t, 1, res.ModelFallbacks)
			assert.Equal(t, 3, res.Requests, "two requests to the first model (a retry), one to the second")
			assert.Equal(t, 1, res.Retries)
			assert.Equal(t, 1, res.Calls)
			assert.Len(t, down.Requests(), 2)
			assert.Len(t, up.Requests(), 1)
			assert.Equal(t, "small", up.Requests()[0].Chat.Model)
			assert.Equal(t, []string{"big", "big", "small"}, seen.models, "each request traced with its model")
			require.Len(t, seen.errs, 3)
			assert.Error(t, seen.errs[0])
			assert.NoError(t, seen.errs[2])
			assert.Equal(t, 25, res.UsageByModel["small"].TotalTokens)
			assert.NotContains(t, res.UsageByModel, "big")
			require.Len(t, res.Notes, 1)
			assert.Contains(t, res.Notes[0], "model fallback: big failed (outage: ")
			assert.Contains(t, res.Notes[0], "the call moved to small")
		})
	}
}

// TestFallbackClasses: a call moves on only on the failures its
// FallbackOn names; a parse failure, a 400 and the caller's context never
// move it; every target failing gives the last one's error.
func TestFallbackClasses(t *testing.T) {
	contextWindow := lmtest.ContextLengthExceeded()
	rateLimit := lmtest.Error(429, `{"error":{"message":"slow down","type":"rate_limit"}}`)
	badRequest := lmtest.Error(400, `{"error":{"message":"bad","type":"invalid_request_error"}}`)
	refused := lmtest.Text("").WithRefusal("I can't help with that.")
	filtered := lmtest.Text("").WithFinish("content_filter")
	garbage := lmtest.Text("no markers, no JSON")
	cases := []struct {
		name  string
		on    adapter.FallbackOn
		first lmtest.Reply
		moves bool
	}{
		{"rate limit by default", 0, rateLimit, true},
		{"rate limit not named", adapter.OnOutage, rateLimit, false},
		{"context window not by default", 0, contextWindow, false},
		{"context window named", adapter.OnContextWindow, contextWindow, true},
		{"refusal not by default", 0, refused, false},
		{"refusal named", adapter.OnRefusal, refused, true},
		{"content filter named", adapter.OnRefusal, filtered, true},
		{"a 400 never", adapter.OnOutage | adapter.OnRateLimit | adapter.OnContextWindow | adapter.OnRefusal, badRequest, false},
		{"a parse failure never", adapter.OnOutage | adapter.OnRateLimit | adapter.OnContextWindow | adapter.OnRefusal, garbage, false},
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				first := lmtest.NewServer()
				defer first.Close()
				first.Handle(func(lmtest.Request) lmtest.Reply { return c.first })
				second := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nsecond"))
				defer second.Close()
				lm := adapter.Fallback(c.on, adapter.Target{LM: first.Client(), Model: "a"}, adapter.Target{LM: second.Client(), Model: "b"})
				res, err := fallbackCall(t.Context(), lm, stream)
				if c.moves {
					require.NoError(t, err)
					assert.Equal(t, "second", res.Outputs[0]["answer"])
					assert.Equal(t, 1, res.ModelFallbacks)
					assert.Len(t, second.Requests(), 1)
					return
				}
				assert.Empty(t, second.Requests(), "the second model is never asked")
				if err == nil {
					assert.Zero(t, res.ModelFallbacks)
					return
				}
				var lmErr *adapter.LMError
				var pe *adapter.ParseError
				var re *adapter.RefusalError
				assert.True(t, errors.As(err, &lmErr) || errors.As(err, &pe) || errors.As(err, &re), "%T %v", err, err)
			})
		}
	}

	t.Run("every target fails", func(t *testing.T) {
		a := lmtest.NewServer()
		defer a.Close()
		a.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Error(503, `{"error":{"message":"first down"}}`) })
		b := lmtest.NewServer()
		defer b.Close()
		b.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Error(502, `{"error":{"message":"second down"}}`) })
		res, err := fallbackCall(t.Context(), adapter.Fallback(0, adapter.Target{LM: a.Client(), Model: "a"}, adapter.Target{LM: b.Client(), Model: "b"}), false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "second down")
		assert.Equal(t, 4, res.Requests)
		assert.Equal(t, 1, res.ModelFallbacks)
		assert.Equal(t, http.StatusBadGateway, statusCode(err))
	})

	t.Run("the caller's context", func(t *testing.T) {
		a := lmtest.NewServer(lmtest.Text("x").Delay(time.Second))
		defer a.Close()
		b := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nsecond"))
		defer b.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := fallbackCall(ctx, adapter.Fallback(0, adapter.Target{LM: a.Client(), Model: "a"}, adapter.Target{LM: b.Client(), Model: "b"}), false)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Empty(t, b.Requests())
	})
}

func statusCode(err error) int {
	var api *openai.APIError
	if errors.As(err, &api) {
		return api.HTTPStatusCode
	}
	return 0
}

// TestFallbackStreamAfterFirstDelta: a stream whose text reached the
// caller does not move to another model when it fails: the caller has
// the text, then the error, and the second model is never asked.
func TestFallbackStreamAfterFirstDelta(t *testing.T) {
	a := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nthe first half of a long answer that").ChunkSize(8).Cut())
	defer a.Close()
	b := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nsecond"))
	defer b.Close()
	lm := adapter.Fallback(adapter.OnOutage, adapter.Target{LM: a.Client(), Model: "a"}, adapter.Target{LM: b.Client(), Model: "b"})
	var deltas strings.Builder
	var err error
	for c, e := range adapter.Stream(t.Context(), lm, signatureQA, nil, adapter.Values{"question": "q"}, adapter.NoRetry()) {
		if e != nil {
			err = e
			break
		}
		deltas.WriteString(c.Delta)
	}
	require.Error(t, err)
	assert.Contains(t, deltas.String(), "the first half")
	assert.Empty(t, b.Requests())
}

// TestFallbackCacheKeysOnAnsweringModel: a reply is stored under the
// target that gave it: the next call misses the first (down) model's key
// and hits the second's, without a request to it; the same client asked
// for the second model alone hits the entry too.
func TestFallbackCacheKeysOnAnsweringModel(t *testing.T) {
	down := lmtest.NewServer()
	defer down.Close()
	down.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Error(503, `{"error":{"message":"down"}}`) })
	up := lmtest.NewServer()
	defer up.Close()
	n := 0
	up.Handle(func(lmtest.Request) lmtest.Reply {
		n++
		return lmtest.Text(fmt.Sprintf("[[ ## answer ## ]]\nreply %d", n))
	})
	cache := adapter.NewLRU(100)
	upClient := up.Client()
	lm := adapter.Fallback(0, adapter.Target{LM: down.Client(), Model: "big"}, adapter.Target{LM: upClient, Model: "small"})
	for _, stream := range []bool{false, true, false} {
		res, err := fallbackCall(t.Context(), lm, stream, adapter.UseMiddleware(adapter.Cached(cache)))
		require.NoError(t, err)
		assert.Equal(t, "reply 1", res.Outputs[0]["answer"])
	}
	assert.Len(t, up.Requests(), 1, "the second model's entry answers the later calls")
	assert.Len(t, down.Requests(), 6, "the first model's key never holds the second's reply")

	res, err := adapter.Call(t.Context(), upClient, signatureQA, nil, adapter.Values{"question": "q"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "small"}), adapter.UseMiddleware(adapter.Cached(cache)))
	require.NoError(t, err)
	assert.Equal(t, "reply 1", res.Outputs[0]["answer"])
	assert.Equal(t, 1, res.CacheHits)
	assert.Len(t, up.Requests(), 1)
}

// TestFallbackCapabilities: a request is shaped for what every target
// supports: JSON with structured outputs only when both targets have them.
func TestFallbackCapabilities(t *testing.T) {
	for _, both := range []bool{false, true} {
		a := lmtest.NewServer(lmtest.Text(`{"answer": "x"}`))
		defer a.Close()
		b := lmtest.NewServer()
		defer b.Close()
		lm := adapter.Fallback(0,
			adapter.Target{LM: adapter.WithCapabilities(a.Client(), adapter.Capabilities{StructuredOutputs: true, JSONMode: true})},
			adapter.Target{LM: adapter.WithCapabilities(b.Client(), adapter.Capabilities{StructuredOutputs: both, JSONMode: true})})
		res, err := adapter.Call(t.Context(), lm, signatureQA, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.JSON{}))
		require.NoError(t, err)
		want := adapter.ModeJSONObject
		if both {
			want = adapter.ModeJSONSchema
		}
		assert.Equal(t, want, res.Mode)
	}
}
