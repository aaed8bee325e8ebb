package predict_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/types"
)

// billing is a server that answers with scripted replies, in order, and
// bills each request the most it could spend (adapter.MaxSpend, what a
// budget holds for it), as the usage it reports: a budget then refuses
// exactly the request that would pass its limit.
type billing struct {
	srv   *lmtest.Server
	mu    sync.Mutex
	bills []int
}

func billingServer(t *testing.T, replies ...lmtest.Reply) *billing {
	b := &billing{srv: lmtest.NewServer()}
	t.Cleanup(b.srv.Close)
	b.srv.Handle(func(r lmtest.Request) lmtest.Reply {
		s := adapter.MaxSpend(r.Chat)
		b.mu.Lock()
		defer b.mu.Unlock()
		b.bills = append(b.bills, s.PromptTokens+s.CompletionTokens)
		if len(b.bills) > len(replies) {
			return lmtest.Error(500, `{"error":{"message":"no more replies"}}`)
		}
		return replies[len(b.bills)-1].WithUsage(s.PromptTokens, s.CompletionTokens)
	})
	return b
}

// sent is the number of requests the server saw.
func (b *billing) sent() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bills)
}

// billed is what the server billed in all.
func (b *billing) billed() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := 0
	for _, n := range b.bills {
		sum += n
	}
	return sum
}

// limitAt is a limit that holds the first k requests b saw and half the
// next: a budget of it refuses request k+1 (from 1).
func (b *billing) limitAt(t *testing.T, k int) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Greater(t, len(b.bills), k, "the run without a budget made more than %d requests", k)
	sum := 0
	for _, n := range b.bills[:k] {
		sum += n
	}
	return int64(sum + b.bills[k]/2)
}

func newBudget(t *testing.T, tokens int64) *adapter.LocalBudget {
	b, err := adapter.NewBudget(adapter.Limit{Tokens: tokens})
	require.NoError(t, err)
	return b
}

// answerLength rewards a longer answer.
func answerLength(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
	a, _ := out["answer"].(string)
	return float64(len(a)), nil
}

// lastOf runs a BestOfN or Refine stream to its end and returns its last
// chunk, its error, and the texts a consumer holds.
func lastOf[Out any](t *testing.T, seq func(func(predict.Chunk[Out], error) bool)) (predict.Chunk[Out], error, attemptTexts) {
	t.Helper()
	var last predict.Chunk[Out]
	var err error
	held := attemptTexts{}
	n := 0
	for ch, e := range seq {
		require.Nil(t, err, "nothing after the error")
		held.apply(ch.Chunk)
		last, err = ch, e
		n++
	}
	require.Positive(t, n)
	return last, err, held
}

var maxTokens50 = adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", MaxTokens: 50})

