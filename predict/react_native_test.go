package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
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

// weatherAgent is a native agent with a weather tool (a city it does not
// know fails) and the search tool; weather calls wait for release when
// it is not nil.
func weatherAgent(t *testing.T, release <-chan struct{}, opts ...predict.Option) *predict.ReAct {
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
	r, err := predict.NewReAct(sig, []types.Tool{weather, search}, append([]predict.Option{predict.WithNativeTools()}, opts...)...)
	require.NoError(t, err)
	return r
}

// TestNativeReAct: the tools go out as function definitions; one reply's
// two calls both run, at once, their results kept in the model's order
// although the second finished first; the next request replays the
// conversation natively (the assistant's calls, one tool message each);
// finish ends the steps and extract reads the trajectory.
func TestNativeReAct(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("I need both forecasts.", fcall("call_a", "weather", `{"city": "Oslo"}`), fcall("call_b", "search", `{"query": "Bergen"}`)),
		nativeStep("", fcall("call_c", "finish", `{}`)),
		answer("Oslo is sunny."))
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
	assert.Equal(t, []string{"search call_b", "weather call_a", "finish call_c"}, order, "the search ended first")

	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 3)
	assert.Equal(t, predict.Step{Index: 0, Turn: 0, CallID: "call_a", Thought: "I need both forecasts.", Tool: "weather", Args: predict.ToolArgs(`{"city":"Oslo"}`), Observation: "sunny, 19 °C"}, traj[0])
	assert.Equal(t, predict.Step{Index: 1, Turn: 0, CallID: "call_b", Tool: "search", Args: predict.ToolArgs(`{"query":"Bergen"}`), Observation: "result for Bergen"}, traj[1])
	assert.Equal(t, predict.Step{Index: 2, Turn: 1, CallID: "call_c", Tool: "finish", Args: predict.ToolArgs(`{}`), Observation: "Completed."}, traj[2])
	b, err := json.Marshal(traj)
	require.NoError(t, err)
	assert.Equal(t, `{"thought_0":"I need both forecasts.","tool_name_0":"weather","tool_args_0":{"city":"Oslo"},"observation_0":"sunny, 19 °C",`+
		`"thought_1":"","tool_name_1":"search","tool_args_1":{"query":"Bergen"},"observation_1":"result for Bergen",`+
		`"thought_2":"","tool_name_2":"finish","tool_args_2":{},"observation_2":"Completed."}`, string(b), "DSPy's trajectory shape, one entry per call")
	assert.Equal(t, "Oslo is sunny.", res.Outputs[0]["answer"])
	assert.Equal(t, 3, res.Calls)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	first := reqs[0].Chat
	require.Len(t, first.Tools, 3, "the tools and finish, as functions")
	assert.Equal(t, []string{"weather", "search", "finish"}, []string{first.Tools[0].Function.Name, first.Tools[1].Function.Name, first.Tools[2].Function.Name})
	assert.Contains(t, string(reqs[0].Body), `"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	assert.Nil(t, first.ToolChoice, "tool_choice only beside parallel_tool_calls, as DSPy sends it")
	sys := first.Messages[0].Content
	assert.NotContains(t, sys, "[[ ## tools ## ]]", "the tools are functions, not prompt text")
	assert.Contains(t, sys, "You are an Agent. Use the supplied tools to produce `answer` from `question`.\n        Call tools when more information is needed.\n        When all the information for producing `answer` is available, call `finish`.\n        The available tools are: `weather`, `search`, `finish`.")
	require.Len(t, first.Messages, 2)
	assert.Equal(t, "[[ ## question ## ]]\nWeather in Oslo?\n\nRespond with the corresponding output fields, starting with the field `[[ ## next_thought ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`.", first.Messages[1].Content)

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
	assert.Equal(t, "Respond with the corresponding output fields, starting with the field `[[ ## next_thought ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`.", second[5].Content)

	extract := reqs[2].Chat
	assert.Empty(t, extract.Tools, "the extract call has no tools")
	assert.Contains(t, lastUser(reqs[2]), "[[ ## trajectory ## ]]\n[[ ## thought_0 ## ]]\nI need both forecasts.\n\n[[ ## tool_name_0 ## ]]\nweather")
}

// TestNativeReActConcurrencyBound: whatever the number of calls in a
// reply, no more than ToolConcurrency run at once, and all run.
func TestNativeReActConcurrencyBound(t *testing.T) {
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
			r, err := predict.NewReAct(sig, []types.Tool{tool}, predict.WithNativeTools(), predict.ToolConcurrency(bound), predict.MaxIters(1))
			require.NoError(t, err)
			var cs []openai.ToolCall
			for i := range calls {
				cs = append(cs, fcall(fmt.Sprintf("c%d", i), "work", fmt.Sprintf(`{"query": "%d"}`, i)))
			}
			srv := lmtest.NewServer(nativeStep("go", cs...), answer("x"))
			res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"})
			srv.Close()
			require.NoError(t, err)
			assert.LessOrEqual(t, most.Load(), int64(bound), "bound %d, %d calls", bound, calls)
			assert.Equal(t, int64(calls), ran.Load())
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, calls)
			for i, s := range traj {
				assert.Equal(t, fmt.Sprint(i), s.Observation, "results in the model's order")
				assert.Equal(t, i, s.Index)
			}
		}
	}
}

