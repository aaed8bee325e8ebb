package predict_test

import (
	"context"
	"errors"
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

type transferArgs struct {
	Account string `json:"account"`
	Amount  int    `json:"amount"`
}

// transferAgent is a ReAct agent whose one tool records what it ran with.
func transferAgent(t *testing.T, ran *[]transferArgs, opts ...predict.Option) *predict.ReAct {
	t.Helper()
	tool, err := types.NewTool("transfer", "Send money.", func(_ context.Context, a transferArgs) (string, error) {
		*ran = append(*ran, a)
		return "sent", nil
	})
	require.NoError(t, err)
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	r, err := predict.NewReAct(sig, []types.Tool{tool}, opts...)
	require.NoError(t, err)
	return r
}

// TestReActToolArgsSmuggling is the review's N3 through ReAct: arguments
// whose keys differ only in case or folding never run the tool with a
// value the trace, Step.Args and an approval step do not show; the refusal
// is the step's observation, and the model can correct itself.
func TestReActToolArgsSmuggling(t *testing.T) {
	for _, args := range []string{`{"account": "A", "amount": 5, "AMOUNT": 5000}`, `{"account": "A", "amount": 5, "amounſ": 1}`, `{"account": "A", "Amount": 5000}`} {
		t.Run(args, func(t *testing.T) {
			srv := lmtest.NewServer(
				step("Pay.", "transfer", args),
				step("Fix.", "transfer", `{"account": "A", "amount": 5}`),
				step("Done.", "finish", "{}"),
				answer("paid"))
			defer srv.Close()
			var ran []transferArgs
			var traced []string
			var approved []transferArgs
			tr := &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) {
				traced = append(traced, string(i.Args))
				var a transferArgs
				if i.Tool == "transfer" && predict.ToolArgs(i.Args).Decode(&a) == nil {
					approved = append(approved, a) // what an approval step would read
				}
			}}
			res, err := transferAgent(t, &ran).Call(context.Background(), srv.Client(), adapter.Values{"question": "pay A 5"}, adapter.UseTrace(tr))
			require.NoError(t, err)
			assert.Equal(t, []transferArgs{{"A", 5}}, ran, "only the corrected call ran")
			assert.Equal(t, []transferArgs{{"A", 5}}, approved, "an approval step decoding the arguments reads what runs, and refuses what does not")
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, 3)
			assert.ErrorIs(t, traj[0].Err, types.ErrArgumentName)
			assert.Contains(t, traj[0].Observation, "Execution error in transfer: ")
			assert.Contains(t, lastUser(srv.Requests()[1]), "a key is not exactly the name of an argument", "the model is told why")
			var a transferArgs
			assert.ErrorIs(t, traj[0].Args.Decode(&a), types.ErrArgumentName, "Step.Args decodes as the tool does")
			require.Len(t, traced, 3)
			assert.JSONEq(t, args, traced[0], "the trace shows the arguments as written")
		})
	}
}

// neverFinishes serves a model that always calls a tool and never
// finishes; the extract call gets an answer.
func neverFinishes(t *testing.T) *lmtest.Server {
	t.Helper()
	srv := lmtest.NewServer()
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		if strings.Contains(r.Chat.Messages[0].Content, "`reasoning`") {
			return answer("x")
		}
		return step("again", "search", `{"query": "q"}`)
	})
	t.Cleanup(srv.Close)
	return srv
}

// TestReActMaxItersFromInputs is the review's N7: max_iters in the inputs
// (which often come from end users) may lower the developer's WithMaxIters,
// never raise it, unless the developer opts in with WithMaxItersFromInputs.
func TestReActMaxItersFromInputs(t *testing.T) {
	ctx := context.Background()
	steps := func(t *testing.T, r *predict.ReAct, in adapter.Values, opts ...adapter.CallOption) int {
		t.Helper()
		srv := neverFinishes(t)
		res, err := r.Call(ctx, srv.Client(), in, opts...)
		require.NoError(t, err)
		traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
		assert.Equal(t, len(traj)+1, res.Calls)
		assert.Len(t, srv.Requests(), len(traj)+1)
		return len(traj)
	}
	q := func(maxIters any) adapter.Values { return adapter.Values{"question": "q", "max_iters": maxIters} }

	assert.Equal(t, 3, steps(t, searchAgent(t, predict.WithMaxIters(3)), q(2147483647)), "the review's probe: 3 steps, not 1137 calls and counting")
	assert.Equal(t, 20, steps(t, searchAgent(t), q(100)), "at most the default")
	assert.Equal(t, 2, steps(t, searchAgent(t, predict.WithMaxIters(3)), q(2)), "lowering is the input's to ask")
	assert.Equal(t, 1, steps(t, searchAgent(t, predict.WithMaxIters(3)), q(5), predict.WithMaxIters(1)), "a call's WithMaxIters is the limit")

	assert.Equal(t, 5, steps(t, searchAgent(t, predict.WithMaxIters(3), predict.WithMaxItersFromInputs()), q(5)), "opted in: the input raises it")
	assert.Equal(t, 5, steps(t, searchAgent(t, predict.WithMaxIters(3)), q(5), predict.WithMaxItersFromInputs()), "opted in on the call")
	assert.Equal(t, 3, steps(t, searchAgent(t, predict.WithMaxIters(3), predict.WithMaxItersFromInputs()), adapter.Values{"question": "q"}))

	_, err := searchAgent(t).Call(ctx, neverFinishes(t).Client(), q(-1))
	assert.ErrorContains(t, err, "max_iters")
}