// TestBestOfNBudget: a budget that holds two and a half attempts stops a
// BestOfN of 5 when it refuses the third: no further attempt starts, the
// refusal is not one more failure, and the call returns the best of the
// two attempts that ran (its outputs, the Result of every request) with an
// error matching ErrBudget that says where it stopped. The server saw
// exactly the two requests and billed no more than the limit. Call and
// Stream alike.
func TestBestOfNBudget(t *testing.T) {
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{answerReply("a"), answerReply("bbb"), answerReply("cc"), answerReply("dddd"), answerReply("eeeee")}
	}
	best, err := predict.NewBestOfN(qaModule(t), 5, answerLength, math.Inf(1))
	require.NoError(t, err)
	in := adapter.Values{"question": "q"}
	dry := billingServer(t, replies()...)
	_, _, err = best.Call(t.Context(), dry.srv.Client(), in, maxTokens50)
	require.NoError(t, err)
	require.Equal(t, 5, dry.sent())
	limit := dry.limitAt(t, 2)

	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			srv := billingServer(t, replies()...)
			b := newBudget(t, limit)
			var out adapter.Values
			var res *adapter.Result
			if stream {
				last, serr, held := lastOf(t, best.Stream(t.Context(), srv.srv.Client(), in, maxTokens50, adapter.WithBudget(b)))
				err = serr
				out, res = last.Out, last.Result
				assert.False(t, last.Done, "the run did not end as it should")
				assert.Equal(t, 2, last.Attempt, "the best attempt's")
				assert.Equal(t, "bbb", held["0/answer"], "the texts settled on the best attempt")
			} else {
				out, res, err = best.Call(t.Context(), srv.srv.Client(), in, maxTokens50, adapter.WithBudget(b))
			}
			require.ErrorIs(t, err, adapter.ErrBudget)
			var be *adapter.BudgetError
			require.ErrorAs(t, err, &be)
			var ae *predict.AttemptsError
			assert.NotErrorAs(t, err, &ae, "an attempt succeeded: not a failure of the attempts")
			assert.Contains(t, err.Error(), "predict: BestOfN: stopped by its budget after 3 of 5 attempts: attempt 3 (rollout 2): ")
			assert.Equal(t, "bbb", out["answer"], "the best of the attempts that ran")
			require.NotNil(t, res)
			assert.Equal(t, "bbb", res.Outputs[0]["answer"])
			assert.Equal(t, 2, len(srv.srv.Requests()), "no request after the refused one")
			assert.Equal(t, 2, res.Requests)
			assert.Equal(t, srv.billed(), res.Usage.TotalTokens, "usage summed over the attempts")
			assert.LessOrEqual(t, int64(srv.billed()), limit)
			assert.Equal(t, float64(srv.billed()), b.Spent())
		})
	}

	// No attempt succeeded before the refusal: the attempts' error, as
	// without a budget, and still no further attempt.
	t.Run("none succeeded", func(t *testing.T) {
		srv := billingServer(t, lmtest.Text("no markers"), lmtest.Text("none"), lmtest.Text("none"), lmtest.Text("none"), lmtest.Text("none"), lmtest.Text("none"))
		b := newBudget(t, 1) // holds no request at all after the first refusal
		_, res, err := best.Call(t.Context(), srv.srv.Client(), in, maxTokens50, adapter.WithBudget(b))
		require.ErrorIs(t, err, adapter.ErrBudget)
		var ae *predict.AttemptsError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, 1, ae.Attempts)
		assert.Contains(t, err.Error(), "predict: BestOfN: stopped by its budget after 1 of 5 attempts, none of which succeeded")
		require.NotNil(t, res)
		assert.Empty(t, srv.srv.Requests())
	})
}

// TestRefineBudget: Refine's advice calls spend from the budget too; a
// refusal, of an attempt or of an advice call, ends the run with the best
// attempt so far and an error matching ErrBudget; nothing more is sent.
func TestRefineBudget(t *testing.T) {
	advice := func() lmtest.Reply { return feedbackReply("Too short.", `{"self": "Write more."}`) }
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{answerReply("bb"), advice(), answerReply("a"), advice(), answerReply("cccc"), advice(), answerReply("ddddd")}
	}
	refine, err := predict.NewRefine(qaModule(t), 4, answerLength, math.Inf(1))
	require.NoError(t, err)
	in := adapter.Values{"question": "q"}
	dry := billingServer(t, replies()...)
	_, _, err = refine.Call(t.Context(), dry.srv.Client(), in, maxTokens50)
	require.NoError(t, err)
	require.Equal(t, 7, dry.sent(), "4 attempts, 3 advice calls")

	for _, c := range []struct {
		name    string
		sent    int // requests before the refused one
		message string
	}{
		{"the third attempt refused", 4, "predict: Refine: stopped by its budget after 3 of 4 attempts: attempt 3 (rollout 2): "},
		{"the second advice refused", 3, "predict: Refine: stopped by its budget after 2 of 4 attempts: attempt 2 (rollout 1): feedback: "},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				limit := dry.limitAt(t, c.sent)
				srv := billingServer(t, replies()...)
				b := newBudget(t, limit)
				var out adapter.Values
				var res *adapter.Result
				if stream {
					var last predict.Chunk[adapter.Values]
					last, err, _ = lastOf(t, refine.Stream(t.Context(), srv.srv.Client(), in, maxTokens50, adapter.WithBudget(b)))
					out, res = last.Out, last.Result
					assert.Equal(t, 1, last.Attempt)
				} else {
					out, res, err = refine.Call(t.Context(), srv.srv.Client(), in, maxTokens50, adapter.WithBudget(b))
				}
				require.ErrorIs(t, err, adapter.ErrBudget)
				assert.Contains(t, err.Error(), c.message)
				assert.Equal(t, "bb", out["answer"], "the best attempt so far")
				require.NotNil(t, res)
				assert.Equal(t, "bb", res.Outputs[0]["answer"])
				assert.Equal(t, c.sent, len(srv.srv.Requests()))
				assert.Equal(t, c.sent, res.Requests)
				assert.Equal(t, srv.billed(), res.Usage.TotalTokens, "the attempts' and the advice calls' usage")
				assert.LessOrEqual(t, int64(srv.billed()), limit)
			})
		}
	}
}