// TestNativeReActTextAnswer: a reply without tool calls is read as DSPy's
// ToolCalls path reads it (its text is next_thought); the steps end, the
// thought stays in the trajectory for the extract step, and nothing runs.
func TestNativeReActTextAnswer(t *testing.T) {
	for name, reply := range map[string]lmtest.Reply{
		"markers":   lmtest.Text("[[ ## next_thought ## ]]\nIt is sunny in Oslo.\n\n[[ ## completed ## ]]"),
		"bare text": lmtest.Text("It is sunny in Oslo."),
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(nativeStep("Look.", fcall("c1", "weather", `{"city": "Oslo"}`)), reply, answer("sunny"))
			defer srv.Close()
			res, err := weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Weather in Oslo?"})
			require.NoError(t, err)
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, 2)
			assert.Equal(t, predict.Step{Index: 1, Turn: 1, Thought: "It is sunny in Oslo."}, traj[1])
			b, _ := json.Marshal(traj)
			assert.True(t, strings.HasSuffix(string(b), `"observation_0":"sunny, 19 °C","thought_1":"It is sunny in Oslo."}`), string(b))
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			assert.True(t, strings.HasSuffix(lastUser(reqs[2]), "[[ ## thought_1 ## ]]\nIt is sunny in Oslo.\n\nRespond with the corresponding output fields, starting with the field `[[ ## reasoning ## ]]`, then `[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."), lastUser(reqs[2]))
			assert.Equal(t, "sunny", res.Outputs[0]["answer"])
		})
	}
}

