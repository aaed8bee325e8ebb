package predict_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

func step(thought, tool, args string) lmtest.Reply {
	return lmtest.Text("[[ ## next_thought ## ]]\n" + thought + "\n\n[[ ## next_tool_name ## ]]\n" + tool + "\n\n[[ ## next_tool_args ## ]]\n" + args + "\n\n[[ ## completed ## ]]")
}

func answer(a string) lmtest.Reply {
	return lmtest.Text("[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n" + a + "\n\n[[ ## completed ## ]]")
}

func searchAgent(t *testing.T, opts ...predict.Option) *predict.ReAct {
	t.Helper()
	tool, err := types.NewTool("search", "Search the web.", func(_ context.Context, a queryArgs) (string, error) {
		if a.Query == "fail" {
			return "", errors.New("the index is down")
		}
		return "result for " + a.Query, nil
	})
	require.NoError(t, err)
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	r, err := predict.NewReAct(sig, []types.Tool{tool}, opts...)
	require.NoError(t, err)
	return r
}

func lastUser(r lmtest.Request) string {
	m := r.Chat.Messages
	return m[len(m)-1].Content
}

func TestReActToolHooksAndTrajectory(t *testing.T) {
	srv := lmtest.NewServer(
		step("Search.", "search", `{"query": "go"}`),
		step("Again.", "search", `{"query": "fail"}`),
		step("Done.", "finish", "{}"),
		answer("Go"))
	defer srv.Close()
	var events []string
	var lmIDs []uint64
	tr := &adapter.Trace{
		LMCallDone: func(i adapter.LMCallDoneInfo) { lmIDs = append(lmIDs, i.CallID) },
		ToolStart: func(i adapter.ToolStartInfo) {
			events = append(events, fmt.Sprintf("start %d %s %s", i.CallID, i.Tool, i.Args))
		},
		ToolDone: func(i adapter.ToolDoneInfo) {
			events = append(events, fmt.Sprintf("done %d %s %v %v", i.CallID, i.Tool, i.Result, i.Err))
		},
	}
	res, err := searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"}, adapter.UseTrace(tr))
	require.NoError(t, err)
	require.Len(t, lmIDs, 4)
	assert.Equal(t, []string{
		fmt.Sprintf(`start %d search {"query":"go"}`, lmIDs[0]), fmt.Sprintf("done %d search result for go <nil>", lmIDs[0]),
		fmt.Sprintf(`start %d search {"query":"fail"}`, lmIDs[1]), fmt.Sprintf("done %d search  the index is down", lmIDs[1]),
		fmt.Sprintf("start %d finish {}", lmIDs[2]), fmt.Sprintf("done %d finish Completed. <nil>", lmIDs[2]),
	}, events, "every tool run is traced with its arguments and outcome, tied to the LM call that asked for it")

	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	require.Len(t, traj, 3)
	assert.EqualError(t, traj[1].Err, "the index is down")
	assert.Equal(t, "Execution error in search: the index is down", traj[1].Observation)
	b, err := json.Marshal(res.Outputs[0]["trajectory"])
	require.NoError(t, err)
	assert.Equal(t, `{"thought_0":"Search.","tool_name_0":"search","tool_args_0":{"query":"go"},"observation_0":"result for go",`+
		`"thought_1":"Again.","tool_name_1":"search","tool_args_1":{"query":"fail"},"observation_1":"Execution error in search: the index is down",`+
		`"thought_2":"Done.","tool_name_2":"finish","tool_args_2":{},"observation_2":"Completed."}`, string(b))
	assert.Equal(t, "Go", res.Outputs[0]["answer"])
	assert.Equal(t, "r", res.Outputs[0]["reasoning"])
	assert.Equal(t, 4, res.Calls)
}

