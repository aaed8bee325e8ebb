package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
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

// nativeStep is a react reply with native tool calls: the thought in the
// Chat adapter's format (none when thought is ""), the calls beside it.
func nativeStep(thought string, calls ...openai.ToolCall) lmtest.Reply {
	content := ""
	if thought != "" {
		content = "[[ ## next_thought ## ]]\n" + thought + "\n\n[[ ## completed ## ]]"
	}
	return lmtest.Text(content).WithToolCalls(calls...).WithFinish("tool_calls")
}

func fcall(id, name, args string) openai.ToolCall {
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

// toolsLM is srv's client declaring native function calling.
func toolsLM(srv *lmtest.Server) adapter.StreamingLM {
	return adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
}

// nativeChat is the Chat adapter with native function calling on, DSPy's
// ChatAdapter(use_native_function_calling=True).
var nativeChat = adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}})

// weatherAgent is a ReActV2 over the native Chat adapter with a weather
// tool (a city it does not know fails) and the search tool; weather calls
// wait for release when it is not nil.
func weatherAgent(t *testing.T, release <-chan struct{}, opts ...predict.Option) *predict.ReActV2 {
	t.Helper()
	weather, err := types.NewTool("weather", "Today's weather in a city.", func(ctx context.Context, a cityArgs) (string, error) {
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		switch a.City {
		case "Oslo":
			return "sunny, 19 °C", nil
		case "Bergen":
			return "rain, 14 °C", nil
		}
		return "", fmt.Errorf("no forecast for %q", a.City)
	})
	require.NoError(t, err)
	search, err := types.NewTool("search", "Search the web.", func(_ context.Context, a queryArgs) (string, error) {
		return "result for " + a.Query, nil
	})
	require.NoError(t, err)
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	r, err := predict.NewReActV2(sig, []types.Tool{weather, search}, append([]predict.Option{nativeChat}, opts...)...)
	require.NoError(t, err)
	return r
}

// v2Call is one call of a ReActV2 run, with its result, read from the
// run's history.
type v2Call struct {
	Turn          int
	ID, Name      string
	Args          string
	Value         any
	IsError       bool
	Err           error
	Thought       string
	ThoughtStated bool
}

// v2Calls flattens a ReActV2 run's history (the turns this run added,
// after skip given ones) into its calls.
func v2Calls(t *testing.T, res *adapter.Result) []v2Call {
	t.Helper()
	var out []v2Call
	for turn, ev := range predict.HistoryOf(res).Messages {
		tc, ok := ev["tool_calls"].(types.ToolCalls)
		if !ok {
			continue
		}
		thought, stated := ev["next_thought"].(string)
		for i, c := range tc.Calls {
			args := c.RawArgs // the model's text, in its order
			if args == "" {
				b, err := json.Marshal(c.Args)
				require.NoError(t, err)
				args = string(b)
			}
			v := v2Call{Turn: turn, ID: c.ID, Name: c.Name, Args: args}
			if i == 0 {
				v.Thought, v.ThoughtStated = thought, stated
			}
			if tc.Results != nil && i < len(tc.Results.Results) {
				r := tc.Results.Results[i]
				v.Value, v.IsError, v.Err = r.Value, r.IsError, r.Err
			}
			out = append(out, v)
		}
	}
	return out
}

