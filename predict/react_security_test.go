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
