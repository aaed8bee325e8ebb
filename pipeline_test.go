package adapter_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// drain runs a stream to its end and returns its deltas, its Done chunk's
// Result and its error.
func drain(seq func(func(adapter.Chunk, error) bool)) (fields map[string]string, res *adapter.Result, err error) {
	fields = map[string]string{}
	for ch, e := range seq {
		if e != nil {
			return fields, nil, e
		}
		fields[ch.Field] += ch.Delta
		if ch.Done {
			res = ch.Result
		}
	}
	return fields, res, nil
}

// TestNilArguments: nil or zero arguments are errors, never panics, for
// Call and Stream alike.
func TestNilArguments(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	var nilClient *openai.Client
	cases := map[string]struct {
		ctx context.Context
		lm  adapter.StreamingLM
		sig *signature.Signature
	}{
		"nil LM":             {t.Context(), nil, sig},
		"nil *openai.Client": {t.Context(), nilClient, sig},
		"nil context":        {nil, srv.Client(), sig},
		"nil signature":      {t.Context(), srv.Client(), nil},
		"no output fields":   {t.Context(), srv.Client(), mustParse(t, "q -> ")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var lm adapter.LM
			if c.lm != nil {
				lm = c.lm
			}
			res, err := adapter.Call(c.ctx, lm, c.sig, nil, in)
			require.Error(t, err)
			assert.Nil(t, res)
			_, _, serr := drain(adapter.Stream(c.ctx, c.lm, c.sig, nil, in))
			require.Error(t, serr)
			assert.Equal(t, err.Error(), serr.Error())
			for _, b := range adapter.Batch(c.ctx, lm, c.sig, nil, []adapter.Values{in, in}, 2) {
				assert.EqualError(t, b.Err, err.Error())
			}
		})
	}
	assert.Empty(t, srv.Requests())
}

// TestRetryAfterPolicy: the server's Retry-After (seen through the
// HTTPDoer wrapper) is waited for when it fits the policy; beyond the
// policy's MaxDelay, the call's deadline or a time.Duration, the call gives
// up at once with an error stating the wait, and no retry is counted.
func TestRetryAfterPolicy(t *testing.T) {
	sig := mustParse(t, "q -> a")
	tooMany := func(after string) lmtest.Reply {
		return lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit"}}`).WithHeader("Retry-After", after)
	}
	ok := lmtest.Text("[[ ## a ## ]]\nok")
	client := func(srv *lmtest.Server) *openai.Client {
		cfg := srv.Config()
		cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
		return openai.NewClientWithConfig(cfg)
	}
	t.Run("honoured", func(t *testing.T) {
		srv := lmtest.NewServer(tooMany("1"), ok)
		defer srv.Close()
		res, err := adapter.Call(t.Context(), client(srv), sig, nil, adapter.Values{"q": "x"},
			adapter.WithRetry(adapter.RetryPolicy{MaxRetries: 1, BaseDelay: time.Microsecond, MaxDelay: 5 * time.Second}))
		require.NoError(t, err)
		assert.Equal(t, 1, res.Retries)
		assert.Equal(t, time.Second, res.RetryWait, "the server's Retry-After, not the 1 µs backoff")
	})
	for _, c := range []struct {
		name, after string
		opts        []adapter.CallOption
		says        string
	}{
		{"beyond MaxDelay", "86400", nil, "retry after 24h0m0s, more than the retry policy's MaxDelay 20s"},
		{"overflowing", "18446744074", nil, "more than the retry policy's MaxDelay"},
		{"past the deadline", "10", []adapter.CallOption{adapter.WithTimeout(2 * time.Second),
			adapter.WithRetry(adapter.RetryPolicy{MaxDelay: time.Minute})}, "more than the"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := lmtest.NewServer(tooMany(c.after), ok)
			defer srv.Close()
			start := time.Now()
			res, err := adapter.Call(t.Context(), client(srv), sig, nil, adapter.Values{"q": "x"}, c.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.says)
			assert.Less(t, time.Since(start), time.Second, "no sleeping towards a wait that will not fit")
			assert.Zero(t, res.Retries, "no retry was sent")
			assert.Zero(t, res.RetryWait)
			assert.Len(t, srv.Requests(), 1)
		})
	}
}

