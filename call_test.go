package adapter_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
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

func TestCallEndToEnd(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## reasoning ## ]]\n6 times 7.\n\n[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	sig := mustParse(t, "question -> reasoning, answer: int")

	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil,
		adapter.Values{"question": "What is 6 times 7?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini", Temperature: adapter.ZeroTemperature}))
	require.NoError(t, err)
	require.Len(t, res.Outputs, 1)
	assert.Equal(t, adapter.Values{"reasoning": "6 times 7.", "answer": 42}, res.Outputs[0])
	assert.Equal(t, "chat", res.Adapter)
	assert.Equal(t, 1, res.Calls)
	assert.Positive(t, res.Usage.TotalTokens)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	req := reqs[0].Chat
	assert.Equal(t, "gpt-4o-mini", req.Model)
	assert.Positive(t, req.Temperature, "a zero temperature is sent as the smallest float")
	want, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"question": "What is 6 times 7?"})
	require.NoError(t, err)
	require.Len(t, req.Messages, len(want))
	for i := range want {
		assert.Equal(t, want[i].Role, req.Messages[i].Role)
		assert.Equal(t, want[i].Content, req.Messages[i].Content)
	}
}

func TestCallChoices(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Choices("[[ ## answer ## ]]\n1", "[[ ## answer ## ]]\n2", "[[ ## answer ## ]]\n3"))
	defer srv.Close()
	res, err := adapter.Call(context.Background(), srv.Client(), mustParse(t, "q -> answer: int"), nil,
		adapter.Values{"q": "x"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", N: 3}))
	require.NoError(t, err)
	require.Len(t, res.Outputs, 3)
	for i, o := range res.Outputs {
		assert.Equal(t, i+1, o["answer"])
	}
	assert.Equal(t, 3, srv.Requests()[0].Chat.N)
}

func TestCallInputErrors(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	sig := mustParse(t, "question, context: Optional[str] -> answer")
	_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q", "extra": 1})
	var ie *adapter.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "extra", ie.Field)
	assert.ErrorIs(t, err, adapter.ErrUnknownInput)

	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"context": "c"})
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "question", ie.Field)
	assert.ErrorIs(t, err, adapter.ErrMissingInput)

	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q", "answer": "a"})
	assert.ErrorIs(t, err, adapter.ErrUnknownInput, "an output is not an input")
	assert.Empty(t, srv.Requests(), "no LM call is made for bad inputs")
}

func TestCallTruncated(t *testing.T) {
	// Corpus chat-076: a complete-looking text cut by the token limit.
	text := "[[ ## answer ## ]]\nThe three largest cities in Australia by population are Sydney, Melbourne and"
	srv := lmtest.NewServer(lmtest.Text(text).WithFinish("length"))
	defer srv.Close()
	res, err := adapter.Call(context.Background(), srv.Client(), mustParse(t, "question -> answer"), nil, adapter.Values{"question": "q"})
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, adapter.ErrTruncated)
	assert.Equal(t, text, pe.Completion)
	assert.Equal(t, adapter.Values{"answer": "The three largest cities in Australia by population are Sydney, Melbourne and"}, pe.Partial)
	assert.Equal(t, 1, res.Calls, "a truncated reply is not retried by a fallback")
	assert.Len(t, srv.Requests(), 1)
}

// TestCallTruncatedEveryAdapter: a reply cut by the token limit is
// ErrTruncated for every adapter, even when its text reads as complete,
// and costs no fallback call.
func TestCallTruncatedEveryAdapter(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	for _, c := range []struct {
		a     adapter.Adapter
		reply string
	}{
		{adapter.Chat{}, "[[ ## answer ## ]]\nParis"},
		{adapter.JSON{}, `{"answer": "Paris"}`},
		{adapter.XML{}, "<answer>Paris</answer>"},
		{adapter.BAML{}, `{"answer": "Paris"}`},
	} {
		srv := lmtest.NewServer(lmtest.Text(c.reply).WithFinish("length"))
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(c.a))
		srv.Close()
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe, c.a.Name())
		assert.ErrorIs(t, err, adapter.ErrTruncated, c.a.Name())
		assert.Equal(t, c.reply, pe.Completion, c.a.Name())
		assert.Equal(t, 1, res.Calls, c.a.Name())
	}
	// TwoStep: the main LM's cut text never reaches the extractor.
	main := lmtest.NewServer(lmtest.Text("The answer is Par").WithFinish("length"))
	defer main.Close()
	ext := lmtest.NewServer()
	defer ext.Close()
	_, err := adapter.Call(context.Background(), main.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.TwoStep{Extractor: ext.Client()}))
	assert.ErrorIs(t, err, adapter.ErrTruncated)
	assert.Empty(t, ext.Requests())
}

