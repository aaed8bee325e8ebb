package types_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// Replies in the shapes providers put on the wire. OpenAI's search models
// answer with message.annotations (url_citation), streamed as a last delta
// holding the annotations (openai/openai-java#297). LiteLLM relays
// Anthropic's citations as message.provider_specific_fields.citations, one
// list per text block, and streams each as delta.provider_specific_fields
// .citation (BerriAI/litellm#8382, #9103; what DSPy 3.3.1 reads in
// BaseLM._extract_citations_from_response and Citations.parse_stream_chunk).
const (
	openaiBody = `{"id":"chatcmpl-BAn5","object":"chat.completion","created":1741720000,"model":"gpt-4o-search-preview-2025-03-11",
"choices":[{"index":0,"message":{"role":"assistant","content":"[[ ## answer ## ]]\nThe grass is green and the sky is blue.\n\n[[ ## completed ## ]]","refusal":null,
"annotations":[{"type": "url_citation", "url_citation": {"end_index": 61, "start_index": 19, "title": "Why is the sky blue? <Science & you>", "url": "https://example.org/sky?utm_source=openai"}}]},
"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`

	openaiStream = `data: {"id":"chatcmpl-BAn6","object":"chat.completion.chunk","created":1741720001,"model":"gpt-4o-search-preview-2025-03-11","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-BAn6","object":"chat.completion.chunk","created":1741720001,"model":"gpt-4o-search-preview-2025-03-11","choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\nThe grass is green"},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-BAn6","object":"chat.completion.chunk","created":1741720001,"model":"gpt-4o-search-preview-2025-03-11","choices":[{"index":0,"delta":{"content":" and the sky is blue.\n\n[[ ## completed ## ]]"},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-BAn6","object":"chat.completion.chunk","created":1741720001,"model":"gpt-4o-search-preview-2025-03-11","choices":[{"index":0,"delta":{"annotations":[{"type": "url_citation", "url_citation": {"end_index": 61, "start_index": 19, "title": "Why is the sky blue? <Science & you>", "url": "https://example.org/sky?utm_source=openai"}}]},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-BAn6","object":"chat.completion.chunk","created":1741720001,"model":"gpt-4o-search-preview-2025-03-11","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}

data: [DONE]

`

	litellmBody = `{"id":"chatcmpl-8c2","created":1739000000,"model":"claude-3-5-sonnet-20241022","object":"chat.completion","system_fingerprint":null,
"choices":[{"finish_reason":"stop","index":0,"message":{"content":"[[ ## answer ## ]]\nThe grass is green and the sky is blue.\n\n[[ ## completed ## ]]","role":"assistant","tool_calls":null,"function_call":null,
"provider_specific_fields":{"citations":[[{"type":"char_location","cited_text":"The grass is green. ","document_index":0,"document_title":"My Document","start_char_index":0,"end_char_index":20}],
[{"type":"char_location","cited_text":"The sky is blue.","document_index":0,"document_title":"My Document","start_char_index":20,"end_char_index":36}]]}}}],
"usage":{"completion_tokens":40,"prompt_tokens":600,"total_tokens":640}}`

	litellmStream = `data: {"id":"chatcmpl-8c3","created":1739000001,"model":"claude-3-5-sonnet-20241022","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\nThe grass is green","role":"assistant"}}]}

data: {"id":"chatcmpl-8c3","created":1739000001,"model":"claude-3-5-sonnet-20241022","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"","provider_specific_fields":{"citation":{"type":"char_location","cited_text":"The grass is green. ","document_index":0,"document_title":"My Document","start_char_index":0,"end_char_index":20}}}}]}

data: {"id":"chatcmpl-8c3","created":1739000001,"model":"claude-3-5-sonnet-20241022","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" and the sky is blue.\n\n[[ ## completed ## ]]"}}]}

data: {"id":"chatcmpl-8c3","created":1739000001,"model":"claude-3-5-sonnet-20241022","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"","provider_specific_fields":{"citation":{"type":"char_location","cited_text":"The sky is blue.","document_index":0,"document_title":"My Document","start_char_index":20,"end_char_index":36}}}}]}

data: {"id":"chatcmpl-8c3","created":1739000001,"model":"claude-3-5-sonnet-20241022","object":"chat.completion.chunk","choices":[{"finish_reason":"stop","index":0,"delta":{}}]}

data: [DONE]

`
)

func strp(s string) *string { return &s }