func TestReActToolArgsKeepOrder(t *testing.T) {
	type args struct {
		Zeta  string `json:"zeta"`
		Alpha int    `json:"alpha"`
	}
	var got args
	tool, err := types.NewTool("t", "", func(_ context.Context, a args) (string, error) { got = a; return "ok", nil })
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReAct(sig, []types.Tool{tool}, predict.WithMaxIters(1))
	require.NoError(t, err)
	srv := lmtest.NewServer(step("x", "t", "{'zeta': 'é', 'alpha': 2}"), answer("a"))
	defer srv.Close()
	res, err := r.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, args{"é", 2}, got, "a Python dict literal is read")
	traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
	assert.Equal(t, `{"zeta":"é","alpha":2}`, string(traj[0].Args), "in the model's order")
	var back args
	require.NoError(t, traj[0].Args.Decode(&back))
	assert.Equal(t, got, back)
	assert.Contains(t, lastUser(srv.Requests()[1]), "[[ ## tool_args_0 ## ]]\n{\"zeta\": \"é\", \"alpha\": 2}\n\n", "json.dumps of the dict, in order")
}

func TestReActContextWindow(t *testing.T) {
	t.Run("the oldest step goes, numbers stay", func(t *testing.T) {
		srv := lmtest.NewServer(
			step("a", "search", `{"query": "1"}`),
			step("b", "search", `{"query": "2"}`),
			lmtest.ContextLengthExceeded(),
			step("c", "finish", "{}"),
			lmtest.ContextLengthExceeded(),
			answer("x"))
		defer srv.Close()
		res, err := searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
		require.NoError(t, err)
		traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
		require.Len(t, traj, 1, "one step dropped for the react call, one for the extract call")
		assert.Equal(t, 2, traj[0].Index)
		reqs := srv.Requests()
		require.Len(t, reqs, 6)
		assert.NotContains(t, lastUser(reqs[3]), "thought_0")
		assert.Contains(t, lastUser(reqs[3]), "[[ ## thought_1 ## ]]")
		assert.True(t, strings.Contains(lastUser(reqs[5]), "[[ ## trajectory ## ]]\n[[ ## thought_2 ## ]]"))
		assert.Equal(t, 6, res.Calls)
	})
	t.Run("nothing to cut: the steps end, extract runs", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.ContextLengthExceeded(), answer("x"))
		defer srv.Close()
		res, err := searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
		require.NoError(t, err)
		assert.Empty(t, res.Outputs[0]["trajectory"])
		assert.Len(t, srv.Requests(), 2)
	})
	t.Run("the extract call fails too", func(t *testing.T) {
		srv := lmtest.NewServer(step("a", "search", `{"query": "1"}`), lmtest.ContextLengthExceeded(), lmtest.ContextLengthExceeded())
		defer srv.Close()
		_, err := searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
		require.Error(t, err)
		assert.True(t, errors.Is(err, adapter.ErrContextWindow), "%v", err)
		assert.Len(t, srv.Requests(), 3, "one step cannot be cut: no more calls")
	})
	t.Run("three attempts", func(t *testing.T) {
		srv := lmtest.NewServer()
		defer srv.Close()
		for i := range 5 {
			srv.Push(step("s", "search", fmt.Sprintf(`{"query": "%d"}`, i)))
		}
		srv.Push(lmtest.ContextLengthExceeded(), lmtest.ContextLengthExceeded(), lmtest.ContextLengthExceeded(), answer("x"))
		res, err := searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
		require.NoError(t, err)
		traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
		require.Len(t, traj, 2, "three failed attempts drop three steps, then the steps end")
		assert.Equal(t, 3, traj[0].Index)
		assert.Len(t, srv.Requests(), 9)
	})
}

