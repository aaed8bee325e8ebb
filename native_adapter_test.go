package adapter_test

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// TestCallAdapter: CallAdapter names the adapter a call resolves to, by the
// rule Call uses (call option, then context, then the defaults, then the
// default adapter), and the built-in adapters switch native function
// calling on.
func TestCallAdapter(t *testing.T) {
	ctx := context.Background()
	xml := adapter.XML{}
	assert.Equal(t, adapter.DefaultAdapter(), adapter.CallAdapter(ctx))
	assert.Equal(t, xml, adapter.CallAdapter(ctx, adapter.Defaults(adapter.UseAdapter(xml))))
	inCtx := adapter.WithAdapter(ctx, adapter.JSON{})
	assert.Equal(t, adapter.JSON{}, adapter.CallAdapter(inCtx, adapter.Defaults(adapter.UseAdapter(xml))), "the context beats a module's default")
	assert.Equal(t, xml, adapter.CallAdapter(inCtx, adapter.UseAdapter(xml)), "a call's option beats the context")

	for a, want := range map[adapter.NativeToolAdapter]adapter.Adapter{
		adapter.Chat{Options: adapter.Options{NoFallback: true}}: adapter.Chat{Options: adapter.Options{NoFallback: true, NativeTools: adapter.On}},
		adapter.XML{}: adapter.XML{Options: adapter.Options{NativeTools: adapter.On}},
		adapter.JSON{Options: adapter.Options{NativeTools: adapter.Off}}: adapter.JSON{Options: adapter.Options{NativeTools: adapter.On}},
		adapter.BAML{}: adapter.BAML{Options: adapter.Options{NativeTools: adapter.On}},
	} {
		assert.Equal(t, want, a.WithNativeTools())
	}
}

// toolRequests runs a call of "question, tools: list[Tool] -> answer,
// n: int, tool_calls: ToolCalls" with adapter a against an LM that
// declares native tools, serving replies in order, and returns the bodies
// of the requests sent.
func toolRequests(t *testing.T, a adapter.Adapter, tmpl openai.ChatCompletionRequest, replies ...lmtest.Reply) []map[string]json.RawMessage {
	t.Helper()
	srv := lmtest.NewServer(replies...)
	defer srv.Close()
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
	tool := types.Tool{Name: "search", Args: []byte(`{"query": {"type": "string"}}`)}
	sig, err := signature.Parse("question, tools: list[Tool] -> answer, n: int, tool_calls: ToolCalls", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	_, err = adapter.Call(t.Context(), lm, sig, nil,
		adapter.Values{"question": "q", "tools": []types.Tool{tool}}, adapter.UseAdapter(a), adapter.WithRequest(tmpl), adapter.NoRetry())
	require.NoError(t, err)
	var bodies []map[string]json.RawMessage
	for _, r := range srv.Requests() {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(r.Body, &m))
		bodies = append(bodies, m)
	}
	return bodies
}

// jsonToolReply answers toolRequests' signature in JSON, the tool calls in the text.
var jsonToolReply = lmtest.Text(`{"answer": "a", "n": 1, "tool_calls": {"tool_calls": []}}`)

// TestFallbackKeepsToolOptions: the JSON fallback of Chat and XML asks for
// native tools as the adapter it stands in for does, with its
// parallel_tool_calls (DSPy's ChatAdapter passes use_native_function_calling
// and parallel_tool_calls to its fallback JSONAdapter). It used to be a
// JSON{} with native tools on, whatever the adapter said.
func TestFallbackKeepsToolOptions(t *testing.T) {
	unreadable := lmtest.Text("I cannot answer in that format.")
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.XML{}} {
		reqs := toolRequests(t, a, openai.ChatCompletionRequest{}, unreadable, jsonToolReply)
		require.Len(t, reqs, 2, a.Name())
		_, tools := reqs[1]["tools"]
		assert.False(t, tools, "%s without native tools: its fallback asks for the calls in the text", a.Name())
	}
	on := []adapter.Adapter{
		adapter.Chat{Options: adapter.Options{NativeTools: adapter.On, ParallelToolCalls: adapter.Off}},
		adapter.XML{Options: adapter.Options{NativeTools: adapter.On, ParallelToolCalls: adapter.Off}},
	}
	for _, a := range on {
		reqs := toolRequests(t, a, openai.ChatCompletionRequest{}, unreadable, jsonToolReply)
		require.Len(t, reqs, 2, a.Name())
		for i, r := range reqs {
			_, tools := r["tools"]
			assert.True(t, tools, "%s request %d", a.Name(), i+1)
			assert.JSONEq(t, `false`, string(r["parallel_tool_calls"]), "%s request %d", a.Name(), i+1)
		}
	}
}

// TestBAMLNativeTools: BAML asks for native tool calls by default, as the
// JSON adapter it is built on (DSPy's BAMLAdapter is a JSONAdapter, with
// use_native_function_calling=True). It used to put the tools in the
// prompt while its Format replayed tool turns natively.
func TestBAMLNativeTools(t *testing.T) {
	reqs := toolRequests(t, adapter.BAML{}, openai.ChatCompletionRequest{}, jsonToolReply)
	_, tools := reqs[0]["tools"]
	assert.True(t, tools)
}

// outside is an adapter written outside the package: the JSON adapter's
// prompt and parse, with its own switch for native function calling.
type outside struct {
	native   bool
	parallel adapter.Switch
}

func (outside) Name() string { return "outside" }

func (outside) Format(sig *signature.Signature, demos []adapter.Values, inputs adapter.Values) ([]openai.ChatCompletionMessage, error) {
	return adapter.JSON{}.Format(sig, demos, inputs)
}

func (outside) Parse(sig *signature.Signature, completion string) (adapter.Values, error) {
	return adapter.JSON{}.Parse(sig, completion)
}

func (o outside) NativeTools() (bool, adapter.Switch) { return o.native, o.parallel }

func (o outside) WithNativeTools() adapter.Adapter { o.native = true; return o }

// TestOutsideAdapterNativeTools: an adapter written outside the package
// turns native function calling on, with its parallel_tool_calls, through
// adapter.NativeToolAdapter; off, the tool options are removed from the
// request, as for the built-in adapters. (The switch used to be unexported
// methods only the package's adapters could have.)
func TestOutsideAdapterNativeTools(t *testing.T) {
	var _ adapter.NativeToolAdapter = outside{}
	reqs := toolRequests(t, outside{native: true, parallel: adapter.On}, openai.ChatCompletionRequest{}, jsonToolReply)
	_, tools := reqs[0]["tools"]
	assert.True(t, tools, "native tools on: the tools go in the request")
	assert.JSONEq(t, `true`, string(reqs[0]["parallel_tool_calls"]))
	assert.JSONEq(t, `"auto"`, string(reqs[0]["tool_choice"]))

	tmpl := openai.ChatCompletionRequest{Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "submit"}}},
		ToolChoice: "auto", ParallelToolCalls: true}
	reqs = toolRequests(t, outside{}, tmpl, jsonToolReply)
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls"} {
		_, sent := reqs[0][k]
		assert.False(t, sent, "native tools off: no %s", k)
	}
	assert.Equal(t, outside{native: true}, outside{}.WithNativeTools())
}
