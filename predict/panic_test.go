package predict_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// panicTools are a tool that panics on the query "boom" (an index out of
// range, as a bad input would cause) and answers otherwise.
func panicTools(t *testing.T) []types.Tool {
	t.Helper()
	lookup, err := types.NewTool("lookup", "Look a word up.", func(_ context.Context, a queryArgs) (string, error) {
		if a.Query == "boom" {
			var none []string
			return none[len(a.Query)], nil
		}
		return "found " + a.Query, nil
	})
	require.NoError(t, err)
	return []types.Tool{lookup}
}

// toolDoneLog records ToolDone's errors, safely from the tools' goroutines.
type toolDoneLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *toolDoneLog) trace() adapter.CallOption {
	return adapter.UseTrace(&adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.errs = append(l.errs, i.Err)
	}})
}

// assertPanicStep checks a step whose tool panicked: its error is the
// panic (value and stack), and the model was shown it as the tool's
// failure.
func assertPanicStep(t *testing.T, err error, observation any) {
	t.Helper()
	var pe *adapter.PanicError
	require.ErrorAs(t, err, &pe)
	var re interface{ RuntimeError() }
	assert.ErrorAs(t, pe, &re, "a runtime error's panic unwraps to it")
	assert.Contains(t, string(pe.Stack), "panicTools", "the stack is where the tool panicked")
	assert.Equal(t, "Execution error in lookup: panic: runtime error: index out of range [4] with length 0", observation)
}

// agentRun is what ReAct and ReActV2 share.
type agentRun interface {
	Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error)
	Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error]
}

// stepErrors are a run's steps' errors and observations: a ReAct's
// trajectory, a ReActV2's history.
func stepErrors(t *testing.T, res *adapter.Result) ([]error, []any) {
	var errs []error
	var obs []any
	if traj, ok := res.Outputs[0]["trajectory"].(predict.Trajectory); ok {
		for _, s := range traj {
			errs, obs = append(errs, s.Err), append(obs, s.Observation)
		}
		return errs, obs
	}
	for _, c := range v2Calls(t, res) {
		errs, obs = append(errs, c.Err), append(obs, c.Value)
	}
	return errs, obs
}

// TestToolPanicIsItsError: a tool's panic is that tool's error, in ReAct
// and ReActV2 (native, calls at once), Call and Stream alike: the model
// sees it as the step's observation (DSPy's tool exception), the
// trajectory or history and the trace keep the *adapter.PanicError with
// its stack, the other calls of the step keep their results, and the run
// goes on. Before, a native agent re-panicked on the caller's goroutine
// and text ReAct crashed the call (security review 4).
func TestToolPanicIsItsError(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	react, err := predict.NewReAct(sig, panicTools(t))
	require.NoError(t, err)
	v2, err := predict.NewReActV2(sig, panicTools(t), nativeChat, predict.WithToolConcurrency(4))
	require.NoError(t, err)
	cases := map[string]struct {
		agent   agentRun
		replies func() []lmtest.Reply
		panicAt int // the step that panicked
		calls   int // the LM calls
	}{
		"react": {
			agent: react,
			replies: func() []lmtest.Reply {
				return []lmtest.Reply{step("t", "lookup", `{"query": "boom"}`), step("t", "finish", `{}`), answer("a")}
			},
			calls: 3,
		},
		"reactv2": {
			agent: v2,
			replies: func() []lmtest.Reply {
				return []lmtest.Reply{
					nativeStep("t", fcall("1", "lookup", `{"query": "a"}`), fcall("2", "lookup", `{"query": "boom"}`), fcall("3", "lookup", `{"query": "c"}`)),
					nativeStep("done", fcall("4", "submit", `{"answer": "a"}`)),
				}
			},
			panicAt: 1,
			calls:   2,
		},
	}
	for name, c := range cases {
		r := c.agent
		for _, stream := range []bool{false, true} {
			t.Run(name+map[bool]string{false: " call", true: " stream"}[stream], func(t *testing.T) {
				srv := lmtest.NewServer(c.replies()...)
				defer srv.Close()
				var log toolDoneLog
				var res *adapter.Result
				in := adapter.Values{"question": "q"}
				if stream {
					for ch, err := range r.Stream(t.Context(), toolsLM(srv), in, log.trace()) {
						require.NoError(t, err)
						if ch.Done {
							res = ch.Result
						}
					}
				} else {
					res, err = r.Call(t.Context(), toolsLM(srv), in, log.trace())
					require.NoError(t, err)
				}
				require.NotNil(t, res)
				assert.Equal(t, "a", res.Outputs[0]["answer"])
				errs, obs := stepErrors(t, res)
				assertPanicStep(t, errs[c.panicAt], obs[c.panicAt])
				for i, e := range errs {
					if i != c.panicAt {
						assert.NoError(t, e, "step %d", i)
					}
				}
				var traced []error
				for _, e := range log.errs {
					if e != nil {
						traced = append(traced, e)
					}
				}
				require.Len(t, traced, 1)
				assert.Same(t, errs[c.panicAt], traced[0], "the trace has the same error")
				reqs := srv.Requests()
				require.Len(t, reqs, c.calls)
				assert.Contains(t, requestText(reqs[1]), "Execution error in lookup: panic: runtime error: index out of range", "the model saw the failure")
			})
		}
	}
}