// TestRetriesExhaustedSaySo: giving up after retries, the error says how
// many attempts over how long.
func TestRetriesExhaustedSaySo(t *testing.T) {
	boom := lmtest.Error(http.StatusServiceUnavailable, `{"error":{"message":"overloaded"}}`)
	srv := lmtest.NewServer(boom, boom, boom)
	defer srv.Close()
	res, err := adapter.Call(t.Context(), srv.Client(), mustParse(t, "q -> a"), nil, adapter.Values{"q": "x"}, fast)
	require.Error(t, err)
	assert.Regexp(t, `gave up after 3 attempts over [0-9.]+m?s`, err.Error())
	assert.Equal(t, 2, res.Retries)
}

// TestStreamRetriedUntilDelivered: a stream that fails before anything
// reached the caller is retried (a 429 on opening it); one that fails
// after text reached the caller is not.
func TestStreamRetriedUntilDelivered(t *testing.T) {
	sig := mustParse(t, "q -> a")
	in := adapter.Values{"q": "x"}
	t.Run("429 on opening", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`), lmtest.Text("[[ ## a ## ]]\nok").ChunkSize(2))
		defer srv.Close()
		fields, res, err := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, in, fast))
		require.NoError(t, err)
		assert.Equal(t, "ok", fields["a"])
		assert.Equal(t, 1, res.Retries)
		assert.Len(t, srv.Requests(), 2)
	})
	t.Run("broken after delivery", func(t *testing.T) {
		// A stream whose connection breaks mid-way: go-openai reports an
		// unexpected EOF inside an event.
		body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"[[ ## a ## ]]\\nhal\"}}]}\n\ndata: {\"choices\":[{\"ind"
		srv := lmtest.NewServer(lmtest.Raw(200, http.Header{"Content-Type": {"text/event-stream"}}, []byte(body)), lmtest.Text("[[ ## a ## ]]\nagain"))
		defer srv.Close()
		fields, _, err := drain(adapter.Stream(t.Context(), srv.Client(), sig, nil, in, fast))
		require.Error(t, err)
		assert.Equal(t, "hal", fields["a"])
		assert.Len(t, srv.Requests(), 1, "text reached the caller: not retried")
	})
}

// TestStreamThroughMiddleware: a stream's request goes through the call's
// and the LM's middlewares, and a cache hit (from a Call or a Stream) is
// replayed to the stream as deltas, with no request and no usage.
func TestStreamThroughMiddleware(t *testing.T) {
	sig := mustParse(t, "q -> answer, n: int")
	reply := "[[ ## answer ## ]]\nParis is the capital.\n\n[[ ## n ## ]]\n3\n\n[[ ## completed ## ]]"
	srv := lmtest.NewServer(lmtest.Text(reply).ChunkSize(4).WithUsage(50, 10))
	defer srv.Close()
	var seen []bool
	spy := func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			seen = append(seen, req.Stream)
			return next(ctx, req)
		}
	}
	cache := adapter.NewLRU(10)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
	in := adapter.Values{"q": "x"}

	fields, res, err := drain(adapter.Stream(t.Context(), lm.(adapter.StreamingLM), sig, nil, in, adapter.UseMiddleware(spy)))
	require.NoError(t, err)
	assert.Equal(t, []bool{true}, seen, "the call's middleware sees the stream request")
	assert.Equal(t, "Paris is the capital.", fields["answer"])
	assert.Equal(t, 60, res.Usage.TotalTokens)

	fields, res, err = drain(adapter.Stream(t.Context(), lm.(adapter.StreamingLM), sig, nil, in))
	require.NoError(t, err)
	assert.Equal(t, "Paris is the capital.", fields["answer"], "the cache hit is replayed as deltas")
	assert.Equal(t, "3", fields["n"])
	assert.Equal(t, 1, res.CacheHits)
	assert.Zero(t, res.Usage.TotalTokens, "a cache hit spends no tokens")
	assert.Equal(t, adapter.Values{"answer": "Paris is the capital.", "n": 3}, res.Outputs[0])

	cres, err := adapter.Call(t.Context(), lm, sig, nil, in)
	require.NoError(t, err)
	assert.Equal(t, 1, cres.CacheHits, "Call and Stream share entries")
	assert.Equal(t, res.Outputs, cres.Outputs)
	assert.Len(t, srv.Requests(), 1)
}

// TestCacheSeparatesLMs: one cache shared by two LMs (two tenants with
// their own endpoint and key) never serves one's reply to the other.
func TestCacheSeparatesLMs(t *testing.T) {
	sig := mustParse(t, "q -> a")
	a := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\ntenant A's answer"))
	defer a.Close()
	b := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\ntenant B's answer"))
	defer b.Close()
	shared := adapter.NewLRU(100)
	client := func(srv *lmtest.Server, key string) adapter.LM {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = srv.URL()
		return adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(shared))
	}
	ra, err := adapter.Call(t.Context(), client(a, "sk-A"), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	rb, err := adapter.Call(t.Context(), client(b, "sk-B"), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, "tenant A's answer", ra.Outputs[0]["a"])
	assert.Equal(t, "tenant B's answer", rb.Outputs[0]["a"])
	assert.Len(t, b.Requests(), 1, "B's server was called")

	// The same endpoint with another key is another LM too; the same
	// endpoint and key is the same LM, whatever the client value.
	a.Push(lmtest.Text("[[ ## a ## ]]\nfresh"))
	rk, err := adapter.Call(t.Context(), client(a, "sk-other"), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, "fresh", rk.Outputs[0]["a"])
	rs, err := adapter.Call(t.Context(), client(a, "sk-A"), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, 1, rs.CacheHits)
	assert.Equal(t, "tenant A's answer", rs.Outputs[0]["a"])
}

// identified is an in-process LM that names itself.
type identified struct {
	id    string
	calls atomic.Int32
}

func (l *identified) LMIdentity() string { return l.id }

func (l *identified) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	n := l.calls.Add(1)
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop",
		Message: openai.ChatCompletionMessage{Content: fmt.Sprintf("[[ ## a ## ]]\n%s %d", l.id, n)}}}}, nil
}

// TestCacheIdentifier: an LM with an LMIdentity shares entries with every
// LM of the same identity, and only with those.
func TestCacheIdentifier(t *testing.T) {
	sig := mustParse(t, "q -> a")
	shared := adapter.NewLRU(10)
	x1, x2, y := &identified{id: "x"}, &identified{id: "x"}, &identified{id: "y"}
	call := func(lm adapter.LM) any {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "?"}, adapter.UseMiddleware(adapter.Cached(shared)))
		require.NoError(t, err)
		return res.Outputs[0]["a"]
	}
	assert.Equal(t, "x 1", call(x1))
	assert.Equal(t, "x 1", call(x2), "same identity: served from the cache")
	assert.Equal(t, "y 1", call(y))
	assert.Zero(t, x2.calls.Load())
}

// TestRejectedRepliesNotCached: a reply the pipeline rejects (cut, refused,
// filtered, empty, unparseable) is not stored, so asking again reaches the
// model again.
func TestRejectedRepliesNotCached(t *testing.T) {
	sig := mustParse(t, "q -> a: int")
	for name, bad := range map[string]lmtest.Reply{
		"truncated":   lmtest.Text("[[ ## a ## ]]\n4").WithFinish("length"),
		"refused":     lmtest.Text("").WithRefusal("no"),
		"filtered":    lmtest.Text("[[ ## a ## ]]\n4").WithFinish("content_filter"),
		"empty":       lmtest.Text(""),
		"unparseable": lmtest.Text("[[ ## a ## ]]\nseveral"),
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(bad, lmtest.Text("[[ ## a ## ]]\n42"))
			defer srv.Close()
			lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(10)))
			opts := []adapter.CallOption{adapter.NoFallback()}
			_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, opts...)
			require.Error(t, err)
			res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, opts...)
			require.NoError(t, err)
			assert.Equal(t, 42, res.Outputs[0]["a"])
			assert.Zero(t, res.CacheHits)
			assert.Len(t, srv.Requests(), 2)
		})
	}
}

// TestUsageDetails: usage details (reasoning and cached tokens) are kept
// and summed over the calls of a fallback, for Call and Stream.
func TestUsageDetails(t *testing.T) {
	usage := `"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":3}}`
	bad := `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"no markers here"},"finish_reason":"stop"}],` + usage + `}`
	good := `{"id":"y","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"a\": 1}"},"finish_reason":"stop"}],` + usage + `}`
	srv := lmtest.NewServer(lmtest.Raw(200, http.Header{"Content-Type": {"application/json"}}, []byte(bad)), lmtest.Raw(200, http.Header{"Content-Type": {"application/json"}}, []byte(good)))
	defer srv.Close()
	res, err := adapter.Call(t.Context(), srv.Client(), mustParse(t, "q -> a: int"), nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Calls)
	assert.Equal(t, 30, res.Usage.TotalTokens)
	require.NotNil(t, res.Usage.PromptTokensDetails)
	assert.Equal(t, 8, res.Usage.PromptTokensDetails.CachedTokens)
	require.NotNil(t, res.Usage.CompletionTokensDetails)
	assert.Equal(t, 6, res.Usage.CompletionTokensDetails.ReasoningTokens)
}

// TestStreamLenientFieldsArriveBeforeDone: a field Parse reads leniently
// (JSON instead of markers, labels) reaches the caller as one delta before
// the Done chunk, never only inside the Result.
func TestStreamLenientFieldsArriveBeforeDone(t *testing.T) {
	sig := mustParse(t, "q -> answer, n: int")
	for _, reply := range []string{
		"```json\n{\"answer\": \"Paris\", \"n\": 3}\n```",
		"Answer: Paris\nN: 3",
	} {
		srv := lmtest.NewServer(lmtest.Text(reply).ChunkSize(5))
		var order []string
		var fields = map[string]string{}
		for ch, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.NoFallback()) {
			require.NoError(t, err, reply)
			if ch.Done {
				order = append(order, "done")
				continue
			}
			if ch.Field != "" {
				order = append(order, ch.Field)
				fields[ch.Field] += ch.Delta
			}
		}
		srv.Close()
		require.NotEmpty(t, order)
		assert.Equal(t, "done", order[len(order)-1])
		assert.Equal(t, "Paris", fields["answer"], reply)
		assert.Equal(t, "3", fields["n"], reply)
	}
}