func TestCallEmptyResponse(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(""))
	defer srv.Close()
	_, err := adapter.Call(context.Background(), srv.Client(), mustParse(t, "q -> a"), nil, adapter.Values{"q": "x"}, adapter.NoFallback())
	assert.ErrorIs(t, err, adapter.ErrEmptyResponse)
	var pe *adapter.ParseError
	assert.ErrorAs(t, err, &pe)
}

func TestCallParseError(t *testing.T) {
	reply := "[[ ## reasoning ## ]]\nthink\n[[ ## answer ## ]]\na lot\n[[ ## completed ## ]]"
	srv := lmtest.NewServer(lmtest.Text(reply))
	defer srv.Close()
	_, err := adapter.Call(context.Background(), srv.Client(), mustParse(t, "q -> reasoning, answer: int"), nil,
		adapter.Values{"q": "x"}, adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NoFallback: true}}))
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "answer", pe.Field)
	assert.Equal(t, reply, pe.Completion)
	assert.Equal(t, adapter.Values{"reasoning": "think"}, pe.Partial)
	assert.Contains(t, err.Error(), `field "answer"`)
}

func TestCallLMErrors(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	t.Run("context length", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.ContextLengthExceeded())
		defer srv.Close()
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in)
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		assert.ErrorIs(t, err, adapter.ErrContextWindow)
		var api *openai.APIError
		require.ErrorAs(t, err, &api, "go-openai's error stays reachable")
		assert.Equal(t, http.StatusBadRequest, api.HTTPStatusCode)
		assert.Equal(t, 1, res.Calls)
		assert.Len(t, srv.Requests(), 1, "never retried by a fallback")
	})
	t.Run("WithTimeout", func(t *testing.T) {
		srv := lmtest.NewServer()
		defer srv.Close()
		srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nlate").Delay(10 * time.Second) })
		_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, adapter.WithTimeout(50*time.Millisecond))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorContains(t, err, "WithTimeout(50ms) ran out", "the error names the option that ran out")
		_, _, serr := drain(adapter.Stream(context.Background(), srv.Client(), sig, nil, in, adapter.WithTimeout(50*time.Millisecond)))
		assert.ErrorContains(t, serr, "WithTimeout(50ms) ran out")

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = adapter.Call(ctx, srv.Client(), sig, nil, in, adapter.WithTimeout(time.Minute))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotContains(t, err.Error(), "WithTimeout", "the caller's own deadline is not the option's")
	})
	t.Run("server error", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"boom","type":"server_error"}}`))
		defer srv.Close()
		_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, adapter.NoRetry())
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		assert.NotErrorIs(t, err, adapter.ErrContextWindow)
		assert.NotErrorIs(t, err, adapter.ErrRateLimited)
		var pe *adapter.ParseError
		assert.False(t, errors.As(err, &pe), "an LM error is never a parse error")
	})
	t.Run("cancelled", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nlate").Delay(10 * time.Second))
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := adapter.Call(ctx, srv.Client(), sig, nil, in)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var le *adapter.LMError
		assert.ErrorAs(t, err, &le)
		assert.Len(t, srv.Requests(), 1, "never retried by a fallback")
	})
	t.Run("rate limited", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
		defer srv.Close()
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, adapter.UseAdapter(adapter.JSON{}), adapter.NoRetry(),
			adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"}))
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		var api *openai.APIError
		require.ErrorAs(t, err, &api)
		assert.Equal(t, http.StatusTooManyRequests, api.HTTPStatusCode)
		assert.ErrorIs(t, err, adapter.ErrRateLimited)
		assert.NotErrorIs(t, err, adapter.ErrContextWindow)
		assert.Len(t, srv.Requests(), 1, "a 429 is not a schema rejection and never triggers a fallback")
		assert.Equal(t, 1, res.Calls)

		// After the call's retries too, and for a stream.
		srv2 := lmtest.NewServer()
		defer srv2.Close()
		srv2.Handle(func(lmtest.Request) lmtest.Reply {
			return lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
		})
		fast := adapter.WithRetry(adapter.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})
		_, err = adapter.Call(context.Background(), srv2.Client(), sig, nil, in, fast)
		assert.ErrorIs(t, err, adapter.ErrRateLimited)
		assert.ErrorContains(t, err, "3 attempts")
		_, _, serr := drain(adapter.Stream(context.Background(), srv2.Client(), sig, nil, in, fast))
		assert.ErrorIs(t, serr, adapter.ErrRateLimited)
	})
}

// fallbackAdapter wraps Chat with a scripted fallback, to test the
// pipeline's fallback rules independently of the JSON adapter.
type fallbackAdapter struct {
	adapter.Chat
	next adapter.Adapter
}

func (f fallbackAdapter) Fallback() adapter.Adapter { return f.next }

func TestCallFallback(t *testing.T) {
	sig := mustParse(t, "q -> answer: int")
	srv := lmtest.NewServer(lmtest.Text("I think it is forty-two."), lmtest.Text("[[ ## answer ## ]]\n42"))
	defer srv.Close()
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"q": "x"},
		adapter.UseAdapter(fallbackAdapter{next: namedChat{"other"}}))
	require.NoError(t, err)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	assert.Equal(t, "other", res.Adapter)
	assert.Equal(t, 2, res.Calls)
	assert.Len(t, srv.Requests(), 2)
	var cause *adapter.ParseError
	require.ErrorAs(t, res.FallbackCause, &cause, "the result says why the fallback ran")
	assert.ErrorIs(t, cause, adapter.ErrMissingField)
	assert.Equal(t, "I think it is forty-two.", cause.Completion)

	// Turned off per call.
	srv.Push(lmtest.Text("no markers"))
	res, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"q": "x"},
		adapter.UseAdapter(fallbackAdapter{next: namedChat{"other"}}), adapter.NoFallback())
	assert.ErrorIs(t, err, adapter.ErrMissingField)
	assert.Equal(t, 1, res.Calls)
}

type namedChat struct{ name string }

func (n namedChat) Name() string { return n.name }
func (n namedChat) Format(sig *signature.Signature, demos []adapter.Values, in adapter.Values) ([]openai.ChatCompletionMessage, error) {
	return adapter.Chat{}.Format(sig, demos, in)
}
func (n namedChat) Parse(sig *signature.Signature, completion string) (adapter.Values, error) {
	return adapter.Chat{}.Parse(sig, completion)
}

func TestAdapterResolution(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nok") })
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	run := func(ctx context.Context, opts ...adapter.CallOption) string {
		res, err := adapter.Call(ctx, srv.Client(), sig, nil, in, opts...)
		require.NoError(t, err)
		return res.Adapter
	}
	ctx := adapter.WithAdapter(context.Background(), namedChat{"ctx"})
	assert.Equal(t, "chat", run(context.Background()))
	assert.Equal(t, "module", run(context.Background(), adapter.Defaults(adapter.UseAdapter(namedChat{"module"}))))
	assert.Equal(t, "ctx", run(ctx, adapter.Defaults(adapter.UseAdapter(namedChat{"module"}))))
	assert.Equal(t, "call", run(ctx, adapter.UseAdapter(namedChat{"call"}), adapter.Defaults(adapter.UseAdapter(namedChat{"module"}))))

	// Concurrent calls with different adapters do not interfere.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"a", "b"}[i%2]
			res, err := adapter.Call(adapter.WithAdapter(context.Background(), namedChat{name}), srv.Client(), sig, nil, in)
			if assert.NoError(t, err) {
				assert.Equal(t, name, res.Adapter)
			}
		}()
	}
	wg.Wait()
}

func TestCallInputDefaults(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
	defer srv.Close()
	sig, err := signature.New("", []signature.Field{{Name: "q"}, {Name: "k", Type: reflect.TypeFor[int](), Default: 3, HasDefault: true}},
		[]signature.Field{{Name: "a"}})
	require.NoError(t, err)
	in := adapter.Values{"q": "x"}
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, in)
	require.NoError(t, err)
	msgs := srv.Requests()[0].Chat.Messages
	assert.Contains(t, msgs[len(msgs)-1].Content, "[[ ## k ## ]]\n3", "the input's default is sent")
	assert.Equal(t, adapter.Values{"q": "x"}, in, "the caller's map is not changed")
}

// fastRetry keeps retry tests quick.
var fastRetry = adapter.WithRetry(adapter.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})

func TestRetries(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	t.Run("429 and 500 are retried", func(t *testing.T) {
		srv := lmtest.NewServer(
			lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit"}}`),
			lmtest.Error(http.StatusBadGateway, `{"error":{"message":"bad gateway","type":"server_error"}}`),
			lmtest.Text("[[ ## a ## ]]\nok"))
		defer srv.Close()
		var rec recorder
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, fastRetry, adapter.UseTrace(rec.trace()))
		require.NoError(t, err)
		assert.Equal(t, "ok", res.Outputs[0]["a"])
		assert.Equal(t, 2, res.Retries)
		assert.Len(t, srv.Requests(), 3)
		assert.Equal(t, []string{"lm done chat#1 tokens>0=false err=true", "lm done chat#1 tokens>0=false err=true", "lm done chat#1 tokens>0=true err=false"},
			filter(rec.events, "lm done"), "the trace sees every attempt")
	})
	t.Run("bounded", func(t *testing.T) {
		boom := lmtest.Error(http.StatusInternalServerError, `{"error":{"message":"boom","type":"server_error"}}`)
		srv := lmtest.NewServer(boom, boom, boom, boom)
		defer srv.Close()
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, fastRetry)
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, 2, res.Retries)
		assert.Len(t, srv.Requests(), 3)
	})
	t.Run("never other 4xx or the context window", func(t *testing.T) {
		for _, reply := range []lmtest.Reply{lmtest.Error(http.StatusBadRequest, `{"error":{"message":"bad","type":"invalid_request_error"}}`), lmtest.ContextLengthExceeded()} {
			srv := lmtest.NewServer(reply)
			_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, fastRetry)
			assert.Error(t, err)
			assert.Len(t, srv.Requests(), 1)
			srv.Close()
		}
	})
	t.Run("off", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`))
		defer srv.Close()
		_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, adapter.NoRetry())
		assert.Error(t, err)
		assert.Len(t, srv.Requests(), 1)
	})
}

// TestRetryMiddleware: Retry on an LM (WithMiddleware) under a call
// without the pipeline's retries (NoRetry) retries the LM's 503s within
// its own policy, and every repeated request is counted in Result.Retries
// and Result.Requests as the pipeline's are. A policy of its own per LM is
// what it is for: a FallbackLM target that moves on after one retry, not
// after the call's.
func TestRetryMiddleware(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	unavailable := lmtest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded","type":"server_error"}}`)
	fast := adapter.RetryPolicy{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	t.Run("retried", func(t *testing.T) {
		srv := lmtest.NewServer(unavailable, unavailable, lmtest.Text("[[ ## a ## ]]\nok"))
		defer srv.Close()
		var done []adapter.LMCallDoneInfo
		trace := &adapter.Trace{LMCallDone: func(i adapter.LMCallDoneInfo) { done = append(done, i) }}
		lm := adapter.WithMiddleware(srv.Client(), adapter.Retry(fast))
		res, err := adapter.Call(t.Context(), lm, sig, nil, in, adapter.NoRetry(), adapter.UseTrace(trace))
		require.NoError(t, err)
		assert.Equal(t, "ok", res.Outputs[0]["a"])
		assert.Len(t, srv.Requests(), 3, "two retries, then the answer")
		assert.Equal(t, 1, res.Calls)
		assert.Equal(t, 2, res.Retries)
		assert.Equal(t, 3, res.Requests)
		assert.Positive(t, res.RetryWait)
		require.Len(t, done, 1, "beneath the trace (WithMiddleware): one LM call…")
		assert.Equal(t, 3, done[0].Requests, "…that sent three requests")
	})
	t.Run("bounded", func(t *testing.T) {
		srv := lmtest.NewServer(unavailable, unavailable, unavailable, unavailable)
		defer srv.Close()
		lm := adapter.WithMiddleware(srv.Client(), adapter.Retry(fast))
		res, err := adapter.Call(t.Context(), lm, sig, nil, in, adapter.NoRetry())
		var le *adapter.LMError
		require.ErrorAs(t, err, &le)
		assert.ErrorContains(t, err, "gave up after 3 attempts")
		assert.Len(t, srv.Requests(), 3)
		assert.Equal(t, 2, res.Retries)
		assert.Equal(t, 3, res.Requests)
	})
	t.Run("a fallback target's own policy", func(t *testing.T) {
		primary := lmtest.NewServer(unavailable, unavailable, unavailable)
		defer primary.Close()
		secondary := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
		defer secondary.Close()
		once := fast
		once.MaxRetries = 1
		lm := adapter.Fallback(0,
			adapter.Target{LM: adapter.WithMiddleware(primary.Client(), adapter.Retry(once)), Model: "big"},
			adapter.Target{LM: secondary.Client(), Model: "small"})
		res, err := adapter.Call(t.Context(), lm, sig, nil, in, adapter.NoRetry())
		require.NoError(t, err)
		assert.Equal(t, "ok", res.Outputs[0]["a"])
		assert.Len(t, primary.Requests(), 2, "one retry on the primary, then the fallback")
		assert.Len(t, secondary.Requests(), 1)
		assert.Equal(t, 1, res.Retries)
		assert.Equal(t, 1, res.ModelFallbacks)
		assert.Equal(t, 3, res.Requests)
	})
}