func TestReActUnknownToolJSON(t *testing.T) {
	// With the JSON adapter, a reply naming a tool the agent does not have
	// ends the steps without a trajectory entry, and extract runs (DSPy).
	ctx := adapter.WithAdapter(context.Background(), adapter.JSON{})
	srv2 := lmtest.NewServer(
		lmtest.Text(`{"next_thought": "a", "next_tool_name": "search", "next_tool_args": {"query": "1"}}`),
		lmtest.Text(`{"next_thought": "b", "next_tool_name": "google", "next_tool_args": {}}`),
		lmtest.Text(`{"reasoning": "r", "answer": "x"}`))
	defer srv2.Close()
	res, err := searchAgent(t).Call(ctx, srv2.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Len(t, res.Outputs[0]["trajectory"], 1)
	assert.Equal(t, "x", res.Outputs[0]["answer"])

	// A reply without the fields is an error, as in DSPy.
	srv3 := lmtest.NewServer(lmtest.Text(`{"thought": "b"}`))
	defer srv3.Close()
	_, err = searchAgent(t).Call(ctx, srv3.Client(), adapter.Values{"question": "q"})
	var pe *adapter.ParseError
	require.ErrorAs(t, err, &pe)
}

func TestReActMaxIters(t *testing.T) {
	srv := lmtest.NewServer(step("a", "search", `{"query": "1"}`), step("b", "search", `{"query": "2"}`), answer("x"))
	defer srv.Close()
	res, err := searchAgent(t, predict.WithMaxIters(2)).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Len(t, res.Outputs[0]["trajectory"], 2, "no finish: extract runs on what exists")

	srv = lmtest.NewServer(step("a", "search", `{"query": "1"}`), step("b", "search", `{"query": "2"}`), answer("x"))
	defer srv.Close()
	res, err = searchAgent(t, predict.MaxIters(2)).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Len(t, res.Outputs[0]["trajectory"], 2, "MaxIters, the name the ReAct surface fixes, is WithMaxIters")

	srv = lmtest.NewServer(step("a", "search", `{"query": "1"}`), answer("x"))
	defer srv.Close()
	res, err = searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q", "max_iters": 1})
	require.NoError(t, err)
	assert.Len(t, res.Outputs[0]["trajectory"], 1, "max_iters in the inputs overrides for the call")
	assert.NotContains(t, lastUser(srv.Requests()[0]), "max_iters", "and is not an input of the predictors")

	_, err = searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q", "max_iters": "two"})
	assert.ErrorContains(t, err, "max_iters")

	srv = lmtest.NewServer(step("a", "search", `{"query": "1"}`), answer("x"))
	defer srv.Close()
	res, err = searchAgent(t, predict.WithMaxIters(5)).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"}, predict.WithMaxIters(1))
	require.NoError(t, err)
	assert.Len(t, res.Outputs[0]["trajectory"], 1, "WithMaxIters on a call overrides for the call")
	_, err = searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"}, predict.WithDemos())
	assert.ErrorContains(t, err, "do not apply to a call")
}

func TestNewReActRefuses(t *testing.T) {
	sig, _ := signature.Parse("question -> answer")
	ok, err := types.NewTool("search", "", func(context.Context, queryArgs) (string, error) { return "", nil })
	require.NoError(t, err)
	var fromJSON types.Tool
	require.NoError(t, json.Unmarshal([]byte(`{"name": "remote", "args": {}}`), &fromJSON))
	finish, err := types.NewTool("finish", "", func(context.Context, queryArgs) (string, error) { return "", nil })
	require.NoError(t, err)
	for _, c := range []struct {
		tools []types.Tool
		opts  []predict.Option
		want  string
	}{
		{[]types.Tool{ok, ok}, nil, "two tools are named search"},
		{[]types.Tool{fromJSON}, nil, "has no function"},
		{[]types.Tool{finish}, nil, `"finish" is the tool ReAct adds`},
		{nil, []predict.Option{predict.WithMaxIters(-1)}, "negative"},
		{nil, []predict.Option{predict.WithDemos(adapter.Values{})}, "WithDemos"},
	} {
		_, err := predict.NewReAct(sig, c.tools, c.opts...)
		assert.ErrorContains(t, err, c.want)
	}
	bad, _ := signature.Parse("question, trajectory -> answer")
	_, err = predict.NewReAct(bad, nil)
	assert.ErrorContains(t, err, "trajectory", "the task cannot have a field ReAct adds")
}

func TestToolArgsParseField(t *testing.T) {
	for raw, want := range map[string]string{
		`{"b": 1, "a": [1.0, "x"]}`:          `{"b":1,"a":[1.0,"x"]}`,
		"```json\n{\"q\": \"x\"}\n```":       `{"q":"x"}`,
		`{"query": "Eiffel Tower"`:           `{"query":"Eiffel Tower"}`,
		`{'city': 'Paris', 'ok': True}`:      `{"city":"Paris","ok":true}`,
		"Here you go: {\"k\": null} thanks.": `{"k":null}`,
		`{}`:                                 `{}`,
	} {
		var a predict.ToolArgs
		require.NoError(t, a.ParseField(raw), raw)
		assert.Equal(t, want, string(a), raw)
	}
	for _, raw := range []string{`[1, 2]`, `"x"`, `None`, ``, `{"q": "cut`, `{"a": 1, "a": 2}`, `{"q": "a"} or {"q": "b"}`} {
		var a predict.ToolArgs
		assert.Error(t, a.ParseField(raw), raw)
	}
	var a predict.ToolArgs
	assert.ErrorIs(t, a.ParseField(`{"q": "cut`), adapter.ErrTruncated, "a value cut off is never completed by a guess")
	assert.ErrorIs(t, a.ParseField(`{"amount": 10`), adapter.ErrTruncated, "a number at the very end may have been cut: 10 may have been 100")
	assert.ErrorIs(t, a.ParseField(`{"a": 1, "a": 2}`), adapter.ErrAmbiguous)
	assert.ErrorIs(t, a.ParseField(`{"q": "a"} or maybe {"q": "b"}`), adapter.ErrAmbiguous, "two different sets of arguments: never pick one")
	require.NoError(t, a.ParseField(`{"q": "a"} that is, {"q": "a"}`), "the same object twice is that object")
	b, err := json.Marshal(predict.ToolArgs(nil))
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b))
}