// TestStreamStopReportsLMCallDone: breaking out of a stream still closes
// the trace's LM call.
func TestStreamStopReportsLMCallDone(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\n" + strings.Repeat("word ", 100)).ChunkSize(5))
	defer srv.Close()
	var starts, dones int
	tr := &adapter.Trace{
		LMCallStart: func(adapter.LMCallStartInfo) { starts++ },
		LMCallDone:  func(adapter.LMCallDoneInfo) { dones++ },
	}
	n := 0
	for range adapter.Stream(t.Context(), srv.Client(), mustParse(t, "q -> a"), nil, adapter.Values{"q": "x"}, adapter.UseTrace(tr)) {
		if n++; n == 3 {
			break
		}
	}
	assert.Equal(t, 1, starts)
	assert.Equal(t, 1, dones)
}

// userWrapper is a caller's own LM wrapper (logging, say) that exposes
// what it wraps.
type userWrapper struct {
	lm   adapter.LM
	seen *int
}

func (w userWrapper) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	*w.seen++
	return w.lm.CreateChatCompletion(ctx, req)
}

func (w userWrapper) Unwrap() adapter.LM { return w.lm }

// TestUnwrapFindsCapabilities: declared capabilities are found through a
// caller's wrapper that implements Unwrap, and the wrapper is still
// called.
func TestUnwrapFindsCapabilities(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(`{"answer": "Paris"}`))
	defer srv.Close()
	seen := 0
	lm := userWrapper{adapter.WithCapabilities(srv.Client(), adapter.Capabilities{StructuredOutputs: true}), &seen}
	res, err := adapter.Call(t.Context(), lm, mustParse(t, "q -> answer"), nil, adapter.Values{"q": "x"},
		adapter.UseAdapter(adapter.JSON{}), adapter.WithRequest(openai.ChatCompletionRequest{Model: "my-local-model"}))
	require.NoError(t, err)
	assert.Equal(t, "json_schema", res.Mode, "the declared structured outputs were seen through the wrapper")
	assert.Equal(t, 1, seen)
}