// runOf runs a ReAct or ReActV2 as a Call or a Stream, and returns the
// Result and error Call returns, or the last chunk's.
func runOf(t *testing.T, stream bool, call func() (*adapter.Result, error), seq func(func(adapter.Chunk, error) bool)) (*adapter.Result, error) {
	t.Helper()
	if !stream {
		return call()
	}
	var res *adapter.Result
	var err error
	for ch, e := range seq {
		require.NoError(t, err, "nothing after the error")
		res, err = ch.Result, e
	}
	return res, err
}

// TestReActBudget: a ReAct run whose budget refuses the request of step 3
// (or the extract call) ends there: no extract call, no more requests;
// the Result holds the calls so far and the trajectory of the steps that
// ran, with an error matching ErrBudget that says where the run stopped.
// Call and Stream alike.
func TestReActBudget(t *testing.T) {
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{
			step("Search.", "search", `{"query": "go"}`),
			step("Again.", "search", `{"query": "gophers"}`),
			step("Done.", "finish", "{}"),
			answer("Go"),
		}
	}
	agent := searchAgent(t)
	in := adapter.Values{"question": "q"}
	dry := billingServer(t, replies()...)
	_, err := agent.Call(t.Context(), dry.srv.Client(), in, maxTokens50)
	require.NoError(t, err)
	require.Equal(t, 4, dry.sent())

	for _, c := range []struct {
		name    string
		sent    int
		message string
	}{
		{"step 3 refused", 2, "predict: ReAct: stopped by its budget at step 3: "},
		{"the extract call refused", 3, "predict: ReAct: stopped by its budget before the extract call: "},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				limit := dry.limitAt(t, c.sent)
				srv := billingServer(t, replies()...)
				b := newBudget(t, limit)
				opts := []adapter.CallOption{maxTokens50, adapter.WithBudget(b)}
				res, err := runOf(t, stream,
					func() (*adapter.Result, error) { return agent.Call(t.Context(), srv.srv.Client(), in, opts...) },
					agent.Stream(t.Context(), srv.srv.Client(), in, opts...))
				require.ErrorIs(t, err, adapter.ErrBudget)
				assert.Contains(t, err.Error(), c.message)
				require.NotNil(t, res)
				require.Len(t, res.Outputs, 1)
				traj, ok := res.Outputs[0]["trajectory"].(predict.Trajectory)
				require.True(t, ok, "the trajectory so far")
				assert.Len(t, traj, min(c.sent, 3))
				assert.Equal(t, "Search.", traj[0].Thought)
				assert.Equal(t, "result for gophers", traj[1].Observation)
				assert.NotContains(t, res.Outputs[0], "answer", "no outputs")
				assert.Equal(t, c.sent, len(srv.srv.Requests()), "no request after the refused one")
				assert.Equal(t, c.sent, res.Requests)
				assert.Equal(t, srv.billed(), res.Usage.TotalTokens)
				assert.LessOrEqual(t, int64(srv.billed()), limit)
			})
		}
	}
}

