package adapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// The prompt cache tests run a signature with instructions and two demos:
// the request is the system message, two demo turns (four messages) and
// the final user message; the stable prefix ends at message 4.
const pcReply = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"

var pcDemos = []adapter.Values{
	{"question": "Capital of Italy?", "answer": "Rome"},
	{"question": "Capital of Spain?", "answer": "Madrid"},
}

// pcClient is a go-openai client of srv through the HTTPDoer wrapper.
func pcClient(srv *lmtest.Server) *openai.Client {
	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(nil)
	return openai.NewClientWithConfig(cfg)
}

// pcCall runs one call (or stream) of model with opts and returns the
// body the server saw.
func pcCall(t *testing.T, lm adapter.StreamingLM, srv *lmtest.Server, model string, stream bool, opts ...adapter.CallOption) (map[string]any, *adapter.Result) {
	t.Helper()
	sig := mustParse(t, "question -> answer").WithInstructions("Answer with the capital.")
	opts = append([]adapter.CallOption{adapter.WithRequest(openai.ChatCompletionRequest{Model: model})}, opts...)
	n := len(srv.Requests())
	var res *adapter.Result
	var err error
	if stream {
		res, err = streamResult(adapter.Stream(t.Context(), lm, sig, pcDemos, adapter.Values{"question": "Capital of France?"}, opts...))
	} else {
		res, err = adapter.Call(t.Context(), lm, sig, pcDemos, adapter.Values{"question": "Capital of France?"}, opts...)
	}
	require.NoError(t, err)
	assert.Equal(t, "Paris", res.Outputs[0]["answer"])
	reqs := srv.Requests()
	require.Len(t, reqs, n+1)
	var body map[string]any
	require.NoError(t, json.Unmarshal(reqs[n].Body, &body))
	return body, res
}

// pcMessages returns a request body's messages.
func pcMessages(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	raw, ok := body["messages"].([]any)
	require.True(t, ok, "messages")
	out := make([]map[string]any, len(raw))
	for i, m := range raw {
		out[i] = m.(map[string]any)
	}
	return out
}

// TestPromptCacheAnthropicRoute: for a Claude model through an
// Anthropic-compatible route, WithPromptCache puts cache_control on the
// system message and on the last demo message, as one text part each
// with their text; nothing else of the request changes, and Call and
// Stream send the same marks.
func TestPromptCacheAnthropicRoute(t *testing.T) {
	for _, model := range []string{"anthropic/claude-sonnet-4.5", "claude-3-5-haiku-20241022", "bedrock/anthropic.claude-3-7-sonnet-20250219-v1:0"} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", model, stream), func(t *testing.T) {
				srv := lmtest.NewServer(lmtest.Text(pcReply), lmtest.Text(pcReply))
				defer srv.Close()
				lm := pcClient(srv)
				plain, _ := pcCall(t, lm, srv, model, stream)
				marked, res := pcCall(t, lm, srv, model, stream, adapter.WithPromptCache("tenant-1"))
				assert.Empty(t, res.Notes)
				assert.Equal(t, 2, bytes.Count(srv.Requests()[1].Body, []byte(`"cache_control"`)), "two breakpoints")
				pm, mm := pcMessages(t, plain), pcMessages(t, marked)
				require.Len(t, pm, 6)
				require.Len(t, mm, 6)
				for _, i := range []int{0, 4} {
					assert.Equal(t, []any{map[string]any{"type": "text", "text": pm[i]["content"], "cache_control": map[string]any{"type": "ephemeral"}}},
						mm[i]["content"], "message %d", i)
					mm[i]["content"] = pm[i]["content"]
				}
				assert.Equal(t, "system", mm[0]["role"])
				assert.Equal(t, "assistant", mm[4]["role"])
				assert.NotContains(t, marked, "prompt_cache_key", "the route takes no key")
				assert.Equal(t, plain, marked, "nothing else changes")
			})
		}
	}
}