// echoLM answers every request in-process with a reply both Chat and JSON
// read.
type echoLM struct{}

func (echoLM) CreateChatCompletion(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{FinishReason: "stop",
		Message: openai.ChatCompletionMessage{Content: `{"a": "ok"}`}}}}, nil
}

// TestSetDefaultAdapterWhileCalling: the process-wide default may change
// while calls run (no data race), and each call uses one of the values.
func TestSetDefaultAdapterWhileCalling(t *testing.T) {
	t.Cleanup(func() { adapter.SetDefaultAdapter(nil) })
	sig := mustParse(t, "q -> a")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			if i%2 == 0 {
				adapter.SetDefaultAdapter(adapter.JSON{})
			} else {
				adapter.SetDefaultAdapter(nil)
			}
		}
	}()
	for range 200 {
		res, err := adapter.Call(t.Context(), echoLM{}, sig, nil, adapter.Values{"q": "x"}, adapter.NoFallback())
		require.NoError(t, err)
		assert.Contains(t, []string{"chat", "json"}, res.Adapter)
	}
	<-done
	adapter.SetDefaultAdapter(adapter.XML{})
	assert.Equal(t, "xml", adapter.DefaultAdapter().Name())
	adapter.SetDefaultAdapter(nil)
	assert.Equal(t, "chat", adapter.DefaultAdapter().Name())
}

