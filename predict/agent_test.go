package predict_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/types"
)

type cityQuestion struct {
	Question string `json:"question"`
}

type cityAnswer struct {
	City       string `json:"city"`
	Population int    `json:"population"`
}

func populationTool(t *testing.T) types.Tool {
	t.Helper()
	tool, err := types.NewTool("population", "The population of a city.", func(_ context.Context, a cityArgs) (int, error) {
		return map[string]int{"Paris": 2148000}[a.City], nil
	})
	require.NoError(t, err)
	return tool
}

// TestAgent: the typed ReActV2 gives Out, not Values: the submit tool's
// arguments typed as Out's fields (an int stays an int); HistoryOf and
// TerminationOf read the rest of the Result; Stream's Done chunk carries
// the same Out; what DSPy drops silently (an extra submit argument) is in
// Result.Notes.
func TestAgent(t *testing.T) {
	agent, err := predict.NewAgent[cityQuestion, cityAnswer]([]types.Tool{populationTool(t)})
	require.NoError(t, err)
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{
			nativeStep("Look it up.", fcall("a", "population", `{"city": "Paris"}`)),
			nativeStep("", fcall("b", "submit", `{"city": "Paris", "population": 2148000, "source": "tool"}`)),
		}
	}
	lm := func(srv *lmtest.Server) adapter.StreamingLM { return toolsLM(srv) }
	native := adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}})

	srv := lmtest.NewServer(replies()...)
	defer srv.Close()
	out, res, err := agent.Call(t.Context(), lm(srv), cityQuestion{"How many live in the capital of France?"}, native)
	require.NoError(t, err)
	assert.Equal(t, cityAnswer{"Paris", 2148000}, out)
	assert.Equal(t, predict.TerminatedBySubmit, predict.TerminationOf(res))
	hist := predict.HistoryOf(res)
	require.Len(t, hist.Messages, 2)
	assert.Equal(t, "How many live in the capital of France?", hist.Messages[0]["question"])
	assert.Equal(t, "Paris", hist.Messages[1]["city"], "the outputs merged into the last turn, as DSPy's history")
	assert.Equal(t, []string{"step 2: submit's arguments source are no output of the signature; as in DSPy, they were dropped"}, res.Notes)
	// The tools went out natively, submit's schema typed by Out.
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.Len(t, reqs[0].Chat.Tools, 2)
	assert.Equal(t, "submit", reqs[0].Chat.Tools[1].Function.Name)
	assert.JSONEq(t, `{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer"}},"required":["city","population"]}`,
		string(mustJSON(t, reqs[0].Chat.Tools[1].Function.Parameters)))

	srv = lmtest.NewServer(replies()...)
	defer srv.Close()
	var done *predict.Chunk[cityAnswer]
	for ch, err := range agent.Stream(t.Context(), lm(srv), cityQuestion{"How many live in the capital of France?"}, native) {
		require.NoError(t, err)
		if ch.Done {
			done = &ch
		}
	}
	require.NotNil(t, done)
	assert.Equal(t, out, done.Out)
	assert.Equal(t, res.Notes, done.Result.Notes)
}

// TestAgentNoSubmit: a run that ends without outputs is an error matching
// ErrNoSubmit, with the Result (DSPy returns a prediction without the
// output fields, silently).
func TestAgentNoSubmit(t *testing.T) {
	agent, err := predict.NewAgent[cityQuestion, cityAnswer]([]types.Tool{populationTool(t)}, predict.WithMaxIters(1))
	require.NoError(t, err)
	srv := lmtest.NewServer(
		nativeStep("Look it up.", fcall("a", "population", `{"city": "Paris"}`)),
		nativeStep("Once more.", fcall("b", "population", `{"city": "Paris"}`)), // the forced submit's reply
	)
	defer srv.Close()
	out, res, err := agent.Call(t.Context(), toolsLM(srv), cityQuestion{"q"}, adapter.UseAdapter(adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}))
	require.ErrorIs(t, err, predict.ErrNoSubmit)
	var nse *predict.NoSubmitError
	require.ErrorAs(t, err, &nse)
	assert.Equal(t, predict.TerminatedMaxIters, nse.Reason)
	assert.Zero(t, out)
	require.NotNil(t, res)
	assert.Equal(t, predict.TerminatedMaxIters, predict.TerminationOf(res))
	assert.Len(t, predict.HistoryOf(res).Messages, 1)
	assert.Contains(t, res.Notes, "forced submit: 1 calls besides submit were not run (as in DSPy, a forced submit runs only submit)")
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "submit", reqs[1].Chat.ToolChoice.(map[string]any)["function"].(map[string]any)["name"], "the forced submit asks for submit")
}

// TestNewReActV2Refuses: what DSPy refuses, and inputs named as the react
// predictor's own fields (DSPy 3.4.1).
func TestNewReActV2Refuses(t *testing.T) {
	sig := mustSig(t, "question -> answer")
	submit, err := types.NewTool("submit", "", func(context.Context, struct{}) (string, error) { return "", nil })
	require.NoError(t, err)
	_, err = predict.NewReActV2(sig, []types.Tool{submit})
	assert.ErrorContains(t, err, "`submit` is reserved")
	for _, spec := range []string{"history, question -> answer", "tools -> answer"} {
		_, err = predict.NewReActV2(mustSig(t, spec), nil)
		assert.ErrorContains(t, err, "the react predictor's own", spec)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// ExampleAgent runs a typed ReActV2 (DSPy 3.5's ReAct) against a test
// server: one tool call, then submit with the outputs.
func ExampleAgent() {
	type Question struct {
		Question string `json:"question"`
	}
	type Answer struct {
		Answer string `json:"answer"`
	}
	type cityArgs struct {
		City string `json:"city"`
	}
	weather, err := types.NewTool("weather", "Today's weather in a city.", func(_ context.Context, a cityArgs) (string, error) {
		return "sunny, 19 °C in " + a.City, nil
	})
	if err != nil {
		panic(err)
	}
	agent, err := predict.NewAgent[Question, Answer]([]types.Tool{weather})
	if err != nil {
		panic(err)
	}
	call := func(id, name, args string) openai.ToolCall {
		return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
	}
	srv := lmtest.NewServer(
		lmtest.Text("").WithToolCalls(call("1", "weather", `{"city": "Oslo"}`)).WithFinish("tool_calls"),
		lmtest.Text("").WithToolCalls(call("2", "submit", `{"answer": "Yes: sunny."}`)).WithFinish("tool_calls"))
	defer srv.Close()
	lm := adapter.WithCapabilities(srv.Client(), adapter.Capabilities{Tools: true})
	// DSPy 3.5's default adapter: XML with native function calling.
	xml := adapter.UseAdapter(adapter.XML{Options: adapter.Options{NativeTools: adapter.On}})
	out, res, err := agent.Call(context.Background(), lm, Question{"Is it sunny in Oslo?"}, xml)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Answer, predict.TerminationOf(res), res.Calls)
	// Output: Yes: sunny. submit 2
}