func TestMiddlewareAndCache(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\none"), lmtest.Text("[[ ## a ## ]]\ntwo"))
	defer srv.Close()
	var order []string
	tag := func(name string) adapter.Middleware {
		return func(next adapter.Invoker) adapter.Invoker {
			return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
				order = append(order, name)
				return next(ctx, req)
			}
		}
	}
	cache := adapter.NewLRU(10)
	lm := adapter.WithMiddleware(srv.Client(), tag("lm"), adapter.Cached(cache))
	res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"q": "x"}, adapter.UseMiddleware(tag("call1"), tag("call2")))
	require.NoError(t, err)
	assert.Equal(t, "one", res.Outputs[0]["a"])
	assert.Equal(t, []string{"call1", "call2", "lm"}, order, "call middleware outermost, first first")

	res, err = adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, "one", res.Outputs[0]["a"], "the same request is served from the cache")
	assert.Equal(t, 1, res.CacheHits)
	assert.Len(t, srv.Requests(), 1)

	res, err = adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"q": "y"})
	require.NoError(t, err)
	assert.Equal(t, "two", res.Outputs[0]["a"], "another request is not")
	assert.Zero(t, res.CacheHits)
}

func TestRefusal(t *testing.T) {
	sig := mustParse(t, "q -> a")
	for _, reply := range []lmtest.Reply{lmtest.Text("").WithRefusal("I can't help with that."), lmtest.Text("partial").WithFinish("content_filter")} {
		srv := lmtest.NewServer(reply)
		res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"q": "x"})
		var re *adapter.RefusalError
		require.ErrorAs(t, err, &re)
		assert.ErrorIs(t, err, adapter.ErrRefusal)
		var pe *adapter.ParseError
		assert.False(t, errors.As(err, &pe), "a refusal is not a parse error")
		assert.Equal(t, 1, res.Calls, "and never triggers a fallback")
		srv.Close()
	}
}

