package adapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// answering is an lmtest server that answers every request with text.
func answering(t *testing.T, text string) *lmtest.Server {
	t.Helper()
	srv := lmtest.NewServer()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(text) })
	t.Cleanup(srv.Close)
	return srv
}

// requireSent checks that body, a request lmtest received, is req as
// go-openai marshals it, byte for byte.
func requireSent(t *testing.T, req openai.ChatCompletionRequest, body []byte) {
	t.Helper()
	b, err := json.Marshal(req)
	require.NoError(t, err)
	require.Equal(t, string(body), string(b))
}

// The adapters every golden format case is prepared with: DSPy's five,
// JSON with and without structured outputs.
var prepareAdapters = []struct {
	name       string
	a          adapter.Adapter
	structured bool
}{
	{"chat", adapter.Chat{}, false},
	{"json", adapter.JSON{}, false},
	{"json-structured", adapter.JSON{}, true},
	{"xml", adapter.XML{}, false},
	{"baml", adapter.BAML{}, false},
	{"twostep", adapter.TwoStep{Extractor: unusedLM{}}, false},
}

// TestPrepareGolden is the property of Prepare over the golden format
// cases: for every case and every adapter, the request Prepare returns
// is, marshalled, byte for byte the body lmtest receives first from Call
// with the same arguments, and Prepare itself sends nothing; where
// Prepare fails (an adapter that cannot format the case), Call fails
// with the same error before any request. The cases captured at the LM
// boundary bring their LM's capabilities and lm_kwargs (native tools,
// native reasoning).
func TestPrepareGolden(t *testing.T) {
	var compared, refused, shaped int
	for _, c := range goldenCases(t, "testdata/dspy_golden*.json") {
		if _, ok := goldenAdapters[c.Adapter]; c.Kind != "format" || !ok {
			continue
		}
		for _, pa := range prepareAdapters {
			t.Run(c.ID+"/"+pa.name, func(t *testing.T) {
				sig := buildSig(t, &c)
				demos, inputs := caseValues(t, sig, &c)
				var req openai.ChatCompletionRequest
				var caps adapter.Capabilities
				if len(c.LM) > 0 && string(c.LM) != "null" {
					req, caps = goldenLMRequest(t, &c)
				}
				caps.StructuredOutputs = pa.structured
				srv := answering(t, "ignored")
				lm := adapter.WithCapabilities(srv.Client(), caps)
				opts := []adapter.CallOption{adapter.UseAdapter(pa.a), adapter.WithRequest(req)}

				got, perr := adapter.Prepare(context.Background(), lm, sig, demos, inputs, opts...)
				require.Empty(t, srv.Requests(), "Prepare sends nothing")
				_, cerr := adapter.Call(context.Background(), lm, sig, demos, inputs, opts...)
				reqs := srv.Requests()
				if perr != nil {
					require.Error(t, cerr, "Prepare failed: %v", perr)
					assert.Equal(t, cerr.Error(), perr.Error())
					assert.Empty(t, reqs, "Call failed before any request")
					refused++
					return
				}
				require.NotEmpty(t, reqs, "Call: %v", cerr)
				requireSent(t, got, reqs[0].Body)
				if got.ResponseFormat != nil {
					shaped++
				}
				compared++
			})
		}
	}
	t.Logf("%d requests byte-identical to Call's (%d with a response_format), %d refused alike before any request", compared, shaped, refused)
	assert.Positive(t, compared)
	assert.Positive(t, shaped, "structured outputs shaped some requests")
}