// TestReActV2Native: the tools go out as function definitions, submit
// last; one reply's two calls both run, at once, their results kept in
// the model's order although the second finished first; the next request
// replays the conversation natively (the assistant's calls, one tool
// message each); submit ends the run with the outputs.
func TestReActV2Native(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("I need both forecasts.", fcall("call_a", "weather", `{"city": "Oslo"}`), fcall("call_b", "search", `{"query": "Bergen"}`)),
		nativeStep("", fcall("call_c", "submit", `{"answer": "Oslo is sunny."}`)))
	defer srv.Close()

	// The weather call waits until the search call has ended: both run at
	// once, or the test would hang (the context bounds it).
	release := make(chan struct{})
	var order []string
	tr := &adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) {
		order = append(order, i.Tool+" "+i.ToolCallID)
		if i.Tool == "search" {
			close(release)
		}
	}}
	res, err := weatherAgent(t, release).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Weather in Oslo?"}, adapter.UseTrace(tr))
	require.NoError(t, err)
	assert.Equal(t, []string{"search call_b", "weather call_a", "submit call_c"}, order, "the search ended first")
	assert.Equal(t, "Oslo is sunny.", res.Outputs[0]["answer"])
	assert.Equal(t, predict.TerminatedBySubmit, predict.TerminationOf(res))
	assert.Equal(t, 2, res.Calls)

	calls := v2Calls(t, res)
	require.Len(t, calls, 3)
	assert.Equal(t, v2Call{Turn: 0, ID: "call_a", Name: "weather", Args: `{"city":"Oslo"}`, Value: "sunny, 19 °C", Thought: "I need both forecasts.", ThoughtStated: true}, calls[0])
	assert.Equal(t, v2Call{Turn: 0, ID: "call_b", Name: "search", Args: `{"query":"Bergen"}`, Value: "result for Bergen"}, calls[1])
	assert.Equal(t, "submit", calls[2].Name)
	assert.Equal(t, "Weather in Oslo?", predict.HistoryOf(res).Messages[0]["question"], "the task, in the first turn")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	first := reqs[0].Chat
	require.Len(t, first.Tools, 3, "the tools and submit, as functions")
	assert.Equal(t, []string{"weather", "search", "submit"}, []string{first.Tools[0].Function.Name, first.Tools[1].Function.Name, first.Tools[2].Function.Name})
	assert.Contains(t, string(reqs[0].Body), `"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	assert.Nil(t, first.ToolChoice, "tool_choice only beside parallel_tool_calls, as DSPy sends it")
	sys := first.Messages[0].Content
	assert.NotContains(t, sys, "[[ ## tools ## ]]", "the tools are functions, not prompt text")
	assert.Contains(t, sys, "You are an Agent. Use the supplied tools to produce `answer` from `question`.\n        Call tools when more information is needed.\n        When the final answer is ready, call `submit` with `answer`.\n        The available tools are: `weather`, `search`, `submit`.")
	require.Len(t, first.Messages, 2)
	assert.Equal(t, "[[ ## question ## ]]\nWeather in Oslo?\n\nRespond with the corresponding output fields, starting with the field `[[ ## next_thought ## ]]` (must be formatted as a valid Python str), and then ending with the marker for `[[ ## completed ## ]]`.", first.Messages[1].Content)

	second := reqs[1].Chat.Messages
	roles := make([]string, len(second))
	for i, m := range second {
		roles[i] = m.Role
	}
	assert.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "user"}, roles)
	assert.Equal(t, "[[ ## question ## ]]\nWeather in Oslo?", second[1].Content, "the task, once, in the first turn")
	assert.Equal(t, "[[ ## next_thought ## ]]\nI need both forecasts.\n\n[[ ## completed ## ]]\n", second[2].Content)
	require.Len(t, second[2].ToolCalls, 2)
	assert.Equal(t, "call_a", second[2].ToolCalls[0].ID)
	assert.Equal(t, "search", second[2].ToolCalls[1].Function.Name)
	assert.Equal(t, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_a", Name: "weather", Content: "sunny, 19 °C"}, second[3])
	assert.Equal(t, openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_b", Name: "search", Content: "result for Bergen"}, second[4])
	assert.Equal(t, "Respond with the corresponding output fields, starting with the field `[[ ## next_thought ## ]]` (must be formatted as a valid Python str), and then ending with the marker for `[[ ## completed ## ]]`.", second[5].Content)
}

// TestReActV2ConcurrencyBound: whatever the number of calls in a reply,
// no more than WithToolConcurrency run at once, and all run.
func TestReActV2ConcurrencyBound(t *testing.T) {
	for _, bound := range []int{1, 2, 3, 8} {
		for _, calls := range []int{1, 2, 5, 9} {
			var running, most, ran atomic.Int64
			tool, err := types.NewTool("work", "", func(ctx context.Context, a queryArgs) (string, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				ran.Add(1)
				runtime.Gosched()
				return a.Query, nil
			})
			require.NoError(t, err)
			sig, _ := signature.Parse("question -> answer")
			r, err := predict.NewReActV2(sig, []types.Tool{tool}, nativeChat, predict.WithToolConcurrency(bound), predict.WithMaxIters(1))
			require.NoError(t, err)
			var cs []openai.ToolCall
			for i := range calls {
				cs = append(cs, fcall(fmt.Sprintf("c%d", i), "work", fmt.Sprintf(`{"query": "%d"}`, i)))
			}
			srv := lmtest.NewServer(nativeStep("go", cs...), nativeStep("", fcall("s", "submit", `{"answer": "x"}`)))
			res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"})
			srv.Close()
			require.NoError(t, err)
			assert.LessOrEqual(t, most.Load(), int64(bound), "bound %d, %d calls", bound, calls)
			assert.Equal(t, int64(calls), ran.Load())
			got := v2Calls(t, res)
			require.Len(t, got, calls+1, "the calls, then the forced submit")
			for i, c := range got[:calls] {
				assert.Equal(t, fmt.Sprint(i), c.Value, "results in the model's order")
			}
			assert.Equal(t, predict.TerminatedByForcedSubmit, predict.TerminationOf(res))
		}
	}
}

// TestReActV2TextAnswer: a reply without tool calls ends the steps
// (DSPy's "empty_tool_calls"), with no turn in the history; the forced
// submit follows and nothing else runs. Bare text is read as the thought
// where DSPy's adapter fails and falls back to JSON first (a format slip
// the library reads without a second call).
func TestReActV2TextAnswer(t *testing.T) {
	for name, reply := range map[string]lmtest.Reply{
		"markers":   lmtest.Text("[[ ## next_thought ## ]]\nIt is sunny in Oslo.\n\n[[ ## completed ## ]]"),
		"bare text": lmtest.Text("It is sunny in Oslo."),
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(nativeStep("Look.", fcall("c1", "weather", `{"city": "Oslo"}`)), reply,
				nativeStep("", fcall("c2", "submit", `{"answer": "sunny"}`)))
			defer srv.Close()
			res, err := weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Weather in Oslo?"})
			require.NoError(t, err)
			assert.Equal(t, "sunny", res.Outputs[0]["answer"])
			assert.Equal(t, predict.TerminatedByForcedSubmit, predict.TerminationOf(res))
			assert.Len(t, predict.HistoryOf(res).Messages, 2, "the weather turn and the forced submit's")
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			assert.Equal(t, "submit", reqs[2].Chat.ToolChoice.(map[string]any)["function"].(map[string]any)["name"])
		})
	}
}