// TestReActV2Budget: a ReActV2 (or Agent) run whose budget refuses the
// request of step 3, or the forced submit, ends there without asking for
// submit: the Result holds the calls so far, the history of the steps
// that ran and the termination reason TerminatedByBudget, with an error
// matching ErrBudget (not ErrNoSubmit). Call and Stream alike.
func TestReActV2Budget(t *testing.T) {
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{
			nativeStep("Look.", fcall("a", "search", `{"query": "go"}`)),
			nativeStep("Again.", fcall("b", "search", `{"query": "gophers"}`)),
			nativeStep("", fcall("c", "submit", `{"answer": "Go"}`)),
		}
	}
	in := adapter.Values{"question": "q"}
	for _, c := range []struct {
		name    string
		agent   *predict.ReActV2
		message string
	}{
		{"step 3 refused", weatherAgent(t, nil), "predict: ReActV2: stopped by its budget at step 3: "},
		{"the forced submit refused", weatherAgent(t, nil, predict.WithMaxIters(2)), "predict: ReActV2: stopped by its budget at the forced submit: "},
	} {
		dry := billingServer(t, replies()...)
		res, err := c.agent.Call(t.Context(), toolsLM(dry.srv), in, maxTokens50)
		require.NoError(t, err)
		require.Equal(t, "Go", res.Outputs[0]["answer"])
		require.Equal(t, 3, dry.sent())
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				limit := dry.limitAt(t, 2)
				srv := billingServer(t, replies()...)
				b := newBudget(t, limit)
				opts := []adapter.CallOption{maxTokens50, adapter.WithBudget(b)}
				res, err := runOf(t, stream,
					func() (*adapter.Result, error) { return c.agent.Call(t.Context(), toolsLM(srv.srv), in, opts...) },
					c.agent.Stream(t.Context(), toolsLM(srv.srv), in, opts...))
				require.ErrorIs(t, err, adapter.ErrBudget)
				assert.NotErrorIs(t, err, predict.ErrNoSubmit)
				assert.Contains(t, err.Error(), c.message)
				require.NotNil(t, res)
				assert.Equal(t, predict.TerminatedByBudget, predict.TerminationOf(res))
				calls := v2Calls(t, res)
				require.Len(t, calls, 2, "the calls of the steps that ran")
				assert.Equal(t, "result for gophers", calls[1].Value)
				assert.NotContains(t, res.Outputs[0], "answer", "no outputs")
				assert.Equal(t, 2, len(srv.srv.Requests()), "no request after the refused one")
				assert.Equal(t, 2, res.Requests)
				assert.Equal(t, srv.billed(), res.Usage.TotalTokens)
				assert.LessOrEqual(t, int64(srv.billed()), limit)
			})
		}
	}
}

// TestAgentBudget: an Agent stopped by its budget returns the zero Out
// with the Result so far and the error, as its ReActV2 does.
func TestAgentBudget(t *testing.T) {
	agent, err := predict.NewAgent[cityQuestion, cityAnswer]([]types.Tool{populationTool(t)}, nativeChat)
	require.NoError(t, err)
	replies := func() []lmtest.Reply {
		return []lmtest.Reply{
			nativeStep("Look it up.", fcall("a", "population", `{"city": "Paris"}`)),
			nativeStep("Once more.", fcall("b", "population", `{"city": "Paris"}`)),
			nativeStep("", fcall("c", "submit", `{"city": "Paris", "population": 2148000}`)),
		}
	}
	in := cityQuestion{"How many live in Paris?"}
	dry := billingServer(t, replies()...)
	_, _, err = agent.Call(t.Context(), toolsLM(dry.srv), in, maxTokens50)
	require.NoError(t, err)
	srv := billingServer(t, replies()...)
	out, res, err := agent.Call(t.Context(), toolsLM(srv.srv), in, maxTokens50, adapter.WithBudget(newBudget(t, dry.limitAt(t, 2))))
	require.ErrorIs(t, err, adapter.ErrBudget)
	assert.Zero(t, out)
	require.NotNil(t, res)
	assert.Equal(t, predict.TerminatedByBudget, predict.TerminationOf(res))
	assert.Len(t, predict.HistoryOf(res).Messages, 2)
	assert.Equal(t, 2, len(srv.srv.Requests()))
}