// TestPrepareResolvesAdapter: Prepare resolves the adapter as Call does,
// UseAdapter > WithAdapter(ctx) > a module's default (Defaults) >
// DefaultAdapter(), and formats with it.
func TestPrepareResolvesAdapter(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "Capital of France?"}
	module := adapter.Defaults(adapter.UseAdapter(adapter.XML{}))
	for _, c := range []struct {
		name string
		ctx  context.Context
		opts []adapter.CallOption
		want adapter.Adapter
	}{
		{"default", context.Background(), nil, adapter.Chat{}},
		{"module", context.Background(), []adapter.CallOption{module}, adapter.XML{}},
		{"context", adapter.WithAdapter(context.Background(), adapter.JSON{}), []adapter.CallOption{module}, adapter.JSON{}},
		{"call", adapter.WithAdapter(context.Background(), adapter.JSON{}), []adapter.CallOption{module, adapter.UseAdapter(adapter.BAML{})}, adapter.BAML{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := answering(t, "ignored")
			got, err := adapter.Prepare(c.ctx, srv.Client(), sig, nil, in, c.opts...)
			require.NoError(t, err)
			want, err := c.want.Format(sig, nil, in)
			require.NoError(t, err)
			assert.Equal(t, want, got.Messages, "formatted by %s", c.want.Name())
			require.Empty(t, srv.Requests())
			_, _ = adapter.Call(c.ctx, srv.Client(), sig, nil, in, c.opts...)
			require.NotEmpty(t, srv.Requests())
			requireSent(t, got, srv.Requests()[0].Body)
		})
	}
}

// TestPrepareOptions: the request template, a module's defaults below
// the call's options, and the capabilities decide the request as in Call:
// a call's temperature over the module's model and max tokens, a JSON
// adapter's strict schema with structured outputs and none without.
func TestPrepareOptions(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	in := adapter.Values{"question": "6 times 7?"}
	module := adapter.Defaults(adapter.UseAdapter(adapter.JSON{}),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "my-model", MaxCompletionTokens: 100, Temperature: 0.2}))
	call := adapter.WithRequest(openai.ChatCompletionRequest{Temperature: 0.7})
	for _, caps := range []adapter.Capabilities{{}, {StructuredOutputs: true}} {
		srv := answering(t, `{"answer": 42}`)
		lm := adapter.WithCapabilities(srv.Client(), caps)
		got, err := adapter.Prepare(context.Background(), lm, sig, nil, in, module, call)
		require.NoError(t, err)
		assert.Equal(t, "my-model", got.Model)
		assert.Equal(t, 100, got.MaxCompletionTokens)
		assert.InDelta(t, 0.7, got.Temperature, 1e-6)
		if caps.StructuredOutputs {
			require.NotNil(t, got.ResponseFormat)
			assert.Equal(t, openai.ChatCompletionResponseFormatTypeJSONSchema, got.ResponseFormat.Type)
		} else {
			assert.Nil(t, got.ResponseFormat)
		}
		res, err := adapter.Call(context.Background(), lm, sig, nil, in, module, call)
		require.NoError(t, err)
		assert.Equal(t, 42, res.Outputs[0]["answer"])
		require.Len(t, srv.Requests(), 1)
		requireSent(t, got, srv.Requests()[0].Body)
	}
}

// countingCache is an LRU that counts what it is asked.
type countingCache struct {
	lru        *adapter.LRU
	gets, puts atomic.Int64
}

func (c *countingCache) Get(ctx context.Context, key string) (adapter.CacheEntry, bool) {
	c.gets.Add(1)
	return c.lru.Get(ctx, key)
}

func (c *countingCache) Put(ctx context.Context, key string, e adapter.CacheEntry) {
	c.puts.Add(1)
	c.lru.Put(ctx, key, e)
}