func TestReActStream(t *testing.T) {
	srv := lmtest.NewServer(
		step("Search.", "search", `{"query": "go"}`),
		step("Done.", "finish", "{}"),
		answer("Go is a language.").ChunkSize(5))
	defer srv.Close()
	var statuses []string
	deltas := map[string]string{}
	var final *adapter.Result
	for ch, err := range searchAgent(t).Stream(context.Background(), srv.Client(), adapter.Values{"question": "q"}) {
		require.NoError(t, err)
		switch {
		case ch.Status != "":
			statuses = append(statuses, ch.Status)
			assert.Empty(t, deltas, "tool events come before the extract step's deltas")
		case ch.Done:
			final = ch.Result
		case ch.Step == 0:
			deltas[ch.Field] += ch.Delta
		}
	}
	assert.Equal(t, []string{
		"Calling tool search...", "Tool calling finished! Querying the LLM with tool calling results...",
		"Calling tool finish...", "Tool calling finished! Querying the LLM with tool calling results...",
	}, statuses)
	assert.Equal(t, "Go is a language.", deltas["answer"])
	assert.Equal(t, "r", deltas["reasoning"])
	require.NotNil(t, final)
	assert.Equal(t, "Go is a language.", final.Outputs[0]["answer"])
	assert.Len(t, final.Outputs[0]["trajectory"], 2)
	assert.Equal(t, 3, final.Calls)

	// Breaking out after the first tool event runs nothing more.
	srv2 := lmtest.NewServer(step("Search.", "search", `{"query": "go"}`), step("Done.", "finish", "{}"), answer("x"))
	defer srv2.Close()
	var ran []string
	tr := &adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) { ran = append(ran, i.Tool) }}
	for ch, err := range searchAgent(t).Stream(context.Background(), srv2.Client(), adapter.Values{"question": "q"}, adapter.UseTrace(tr)) {
		require.NoError(t, err)
		if ch.Status != "" {
			break
		}
	}
	assert.Empty(t, ran, "the tool does not run once the consumer stopped")
	assert.Len(t, srv2.Requests(), 1)
}