// TestToolPanicRepanicFromHook: a caller who wants the crash re-panics
// from ToolDone; with the tools on goroutines of the library's, the panic
// reaches the caller's goroutine (where it can be recovered), not a
// goroutine no one can recover.
func TestToolPanicRepanicFromHook(t *testing.T) {
	sig, err := signature.Parse("question -> answer")
	require.NoError(t, err)
	r, err := predict.NewReActV2(sig, panicTools(t), nativeChat, predict.WithToolConcurrency(4))
	require.NoError(t, err)
	srv := lmtest.NewServer(nativeStep("t", fcall("1", "lookup", `{"query": "a"}`), fcall("2", "lookup", `{"query": "boom"}`)))
	defer srv.Close()
	crash := adapter.UseTrace(&adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) {
		if pe, ok := errors.AsType[*adapter.PanicError](i.Err); ok {
			panic(pe.Value)
		}
	}})
	assert.Panics(t, func() { _, _ = r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "q"}, crash) })
}

// TestExecuteToolPanic: ToolCalls.Execute, the loop a caller writes by
// hand, gets the same rule: the panicking call's result is its error.
func TestExecuteToolPanic(t *testing.T) {
	calls := types.ToolCalls{Calls: []types.ToolCall{
		{ID: "1", Name: "lookup", Args: map[string]any{"query": "boom"}},
		{ID: "2", Name: "lookup", Args: map[string]any{"query": "x"}},
	}}
	var log toolDoneLog
	ctx := adapter.WithTrace(t.Context(), &adapter.Trace{ToolDone: func(i adapter.ToolDoneInfo) { log.errs = append(log.errs, i.Err) }})
	res := calls.Execute(ctx, panicTools(t))
	require.Len(t, res.Results, 2)
	assert.True(t, res.Results[0].IsError)
	assert.Equal(t, "panic: runtime error: index out of range [4] with length 0", res.Results[0].Value)
	assert.Equal(t, "found x", res.Results[1].Value)
	require.Len(t, log.errs, 2)
	assert.ErrorAs(t, log.errs[0], new(*adapter.PanicError))
}

// TestRewardPanic: a reward that panics fails its attempt as a reward's
// error does (counted by WithFailCount), the panic kept as an
// *adapter.PanicError; the other attempts go on.
func TestRewardPanic(t *testing.T) {
	reward := func(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
		if out["answer"] == "boom" {
			panic(errors.New("the scorer broke"))
		}
		return 1, nil
	}
	srv := lmtest.NewServer(answerReply("boom"), answerReply("Paris"))
	defer srv.Close()
	best, err := predict.NewBestOfN(qaModule(t), 2, reward, 1)
	require.NoError(t, err)
	out, _, err := best.Call(t.Context(), srv.Client(), adapter.Values{"question": "q"})
	require.NoError(t, err)
	assert.Equal(t, "Paris", out["answer"])

	srv = lmtest.NewServer(answerReply("boom"), answerReply("Paris"))
	defer srv.Close()
	strict, err := predict.NewBestOfN(qaModule(t), 2, reward, 1, predict.WithFailCount(0))
	require.NoError(t, err)
	_, _, err = strict.Call(t.Context(), srv.Client(), adapter.Values{"question": "q"})
	var pe *adapter.PanicError
	require.ErrorAs(t, err, &pe)
	assert.EqualError(t, pe, "panic: the scorer broke")
	assert.ErrorContains(t, err, "reward: panic: the scorer broke")
}

// requestText is every message's text of a request, one after another.
func requestText(r lmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Chat.Messages {
		b.WriteString(m.Content)
		for _, p := range m.MultiContent {
			b.WriteString(p.Text)
		}
		b.WriteString("\n")
	}
	return b.String()
}