// TestPrepareSendsNothing: Prepare makes no request, runs no middleware
// (the LM's or the call's), never reads or writes the cache, and reports
// nothing to a trace; the request it returns is the one Call hands to the
// middlewares, and lmtest receives it as it is.
func TestPrepareSendsNothing(t *testing.T) {
	srv := answering(t, "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]")
	cache := &countingCache{lru: adapter.NewLRU(0)}
	var mu sync.Mutex
	var seen []openai.ChatCompletionRequest
	record := func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			mu.Lock()
			seen = append(seen, req)
			mu.Unlock()
			return next(ctx, req)
		}
	}
	var events atomic.Int64
	count := func() { events.Add(1) }
	trace := &adapter.Trace{
		CallStart:   func(adapter.CallStartInfo) { count() },
		CallDone:    func(adapter.CallDoneInfo) { count() },
		FormatStart: func(adapter.FormatStartInfo) { count() },
		FormatDone:  func(adapter.FormatInfo) { count() },
		LMCallStart: func(adapter.LMCallStartInfo) { count() },
		LMCallDone:  func(adapter.LMCallDoneInfo) { count() },
	}
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache), record)
	ctx := adapter.WithTrace(context.Background(), trace)
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "Capital of France?"}
	opts := []adapter.CallOption{adapter.UseMiddleware(record), adapter.UseTrace(trace),
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"})}

	got, err := adapter.Prepare(ctx, lm, sig, nil, in, opts...)
	require.NoError(t, err)
	assert.Empty(t, srv.Requests(), "no request")
	assert.Zero(t, cache.gets.Load(), "the cache is not read")
	assert.Zero(t, cache.puts.Load(), "nor written")
	assert.Empty(t, seen, "no middleware ran")
	assert.Zero(t, events.Load(), "no trace event")

	res, err := adapter.Call(ctx, lm, sig, nil, in, opts...)
	require.NoError(t, err)
	assert.Equal(t, "Paris", res.Outputs[0]["answer"])
	assert.Equal(t, 0, res.CacheHits, "Prepare left nothing in the cache")
	require.Len(t, srv.Requests(), 1)
	requireSent(t, got, srv.Requests()[0].Body)
	require.Len(t, seen, 2, "the call's middleware, then the LM's")
	for _, req := range seen {
		requireSent(t, got, mustMarshal(t, req))
	}
	assert.Equal(t, int64(1), cache.puts.Load())
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestPrepareErrors: Prepare fails where Call fails before its first
// request, with the same error: inputs that do not fit are the same
// *InputError; a nil LM, signature or context; a done context.
func TestPrepareErrors(t *testing.T) {
	sig := mustParse(t, "question, n: int -> answer")
	srv := answering(t, "ignored")
	for _, c := range []struct {
		name   string
		inputs adapter.Values
	}{
		{"missing", adapter.Values{"question": "q"}},
		{"unknown", adapter.Values{"question": "q", "n": 1, "m": 2}},
		{"type", adapter.Values{"question": "q", "n": "three"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, perr := adapter.Prepare(context.Background(), srv.Client(), sig, nil, c.inputs)
			_, cerr := adapter.Call(context.Background(), srv.Client(), sig, nil, c.inputs)
			var pie, cie *adapter.InputError
			require.ErrorAs(t, perr, &pie)
			require.ErrorAs(t, cerr, &cie)
			assert.Equal(t, cie, pie)
			assert.Equal(t, cerr.Error(), perr.Error())
		})
	}
	_, err := adapter.Prepare(context.Background(), nil, sig, nil, adapter.Values{"question": "q", "n": 1})
	assert.ErrorContains(t, err, "nil LM")
	_, err = adapter.Prepare(context.Background(), srv.Client(), nil, nil, nil)
	assert.Error(t, err)
	var nilCtx context.Context
	_, err = adapter.Prepare(nilCtx, srv.Client(), sig, nil, adapter.Values{"question": "q", "n": 1})
	assert.ErrorContains(t, err, "nil context")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = adapter.Prepare(ctx, srv.Client(), sig, nil, adapter.Values{"question": "q", "n": 1})
	var lme *adapter.LMError
	require.ErrorAs(t, err, &lme)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, srv.Requests())
}

// TestPrepareFallback: with Chat's JSON fallback, the request is Chat's,
// the first Call sends; the fallback's comes second, after the reply.
func TestPrepareFallback(t *testing.T) {
	srv := answering(t, "I would rather not use the format.")
	sig := mustParse(t, "question -> answer: int, why")
	in := adapter.Values{"question": "6 times 7?"}
	got, err := adapter.Prepare(context.Background(), srv.Client(), sig, nil, in)
	require.NoError(t, err)
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, in)
	var fe *adapter.FallbackError
	require.ErrorAs(t, err, &fe)
	reqs := srv.Requests()
	require.Len(t, reqs, 2, "Chat's request, then the JSON fallback's")
	requireSent(t, got, reqs[0].Body)
	assert.NotEqual(t, string(reqs[0].Body), string(reqs[1].Body))
}