// TestReActV2BadCalls: a call the agent cannot run — a tool it does not
// have, arguments cut off, a key that is not exactly an argument's name —
// runs nothing and is answered with the error (DSPy's "Unknown tool:
// NAME" for the first), so the model can correct it; the step's other
// calls run, and the run goes on. The history keeps each failed call's Go
// error.
func TestReActV2BadCalls(t *testing.T) {
	var runs atomic.Int64
	transfer, err := types.NewTool("transfer", "", func(_ context.Context, a struct {
		Amount int `json:"amount"`
	}) (string, error) {
		runs.Add(1)
		return fmt.Sprint("sent ", a.Amount), nil
	})
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReActV2(sig, []types.Tool{transfer}, nativeChat)
	require.NoError(t, err)
	srv := lmtest.NewServer(
		nativeStep("Pay.",
			fcall("c1", "wire", `{"amount": 5}`),
			fcall("c2", "transfer", `{"amount": 10`),
			fcall("c3", "transfer", `{"AMOUNT": 500, "amount": 5}`),
			fcall("c4", "transfer", `{"amount": 7}`)),
		nativeStep("Done.", fcall("c5", "submit", `{"answer": "paid"}`)))
	defer srv.Close()
	res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Pay 7."})
	require.NoError(t, err)
	assert.Equal(t, int64(1), runs.Load(), "only the good call ran")
	calls := v2Calls(t, res)
	require.Len(t, calls, 5)
	assert.Equal(t, "Unknown tool: wire", calls[0].Value)
	assert.True(t, calls[0].IsError)
	require.Error(t, calls[1].Err)
	assert.ErrorIs(t, calls[1].Err, types.ErrToolArguments)
	assert.ErrorIs(t, calls[1].Err, adapter.ErrTruncated, "10 may have been 100")
	assert.Equal(t, `{"amount": 10`, calls[1].Args, "unreadable arguments are kept as written")
	assert.ErrorIs(t, calls[2].Err, types.ErrArgumentName)
	assert.Equal(t, "sent 7", calls[3].Value)

	// The model is shown each call as it wrote it, and each error.
	msgs := srv.Requests()[1].Chat.Messages
	require.Len(t, msgs, 8)
	tcs := msgs[2].ToolCalls
	require.Len(t, tcs, 4)
	assert.Equal(t, `{"amount": 10`, tcs[1].Function.Arguments, "unreadable arguments are replayed as written")
	for i, want := range []string{"Unknown tool: wire", "could not be read", "AMOUNT", "sent 7"} {
		assert.Contains(t, msgs[3+i].Content, want)
	}
}