// TestPromptCacheOpenAIRoute: an OpenAI model gets the key as
// prompt_cache_key and nothing else; without a key, one derived from the
// stable prefix, the same for calls that share it; Call and Stream send
// the same.
func TestPromptCacheOpenAIRoute(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := lmtest.NewServer()
			defer srv.Close()
			srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(pcReply) })
			lm := pcClient(srv)
			plain, _ := pcCall(t, lm, srv, "gpt-4o-mini", stream)
			keyed, res := pcCall(t, lm, srv, "gpt-4o-mini", stream, adapter.WithPromptCache("tenant-1"))
			assert.Empty(t, res.Notes)
			assert.Equal(t, "tenant-1", keyed["prompt_cache_key"])
			assert.NotContains(t, string(srv.Requests()[1].Body), "cache_control")
			delete(keyed, "prompt_cache_key")
			assert.Equal(t, plain, keyed, "nothing else changes")

			derived, _ := pcCall(t, lm, srv, "openai/gpt-5-mini", stream, adapter.WithPromptCache(""))
			key, _ := derived["prompt_cache_key"].(string)
			assert.Regexp(t, `^sigwire-[0-9a-f]{32}$`, key)
			again, _ := pcCall(t, lm, srv, "gpt-4.1", stream, adapter.WithPromptCache(""))
			assert.Equal(t, key, again["prompt_cache_key"], "the same prefix, the same key")
			sig := mustParse(t, "question -> answer").WithInstructions("Answer with the capital.")
			n := len(srv.Requests())
			_, err := adapter.Call(t.Context(), lm, sig, pcDemos[:1], adapter.Values{"question": "Capital of France?"},
				adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4.1"}), adapter.WithPromptCache(""))
			require.NoError(t, err)
			var other map[string]any
			require.NoError(t, json.Unmarshal(srv.Requests()[n].Body, &other))
			assert.NotEqual(t, key, other["prompt_cache_key"], "another prefix, another key")
		})
	}
}

// TestPromptCacheOtherRoute: a model that takes neither shape gets the
// request it gets without the option, byte for byte, and a note says
// nothing was marked; a client without HTTPDoer then needs none.
func TestPromptCacheOtherRoute(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := lmtest.NewServer()
			defer srv.Close()
			srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(pcReply) })
			for _, lm := range []adapter.StreamingLM{pcClient(srv), srv.Client()} {
				pcCall(t, lm, srv, "llama3.1:8b", stream)
				_, res := pcCall(t, lm, srv, "llama3.1:8b", stream, adapter.WithPromptCache("k"))
				reqs := srv.Requests()
				assert.Equal(t, string(reqs[len(reqs)-2].Body), string(reqs[len(reqs)-1].Body))
				require.Len(t, res.Notes, 1)
				assert.Contains(t, res.Notes[0], `model "llama3.1:8b" takes neither cache_control nor prompt_cache_key`)
				assert.Contains(t, res.Notes[0], "adapter.WithCapabilities")
			}
		})
	}
}

// TestPromptCacheDeclared: WithCapabilities decides the route over the
// name's guess.
func TestPromptCacheDeclared(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(pcReply) })
	claude := adapter.WithCapabilities(pcClient(srv), adapter.Capabilities{CacheControl: true})
	pcCall(t, claude, srv, "my-claude-proxy", false, adapter.WithPromptCache("k"))
	assert.Equal(t, 2, bytes.Count(srv.Requests()[0].Body, []byte(`"cache_control"`)))

	both := adapter.WithCapabilities(pcClient(srv), adapter.Capabilities{CacheControl: true, PromptCacheKey: true})
	body, _ := pcCall(t, both, srv, "router", false, adapter.WithPromptCache("k"))
	assert.Equal(t, "k", body["prompt_cache_key"])
	assert.Equal(t, 2, bytes.Count(srv.Requests()[1].Body, []byte(`"cache_control"`)))

	none := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
	_, res := pcCall(t, none, srv, "claude-sonnet-4-5", false, adapter.WithPromptCache("k"))
	assert.NotContains(t, string(srv.Requests()[2].Body), "cache_control")
	require.Len(t, res.Notes, 1)
	assert.Contains(t, res.Notes[0], "as the LM declares it")
}