// TestNativeReActBadCalls: a call the agent cannot run — a tool it does
// not have, arguments cut off, a key that is not exactly an argument's
// name — runs nothing and is answered with the error, so the model can
// correct it; the step's other calls run, and the run goes on.
func TestNativeReActBadCalls(t *testing.T) {
	var runs atomic.Int64
	transfer, err := types.NewTool("transfer", "", func(_ context.Context, a struct {
		Amount int `json:"amount"`
	}) (string, error) {
		runs.Add(1)
		return fmt.Sprint("sent ", a.Amount), nil
	})
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReAct(sig, []types.Tool{transfer}, predict.WithNativeTools())
	require.NoError(t, err)
	srv := lmtest.NewServer(
		nativeStep("Pay.",
			fcall("c1", "wire", `{"amount": 5}`),
			fcall("c2", "transfer", `{"amount": 10`),
			fcall("c3", "transfer", `{"AMOUNT": 500, "amount": 5}`),
			fcall("c4", "transfer", `{"amount": 7}`)),
		nativeStep("Done.", fcall("c5", "finish", `{}`)),
		answer("paid"))
	defer srv.Close()
	res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Pay 7."})
	require.NoError(t, err)
	assert.Equal(t, int64(1), runs.Load(), "only the good call ran")
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 5)
	assert.Equal(t, `Execution error in wire: no tool named "wire"`, traj[0].Observation)
	require.Error(t, traj[1].Err)
	assert.ErrorIs(t, traj[1].Err, types.ErrToolArguments)
	assert.ErrorIs(t, traj[1].Err, adapter.ErrTruncated, "10 may have been 100")
	assert.Empty(t, traj[1].Args)
	assert.ErrorIs(t, traj[2].Err, types.ErrArgumentName)
	assert.Equal(t, "sent 7", traj[3].Observation)

	// The model is shown each call as it wrote it, and each error.
	msgs := srv.Requests()[1].Chat.Messages
	require.Len(t, msgs, 8)
	calls := msgs[2].ToolCalls
	require.Len(t, calls, 4)
	assert.Equal(t, `{"amount": 10`, calls[1].Function.Arguments, "unreadable arguments are replayed as written")
	for i, want := range []string{`no tool named "wire"`, "could not be read", "AMOUNT", "sent 7"} {
		assert.Contains(t, msgs[3+i].Content, want)
	}
}

// TestNativeReActLimits: MaxIters counts steps (replies), whatever the
// calls each asks for; max_iters in the inputs and WithToolErrorText
// apply as in text mode.
func TestNativeReActLimits(t *testing.T) {
	two := nativeStep("a", fcall("", "weather", `{"city": "Oslo"}`), fcall("", "weather", `{"city": "Rome"}`))
	srv := lmtest.NewServer(two, two, answer("x"))
	defer srv.Close()
	redact := predict.WithToolErrorText(func(tool string, err error) string { return tool + " failed" })
	res, err := weatherAgent(t, nil, predict.MaxIters(5)).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q", "max_iters": 2}, redact)
	require.NoError(t, err)
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 4, "two steps of two calls")
	assert.Equal(t, "weather failed", traj[1].Observation)
	assert.EqualError(t, traj[1].Err, `no forecast for "Rome"`)
	assert.Equal(t, []string{"call_0_0", "call_0_1", "call_1_0", "call_1_1"}, []string{traj[0].CallID, traj[1].CallID, traj[2].CallID, traj[3].CallID},
		"calls without an id get one")
	assert.Len(t, srv.Requests(), 3)

	_, err = weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}, predict.WithNativeTools())
	assert.ErrorContains(t, err, "WithNativeTools applies to NewReAct")
	_, err = weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}, predict.ToolConcurrency(0))
	assert.ErrorContains(t, err, "ToolConcurrency(0)")
	sig, _ := signature.Parse("question, history -> answer")
	_, err = predict.NewReAct(sig, nil, predict.WithNativeTools())
	assert.ErrorContains(t, err, "history", "the task cannot have a field the native react predictor adds")
	chat, err := signature.Parse("question, chat: History -> answer", signature.WithTypes(types.Names()))
	require.NoError(t, err)
	_, err = predict.NewReAct(chat, nil, predict.WithNativeTools())
	assert.ErrorContains(t, err, `input "chat" is a conversation history`)
	_, err = predict.NewReAct(sig, nil, predict.ToolConcurrency(-1))
	assert.ErrorContains(t, err, "ToolConcurrency(-1)")
}

// TestNativeReActDuplicateIDs: ids the provider gave twice (in one reply
// or across replies) are made unique, so that each tool message answers
// one call.
func TestNativeReActDuplicateIDs(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("a", fcall("x", "weather", `{"city": "Oslo"}`), fcall("x", "weather", `{"city": "Bergen"}`)),
		nativeStep("b", fcall("x", "finish", `{}`)),
		answer("x"))
	defer srv.Close()
	res, err := weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"})
	require.NoError(t, err)
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 3)
	assert.Equal(t, []string{"x", "call_0_1", "call_1_0"}, []string{traj[0].CallID, traj[1].CallID, traj[2].CallID})
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