// TestReActV2Limits: WithMaxIters counts steps (replies), whatever the calls
// each asks for; max_iters in the inputs and WithToolErrorText apply as
// for ReAct; calls without an id get DSPy's call_<turn>_<n>.
func TestReActV2Limits(t *testing.T) {
	two := nativeStep("a", fcall("", "weather", `{"city": "Oslo"}`), fcall("", "weather", `{"city": "Rome"}`))
	srv := lmtest.NewServer(two, two, nativeStep("", fcall("", "submit", `{"answer": "x"}`)))
	defer srv.Close()
	redact := predict.WithToolErrorText(func(tool string, err error) string { return tool + " failed" })
	res, err := weatherAgent(t, nil, predict.WithMaxIters(5)).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q", "max_iters": 2}, redact)
	require.NoError(t, err)
	calls := v2Calls(t, res)
	require.Len(t, calls, 5, "two steps of two calls, then the forced submit")
	assert.Equal(t, "weather failed", calls[1].Value)
	assert.EqualError(t, calls[1].Err, `no forecast for "Rome"`)
	assert.Equal(t, []string{"call_0_0", "call_0_1", "call_1_0", "call_1_1", "call_2_0"}, []string{calls[0].ID, calls[1].ID, calls[2].ID, calls[3].ID, calls[4].ID},
		"calls without an id get one; the forced submit's turn is the step limit")
	assert.Len(t, srv.Requests(), 3)

	_, err = weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}, predict.WithToolConcurrency(0))
	assert.ErrorContains(t, err, "WithToolConcurrency(0)")
	chat, err := signature.Parse("question, chat: History -> answer", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	_, err = predict.NewReActV2(chat, nil)
	assert.ErrorContains(t, err, `input "chat" is a conversation history`)
	sig, _ := signature.Parse("question -> answer")
	_, err = predict.NewReActV2(sig, nil, predict.WithToolConcurrency(-1))
	assert.ErrorContains(t, err, "WithToolConcurrency(-1)")
}

// TestReActV2DuplicateIDs: ids the provider gave twice (in one reply or
// across replies) are made unique, so that each tool message answers one
// call.
func TestReActV2DuplicateIDs(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("a", fcall("x", "weather", `{"city": "Oslo"}`), fcall("x", "weather", `{"city": "Bergen"}`)),
		nativeStep("b", fcall("x", "submit", `{"answer": "x"}`)))
	defer srv.Close()
	res, err := weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"})
	require.NoError(t, err)
	calls := v2Calls(t, res)
	require.Len(t, calls, 3)
	assert.Equal(t, []string{"x", "call_0_1", "call_1_0"}, []string{calls[0].ID, calls[1].ID, calls[2].ID})
	msgs := srv.Requests()[1].Chat.Messages
	var ids []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			ids = append(ids, c.ID)
		}
		if m.Role == "tool" {
			ids = append(ids, "tool:"+m.ToolCallID)
		}
	}
	assert.Equal(t, []string{"x", "call_0_1", "tool:x", "tool:call_0_1"}, ids)
}