// TestPromptCacheWithoutHTTPDoer: a route that takes a shape, through a
// client without the wrapper, fails before anything is sent, naming
// HTTPDoer, for Call, Stream and Prepare.
func TestPromptCacheWithoutHTTPDoer(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(pcReply))
	defer srv.Close()
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "Capital of France?"}
	for _, model := range []string{"claude-sonnet-4-5", "gpt-4o"} {
		opts := []adapter.CallOption{adapter.WithRequest(openai.ChatCompletionRequest{Model: model}), adapter.WithPromptCache("")}
		_, err := adapter.Call(t.Context(), srv.Client(), sig, pcDemos, in, opts...)
		require.ErrorIs(t, err, adapter.ErrNeedsHTTPDoer, model)
		assert.Contains(t, err.Error(), "adapter.HTTPDoer", model)
		assert.Contains(t, err.Error(), strconv.Quote(model), model)
		_, err = streamResult(adapter.Stream(t.Context(), srv.Client(), sig, pcDemos, in, opts...))
		require.ErrorIs(t, err, adapter.ErrNeedsHTTPDoer, model)
		_, err = adapter.Prepare(t.Context(), srv.Client(), sig, pcDemos, in, opts...)
		require.ErrorIs(t, err, adapter.ErrNeedsHTTPDoer, model)
		// Through the library's wrappers, the wrapped client is found.
		_, err = adapter.Call(t.Context(), adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(1))), sig, pcDemos, in, opts...)
		require.ErrorIs(t, err, adapter.ErrNeedsHTTPDoer, model)
	}
	assert.Empty(t, srv.Requests(), "nothing was sent")
}

// TestPromptCacheCost: end to end, a marked request to a Claude route, a
// reply whose usage says the provider's cache served most of the prompt
// (cache_read_input_tokens, as LiteLLM relays Anthropic's; or OpenAI's
// prompt_tokens_details.cached_tokens), and the call's cost at the
// cached-input price.
func TestPromptCacheCost(t *testing.T) {
	usages := map[string]string{
		"anthropic/claude-sonnet-4.5": `,"cache_read_input_tokens":1800,"cache_creation_input_tokens":0`,
		"gpt-4o":                      `,"prompt_tokens_details":{"cached_tokens":1800}`,
	}
	for model, usage := range usages {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", model, stream), func(t *testing.T) {
				counts := `"prompt_tokens":2000,"completion_tokens":10,"total_tokens":2010`
				h := http.Header{"Content-Type": {"application/json"}}
				body := fmt.Sprintf(`{"id":"x","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{%s%s}}`,
					model, strconv.Quote(pcReply), counts, usage)
				if stream {
					h = http.Header{"Content-Type": {"text/event-stream"}}
					body = fmt.Sprintf("data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n"+
						"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
						"data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":%q,\"choices\":[],\"usage\":{%s%s}}\n\ndata: [DONE]\n\n",
						model, strconv.Quote(pcReply), model, model, counts, usage)
				}
				srv := lmtest.NewServer(lmtest.Raw(200, h, []byte(body)))
				defer srv.Close()
				sent, res := pcCall(t, pcClient(srv), srv, model, stream, adapter.WithPromptCache("tenant-1"))
				if model == "gpt-4o" {
					assert.Equal(t, "tenant-1", sent["prompt_cache_key"])
				} else {
					assert.Equal(t, 2, bytes.Count(srv.Requests()[0].Body, []byte(`"cache_control":{"type":"ephemeral"}`)))
				}
				assert.Equal(t, 1800, cachedOf(res.Usage))
				// $3 per million input, $0.30 cached, $15 output.
				cost, err := res.Cost(adapter.Prices{model: {Input: 3, CachedInput: 0.3, Output: 15}})
				require.NoError(t, err)
				assert.InDelta(t, (200*3+1800*0.3+10*15)/1e6, cost, 1e-12)
			})
		}
	}
}