// TestPrepareTwoStep: TwoStep's request is the main LM's; the extractor
// hears nothing from Prepare.
func TestPrepareTwoStep(t *testing.T) {
	main := answering(t, "The answer is 42, because six sevens are 42.")
	extractor := answering(t, "[[ ## answer ## ]]\n42\n\n[[ ## completed ## ]]")
	ts := adapter.TwoStep{Extractor: extractor.Client()}
	sig := mustParse(t, "question -> answer: int")
	in := adapter.Values{"question": "6 times 7?"}
	got, err := adapter.Prepare(context.Background(), main.Client(), sig, nil, in, adapter.UseAdapter(ts))
	require.NoError(t, err)
	assert.Empty(t, main.Requests())
	assert.Empty(t, extractor.Requests())
	res, err := adapter.Call(context.Background(), main.Client(), sig, nil, in, adapter.UseAdapter(ts))
	require.NoError(t, err)
	assert.Equal(t, 42, res.Outputs[0]["answer"])
	require.Len(t, main.Requests(), 1)
	requireSent(t, got, main.Requests()[0].Body)
	assert.Len(t, extractor.Requests(), 1)
}

// TestPrepareZeroTemperature: the one rewrite of the request on the wire
// that Prepare's doc names for a client wrapped with HTTPDoer: the
// request holds ZeroTemperature, which the wrapper sends as 0.
func TestPrepareZeroTemperature(t *testing.T) {
	srv := answering(t, "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]")
	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
	client := openai.NewClientWithConfig(cfg)
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "Capital of France?"}
	zero := adapter.WithRequest(openai.ChatCompletionRequest{Temperature: adapter.ZeroTemperature})
	got, err := adapter.Prepare(context.Background(), client, sig, nil, in, zero)
	require.NoError(t, err)
	assert.Equal(t, adapter.ZeroTemperature, got.Temperature)
	_, err = adapter.Call(context.Background(), client, sig, nil, in, zero)
	require.NoError(t, err)
	require.Len(t, srv.Requests(), 1)
	body := string(srv.Requests()[0].Body)
	assert.Contains(t, body, `,"temperature":0,`)
	assert.Equal(t, body, strings.Replace(string(mustMarshal(t, got)), `"temperature":1e-45`, `"temperature":0`, 1))
}

// TestPrepareNativeTools: a ToolCalls output with a Tool input on an LM
// with native function calling: the request carries the tools, and the
// tools input leaves the prompt, as in Call; an input the adapter cannot
// ask natively for is Call's *InputError.
func TestPrepareNativeTools(t *testing.T) {
	sig, err := signature.Parse("question, tools: list[Tool] -> answer, calls: ToolCalls", signature.WithTypes(typesNames()))
	require.NoError(t, err)
	in := adapter.Values{"question": "Weather in Paris?", "tools": []types.Tool{replayTool(t)}}
	srv := answering(t, `{"answer": "Sunny"}`)
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
	for _, a := range []adapter.Adapter{adapter.JSON{}, adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}} {
		got, err := adapter.Prepare(context.Background(), lm, sig, nil, in, adapter.UseAdapter(a))
		require.NoError(t, err)
		require.Len(t, got.Tools, 1, a.Name())
		before := len(srv.Requests())
		_, _ = adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(a))
		require.Greater(t, len(srv.Requests()), before)
		requireSent(t, got, srv.Requests()[before].Body)
	}
	_, perr := adapter.Prepare(context.Background(), lm, sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.JSON{}))
	_, cerr := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.JSON{}))
	require.Error(t, perr)
	assert.Equal(t, cerr.Error(), perr.Error())
}
