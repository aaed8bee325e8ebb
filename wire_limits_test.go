package adapter_test

import (
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
			for ch, err := range adapter.Stream(t.Context(), lm, sig, nil, in, adapter.NoRetry(), adapter.UseAdapter(adapter.Chat{NativeTools: true})) {
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
	assert.Less(t, large, uint64(40*largeIn), "bytes allocated for a %d-byte stream", largeIn)
}
