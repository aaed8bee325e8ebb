package types_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// Where tool calls meet DSPy's behaviour, checked against
// DSPy 3.3.1 (tests/adapters/test_chat_adapter.py, test_json_adapter.py,
// dspy/adapters/base.py).

var parityTools = []types.Tool{{Name: "search", Args: []byte(`{"query": {"type": "string"}}`)}}

// TestToolCallsReminder: the output reminder asks for a ToolCalls field as
// DSPy writes it, in Chat and in JSON without native tools.
func TestToolCallsReminder(t *testing.T) {
	sig := parse(t, "question, tools: list[Tool] -> next_thought, tool_calls: ToolCalls")
	in := adapter.Values{"question": "Q2", "tools": parityTools}
	const hint = `(must be a JSON object like {"tool_calls": [{"name": "...", "args": {...}}]})`

	msgs, err := adapter.Chat{}.Format(sig, nil, in)
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(msgs[len(msgs)-1].Content,
		"Respond with the corresponding output fields, starting with the field `[[ ## next_thought ## ]]`, then `[[ ## tool_calls ## ]]` "+hint+
			", and then ending with the marker for `[[ ## completed ## ]]`."), msgs[len(msgs)-1].Content)

	msgs, err = adapter.JSON{Options: adapter.Options{NativeTools: adapter.Off}}.Format(sig, nil, in)
	require.NoError(t, err)
	assert.Equal(t, "[[ ## question ## ]]\nQ2\n\n[[ ## tools ## ]]\n[\"search. It takes arguments {'query': {'type': 'string'}}.\"]\n\n"+
		"Respond with a JSON object in the following order of fields: `next_thought`, then `tool_calls` "+hint+".", msgs[len(msgs)-1].Content)

	// Any other non-str type keeps DSPy's generic wording.
	msgs, err = adapter.Chat{}.Format(parse(t, "q -> n: int"), nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Contains(t, msgs[len(msgs)-1].Content, "`[[ ## n ## ]]` (must be formatted as a valid Python int)")
}

// TestNativeToolRequestOptions: with native tool calling,
// parallel_tool_calls follows the adapter's option (a template's own value
// wins), and tool_choice "auto" is sent only with parallel_tool_calls, as
// DSPy's LM layer adds it (issue 30 item 12: it was sent with every native
// tool request); the JSON adapter without native tools sends none of the
// three (a tool_choice without tools is an HTTP 400 at OpenAI).
func TestNativeToolRequestOptions(t *testing.T) {
	sig := parse(t, "question, tools: list[Tool] -> answer, tool_calls: ToolCalls")
	in := adapter.Values{"question": "q", "tools": parityTools}
	reply := lmtest.Text(`{"answer": "a", "tool_calls": {"tool_calls": []}}`)
	body := func(t *testing.T, a adapter.Adapter, req openai.ChatCompletionRequest) map[string]json.RawMessage {
		t.Helper()
		srv := lmtest.NewServer(reply)
		defer srv.Close()
		lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
		_, err := adapter.Call(context.Background(), lm, sig, nil, in, adapter.UseAdapter(a), adapter.WithRequest(req), adapter.NoFallback())
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &m))
		return m
	}

	m := body(t, adapter.JSON{}, openai.ChatCompletionRequest{})
	_, parallel := m["parallel_tool_calls"]
	_, tools := m["tools"]
	_, choice := m["tool_choice"]
	assert.False(t, parallel, "parallel_tool_calls is left to the provider")
	assert.False(t, choice, "so is tool_choice, as in DSPy")
	assert.True(t, tools)

	m = body(t, adapter.JSON{Options: adapter.Options{ParallelToolCalls: adapter.Off}}, openai.ChatCompletionRequest{})
	assert.JSONEq(t, `false`, string(m["parallel_tool_calls"]))
	assert.JSONEq(t, `"auto"`, string(m["tool_choice"]), "parallel_tool_calls brings tool_choice auto, as DSPy's LM layer adds it")

	m = body(t, adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}, openai.ChatCompletionRequest{ParallelToolCalls: true})
	assert.JSONEq(t, `true`, string(m["parallel_tool_calls"]))
	assert.JSONEq(t, `"auto"`, string(m["tool_choice"]), "the template's parallel_tool_calls too")

	m = body(t, adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}, openai.ChatCompletionRequest{ToolChoice: "required"})
	assert.JSONEq(t, `"required"`, string(m["tool_choice"]), "the template's tool_choice is sent as it is")
	_, parallel = m["parallel_tool_calls"]
	assert.False(t, parallel)

	m = body(t, adapter.Chat{Options: adapter.Options{NativeTools: adapter.On, ParallelToolCalls: adapter.On}},
		openai.ChatCompletionRequest{ToolChoice: "required", ParallelToolCalls: false})
	assert.JSONEq(t, `"required"`, string(m["tool_choice"]), "the template's tool_choice is kept")
	assert.JSONEq(t, `false`, string(m["parallel_tool_calls"]), "the template's parallel_tool_calls is kept")

	m = body(t, adapter.JSON{Options: adapter.Options{NativeTools: adapter.Off}}, openai.ChatCompletionRequest{
		Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "submit"}}}, ToolChoice: "auto", ParallelToolCalls: true})
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		_, sent := m[k]
		assert.False(t, sent, "JSON without native tools sends no %s", k)
	}
}

// TestToolCallsWithoutToolInput: a ToolCalls output for native tool
// calling with no input holding the tools is an error before any LM call
// (DSPy's ValueError in _call_preprocess), whether or not the LM supports
// tools; without native tool calling the calls are asked for in the text.
func TestToolCallsWithoutToolInput(t *testing.T) {
	sig := parse(t, "question -> answer, tool_calls: ToolCalls")
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\na\n\n[[ ## tool_calls ## ]]\n[]"))
	defer srv.Close()
	for _, caps := range []adapter.Capabilities{{Tools: true}, {}} {
		lm := adapter.WithCapabilities(srv.Client(), caps)
		_, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.JSON{}))
		var ie *adapter.InputError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "tool_calls", ie.Field)
		for range adapter.Stream(context.Background(), lm.(adapter.StreamingLM), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.JSON{})) {
		}
	}
	assert.Empty(t, srv.Requests(), "no LM call")

	res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.Chat{}))
	require.NoError(t, err)
	assert.Equal(t, "a", res.Outputs[0]["answer"])
}