// TestReActV2ContextWindow: a prompt past the context window ends the
// steps (DSPy's ReActV2 does not truncate its history) and the forced
// submit follows.
func TestReActV2ContextWindow(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("a", fcall("c1", "weather", `{"city": "Oslo"}`)),
		lmtest.ContextLengthExceeded(),
		nativeStep("", fcall("c2", "submit", `{"answer": "sunny"}`)))
	defer srv.Close()
	res, err := weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Weather?"})
	require.NoError(t, err)
	assert.Equal(t, "sunny", res.Outputs[0]["answer"])
	assert.Equal(t, predict.TerminatedByForcedSubmit, predict.TerminationOf(res))
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, reqs[1].Chat.Messages, reqs[2].Chat.Messages, "the forced submit asks again with the same history")
	assert.Equal(t, 3, res.Calls)
}

// TestReActV2WithoutToolsCapability: with native calling on but an LM
// that does not declare function calling, the calls are asked for in the
// text (the tools in the prompt, a tool_calls field), as DSPy's adapters
// ask; the steps are replayed as the adapter replays a History with
// native function calling on (DSPy's rule: the adapter's setting
// decides).
func TestReActV2WithoutToolsCapability(t *testing.T) {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## next_thought ## ]]\nLook.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"weather\", \"args\": {\"city\": \"Oslo\"}}]}\n\n[[ ## completed ## ]]"),
		lmtest.Text("[[ ## next_thought ## ]]\nDone.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"submit\", \"args\": {\"answer\": \"sunny\"}}]}\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	res, err := weatherAgent(t, nil).Call(t.Context(), srv.Client(), adapter.Values{"question": "Weather in Oslo?"})
	require.NoError(t, err)
	calls := v2Calls(t, res)
	require.Len(t, calls, 2)
	assert.Equal(t, "sunny, 19 °C", calls[0].Value)
	assert.Equal(t, "call_0_0", calls[0].ID)
	reqs := srv.Requests()
	assert.Empty(t, reqs[0].Chat.Tools)
	assert.Contains(t, reqs[0].Chat.Messages[1].Content, "[[ ## tools ## ]]")
	assert.Contains(t, reqs[0].Chat.Messages[1].Content, "`[[ ## tool_calls ## ]]` (must be a JSON object like")
	assert.Equal(t, "tool", reqs[1].Chat.Messages[3].Role, "the history replayed natively")
}

// TestReActV2StreamStop: breaking out while a step's tools run stops the
// run: no further tool starts, and the running ones get a cancelled
// context and have ended when the loop returns.
func TestReActV2StreamStop(t *testing.T) {
	var started, ended atomic.Int64
	block, err := types.NewTool("block", "", func(ctx context.Context, a queryArgs) (string, error) {
		started.Add(1)
		defer ended.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReActV2(sig, []types.Tool{block}, nativeChat, predict.WithToolConcurrency(2))
	require.NoError(t, err)
	srv := lmtest.NewServer(nativeStep("x", fcall("1", "block", `{"query": "a"}`), fcall("2", "block", `{"query": "b"}`), fcall("3", "block", `{"query": "c"}`)))
	defer srv.Close()
	starts := 0
	for ch, err := range r.Stream(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		if ch.Tool != nil && !ch.Tool.Done {
			if starts++; starts == 2 {
				break
			}
		}
	}
	assert.Equal(t, started.Load(), ended.Load(), "no tool still runs")
	assert.LessOrEqual(t, started.Load(), int64(2), "the third call never started")
	assert.Len(t, srv.Requests(), 1)
}

// TestReActV2Adapters: the adapter a call resolves to (the module's
// default, the context's, the call's) is used as configured: native
// function calling is its setting, as in DSPy (JSON's default is on,
// Chat's and XML's off).
func TestReActV2Adapters(t *testing.T) {
	for name, c := range map[string]struct {
		opt     adapter.CallOption // on NewReActV2
		ctx     func(context.Context) context.Context
		content string
		want    string
		native  bool
	}{
		"JSON, the module's": {opt: adapter.UseAdapter(adapter.JSON{}), content: `{"next_thought": "Look."}`, want: "json", native: true},
		"XML native, the context's": {ctx: func(ctx context.Context) context.Context {
			return adapter.WithAdapter(ctx, adapter.XML{}.WithNativeTools())
		}, content: "<next_thought>Look.</next_thought>", want: "xml", native: true},
		"Chat, the default, in text": {content: "[[ ## next_thought ## ]]\nLook.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"weather\", \"args\": {\"city\": \"Oslo\"}}, {\"name\": \"submit\", \"args\": {\"answer\": \"sunny\"}}]}\n\n[[ ## completed ## ]]", want: "chat"},
	} {
		t.Run(name, func(t *testing.T) {
			var opts []predict.Option
			if c.opt != nil {
				opts = append(opts, c.opt)
			}
			sig, _ := signature.Parse("question -> answer")
			weather, err := types.NewTool("weather", "", func(_ context.Context, a cityArgs) (string, error) { return "sunny, 19 °C", nil })
			require.NoError(t, err)
			r, err := predict.NewReActV2(sig, []types.Tool{weather}, opts...)
			require.NoError(t, err)
			ctx := t.Context()
			if c.ctx != nil {
				ctx = c.ctx(ctx)
			}
			reply := lmtest.Text(c.content)
			if c.native {
				reply = reply.WithToolCalls(fcall("a", "weather", `{"city": "Oslo"}`), fcall("b", "submit", `{"answer": "sunny"}`))
			}
			srv := lmtest.NewServer(reply)
			defer srv.Close()
			res, err := r.Call(ctx, toolsLM(srv), adapter.Values{"question": "q"}, adapter.NoFallback())
			require.NoError(t, err)
			calls := v2Calls(t, res)
			require.Len(t, calls, 2)
			assert.Equal(t, "Look.", calls[0].Thought)
			assert.Equal(t, "sunny, 19 °C", calls[0].Value)
			assert.Equal(t, c.native, len(srv.Requests()[0].Chat.Tools) == 2, "native tools sent")
			assert.Equal(t, c.want, res.Adapter)
		})
	}
}

// TestReActV2CallsPerStep: a blocking reply may ask for any number of
// calls; a step runs MaxToolCallsPerStep of them, and the others neither
// run nor ride along in the trajectory and later requests; the model is
// told after the last call's result. The review's reproduction (security
// review 4, P5): 20 000 calls in one reply made the next request 5.2 MB
// with 20 000 tool messages.
func TestReActV2CallsPerStep(t *testing.T) {
	var runs atomic.Int64
	tool, err := types.NewTool("work", "", func(context.Context, queryArgs) (string, error) { runs.Add(1); return "ok", nil })
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReActV2(sig, []types.Tool{tool}, nativeChat, predict.WithToolConcurrency(1))
	require.NoError(t, err)
	const asked = 20_000
	calls := make([]openai.ToolCall, asked)
	for i := range calls {
		calls[i] = fcall(fmt.Sprint(i), "work", `{"query": "x"}`)
	}
	srv := lmtest.NewServer(nativeStep("many", calls...), nativeStep("done", fcall("f", "submit", `{"answer": "x"}`)))
	defer srv.Close()
	res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, int64(predict.MaxToolCallsPerStep), runs.Load())
	got := v2Calls(t, res)
	require.Equal(t, predict.MaxToolCallsPerStep+1, len(got), "the calls run, then submit")
	last := got[predict.MaxToolCallsPerStep-1]
	assert.Equal(t, "ok\n\n[19872 more tool calls of this reply were not run: a step runs at most 128 calls; call them again if they are still needed.]", last.Value)
	for _, c := range got[:predict.MaxToolCallsPerStep-1] {
		assert.Equal(t, "ok", c.Value)
	}

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	var tools []openai.ChatCompletionMessage
	for _, m := range reqs[1].Chat.Messages {
		if m.Role == openai.ChatMessageRoleTool {
			tools = append(tools, m)
		}
	}
	require.Len(t, tools, predict.MaxToolCallsPerStep, "the next request replays the calls that ran, no more")
	assert.Contains(t, tools[len(tools)-1].Content, "19872 more tool calls", "the model is told")
	body, err := json.Marshal(reqs[1].Chat)
	require.NoError(t, err)
	assert.Less(t, len(body), 64<<10, "the reply does not make every later request larger than itself")
}
