package types_test

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// TestHistoryNativeToolTurnThroughCall: an agent keeps its own history; a
// turn holding native tool calls and their results is replayed to the
// model in native mode as DSPy replays it — the assistant message with its
// tool_calls, then one tool message per result. Regression (features.md
// E10, G07): the ToolCalls output leaves the prompt in native mode, and the
// earlier call and its result vanished from the request.
func TestHistoryNativeToolTurnThroughCall(t *testing.T) {
	sig := parse(t, "question, history: History, tools: list[Tool] -> answer, tool_calls: ToolCalls")
	weather, err := types.NewTool("get_weather", "The weather in a city.", func(_ context.Context, a weatherArgs) (string, error) { return "rain in " + a.City, nil })
	require.NoError(t, err)
	var h types.History
	require.NoError(t, json.Unmarshal([]byte(`{"messages": [{"question": "Weather in Oslo?", "answer": "Let me check.",
		"tool_calls": {"tool_calls": [{"id": "call_1", "name": "get_weather", "args": {"city": "Oslo"}}],
		"tool_call_results": [{"call_id": "call_1", "name": "get_weather", "value": "rain in Oslo"}]}}]}`), &h))
	srv := lmtest.NewServer(lmtest.Text(`{"answer": "It rains in Oslo."}`))
	defer srv.Close()
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true, JSONMode: true})
	res, err := adapter.Call(context.Background(), lm, sig, nil,
		adapter.Values{"question": "And now?", "history": h, "tools": []types.Tool{weather}}, adapter.UseAdapter(adapter.JSON{}))
	require.NoError(t, err)
	assert.Equal(t, "It rains in Oslo.", res.Outputs[0]["answer"])

	msgs := srv.Requests()[0].Chat.Messages
	require.Len(t, msgs, 5, "system, the turn's question, its answer with the call, the tool's result, the request")
	assert.Equal(t, "[[ ## question ## ]]\nWeather in Oslo?", msgs[1].Content)
	assert.Equal(t, openai.ChatMessageRoleAssistant, msgs[2].Role)
	assert.Equal(t, "{\n  \"answer\": \"Let me check.\"\n}", msgs[2].Content)
	require.Len(t, msgs[2].ToolCalls, 1)
	assert.Equal(t, openai.ToolCall{ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "get_weather", Arguments: `{"city": "Oslo"}`}}, msgs[2].ToolCalls[0])
	assert.Equal(t, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: "call_1", Name: "get_weather", Content: "rain in Oslo"}, msgs[3])
	assert.Contains(t, msgs[4].Content, "[[ ## question ## ]]\nAnd now?")
	require.Len(t, srv.Requests()[0].Chat.Tools, 1, "the tools go in the request")
}

// TestNativeToolTurnKeepsUnreadableArguments: a turn's call whose
// arguments could not be read replays what the model wrote, never "{}"
// (the model would see itself asking for the wrong thing).
func TestNativeToolTurnKeepsUnreadableArguments(t *testing.T) {
	var tc types.ToolCalls
	require.NoError(t, json.Unmarshal([]byte(`{"tool_calls": [{"id": "c1", "name": "pay", "arguments": "{\"amount\": 10"}],
		"tool_call_results": [{"call_id": "c1", "name": "pay", "value": "not run", "is_error": true}]}`), &tc))
	require.Error(t, tc.Calls[0].Err)
	calls, msgs, ok := tc.NativeToolTurn()
	require.True(t, ok)
	assert.Equal(t, `{"amount": 10`, calls[0].Function.Arguments)
	assert.Equal(t, "not run", msgs[0].Content)
}