// TestPromptCacheReask: a re-ask keeps the marks of the request it
// starts from: the same prefix, marked at the same messages.
func TestPromptCacheReask(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("[[ ## notes ## ]]\nhmm\n\n[[ ## completed ## ]]"), lmtest.Text(pcReply))
	defer srv.Close()
	sig := mustParse(t, "question -> answer").WithInstructions("Answer with the capital.")
	res, err := adapter.Call(t.Context(), pcClient(srv), sig, pcDemos, adapter.Values{"question": "Capital of France?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "claude-sonnet-4-5"}), adapter.WithReask(1), adapter.NoFallback(), adapter.WithPromptCache(""))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Reasks)
	for i, r := range srv.Requests() {
		var body map[string]any
		require.NoError(t, json.Unmarshal(r.Body, &body))
		msgs := pcMessages(t, body)
		assert.Len(t, msgs, 6+2*i, "request %d", i)
		assert.Equal(t, 2, bytes.Count(r.Body, []byte(`"cache_control"`)), "request %d", i)
		for _, j := range []int{0, 4} {
			_, isParts := msgs[j]["content"].([]any)
			assert.True(t, isParts, "request %d, message %d", i, j)
		}
	}
}

// TestPromptCacheResponseCache: the marks are not part of a response
// cache's key (they change what the provider bills, not the reply): a
// marked call is served the reply an unmarked one stored.
func TestPromptCacheResponseCache(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(pcReply))
	defer srv.Close()
	lm := adapter.WithMiddleware(pcClient(srv), adapter.Cached(adapter.NewLRU(8)))
	pcCall(t, lm, srv, "claude-sonnet-4-5", false)
	sig := mustParse(t, "question -> answer").WithInstructions("Answer with the capital.")
	res, err := adapter.Call(t.Context(), lm, sig, pcDemos, adapter.Values{"question": "Capital of France?"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "claude-sonnet-4-5"}), adapter.WithPromptCache(""))
	require.NoError(t, err)
	assert.Equal(t, "Paris", res.Outputs[0]["answer"])
	assert.Equal(t, 1, res.CacheHits)
	assert.Len(t, srv.Requests(), 1)
}

// TestPromptCacheMovedByMiddleware: a middleware beneath that changes a
// message to mark leaves it unmarked, and the Result's Notes say so.
func TestPromptCacheMovedByMiddleware(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(pcReply))
	defer srv.Close()
	rewrite := func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			msgs := append([]openai.ChatCompletionMessage(nil), req.Messages...)
			msgs[0].Content += "\nBe brief."
			req.Messages = msgs
			return next(ctx, req)
		}
	}
	lm := adapter.WithMiddleware(pcClient(srv), rewrite)
	_, res := pcCall(t, lm, srv, "claude-sonnet-4-5", false, adapter.WithPromptCache(""))
	assert.Equal(t, 1, bytes.Count(srv.Requests()[0].Body, []byte(`"cache_control"`)), "the last demo message only")
	require.Len(t, res.Notes, 1)
	assert.Contains(t, res.Notes[0], "a middleware moved or changed it")
}

// TestPromptCacheDefaults: a module's WithPromptCache (under Defaults)
// marks its calls; a call's NoPromptCache turns it off, and a call's
// WithPromptCache beats the module's key.
func TestPromptCacheDefaults(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(pcReply) })
	lm := pcClient(srv)
	module := adapter.Defaults(adapter.WithPromptCache("module"))
	body, _ := pcCall(t, lm, srv, "gpt-4o", false, module)
	assert.Equal(t, "module", body["prompt_cache_key"])
	body, _ = pcCall(t, lm, srv, "gpt-4o", false, adapter.WithPromptCache("call"), module)
	assert.Equal(t, "call", body["prompt_cache_key"])
	body, res := pcCall(t, lm, srv, "gpt-4o", false, adapter.NoPromptCache(), module)
	assert.NotContains(t, body, "prompt_cache_key")
	assert.Empty(t, res.Notes)
}

// TestPromptCacheHistory: History turns are part of the stable prefix:
// the last one before the final user message carries the second mark.
func TestPromptCacheHistory(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text(pcReply))
	defer srv.Close()
	sig, err := signature.Parse("history: History, question -> answer", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	in := adapter.Values{"history": types.History{Messages: []map[string]any{{"question": "Capital of Peru?", "answer": "Lima"}}}, "question": "Capital of France?"}
	_, err = adapter.Call(t.Context(), pcClient(srv), sig, pcDemos, in,
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "claude-sonnet-4-5"}), adapter.WithPromptCache(""))
	require.NoError(t, err)
	var body map[string]any
	require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body))
	msgs := pcMessages(t, body)
	require.Len(t, msgs, 8) // system, two demos, one history turn, the question
	for i, m := range msgs {
		_, marked := m["content"].([]any)
		assert.Equal(t, i == 0 || i == 6, marked, "message %d", i)
	}
	assert.Contains(t, fmt.Sprint(msgs[6]["content"]), "Lima")
}