// TestNativeReActContextWindow: when the prompt exceeds the context
// window, the oldest step goes with all its calls, and the task's inputs
// move to the first turn left.
func TestNativeReActContextWindow(t *testing.T) {
	srv := lmtest.NewServer(
		nativeStep("a", fcall("c1", "weather", `{"city": "Oslo"}`), fcall("c2", "search", `{"query": "1"}`)),
		nativeStep("b", fcall("c3", "search", `{"query": "2"}`)),
		lmtest.ContextLengthExceeded(),
		nativeStep("c", fcall("c4", "finish", `{}`)),
		answer("x"))
	defer srv.Close()
	res, err := weatherAgent(t, nil).Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Weather?"})
	require.NoError(t, err)
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 2)
	assert.Equal(t, []int{2, 3}, []int{traj[0].Index, traj[1].Index}, "the numbers stay")
	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	msgs := reqs[3].Chat.Messages
	require.Len(t, msgs, 5)
	assert.Equal(t, "[[ ## question ## ]]\nWeather?", msgs[1].Content)
	assert.Equal(t, "c3", msgs[2].ToolCalls[0].ID)
	assert.Equal(t, 5, res.Calls)
}

// TestNativeReActWithoutToolsCapability: an LM that does not declare
// function calling is asked for the calls in the text, as DSPy's adapters
// ask it (the tools in the prompt, a tool_calls field); the loop is the
// same, and the steps are replayed as the adapter replays a History with
// native function calling on (DSPy's rule: the adapter's setting decides).
func TestNativeReActWithoutToolsCapability(t *testing.T) {
	srv := lmtest.NewServer(
		lmtest.Text("[[ ## next_thought ## ]]\nLook.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"weather\", \"args\": {\"city\": \"Oslo\"}}]}\n\n[[ ## completed ## ]]"),
		lmtest.Text("[[ ## next_thought ## ]]\nDone.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"finish\", \"args\": {}}]}\n\n[[ ## completed ## ]]"),
		answer("sunny"))
	defer srv.Close()
	res, err := weatherAgent(t, nil).Call(t.Context(), srv.Client(), adapter.Values{"question": "Weather in Oslo?"})
	require.NoError(t, err)
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 2)
	assert.Equal(t, "sunny, 19 °C", traj[0].Observation)
	assert.Equal(t, "call_0_0", traj[0].CallID)
	reqs := srv.Requests()
	assert.Empty(t, reqs[0].Chat.Tools)
	assert.Contains(t, reqs[0].Chat.Messages[1].Content, "[[ ## tools ## ]]")
	assert.Contains(t, reqs[0].Chat.Messages[1].Content, "`[[ ## tool_calls ## ]]` (must be a JSON object like")
}

// TestNativeReActLoadV1: a program saved from DSPy's text ReAct does not
// fit the native react predictor: Load says so.
func TestNativeReActLoadV1(t *testing.T) {
	text := searchAgent(t)
	prog := predict.Program{Predictors: map[string]predict.SavedPredictor{
		"react":           {Signature: text.React().Signature().State()},
		"extract.predict": {Signature: text.Extract().Signature().State()},
	}}
	_, err := weatherAgent(t, nil).Load(prog)
	require.Error(t, err)
	assert.ErrorContains(t, err, "react")
}

