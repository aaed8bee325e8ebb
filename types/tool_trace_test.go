package types_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/types"
)

// TestExecuteFiresToolHooks: every call Execute handles is traced, with its
// arguments at the start and its result or error at the end.
func TestExecuteFiresToolHooks(t *testing.T) {
	tool, err := types.NewTool("weather", "Current weather.", func(_ context.Context, a weatherArgs) (string, error) {
		return "sunny in " + a.City, nil
	})
	require.NoError(t, err)
	var events []string
	ctx := adapter.WithTrace(context.Background(), &adapter.Trace{
		ToolStart: func(i adapter.ToolStartInfo) {
			events = append(events, "start "+i.Tool+" "+i.ToolCallID+" "+string(i.Args))
		},
		ToolDone: func(i adapter.ToolDoneInfo) {
			msg := "done " + i.Tool + " " + i.ToolCallID
			if i.Err != nil {
				msg += " error: " + i.Err.Error()
			} else {
				msg += " result: " + i.Result.(string)
			}
			events = append(events, msg)
		},
	})
	calls := types.ToolCalls{Calls: []types.ToolCall{{ID: "1", Name: "weather", Args: map[string]any{"city": "Rome"}}, {ID: "2", Name: "nope"}}}
	res := calls.Execute(ctx, []types.Tool{tool})
	require.Len(t, res.Results, 2)
	assert.Equal(t, []string{
		`start weather 1 {"city":"Rome"}`, "done weather 1 result: sunny in Rome",
		"start nope 2 {}", `done nope 2 error: no tool named "nope"`,
	}, events)
}