// TestReActToolErrorText is the review's N8, second half: a tool's error
// reaches the next prompt verbatim by default (as in DSPy), and
// WithToolErrorText decides what the model is shown instead; the Go side
// (Step.Err, the trace) keeps the error itself.
func TestReActToolErrorText(t *testing.T) {
	const secret = "https://api.example.com/v1?api_key=SECRET123"
	tool, err := types.NewTool("fetch", "Fetch a page.", func(_ context.Context, a queryArgs) (string, error) {
		return "", errors.New("GET " + secret + ": 503")
	})
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	replies := func() *lmtest.Server {
		return lmtest.NewServer(step("Fetch.", "fetch", `{"query": "x"}`), step("Done.", "finish", "{}"), answer("x"))
	}
	redact := func(tool string, err error) string {
		return "Execution error in " + tool + ": " + strings.ReplaceAll(err.Error(), "SECRET123", "[redacted]")
	}
	for name, c := range map[string]struct {
		module, call []predict.Option
		want         string
	}{
		"default: verbatim, as DSPy": {want: "Execution error in fetch: GET " + secret + ": 503"},
		"on the module":              {module: []predict.Option{predict.WithToolErrorText(redact)}, want: "api_key=[redacted]"},
		"on the call":                {call: []predict.Option{predict.WithToolErrorText(redact)}, want: "api_key=[redacted]"},
		"the call's wins": {module: []predict.Option{predict.WithToolErrorText(func(string, error) string { return "module" })},
			call: []predict.Option{predict.WithToolErrorText(func(string, error) string { return "call" })}, want: "call"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := replies()
			defer srv.Close()
			var traced error
			tr := &adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) {
				if i.Tool == "fetch" {
					traced = i.Err
				}
			}}
			r, err := predict.NewReAct(sig, []types.Tool{tool}, c.module...)
			require.NoError(t, err)
			res, err := r.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"}, append(c.call, adapter.UseTrace(tr))...)
			require.NoError(t, err)
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			obs := traj[0].Observation.(string)
			assert.Contains(t, obs, c.want)
			assert.Contains(t, lastUser(srv.Requests()[1]), "[[ ## observation_0 ## ]]\n"+obs+"\n")
			assert.Contains(t, lastUser(srv.Requests()[2]), "[[ ## observation_0 ## ]]\n"+obs+"\n", "the extract call sees the same text")
			if c.want != "" && !strings.Contains(c.want, secret) {
				assert.NotContains(t, lastUser(srv.Requests()[1]), "SECRET123")
			}
			assert.ErrorContains(t, traj[0].Err, "SECRET123", "the Go side keeps the error")
			assert.ErrorContains(t, traced, "SECRET123")
		})
	}
}

type priceArgs struct {
	Query    string         `json:"query"`
	MinPrice int            `json:"min_price"`
	MaxPrice int            `json:"max_price"`
	Filters  map[string]int `json:"filters,omitempty"`
}

// TestReActToolArgsModelOrderJSON (issue 30 item 12): DSPy keeps the
// model's key order in the tool arguments it renders; a reply read as
// JSON (the JSON adapter, the Chat adapter's JSON fallback, JSON in a
// fence) rendered them sorted.
func TestReActToolArgsModelOrderJSON(t *testing.T) {
	const args = `{"query": "shoes", "min_price": 50, "max_price": 150, "filters": {"z": 1, "a": 2}}`
	reply := `{"next_thought": "Search.", "next_tool_name": "search", "next_tool_args": ` + args + `}`
	tool, err := types.NewTool("search", "Search the shop.", func(_ context.Context, a priceArgs) (string, error) { return "3 hits", nil })
	require.NoError(t, err)
	sig, _ := signature.Parse("question -> answer")
	r, err := predict.NewReAct(sig, []types.Tool{tool}, predict.WithMaxIters(1))
	require.NoError(t, err)
	for name, c := range map[string]struct {
		ctx     context.Context
		replies []lmtest.Reply
	}{
		"json":          {adapter.WithAdapter(context.Background(), adapter.JSON{}), []lmtest.Reply{lmtest.Text(reply), lmtest.Text(`{"reasoning": "r", "answer": "x"}`)}},
		"chat fallback": {context.Background(), []lmtest.Reply{lmtest.Text(reply), lmtest.Text(reply), answer("x")}},
		"json fenced":   {adapter.WithAdapter(context.Background(), adapter.JSON{}), []lmtest.Reply{lmtest.Text("Here:\n```json\n" + reply + "\n```"), lmtest.Text(`{"reasoning": "r", "answer": "x"}`)}},
		"chat markers":  {context.Background(), []lmtest.Reply{step("Search.", "search", args), answer("x")}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(c.replies...)
			defer srv.Close()
			var traced string
			tr := &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) { traced = string(i.Args) }}
			res, err := r.Call(c.ctx, srv.Client(), adapter.Values{"question": "q"}, adapter.UseTrace(tr))
			require.NoError(t, err)
			traj := res.Outputs[0]["trajectory"].(predict.Trajectory)
			require.Len(t, traj, 1)
			const compact = `{"query":"shoes","min_price":50,"max_price":150,"filters":{"z":1,"a":2}}`
			assert.Equal(t, compact, string(traj[0].Args), "Step.Args in the model's order")
			assert.Equal(t, compact, traced, "the trace too")
			assert.Equal(t, "3 hits", traj[0].Observation)
			reqs := srv.Requests()
			assert.Contains(t, lastUser(reqs[len(reqs)-1]), "[[ ## tool_args_0 ## ]]\n"+args+"\n", "the extract prompt renders them as the model wrote them")
		})
	}
}

