package predict_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// shopArgs are a shop search's arguments, handed to the tool as they came.
type shopArgs struct{ raw string }

func (a *shopArgs) UnmarshalJSON(b []byte) error { a.raw = string(b); return nil }

// TestReActV2ReplaysArgsInModelOrder: the next request replays the
// model's own tool call with its arguments in the model's key order, byte
// for byte as json.dumps writes the model's dict (nested objects
// included), as DSPy replays it; the history, the trace and the tool keep
// that order too. Regression (issue 30 item 12): the replay sorted the
// keys.
func TestReActV2ReplaysArgsInModelOrder(t *testing.T) {
	const args = `{"query": "shoes", "min_price": 50, "max_price": 150, "filter": {"size": 42, "color": "red"}}`
	const compact = `{"query":"shoes","min_price":50,"max_price":150,"filter":{"size":42,"color":"red"}}`
	for _, wire := range []string{args, compact} {
		srv := lmtest.NewServer(
			nativeStep("Search.", fcall("call_a", "shop", wire)),
			nativeStep("", fcall("call_b", "submit", `{"answer": "Found."}`)))
		var got string
		shop, err := types.NewTool("shop", "Search the shop.", func(_ context.Context, a shopArgs) (string, error) {
			got = a.raw
			return "3 hits", nil
		})
		require.NoError(t, err)
		sig, err := signature.Parse("question -> answer")
		require.NoError(t, err)
		r, err := predict.NewReActV2(sig, []types.Tool{shop}, nativeChat)
		require.NoError(t, err)
		var started []string
		tr := &adapter.Trace{ToolStart: func(i adapter.ToolStartInfo) { started = append(started, string(i.Args)) }}
		res, err := r.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "Shoes?"}, adapter.UseTrace(tr))
		srv.Close()
		require.NoError(t, err)

		calls := v2Calls(t, res)
		assert.Equal(t, compact, calls[0].Args)
		assert.Equal(t, compact, got, "the tool's arguments")
		assert.Equal(t, []string{compact, `{"answer":"Found."}`}, started, "the trace")

		second := srv.Requests()[1].Chat.Messages
		require.Len(t, second, 5)
		require.Len(t, second[2].ToolCalls, 1)
		assert.Equal(t, args, second[2].ToolCalls[0].Function.Arguments, "the replayed call, in the model's order")
	}
}
