package predict_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
)

// unreadable is a reply no Chat signature can read: re-asked under
// adapter.WithReask.
func unreadable() lmtest.Reply { return lmtest.Text("I am not sure.").WithUsage(7, 3) }

// TestModuleResultCounters: a module's Result counts what every call of
// its run did — re-asks (with the latest cause), usage by model, calls —
// whichever call did it: a ReAct step, a ReAct extract call, a BestOfN or
// Refine attempt.
func TestModuleResultCounters(t *testing.T) {
	opts := []adapter.CallOption{adapter.WithRequest(openai.ChatCompletionRequest{Model: "m"}), adapter.NoFallback(), adapter.WithReask(1)}
	in := adapter.Values{"question": "q"}
	check := func(t *testing.T, res *adapter.Result, calls, reasks int, usage openai.Usage) {
		t.Helper()
		require.NotNil(t, res)
		assert.Equal(t, calls, res.Calls)
		assert.Equal(t, reasks, res.Reasks, "every re-ask of the run")
		assert.Error(t, res.ReaskCause, "why the latest re-ask ran")
		assert.Equal(t, usage, res.Usage)
		assert.Equal(t, map[string]openai.Usage{"m": usage}, res.UsageByModel)
	}
	sig, err := signature.Parse("question -> answer: int")
	require.NoError(t, err)
	intModule := predict.NewModule(sig)
	is42 := func(_ context.Context, _ adapter.Values, out adapter.Values) (float64, error) {
		if out["answer"] == 42 {
			return 1, nil
		}
		return 0, nil
	}
	t.Run("ReAct", func(t *testing.T) {
		srv := lmtest.NewServer(
			unreadable(), step("Done.", "finish", "{}").WithUsage(10, 5),
			unreadable(), answer("Go").WithUsage(10, 5))
		defer srv.Close()
		res, err := searchAgent(t).Call(context.Background(), srv.Client(), in, opts...)
		require.NoError(t, err)
		check(t, res, 4, 2, openai.Usage{PromptTokens: 34, CompletionTokens: 16, TotalTokens: 50})
	})
	for _, kind := range []string{"BestOfN", "Refine"} {
		t.Run(kind, func(t *testing.T) {
			// Attempt 1 is re-asked and loses; attempt 2 wins without a re-ask
			// (Refine asks for advice between them).
			replies := []lmtest.Reply{answerReply("several").WithUsage(7, 3), answerReply("7").WithUsage(10, 5)}
			calls := 3
			if kind == "Refine" {
				replies = append(replies, feedbackReply("Wrong.", `{"self": "Say 42."}`).WithUsage(0, 0))
				calls++
			}
			srv := lmtest.NewServer(append(replies, answerReply("42").WithUsage(10, 5))...)
			defer srv.Close()
			var (
				best interface {
					Call(context.Context, adapter.LM, adapter.Values, ...adapter.CallOption) (adapter.Values, *adapter.Result, error)
				}
				err error
			)
			if kind == "BestOfN" {
				best, err = predict.NewBestOfN(intModule, 2, is42, 1)
			} else {
				best, err = predict.NewRefine(intModule, 2, is42, 1)
			}
			require.NoError(t, err)
			out, res, err := best.Call(context.Background(), srv.Client(), in, opts...)
			require.NoError(t, err)
			assert.Equal(t, 42, out["answer"])
			check(t, res, calls, 1, openai.Usage{PromptTokens: 27, CompletionTokens: 13, TotalTokens: 40})
		})
	}
}