func TestConstraintsEnforced(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{
		{Name: "score", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: signature.GE, Value: 0}, {Op: signature.LE, Value: 10}}},
		{Name: "tags", Type: reflect.TypeFor[[]string](), Constraints: []signature.Constraint{{Op: signature.MaxLength, Value: 2}}},
	})
	require.NoError(t, err)
	srv := lmtest.NewServer(lmtest.Text("[[ ## score ## ]]\n11\n\n[[ ## tags ## ]]\n[\"a\"]"), lmtest.Text("[[ ## score ## ]]\n7\n\n[[ ## tags ## ]]\n[\"a\", \"b\"]"))
	defer srv.Close()
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.NoFallback())
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "score", pe.Field)
	assert.ErrorIs(t, err, adapter.ErrConstraint)
	assert.Contains(t, err.Error(), "11 is not less than or equal to 10")

	// A length bound names the length, not the value.
	long := strings.Repeat("word ", 2000)
	srv2 := lmtest.NewServer(lmtest.Text("[[ ## score ## ]]\n1\n\n[[ ## tags ## ]]\n[\"" + long + "\", \"b\", \"c\"]"))
	defer srv2.Close()
	_, err = adapter.Call(context.Background(), srv2.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.NoFallback())
	require.ErrorIs(t, err, adapter.ErrConstraint)
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "tags", pe.Field)
	assert.Contains(t, pe.Err.Error(), "its length 3 is over the maximum length 2")
	assert.NotContains(t, pe.Err.Error(), "word word")
	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, 7, res.Outputs[0]["score"])
}

