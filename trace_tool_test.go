package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

func TestTraceCallID(t *testing.T) {
	sig := mustParse(t, "question -> answer: int")
	srv := lmtest.NewServer(lmtest.Text("no markers"), lmtest.Text(`{"answer": 1}`), lmtest.Text("[[ ## answer ## ]]\n2"))
	defer srv.Close()
	var ids []uint64
	tr := &adapter.Trace{
		FormatDone:  func(i adapter.FormatInfo) { ids = append(ids, i.CallID) },
		LMCallStart: func(i adapter.LMCallStartInfo) { ids = append(ids, i.CallID) },
		LMCallDone:  func(i adapter.LMCallDoneInfo) { ids = append(ids, i.CallID) },
		ParseDone:   func(i adapter.ParseInfo) { ids = append(ids, i.CallID) },
	}
	_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseTrace(tr))
	require.NoError(t, err)
	require.Len(t, ids, 8, "format, start, done, parse for chat, then for its json fallback")
	for _, id := range ids {
		assert.Equal(t, ids[0], id, "one id for every event of the call, the fallback's included")
	}
	first := ids[0]
	ids = nil
	for range adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseTrace(tr)) {
	}
	require.NotEmpty(t, ids)
	assert.NotEqual(t, first, ids[0], "another call, another id")
	assert.NotZero(t, ids[0])
}

func TestRunToolReportsToCallTrace(t *testing.T) {
	var events []string
	hooks := func(name string) *adapter.Trace {
		return &adapter.Trace{
			ToolStart: func(i adapter.ToolStartInfo) { events = append(events, name+" start "+i.Tool+" "+string(i.Args)) },
			ToolDone: func(i adapter.ToolDoneInfo) {
				events = append(events, name+" done "+i.Tool+" "+i.ToolCallID)
				if i.Err != nil {
					events = append(events, name+" error "+i.Err.Error())
				}
			},
		}
	}
	ctx := adapter.WithTrace(context.Background(), hooks("ctx"))
	tr := adapter.CallTrace(ctx, adapter.UseTrace(hooks("opt")), adapter.NoFallback())
	res, err := tr.RunTool(ctx, adapter.ToolStartInfo{Tool: "add", ToolCallID: "c1", Args: json.RawMessage(`{"a":1}`)},
		func(context.Context) (any, error) { return 2, nil })
	require.NoError(t, err)
	assert.Equal(t, 2, res)
	_, err = tr.RunTool(ctx, adapter.ToolStartInfo{Tool: "div"}, func(context.Context) (any, error) { return nil, errors.New("division by zero") })
	assert.EqualError(t, err, "division by zero")
	assert.Equal(t, []string{
		`ctx start add {"a":1}`, `opt start add {"a":1}`, "ctx done add c1", "opt done add c1",
		"ctx start div ", "opt start div ", "ctx done div ", "ctx error division by zero", "opt done div ", "opt error division by zero",
	}, events)

	var none *adapter.Trace
	assert.Nil(t, adapter.CallTrace(context.Background()))
	res, err = none.RunTool(ctx, adapter.ToolStartInfo{}, func(context.Context) (any, error) { return "ok", nil })
	assert.Equal(t, "ok", res, "a nil trace runs the tool and reports nothing")
	assert.NoError(t, err)
}