// TestReActFallbackOutcome (issue 30 item 12): what ends the steps is
// decided by the reply the adapter read last, as in DSPy. A fallback reply
// that yields none of the output fields (prose, a refusal), or a fallback
// call that failed, ends the call with that error (DSPy's
// AdapterParseError or the LM's error, not a ValueError); a fallback
// reply naming a tool the agent does not have ends the steps and runs
// extract, whatever the first reply was.
func TestReActFallbackOutcome(t *testing.T) {
	badTool := step("a", "google", "{}")
	jsonBadTool := lmtest.Text(`{"next_thought": "a", "next_tool_name": "google", "next_tool_args": {}}`)
	for name, c := range map[string]struct {
		replies []lmtest.Reply
		extract bool
		is      error
	}{
		"bad tool, then prose":            {replies: []lmtest.Reply{badTool, lmtest.Text("I cannot help.")}, is: adapter.ErrMissingField},
		"bad tool, then a refusal":        {replies: []lmtest.Reply{badTool, lmtest.Text("").WithRefusal("I can't help with that.")}, is: adapter.ErrRefusal},
		"bad tool, then an LM error":      {replies: []lmtest.Reply{badTool, lmtest.Error(400, `{"error": {"message": "bad request"}}`)}},
		"bad tool, then a bad tool":       {replies: []lmtest.Reply{badTool, jsonBadTool}, extract: true},
		"prose, then a bad tool":          {replies: []lmtest.Reply{lmtest.Text("Let me think."), jsonBadTool}, extract: true},
		"missing fields, then a bad tool": {replies: []lmtest.Reply{lmtest.Text("[[ ## next_thought ## ]]\na"), jsonBadTool}, extract: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(append(c.replies, answer("x"))...)
			defer srv.Close()
			res, err := searchAgent(t).Call(context.Background(), srv.Client(), adapter.Values{"question": "q"}, adapter.NoRetry())
			if c.extract {
				require.NoError(t, err)
				assert.Equal(t, "x", res.Outputs[0]["answer"])
				assert.Empty(t, res.Outputs[0]["trajectory"])
				assert.Len(t, srv.Requests(), 3)
				return
			}
			require.Error(t, err)
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
			assert.Len(t, srv.Requests(), 2, "no extract call")
		})
	}
}

// TestReActZeroValue (issue 30 item 10): a nil *ReAct and a zero ReAct
// return errors, never panic.
func TestReActZeroValue(t *testing.T) {
	srv := lmtest.NewServer(answer("x"))
	defer srv.Close()
	for name, r := range map[string]*predict.ReAct{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Call(context.Background(), srv.Client(), adapter.Values{"question": "q"})
			assert.ErrorContains(t, err, "NewReAct")
			assert.ErrorIs(t, err, predict.ErrZeroModule)
			n := 0
			for _, err := range r.Stream(context.Background(), srv.Client(), adapter.Values{"question": "q"}) {
				n++
				assert.ErrorContains(t, err, "NewReAct")
			}
			assert.Equal(t, 1, n)
			_, err = r.Load(predict.Program{})
			assert.ErrorContains(t, err, "NewReAct")
			_, err = r.Prepare(context.Background(), srv.Client(), adapter.Values{"question": "q"})
			assert.ErrorIs(t, err, predict.ErrZeroModule)
			assert.Nil(t, r.Signature())
			assert.Nil(t, r.React())
			assert.Nil(t, r.Extract())
			assert.Empty(t, r.Tools())
			assert.Empty(t, r.Ignored())
		})
	}
	assert.Empty(t, srv.Requests())
}