// TestNativeReActStreamStop: breaking out while a step's tools run stops
// the run: no further tool starts, and the running ones get a cancelled
// context and have ended when the loop returns.
func TestNativeReActStreamStop(t *testing.T) {
	var started, ended atomic.Int64
	block, err := types.NewTool("block", "", func(ctx context.Context, a queryArgs) (string, error) {
		started.Add(1)
		defer ended.Add(1)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReAct(sig, []types.Tool{block}, predict.WithNativeTools(), predict.ToolConcurrency(2))
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

// TestNativeReActAdapters: the adapter a call resolves to (the module's
// default, the context's, the call's) is used with native function calling
// switched on, even where it was off.
func TestNativeReActAdapters(t *testing.T) {
	for name, c := range map[string]struct {
		opt     predict.Option // on NewReAct
		ctx     func(context.Context) context.Context
		content string
		want    string
	}{
		"JSON with NoNativeTools, the module's": {opt: adapter.UseAdapter(adapter.JSON{Options: adapter.Options{NativeTools: adapter.Off}}), content: `{"next_thought": "Look."}`, want: "json"},
		"XML, the context's":                    {ctx: func(ctx context.Context) context.Context { return adapter.WithAdapter(ctx, adapter.XML{}) }, content: "<next_thought>Look.</next_thought>", want: "xml"},
	} {
		t.Run(name, func(t *testing.T) {
			var opts []predict.Option
			if c.opt != nil {
				opts = append(opts, c.opt)
			}
			ctx := t.Context()
			if c.ctx != nil {
				ctx = c.ctx(ctx)
			}
			srv := lmtest.NewServer(
				lmtest.Text(c.content).WithToolCalls(fcall("a", "weather", `{"city": "Oslo"}`), fcall("b", "finish", `{}`)),
				lmtest.Text(`{"reasoning": "r", "answer": "sunny"}`))
			defer srv.Close()
			res, err := weatherAgent(t, nil, opts...).Call(ctx, toolsLM(srv), adapter.Values{"question": "q"}, adapter.NoFallback())
			require.NoError(t, err)
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, 2)
			assert.Equal(t, "Look.", traj[0].Thought)
			assert.Equal(t, "sunny, 19 °C", traj[0].Observation)
			assert.Len(t, srv.Requests()[0].Chat.Tools, 3)
			assert.Equal(t, c.want, res.Adapter, "the extract call's adapter, as resolved")
		})
	}
}

// TestNativeReActCallsPerStep: a blocking reply may ask for any number of
// calls; a step runs MaxToolCallsPerStep of them, and the others neither
// run nor ride along in the trajectory and later requests; the model is
// told after the last call's result. The review's reproduction (security
// review 4, P5): 20 000 calls in one reply made the next request 5.2 MB
// with 20 000 tool messages.
func TestNativeReActCallsPerStep(t *testing.T) {
	var runs atomic.Int64
	tool, err := types.NewTool("work", "", func(context.Context, queryArgs) (string, error) { runs.Add(1); return "ok", nil })
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReAct(sig, []types.Tool{tool}, predict.WithNativeTools(), predict.ToolConcurrency(1))
	require.NoError(t, err)
	const asked = 20_000
	calls := make([]openai.ToolCall, asked)
	for i := range calls {
		calls[i] = fcall(fmt.Sprint(i), "work", `{"query": "x"}`)
	}
	srv := lmtest.NewServer(nativeStep("many", calls...), nativeStep("done", fcall("f", "finish", "{}")), answer("x"))
	defer srv.Close()
	res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, int64(predict.MaxToolCallsPerStep), runs.Load())
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Equal(t, predict.MaxToolCallsPerStep+1, len(traj), "the calls run, then finish")
	last := traj[predict.MaxToolCallsPerStep-1]
	assert.Equal(t, "ok\n\n[19872 more tool calls of this reply were not run: a step runs at most 128 calls; call them again if they are still needed.]", last.Observation)
	for _, s := range traj[:predict.MaxToolCallsPerStep-1] {
		assert.Equal(t, "ok", s.Observation)
	}

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
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
	assert.Equal(t, predict.MaxToolCallsPerStep+1, strings.Count(requestText(reqs[2]), "[[ ## tool_name_"), "nor the extract request")
}