// TestTruncatedPartialHoldsNoCutNumber: the partial values of a reply cut
// by the token limit never hold a number (or list) read from the cut-off
// text; complete values before it and the text so far are kept.
func TestTruncatedPartialHoldsNoCutNumber(t *testing.T) {
	sig := mustParse(t, "q -> answer, n: int, confidence: float")
	for _, c := range []struct {
		name  string
		a     adapter.Adapter
		reply string
		want  adapter.Values
	}{
		{"chat, cut in a float", adapter.Chat{}, "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\n4\n\n[[ ## confidence ## ]]\n0.", adapter.Values{"answer": "Paris", "n": 4}},
		{"chat, cut in an int", adapter.Chat{}, "[[ ## answer ## ]]\nParis\n\n[[ ## n ## ]]\n4", adapter.Values{"answer": "Paris"}},
		{"chat, cut in the text", adapter.Chat{}, "[[ ## n ## ]]\n4\n\n[[ ## answer ## ]]\nThe city of", adapter.Values{"answer": "The city of", "n": 4}},
		{"json, cut in a float", adapter.JSON{}, `{"answer": "Paris", "n": 4, "confidence": 0.`, nil},
		{"xml, cut in an int", adapter.XML{}, "<answer>Paris</answer>\n<n>4", adapter.Values{"answer": "Paris"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text(c.reply).WithFinish("length"))
			defer srv.Close()
			_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.UseAdapter(c.a))
			var pe *adapter.ParseError
			require.ErrorAs(t, err, &pe)
			require.ErrorIs(t, err, adapter.ErrTruncated)
			// (The JSON parser refuses a cut object whole: nothing to keep.)
			for k, v := range c.want {
				assert.Equal(t, v, pe.Partial[k], k)
			}
			for k, v := range pe.Partial {
				assert.NotEqual(t, "confidence", k, "partial holds confidence = %v, read from cut text", v)
				if c.want != nil {
					_, ok := c.want[k]
					assert.True(t, ok, "partial holds %s = %v, read from cut text", k, v)
				}
			}
		})
	}
}

// TestModelCapabilities: the model-name table covers the common
// OpenAI-compatible providers; provider prefixes are ignored; unknown
// names get nothing.
func TestModelCapabilities(t *testing.T) {
	all := adapter.Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true, Reasoning: true}
	structured := adapter.Capabilities{StructuredOutputs: true, JSONMode: true, Tools: true}
	keyed := func(c adapter.Capabilities) adapter.Capabilities { c.PromptCacheKey = true; return c }
	claude := adapter.Capabilities{Tools: true, CacheControl: true}
	for model, want := range map[string]adapter.Capabilities{
		"gpt-4o-mini":                 keyed(structured),
		"openai/gpt-4.1":              keyed(structured),
		"chatgpt-4o-latest":           structured,
		"o3-mini":                     keyed(all),
		"gpt-5-nano-2025-08-07":       keyed(all),
		"openai/gpt-oss-120b":         all,
		"gpt-3.5-turbo":               {JSONMode: true, Tools: true},
		"gemini-2.5-flash":            all,
		"gemini-2.0-flash":            structured,
		"grok-3-mini":                 all,
		"grok-4":                      structured,
		"deepseek-reasoner":           {JSONMode: true, Reasoning: true},
		"deepseek-chat":               {JSONMode: true, Tools: true},
		"mistral-small-latest":        structured,
		"magistral-medium-2507":       structured,
		"anthropic/claude-sonnet-4.5": claude,
		"claude-3-5-haiku-20241022":   claude,
		"bedrock/anthropic.claude-3-7-sonnet-20250219-v1:0": claude,
		"llama3.1:8b":              {},
		"Qwen/Qwen2.5-7B-Instruct": {},
		"":                         {},
	} {
		assert.Equal(t, want, adapter.ModelCapabilities(model), model)
	}
}

