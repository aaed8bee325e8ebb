package adapter_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// toolDeltas is a stream whose one tool call's arguments arrive in k
// deltas of 4 bytes.
func toolDeltas(k int) []byte {
	ev := []string{`{"id":"x","model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"query\": \""}}]}}]}`}
	for range k {
		ev = append(ev, `{"id":"x","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"abcd"}}]}}]}`)
	}
	ev = append(ev, `{"id":"x","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]")
	return sseEvents(ev...)
}

func toolSig(t testing.TB) *signature.Signature {
	sig, err := signature.Parse("question, tools: list[Tool] -> answer, calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	return sig
}

// TestStreamedToolArgumentsLinear: a tool call's arguments streamed in
// many small deltas are assembled in work linear in the deltas (they were
// concatenated with +=: 40 000 deltas of 4 bytes allocated 3.2 GiB for a
// 4 MiB stream). Doubling the deltas about doubles the bytes allocated,
// and the call gets the whole arguments, in the ToolCalls chunks and in
// the Result.
func TestStreamedToolArgumentsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	sig := toolSig(t)
	in := adapter.Values{"question": "q", "tools": []types.Tool{replayTool(t)}}
	run := func(k int) (uint64, int) {
		body := toolDeltas(k)
		srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, body))
		defer srv.Close()
		lm := client(srv, false, adapter.Capabilities{Tools: true})
		var last []openai.ToolCall
		var res *adapter.Result
		_, b := allocated(func() {
			for ch, err := range adapter.Stream(t.Context(), lm, sig, nil, in, adapter.NoRetry(), adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}})) {
				require.NoError(t, err)
				if ch.ToolCalls != nil {
					last = ch.ToolCalls
				}
				if ch.Done {
					res = ch.Result
				}
			}
		})
		want := `{"query": "` + strings.Repeat("abcd", k) + `"}`
		require.Len(t, last, 1)
		assert.Equal(t, want, last[0].Function.Arguments)
		require.NotNil(t, res)
		calls := res.Outputs[0]["calls"].(types.ToolCalls).Calls
		require.Len(t, calls, 1)
		assert.Equal(t, strings.Repeat("abcd", k), calls[0].Args["query"])
		return b, len(body)
	}
	small, smallIn := run(10000)
	large, largeIn := run(20000)
	t.Logf("10 000 deltas (%d KiB): %d MiB allocated; 20 000 (%d KiB): %d MiB", smallIn>>10, small>>20, largeIn>>10, large>>20)
	assert.Less(t, float64(large)/float64(small), 2.6, "doubling the deltas: %d → %d bytes allocated", small, large)
	if !raceEnabled {
		assert.Less(t, large, uint64(40*largeIn), "bytes allocated for a %d-byte stream", largeIn)
	}
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

const citedAnswer = "[[ ## answer ## ]]\nx\n\n[[ ## cites ## ]]\n{\"citations\": []}\n\n[[ ## completed ## ]]"

// wireItemsReply is a reply whose choice carries n annotations or
// citations of the given kind, as a blocking body or as a stream (one
// event carrying them all after the text; for "citation", one event per
// citation).
func wireItemsReply(kind string, n int, stream bool) []byte {
	text, _ := json.Marshal(citedAnswer)
	var list []string
	var items string
	switch kind {
	case "annotations":
		for i := range n {
			list = append(list, fmt.Sprintf(`{"type":"url_citation","url_citation":{"url":"https://e.org/%d","title":"E","start_index":0,"end_index":1}}`, i))
		}
		items = `"annotations":[` + strings.Join(list, ",") + `]`
	case "citations":
		for i := range n {
			list = append(list, fmt.Sprintf(`[{"type":"char_location","cited_text":"x","start_char_index":%d}]`, i))
		}
		items = `"provider_specific_fields":{"citations":[` + strings.Join(list, ",") + `]}`
	case "citation":
		var ev []string
		ev = append(ev, `{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":`+string(text)+`}}]}`)
		for i := range n {
			ev = append(ev, fmt.Sprintf(`{"id":"x","model":"m","choices":[{"index":0,"delta":{"provider_specific_fields":{"citation":{"type":"char_location","cited_text":"x","start_char_index":%d}}}}]}`, i))
		}
		ev = append(ev, `{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
		return sseEvents(ev...)
	}
	if stream {
		return sseEvents(`{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":`+string(text)+`}}]}`,
			`{"id":"x","model":"m","choices":[{"index":0,"delta":{`+items+`}}]}`,
			`{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
	}
	return []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":` + string(text) + `,` + items + `}}]}`)
}

// callWire runs one Call (or Stream) of a signature with a Citations
// output against body, through a client with HTTPDoer, and returns what
// it gave, the bytes it allocated and the requests the server saw.
func callWire(t *testing.T, body []byte, stream bool, opts ...adapter.CallOption) (*adapter.Result, error, uint64, int) {
	sig, err := signature.Parse("question -> answer, cites: Citations", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	h := jsonHeader
	if stream {
		h = sseHeader
	}
	srv := lmtest.NewServer(lmtest.Raw(200, h, body), lmtest.Raw(200, h, body))
	defer srv.Close()
	lm := client(srv, true, adapter.Capabilities{})
	in := adapter.Values{"question": "q"}
	opts = append([]adapter.CallOption{fast}, opts...)
	var res *adapter.Result
	_, b := allocated(func() {
		if stream {
			res, err = streamResult(adapter.Stream(t.Context(), lm, sig, nil, in, opts...))
		} else {
			res, err = adapter.Call(t.Context(), lm, sig, nil, in, opts...)
		}
	})
	return res, err, b, len(srv.Requests())
}

// streamResult runs a stream to its end and returns its Result or error,
// without keeping its deltas.
func streamResult(seq func(func(adapter.Chunk, error) bool)) (*adapter.Result, error) {
	for ch, err := range seq {
		if err != nil {
			return nil, err
		}
		if ch.Done {
			return ch.Result, nil
		}
	}
	return nil, nil
}

func requireTooLarge(t *testing.T, err error, mentions string, msgAndArgs ...any) {
	t.Helper()
	var lmErr *adapter.LMError
	require.ErrorAs(t, err, &lmErr, msgAndArgs...)
	require.ErrorIs(t, err, adapter.ErrReplyTooLarge, msgAndArgs...)
	assert.Contains(t, err.Error(), mentions, msgAndArgs...)
}

// TestWireItemsBounded: the annotations and citations a choice carries
// are bounded (Limits.WireItems, 1024 by default): a reply with more is an
// *LMError matching ErrReplyTooLarge, neither retried nor sent to the
// fallback, in a body and in a stream; at the limit it is read whole. Each
// item is read once, so a reply of many small items allocates a small
// multiple of its size (an 8.6 MiB body of citations allocated 16.8 GiB;
// 512 KiB of them, 305 MiB), and with the limit off the cost stays linear.
func TestWireItemsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	for _, kind := range []string{"annotations", "citations", "citation"} {
		for _, stream := range []bool{false, true} {
			if kind == "citation" && !stream {
				continue // a stream's own shape
			}
			name := fmt.Sprintf("%s stream=%v", kind, stream)
			res, err, _, _ := callWire(t, wireItemsReply(kind, adapter.DefaultWireItems, stream), stream)
			require.NoError(t, err, name)
			cites := res.Outputs[0]["cites"].(types.Citations)
			assert.Len(t, cites.Citations, adapter.DefaultWireItems, name)

			_, err, _, requests := callWire(t, wireItemsReply(kind, adapter.DefaultWireItems+1, stream), stream)
			requireTooLarge(t, err, "more than 1024 annotations and citations (Limits.WireItems", name)
			assert.Equal(t, 1, requests, "%s: neither retried nor sent to the fallback", name)

			body := wireItemsReply(kind, 40000, stream)
			_, err, b, _ := callWire(t, body, stream)
			requireTooLarge(t, err, "Limits.WireItems", name)
			if !raceEnabled {
				assert.Less(t, b, uint64(12*len(body)), "%s: %d bytes allocated for a %d-byte reply", name, b, len(body))
			}

			// Raised, the limit applies to the raised count; off, the cost
			// of reading every item stays linear.
			_, err, _, _ = callWire(t, wireItemsReply(kind, 11, stream), stream, adapter.WithLimits(adapter.Limits{WireItems: 10}))
			requireTooLarge(t, err, "more than 10 annotations", name)
			off := adapter.WithLimits(adapter.Limits{WireItems: -1})
			small := wireItemsReply(kind, 5000, stream)
			res, err, sb, _ := callWire(t, small, stream, off)
			require.NoError(t, err, name)
			assert.Len(t, res.Outputs[0]["cites"].(types.Citations).Citations, 5000, name)
			large := wireItemsReply(kind, 10000, stream)
			_, err, lb, _ := callWire(t, large, stream, off)
			require.NoError(t, err, name)
			t.Logf("%s, no limit: 5 000 items (%d KiB) %d KiB allocated, 10 000 (%d KiB) %d KiB", name, len(small)>>10, sb>>10, len(large)>>10, lb>>10)
			assert.Less(t, float64(lb)/float64(sb), 2.6, "%s: doubling the items: %d → %d bytes", name, sb, lb)
		}
	}
}

// TestWireItemsNameTheirChoice: the limit holds per choice, and the error
// names the choice past it.
func TestWireItemsNameTheirChoice(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	var items []string
	for i := range 11 {
		items = append(items, fmt.Sprintf(`{"type":"url_citation","url_citation":{"url":"https://e.org/%d"}}`, i))
	}
	ann := `"annotations":[` + strings.Join(items, ",") + `]`
	stream := sseEvents(
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\nx"}},{"index":1,"delta":{"content":"[[ ## answer ## ]]\ny"}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{"annotations":[`+items[0]+`]}},{"index":1,"delta":{`+ann+`}}]}`,
		`{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"},{"index":1,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
	body := []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"[[ ## answer ## ]]\nx","annotations":[` + items[0] + `]}},{"index":1,"finish_reason":"stop","message":{"role":"assistant","content":"[[ ## answer ## ]]\ny",` + ann + `}}]}`)
	srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, stream), lmtest.Raw(200, jsonHeader, body))
	defer srv.Close()
	lm := client(srv, true, adapter.Capabilities{})
	opts := []adapter.CallOption{adapter.NoRetry(), adapter.WithRequest(openai.ChatCompletionRequest{N: 2}), adapter.WithLimits(adapter.Limits{WireItems: 10})}
	_, err := streamResult(adapter.Stream(t.Context(), lm, sig, nil, adapter.Values{"question": "q"}, opts...))
	requireTooLarge(t, err, "choice 1 carries more than 10 annotations and citations")
	_, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"question": "q"}, opts...)
	requireTooLarge(t, err, "choice 1 carries more than 10 annotations and citations")
}

// TestStreamChoicesBounded: a stream event or a reply with more choices
// than any request can ask for (128) is an error before they are decoded
// (a 921 KiB line of choices allocated 371 MiB).
func TestStreamChoicesBounded(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "q"}
	for _, n := range []int{129, 50000} {
		for _, shape := range []string{`{"index":0,"delta":{"content":"a"}}`, `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"a"}}]}}`} {
			line := `{"id":"x","model":"m","choices":[` + strings.TrimSuffix(strings.Repeat(shape+",", n), ",") + `]}`
			body := sseEvents(line, `{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")
			for _, wrapped := range []bool{false, true} {
				srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, body))
				var err error
				_, b := allocated(func() {
					_, err = streamResult(adapter.Stream(t.Context(), client(srv, wrapped, adapter.Capabilities{}), sig, nil, in, adapter.NoRetry()))
				})
				srv.Close()
				requireTooLarge(t, err, "a stream event with more than 128 choices")
				if !raceEnabled {
					assert.Less(t, b, uint64(8*len(body)+1<<20), "%d choices: %d bytes allocated for %d", n, b, len(body))
				}
			}
		}
	}
	var choices []string
	for i := range 129 {
		choices = append(choices, fmt.Sprintf(`{"index":%d,"finish_reason":"stop","message":{"role":"assistant","content":"[[ ## answer ## ]]\nx"}}`, i))
	}
	body := []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[` + strings.Join(choices, ",") + `]}`)
	for _, wrapped := range []bool{false, true} {
		srv := lmtest.NewServer(lmtest.Raw(200, jsonHeader, body))
		_, err := adapter.Call(t.Context(), client(srv, wrapped, adapter.Capabilities{}), sig, nil, in, adapter.NoRetry())
		srv.Close()
		requireTooLarge(t, err, "a reply with more than 128 choices")
	}
}

// TestReplyBytesLimit: a reply past Limits.ReplyBytes ends with an
// *LMError matching ErrReplyTooLarge that names the limit — never a
// shortened reply parsed as whole — after whatever deltas it already
// streamed; it is not retried. A stream's events count with or without
// HTTPDoer; through it, every byte of the body counts (comments too), and
// a blocking body is bounded as well. Under the limit, nothing changes.
// A module's limits and a call's combine field by field.
func TestReplyBytesLimit(t *testing.T) {
	sig := mustParse(t, "question -> answer")
	in := adapter.Values{"question": "q"}
	limit := adapter.WithLimits(adapter.Limits{ReplyBytes: 64 << 10})
	var ev []string
	for range 1000 {
		ev = append(ev, `{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":"[[ ## answer ## ]]\nsome words of a long answer "}}]}`)
	}
	long := sseEvents(append(ev, `{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")...)
	short := sseEvents(append(ev[:100:100], `{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, "[DONE]")...)
	comments := []byte(strings.Repeat(": "+strings.Repeat("keep-alive ", 90)+"\n", 100) + string(short))
	for _, wrapped := range []bool{false, true} {
		for name, c := range map[string]struct {
			body []byte
			opts []adapter.CallOption
			fail bool
		}{
			"past the limit":          {long, []adapter.CallOption{limit}, true},
			"under it":                {short, []adapter.CallOption{limit}, false},
			"off":                     {long, []adapter.CallOption{adapter.WithLimits(adapter.Limits{ReplyBytes: -1})}, false},
			"default":                 {long, nil, false},
			"module's, call's other":  {long, []adapter.CallOption{adapter.Defaults(limit), adapter.WithLimits(adapter.Limits{WireItems: 3})}, true},
			"call's beats module's":   {long, []adapter.CallOption{adapter.Defaults(limit), adapter.WithLimits(adapter.Limits{ReplyBytes: 1 << 20})}, false},
			"comments past the limit": {comments, []adapter.CallOption{limit}, wrapped},
		} {
			srv := lmtest.NewServer(lmtest.Raw(200, sseHeader, c.body), lmtest.Raw(200, sseHeader, c.body))
			var deltas int
			var res *adapter.Result
			var err error
			for ch, e := range adapter.Stream(t.Context(), client(srv, wrapped, adapter.Capabilities{}), sig, nil, in, append([]adapter.CallOption{fast}, c.opts...)...) {
				if e != nil {
					err = e
					break
				}
				if ch.Delta != "" {
					deltas++
				}
				if ch.Done {
					res = ch.Result
				}
			}
			requests := len(srv.Requests())
			srv.Close()
			what := fmt.Sprintf("%s wrapped=%v", name, wrapped)
			if !c.fail {
				require.NoError(t, err, what)
				require.NotNil(t, res, what)
				continue
			}
			requireTooLarge(t, err, "stream passed 64 KiB (Limits.ReplyBytes", what)
			assert.Nil(t, res, what)
			assert.Equal(t, 1, requests, "%s: not retried", what)
			if name == "past the limit" {
				assert.Positive(t, deltas, "%s: the deltas before the limit were streamed", what)
			}
		}
	}

	// A blocking body: bounded through HTTPDoer; without it go-openai reads
	// it whole (documented).
	text, _ := json.Marshal("[[ ## answer ## ]]\n" + strings.Repeat("word ", 20000))
	body := []byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":` + string(text) + `}}]}`)
	for _, wrapped := range []bool{false, true} {
		srv := lmtest.NewServer(lmtest.Raw(200, jsonHeader, body), lmtest.Raw(200, jsonHeader, body))
		_, err := adapter.Call(t.Context(), client(srv, wrapped, adapter.Capabilities{}), sig, nil, in, limit, fast)
		requests := len(srv.Requests())
		srv.Close()
		if !wrapped {
			require.NoError(t, err)
			continue
		}
		requireTooLarge(t, err, "reply body passed 64 KiB (Limits.ReplyBytes")
		assert.Equal(t, 1, requests, "not retried")
	}
}
