package adapter_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// callBoth runs one call as a Call or a Stream and returns its Result
// (as the trace's CallDone reports it, for a failed stream too) and error.
func callBoth(t *testing.T, stream bool, lm adapter.StreamingLM, sig *signature.Signature, in adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error) {
	t.Helper()
	var res *adapter.Result
	opts = append(opts, adapter.UseTrace(&adapter.Trace{CallDone: func(i adapter.CallDoneInfo) { res = i.Result }}))
	var err error
	if stream {
		_, _, err = drain(adapter.Stream(t.Context(), lm, sig, nil, in, opts...))
	} else {
		_, err = adapter.Call(t.Context(), lm, sig, nil, in, opts...)
	}
	require.NotNil(t, res)
	return res, err
}

// TestNativeToolsGuessedNo: an adapter that asks for native tool calls,
// on a model the name table does not know, asks for the calls in the text
// (as DSPy does for a model without function calling), and says so: a note
// in the Result (which the trace's CallDone carries, and predict.Logger
// logs) naming the model and adapter.WithCapabilities; when the reply
// cannot be read, the error names the guess (newcomer review 4, item 2:
// the call sent no tools, said nothing, and failed "output field
// missing"). Declared capabilities send the tools, with no note. Call and
// Stream agree.
func TestNativeToolsGuessedNo(t *testing.T) {
	sig, err := signature.Parse("question, tools: list[Tool] -> answer: int, tool_calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	in := adapter.Values{"question": "q", "tools": []types.Tool{{Name: "search", Args: []byte(`{"query": {"type": "string"}}`)}}}
	chat := adapter.Chat{Options: adapter.Options{NativeTools: adapter.On, NoFallback: true}}
	model := adapter.WithRequest(openai.ChatCompletionRequest{Model: "my-vllm-model"})
	inText := "[[ ## answer ## ]]\n7\n\n[[ ## tool_calls ## ]]\n" +
		`{"tool_calls": [{"name": "search", "args": {"query": "x"}}]}` + "\n\n[[ ## completed ## ]]"
	for _, stream := range []bool{false, true} {
		name := fmt.Sprintf("stream %v", stream)

		// The model is asked in the text, and answers there.
		srv := lmtest.NewServer(lmtest.Text(inText), lmtest.Text("no markers at all"))
		var logs bytes.Buffer
		res, err := callBoth(t, stream, srv.Client(), sig, in, adapter.UseAdapter(chat), model, adapter.NoRetry(),
			adapter.UseTrace(predict.Logger(slog.New(slog.NewJSONHandler(&logs, nil)))))
		require.NoError(t, err, name)
		var body map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body), name)
		assert.NotContains(t, body, "tools", "%s: no native tools for a model not known to call them", name)
		assert.Contains(t, srv.Requests()[0].Chat.Messages[1].Content, "[[ ## tool_calls ## ]]", "%s: the calls asked for in the text", name)
		require.Len(t, res.Notes, 1, name)
		for _, want := range []string{"tool_calls", `"my-vllm-model"`, "adapter.WithCapabilities", "in the text"} {
			assert.Contains(t, res.Notes[0], want, name)
		}
		calls := res.Outputs[0]["tool_calls"].(types.ToolCalls).Calls
		require.Len(t, calls, 1, name)
		assert.Equal(t, "search", calls[0].Name, name)
		assert.Equal(t, map[string]any{"query": "x"}, calls[0].Args, name)
		assert.Contains(t, logs.String(), `"msg":"note"`, "%s: predict.Logger logs the note", name)

		// A reply that cannot be read: the error names the guess.
		res, err = callBoth(t, stream, srv.Client(), sig, in, adapter.UseAdapter(chat), model, adapter.NoRetry())
		var ge *adapter.CapabilityGuessError
		require.ErrorAs(t, err, &ge, name)
		assert.Equal(t, "my-vllm-model", ge.Model, name)
		assert.Equal(t, adapter.Capabilities{}, ge.Guess, name)
		var pe *adapter.ParseError
		assert.ErrorAs(t, err, &pe, "%s: the parse error is in the chain", name)
		assert.Contains(t, err.Error(), `model "my-vllm-model" were guessed from its name: none; declare what the LM supports with adapter.WithCapabilities`, name)
		assert.Len(t, res.Notes, 1, name)
		srv.Close()

		// Declared: the tools are sent natively; nothing to note, and a
		// failure is the parse error alone.
		srv = lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\n7").WithToolCalls(openai.ToolCall{ID: "c1", Type: "function",
			Function: openai.FunctionCall{Name: "search", Arguments: `{"query": "x"}`}}), lmtest.Text("no markers at all"))
		lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
		res, err = callBoth(t, stream, lm, sig, in, adapter.UseAdapter(chat), model, adapter.NoRetry())
		require.NoError(t, err, name)
		require.NoError(t, json.Unmarshal(srv.Requests()[0].Body, &body), name)
		assert.Contains(t, body, "tools", name)
		assert.Empty(t, res.Notes, name)
		_, err = callBoth(t, stream, lm, sig, in, adapter.UseAdapter(chat), model, adapter.NoRetry())
		assert.ErrorAs(t, err, &pe, name)
		assert.False(t, errors.As(err, &ge), "%s: declared capabilities are no guess", name)
		srv.Close()
	}
}

// TestNativeToolsGuessedYes: a guess that grants tools (gpt-4o) sends
// them; a provider that rejects the request (400) fails the call with an
// error naming the guess. A 400 for a call that used no guessed feature
// is the provider's error alone.
func TestNativeToolsGuessedYes(t *testing.T) {
	sig, err := signature.Parse("question, tools: list[Tool] -> answer, tool_calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	in := adapter.Values{"question": "q", "tools": []types.Tool{{Name: "search", Args: []byte(`{"query": {"type": "string"}}`)}}}
	chat := adapter.Chat{Options: adapter.Options{NativeTools: adapter.On, NoFallback: true}}
	model := adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-proxied"})
	rejected := lmtest.Error(http.StatusBadRequest, `{"error":{"message":"tools are not supported by this deployment"}}`)
	for _, stream := range []bool{false, true} {
		name := fmt.Sprintf("stream %v", stream)
		srv := lmtest.NewServer(rejected, rejected)
		_, err := callBoth(t, stream, srv.Client(), sig, in, adapter.UseAdapter(chat), model, adapter.NoRetry())
		var ge *adapter.CapabilityGuessError
		require.ErrorAs(t, err, &ge, name)
		assert.True(t, ge.Guess.Tools, name)
		var le *adapter.LMError
		assert.ErrorAs(t, err, &le, name)
		assert.Contains(t, err.Error(), "structured outputs, JSON mode, tools, prompt_cache_key; declare what the LM supports", name)

		_, err = callBoth(t, stream, srv.Client(), mustParse(t, "q -> a"), adapter.Values{"q": "x"}, model, adapter.NoRetry())
		require.ErrorAs(t, err, &le, name)
		assert.False(t, errors.As(err, &ge), "%s: no guessed feature in the request", name)
		assert.False(t, strings.Contains(err.Error(), "guessed"), name)
		srv.Close()
	}
}