// TestCapabilitiesString: String lists every capability, the prompt
// cache shapes by their wire names.
func TestCapabilitiesString(t *testing.T) {
	assert.Equal(t, "none", adapter.Capabilities{}.String())
	assert.Equal(t, "tools, cache_control", adapter.ModelCapabilities("claude-sonnet-4-5").String())
	assert.Equal(t, "structured outputs, JSON mode, tools, reasoning, prompt_cache_key", adapter.ModelCapabilities("gpt-5").String())
}

// TestUsageByModel: a call that used two models (TwoStep's main LM and
// its extractor) reports usage per model beside the sum.
func TestUsageByModel(t *testing.T) {
	main := lmtest.NewServer(lmtest.Text("The answer is Paris.").WithUsage(100, 10))
	defer main.Close()
	ext := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis").WithUsage(30, 5))
	defer ext.Close()
	res, err := adapter.Call(t.Context(), main.Client(), mustParse(t, "q -> answer"), nil, adapter.Values{"q": "x"},
		adapter.UseAdapter(adapter.TwoStep{Extractor: ext.Client(), ExtractorRequest: openai.ChatCompletionRequest{Model: "small"}}),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "big"}))
	require.NoError(t, err)
	assert.Equal(t, 145, res.Usage.TotalTokens)
	require.Len(t, res.UsageByModel, 2)
	assert.Equal(t, 110, res.UsageByModel["big"].TotalTokens)
	assert.Equal(t, 35, res.UsageByModel["small"].TotalTokens)
}

// TestUsageByModelListsReportedUsage: a model whose replies reported no
// usage is not listed (a map made on every call for nothing was 10 % of
// a Chat call's CPU, issue 32), in Call and Stream alike; UsageByModel is
// nil when no reply reported usage.
func TestUsageByModelListsReportedUsage(t *testing.T) {
	main := lmtest.NewServer(lmtest.Text("The answer is Paris.").WithUsage(100, 10))
	defer main.Close()
	none := lmtest.Text("[[ ## answer ## ]]\nParis").WithUsage(0, 0)
	ext := lmtest.NewServer(none, none, none)
	defer ext.Close()
	sig := mustParse(t, "q -> answer")
	opts := []adapter.CallOption{
		adapter.UseAdapter(adapter.TwoStep{Extractor: ext.Client(), ExtractorRequest: openai.ChatCompletionRequest{Model: "small"}}),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "big"}),
	}
	res, err := adapter.Call(t.Context(), main.Client(), sig, nil, adapter.Values{"q": "x"}, opts...)
	require.NoError(t, err)
	assert.Equal(t, map[string]openai.Usage{"big": {PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}, res.UsageByModel)

	res, err = adapter.Call(t.Context(), ext.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "small"}))
	require.NoError(t, err)
	assert.Nil(t, res.UsageByModel, "no reply reported usage")
	assert.Equal(t, 1, res.Calls)

	var streamed *adapter.Result
	for c, err := range adapter.Stream(t.Context(), ext.Client(), sig, nil, adapter.Values{"q": "x"}, adapter.WithRequest(openai.ChatCompletionRequest{Model: "small"})) {
		require.NoError(t, err)
		if c.Done {
			streamed = c.Result
		}
	}
	require.NotNil(t, streamed)
	assert.Nil(t, streamed.UsageByModel, "Stream agrees with Call")
}