var (
	urlCitations = types.Citations{Citations: []types.Citation{{
		Type: "url_citation", URL: "https://example.org/sky?utm_source=openai", DocumentTitle: strp("Why is the sky blue? <Science & you>"), StartCharIndex: 19, EndCharIndex: 61,
	}}}
	docCitations = types.Citations{Citations: []types.Citation{
		{Type: "char_location", CitedText: "The grass is green. ", DocumentIndex: 0, DocumentTitle: strp("My Document"), StartCharIndex: 0, EndCharIndex: 20},
		{Type: "char_location", CitedText: "The sky is blue.", DocumentIndex: 0, DocumentTitle: strp("My Document"), StartCharIndex: 20, EndCharIndex: 36},
	}}
)

func jsonReply(body string) lmtest.Reply {
	return lmtest.Raw(http.StatusOK, http.Header{"Content-Type": {"application/json"}}, []byte(body))
}

func sseReply(body string) lmtest.Reply {
	return lmtest.Raw(http.StatusOK, http.Header{"Content-Type": {"text/event-stream"}}, []byte(body))
}

// withoutRaw drops what the provider sent as is, for comparison.
func withoutRaw(v any) types.Citations {
	c, _ := v.(types.Citations)
	out := types.Citations{Citations: make([]types.Citation, len(c.Citations))}
	for i, x := range c.Citations {
		x.Raw = nil
		out.Citations[i] = x
	}
	return out
}

// TestNativeCitations: where the reply carries citations, a Citations
// output is filled from them — OpenAI's url_citation annotations and
// Anthropic's citations as LiteLLM relays them — for Call (through the
// HTTPDoer wrapper, which sees the raw body) and Stream (whose raw lines
// are read with or without it).
func TestNativeCitations(t *testing.T) {
	sig := parse(t, "question, doc: Document -> answer, citations: Citations")
	doc := types.Document{Data: "The grass is green. The sky is blue.", Title: "My Document"}
	in := adapter.Values{"question": "What colour are the grass and the sky?", "doc": doc}
	for _, c := range []struct {
		name, model, body, stream string
		want                      types.Citations
	}{
		{"openai", "gpt-4o-search-preview", openaiBody, openaiStream, urlCitations},
		{"anthropic via litellm", "anthropic/claude-3-5-sonnet-20241022", litellmBody, litellmStream, docCitations},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := lmtest.NewServer(jsonReply(c.body), sseReply(c.stream), sseReply(c.stream), jsonReply(c.body))
			defer srv.Close()
			opts := []adapter.CallOption{adapter.WithRequest(openai.ChatCompletionRequest{Model: c.model})}
			client := wrapped(srv)

			res, err := adapter.Call(t.Context(), client, sig, nil, in, opts...)
			require.NoError(t, err)
			assert.Equal(t, "The grass is green and the sky is blue.", res.Outputs[0]["answer"])
			assert.Equal(t, c.want, withoutRaw(res.Outputs[0]["citations"]))
			got := res.Outputs[0]["citations"].(types.Citations)
			assert.True(t, json.Valid(got.Citations[0].Raw), "the provider's object is kept")
			assert.NotContains(t, srv.Requests()[0].Chat.Messages[0].Content, "[[ ## citations ## ]]", "the field left the prompt")

			fields, sres, err := drainFields(adapter.Stream(t.Context(), client, sig, nil, in, opts...))
			require.NoError(t, err)
			assert.Equal(t, c.want, withoutRaw(sres.Outputs[0]["citations"]))
			assert.Equal(t, "The grass is green and the sky is blue.", fields["answer"])

			// A stream needs no wrapper: its raw lines are read. (Without
			// the wrapper a Document cannot be sent: plain inputs here.)
			plain := parse(t, "question -> answer, citations: Citations")
			in := adapter.Values{"question": "What colour are the grass and the sky?"}
			_, sres, err = drainFields(adapter.Stream(t.Context(), srv.Client(), plain, nil, in, opts...))
			require.NoError(t, err)
			assert.Equal(t, c.want, withoutRaw(sres.Outputs[0]["citations"]))

			// A blocking call without the wrapper cannot see the body: the
			// field stays empty, as documented.
			res, err = adapter.Call(t.Context(), srv.Client(), plain, nil, in, opts...)
			require.NoError(t, err)
			assert.Equal(t, types.Citations{}, res.Outputs[0]["citations"])
		})
	}
}