// FuzzToolArgs: the model's next_tool_args text is untrusted. ParseField
// never panics; what it accepts is one JSON object, and parsing its own
// output gives it back.
func FuzzToolArgs(f *testing.F) {
	for _, s := range []string{`{"b": 1, "a": [1.0, "x"]}`, "```json\n{\"q\": \"x\"}\n```", `{"query": "Eiffel Tower"`, `{'city': 'Paris', 'ok': True}`, `x {"k": null} y`, `[1]`, `{"a": 1, "a": 2}`, `{"q": "cut`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var a predict.ToolArgs
		if a.ParseField(raw) != nil {
			return
		}
		var obj map[string]any
		d := json.NewDecoder(bytes.NewReader(a))
		d.UseNumber() // a number past float64's range is still JSON
		if err := d.Decode(&obj); err != nil || obj == nil {
			t.Fatalf("ParseField(%q) gave %q, not a JSON object: %v", raw, a, err)
		}
		var b predict.ToolArgs
		if err := b.ParseField(string(a)); err != nil || string(b) != string(a) {
			t.Fatalf("ParseField(%q) = %q, which reads back as %q (%v)", raw, a, b, err)
		}
	})
}

func TestReActLoadKeepsDemoArgsOrder(t *testing.T) {
	r := searchAgent(t)
	prog := predict.Program{Predictors: map[string]predict.SavedPredictor{
		"react": {Demos: []map[string]json.RawMessage{{
			"question": json.RawMessage(`"q"`), "trajectory": json.RawMessage(`""`), "next_thought": json.RawMessage(`"t"`),
			"next_tool_name": json.RawMessage(`"search"`), "next_tool_args": json.RawMessage(`{"zeta": 1, "alpha": {"y": 2, "b": 3}}`),
		}}, Signature: r.React().Signature().State()},
		"extract.predict": {Signature: r.Extract().Signature().State()},
	}}
	r, err := r.Load(prog)
	require.NoError(t, err)
	msgs, err := adapter.Chat{}.Format(r.React().Signature(), r.React().Demos(), adapter.Values{"question": "q", "trajectory": ""})
	require.NoError(t, err)
	assert.Contains(t, msgs[2].Content, "[[ ## next_tool_args ## ]]\n{\"zeta\": 1, \"alpha\": {\"y\": 2, \"b\": 3}}\n", "the saved key order")
}

// TestReActConcurrent: one ReAct serves concurrent calls; each run keeps
// its own trajectory.
func TestReActConcurrent(t *testing.T) {
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		sys, user := r.Chat.Messages[0].Content, lastUser(r)
		q := strings.TrimPrefix(strings.SplitN(user, "\n\n", 2)[0], "[[ ## question ## ]]\n")
		switch {
		case strings.Contains(sys, "`reasoning`"):
			return answer(q)
		case strings.Contains(user, "observation_0"):
			return step("done", "finish", "{}")
		}
		return step("look", "search", fmt.Sprintf(`{"query": %q}`, q))
	})
	agent := searchAgent(t)
	client := srv.Client()
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			q := fmt.Sprintf("q%d", i)
			res, err := agent.Call(context.Background(), client, adapter.Values{"question": q})
			if err == nil {
				traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
				if res.Outputs[0]["answer"] != q || len(traj) != 2 || traj[0].Observation != "result for "+q {
					err = fmt.Errorf("call %s got %v", q, res.Outputs[0])
				}
			}
			errs <- err
		}()
	}
	for range 16 {
		assert.NoError(t, <-errs)
	}
}