func TestResultMetadata(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\nok"))
	defer srv.Close()
	res, err := adapter.Call(context.Background(), srv.Client(), mustParse(t, "q -> a"), nil, adapter.Values{"q": "x"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-test"}), adapter.WithTimeout(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "gpt-test", res.Model)
	assert.Nil(t, res.Logprobs)
}

type qa struct {
	Question string `json:"question"`
	Answer   int64  `json:"answer"`
}

func TestDecodeAndValuesOf(t *testing.T) {
	got, err := adapter.Decode[qa](adapter.Values{"question": "q", "answer": 42, "extra": true})
	require.NoError(t, err)
	assert.Equal(t, qa{"q", 42}, got)
	_, err = adapter.Decode[qa](adapter.Values{"answer": "42"})
	assert.ErrorContains(t, err, `"answer"`)
	vals, err := adapter.ValuesOf(qa{"q", 1})
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"question": "q", "answer": int64(1)}, vals)
}

func TestBatch(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		q := r.Chat.Messages[len(r.Chat.Messages)-1].Content
		if strings.Contains(q, "bad") {
			return lmtest.Text("[[ ## b ## ]]\nno field a")
		}
		return lmtest.Text("[[ ## a ## ]]\n" + strings.Fields(q)[5])
	})
	sig := mustParse(t, "q -> a")
	inputs := []adapter.Values{{"q": "one"}, {"q": "bad"}, {"q": "three"}, {"q": "four"}}
	out := adapter.Batch(context.Background(), srv.Client(), sig, nil, inputs, 2, adapter.NoFallback())
	require.Len(t, out, 4)
	assert.Equal(t, "one", out[0].Result.Outputs[0]["a"])
	assert.Error(t, out[1].Err)
	assert.Equal(t, "three", out[2].Result.Outputs[0]["a"])
	assert.Equal(t, "four", out[3].Result.Outputs[0]["a"])

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out = adapter.Batch(ctx, srv.Client(), sig, nil, inputs, 1)
	for _, r := range out {
		assert.ErrorIs(t, r.Err, context.Canceled)
	}
}

// TestBatchPanic: Batch runs the calls on goroutines of its own, where no
// caller could recover a panic: a panic in one input's call (here a
// middleware's, for one input) is that input's error, a *PanicError, and the
// others answer. Before, it crashed the process.
func TestBatchPanic(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nok") })
	lm := adapter.WithMiddleware(srv.Client(), func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			if strings.Contains(req.Messages[len(req.Messages)-1].Content, "boom") {
				panic("the LM broke")
			}
			return next(ctx, req)
		}
	})
	sig := mustParse(t, "q -> a")
	inputs := []adapter.Values{{"q": "one"}, {"q": "boom"}, {"q": "three"}}
	out := adapter.Batch(t.Context(), lm, sig, nil, inputs, 3)
	require.Len(t, out, 3)
	var pe *adapter.PanicError
	require.ErrorAs(t, out[1].Err, &pe)
	assert.Equal(t, "the LM broke", pe.Value)
	assert.Contains(t, string(pe.Stack), "TestBatchPanic")
	for _, i := range []int{0, 2} {
		require.NoError(t, out[i].Err)
		assert.Equal(t, "ok", out[i].Result.Outputs[0]["a"])
	}
}

func filter(events []string, prefix string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}