// drainFields collects a stream's field deltas and result.
func drainFields(seq func(func(adapter.Chunk, error) bool)) (map[string]string, *adapter.Result, error) {
	fields := map[string]string{}
	var res *adapter.Result
	for ch, err := range seq {
		if err != nil {
			return fields, nil, err
		}
		fields[ch.Field] += ch.Delta
		if ch.Done {
			res = ch.Result
		}
	}
	return fields, res, nil
}

// jsonCache stores entries as JSON, as a disk or Redis cache would.
type jsonCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *jsonCache) Get(_ context.Context, key string) (adapter.CacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var e adapter.CacheEntry
	b, ok := c.m[key]
	return e, ok && json.Unmarshal(b, &e) == nil
}

func (c *jsonCache) Put(_ context.Context, key string, e adapter.CacheEntry) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = b
}

// TestNativeCitationsFromTheCache: a cache hit gives what the call gave,
// citations included, to Call and Stream alike, whichever stored it, from
// memory or from a store that keeps entries as JSON.
func TestNativeCitationsFromTheCache(t *testing.T) {
	sig := parse(t, "question -> answer, citations: Citations")
	in := adapter.Values{"question": "Why is the sky blue?"}
	opts := []adapter.CallOption{adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-search-preview"})}
	for _, c := range []struct {
		first string
		cache func() adapter.Cache
	}{
		{"call", func() adapter.Cache { return adapter.NewLRU(10) }},
		{"stream", func() adapter.Cache { return adapter.NewLRU(10) }},
		{"call", func() adapter.Cache { return &jsonCache{m: map[string][]byte{}} }},
		{"stream", func() adapter.Cache { return &jsonCache{m: map[string][]byte{}} }},
	} {
		first := c.first
		t.Run(fmt.Sprintf("stored by %s in %T", first, c.cache()), func(t *testing.T) {
			reply := jsonReply(openaiBody)
			if first == "stream" {
				reply = sseReply(openaiStream)
			}
			srv := lmtest.NewServer(reply)
			defer srv.Close()
			lm := adapter.WithMiddleware(wrapped(srv), adapter.Cached(c.cache()))
			sm := lm.(adapter.StreamingLM)
			call := func() *adapter.Result {
				res, err := adapter.Call(t.Context(), lm, sig, nil, in, opts...)
				require.NoError(t, err)
				return res
			}
			stream := func() *adapter.Result {
				_, res, err := drainFields(adapter.Stream(t.Context(), sm, sig, nil, in, opts...))
				require.NoError(t, err)
				return res
			}
			var fresh *adapter.Result
			if first == "call" {
				fresh = call()
			} else {
				fresh = stream()
			}
			assert.Equal(t, urlCitations, withoutRaw(fresh.Outputs[0]["citations"]))
			for _, hit := range []*adapter.Result{call(), stream()} {
				assert.Equal(t, 1, hit.CacheHits)
				assert.Equal(t, fresh.Outputs, hit.Outputs)
			}
			assert.Len(t, srv.Requests(), 1, "one request; the rest were hits")
		})
	}
}

// TestNativeCitationsReplaceText: where the field stays in the prompt (a
// model that is not known to cite natively), citations on the wire replace
// what the model wrote, as DSPy's parse_lm_response does; without any,
// the text's citations stand.
func TestNativeCitationsReplaceText(t *testing.T) {
	sig := parse(t, "question -> answer, citations: Citations")
	written := `[[ ## answer ## ]]\nBlue.\n\n[[ ## citations ## ]]\n[{\"type\": \"char_location\", \"cited_text\": \"made up\", \"document_index\": 0, \"start_char_index\": 0, \"end_char_index\": 7}]\n\n[[ ## completed ## ]]`
	body := strings.Replace(openaiBody, `[[ ## answer ## ]]\nThe grass is green and the sky is blue.\n\n[[ ## completed ## ]]`, written, 1)
	srv := lmtest.NewServer(jsonReply(body), jsonReply(strings.Replace(body, `"annotations"`, `"other"`, 1)))
	defer srv.Close()
	opts := adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o"})
	res, err := adapter.Call(t.Context(), wrapped(srv), sig, nil, adapter.Values{"question": "?"}, opts)
	require.NoError(t, err)
	assert.Contains(t, srv.Requests()[0].Chat.Messages[0].Content, "citations", "the field stays in the prompt")
	assert.Equal(t, urlCitations, withoutRaw(res.Outputs[0]["citations"]))

	res, err = adapter.Call(t.Context(), wrapped(srv), sig, nil, adapter.Values{"question": "?"}, opts)
	require.NoError(t, err)
	assert.Equal(t, "made up", res.Outputs[0]["citations"].(types.Citations).Citations[0].CitedText)
}

// TestNativeCitationsMalformed: extras in another shape than expected are
// skipped, or kept raw with the fields that could not be read left zero;
// they never fail the reply.
func TestNativeCitationsMalformed(t *testing.T) {
	sig := parse(t, "question -> answer, citations: Citations")
	opts := adapter.WithRequest(openai.ChatCompletionRequest{Model: "anthropic/claude"})
	body := func(extras string) string {
		return `{"id":"x","object":"chat.completion","model":"claude","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","reasoning":"thought",` +
			`"content":"[[ ## answer ## ]]\nBlue.\n\n[[ ## completed ## ]]"` + extras + `}}]}`
	}
	for extras, want := range map[string][]types.Citation{
		`,"annotations":{"type":"url_citation"}`:                                                                         nil,
		`,"annotations":[1,"x",null,{"type":"file_citation"}]`:                                                           nil,
		`,"provider_specific_fields":"citations"`:                                                                        nil,
		`,"provider_specific_fields":{"citations":{"type":"char_location"}}`:                                             nil,
		`,"provider_specific_fields":{"citations":[[1,{"type":"char_location","cited_text":7,"start_char_index":"3"}]]}`: {{Type: "char_location"}},
		`,"provider_specific_fields":{"citations":[{"type":"page_location","cited_text":"p","document_index":1,"start_page_number":2,"end_page_number":3}]}`:         {{Type: "page_location", CitedText: "p", DocumentIndex: 1}},
		`,"provider_specific_fields":{"citations":[{"type":"web_search_result_location","cited_text":"c","url":"https://e.org","title":"E","encrypted_index":"x"}]}`: {{Type: "web_search_result_location", CitedText: "c", URL: "https://e.org", DocumentTitle: strp("E")}},
	} {
		srv := lmtest.NewServer(jsonReply(body(extras)))
		res, err := adapter.Call(t.Context(), wrapped(srv), sig, nil, adapter.Values{"question": "?"}, opts)
		srv.Close()
		require.NoError(t, err, extras)
		assert.Equal(t, "Blue.", res.Outputs[0]["answer"], extras)
		if want == nil {
			assert.Equal(t, types.Citations{}, res.Outputs[0]["citations"], extras)
			continue
		}
		assert.Equal(t, types.Citations{Citations: want}, withoutRaw(res.Outputs[0]["citations"]), extras)
		assert.NotEmpty(t, res.Outputs[0]["citations"].(types.Citations).Citations[0].Raw, extras)
	}
}

// TestCitationsPlan: the field leaves the prompt for the models that cite
// natively: Anthropic's (DSPy's rule) and OpenAI's search models.
func TestCitationsPlan(t *testing.T) {
	for model, drop := range map[string]bool{
		"anthropic/claude-3-5-sonnet": true, "gpt-4o-search-preview": true, "openai/gpt-4o-mini-search-preview-2025-03-11": true,
		"gpt-5-search-api": true, "gpt-4o": false, "claude-3-5-sonnet": false, "": false,
	} {
		p := types.Citations{}.PlanNative(adapter.NativeRequest{Request: openai.ChatCompletionRequest{Model: model}})
		assert.Equal(t, drop, p.Drop, model)
	}
}

// TestCitationsText: written by the model, a citation without a type is a
// char_location (DSPy's default), whichever adapter reads it; the prompt's
// schema requires what DSPy's does, never a URL.
func TestCitationsText(t *testing.T) {
	sig := parse(t, "question -> answer, citations: Citations")
	want := types.Citations{Citations: []types.Citation{{Type: "char_location", CitedText: "x", EndCharIndex: 1}}}
	vals, err := adapter.Chat{}.Parse(sig, "[[ ## answer ## ]]\na\n\n[[ ## citations ## ]]\n"+`[{"cited_text": "x", "document_index": 0, "start_char_index": 0, "end_char_index": 1}]`)
	require.NoError(t, err)
	assert.Equal(t, want, vals["citations"])
	vals, err = adapter.JSON{}.Parse(sig, `{"answer": "a", "citations": {"citations": [{"cited_text": "x", "document_index": 0, "start_char_index": 0, "end_char_index": 1}]}}`)
	require.NoError(t, err)
	assert.Equal(t, want, vals["citations"])

	msgs, err := adapter.JSON{}.Format(sig, nil, adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Contains(t, msgs[0].Content, `\"required\": [\"cited_text\", \"document_index\", \"start_char_index\", \"end_char_index\"]`)
}
