package predict_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/types"
)

// spans records the trace's start and end events as lines, checking that
// each end closes the matching start.
type spans struct {
	t      *testing.T
	events []string
	names  map[uint64]string // module and call ids → short names
}

func (s *spans) name(id uint64) string {
	if id == 0 {
		return "-"
	}
	if n, ok := s.names[id]; ok {
		return n
	}
	n := fmt.Sprintf("#%d", len(s.names)+1)
	s.names[id] = n
	return n
}

func (s *spans) trace() *adapter.Trace {
	s.names = map[uint64]string{}
	add := func(format string, args ...any) { s.events = append(s.events, fmt.Sprintf(format, args...)) }
	return &adapter.Trace{
		ModuleStart: func(i adapter.ModuleStartInfo) {
			assert.NotNil(s.t, i.Context)
			add("module start %s %s parent=%s", s.name(i.ID), i.Module, s.name(i.ParentID))
		},
		ModuleDone: func(i adapter.ModuleDoneInfo) {
			add("module done %s %s err=%v", s.name(i.ID), i.Module, i.Err != nil)
		},
		CallStart: func(i adapter.CallStartInfo) {
			add("call start %s parent=%s %s", s.name(i.CallID), s.name(i.ParentID), i.Adapter)
		},
		CallDone: func(i adapter.CallDoneInfo) { add("call done %s err=%v", s.name(i.CallID), i.Err != nil) },
		FormatStart: func(i adapter.FormatStartInfo) {
			add("format start %s %s#%d cause=%v", s.name(i.CallID), i.Adapter, i.Attempt, i.FallbackCause != nil)
		},
		FormatDone:  func(i adapter.FormatInfo) { add("format done %s", s.name(i.CallID)) },
		LMCallStart: func(i adapter.LMCallStartInfo) { add("lm start %s", s.name(i.CallID)) },
		LMCallDone:  func(i adapter.LMCallDoneInfo) { add("lm done %s", s.name(i.CallID)) },
		ParseStart:  func(i adapter.ParseStartInfo) { add("parse start %s", s.name(i.CallID)) },
		ParseDone:   func(i adapter.ParseInfo) { add("parse done %s err=%v", s.name(i.CallID), i.Err != nil) },
		ToolStart:   func(i adapter.ToolStartInfo) { add("tool start %s %s", s.name(i.CallID), i.Tool) },
		ToolDone:    func(i adapter.ToolDoneInfo) { add("tool done %s %s", s.name(i.CallID), i.Tool) },
	}
}

// TestHooksOpenAndCloseEverySpan: every module run, call, format, LM call,
// parse and tool run has a start and an end event, linked by ids (a call
// names its module run, a module run its parent), enough to build spans;
// the fallback's format start says why it runs.
func TestHooksOpenAndCloseEverySpan(t *testing.T) {
	srv := lmtest.NewServer(lmtest.Text("no markers, no JSON"), lmtest.Text(`{"reasoning": "r", "total": 5}`))
	defer srv.Close()
	cot, err := predict.NewChainOfThought[Sum, Total]()
	require.NoError(t, err)
	s := &spans{t: t}
	_, _, _, err = cot.Call(t.Context(), srv.Client(), Sum{2, 3}, adapter.UseTrace(s.trace()))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"module start #1 ChainOfThought parent=-",
		"call start #2 parent=#1 chat",
		"format start #2 chat#1 cause=false", "format done #2",
		"lm start #2", "lm done #2",
		"parse start #2", "parse done #2 err=true",
		"format start #2 json#2 cause=true", "format done #2",
		"lm start #2", "lm done #2",
		"parse start #2", "parse done #2 err=false",
		"call done #2 err=false",
		"module done #1 ChainOfThought err=false",
	}, s.events)

	srv2 := lmtest.NewServer(step("look", "search", `{"query": "x"}`), step("done", "finish", `{}`), answer("42"))
	defer srv2.Close()
	s = &spans{t: t}
	_, err = searchAgent(t).Call(t.Context(), srv2.Client(), adapter.Values{"question": "q"}, adapter.UseTrace(s.trace()))
	require.NoError(t, err)
	want := []string{
		"module start #1 ReAct parent=-",
		"module start #2 Predict parent=#1", "call start #3 parent=#2 chat",
		"format start #3 chat#1 cause=false", "format done #3", "lm start #3", "lm done #3", "parse start #3", "parse done #3 err=false",
		"call done #3 err=false", "module done #2 Predict err=false",
		"tool start #3 search", "tool done #3 search",
		"module start #4 Predict parent=#1", "call start #5 parent=#4 chat",
		"format start #5 chat#1 cause=false", "format done #5", "lm start #5", "lm done #5", "parse start #5", "parse done #5 err=false",
		"call done #5 err=false", "module done #4 Predict err=false",
		"tool start #5 finish", "tool done #5 finish",
		"module start #6 ChainOfThought parent=#1", "call start #7 parent=#6 chat",
		"format start #7 chat#1 cause=false", "format done #7", "lm start #7", "lm done #7", "parse start #7", "parse done #7 err=false",
		"call done #7 err=false", "module done #6 ChainOfThought err=false",
		"module done #1 ReAct err=false",
	}
	assert.Equal(t, want, s.events)
}

// TestTraceBeneathAnUntracedRun: a module run that no trace hears of
// leaves its context as it is, so a trace set beneath it (in a tool, with
// adapter.WithTrace) sees the runs it starts as roots (parent "-"), never
// as children of a run it was not told of; with a trace above, the same
// runs name the tool's run as their parent.
func TestTraceBeneathAnUntracedRun(t *testing.T) {
	for _, outer := range []bool{false, true} {
		inner := &spans{t: t}
		tool, err := types.NewTool("ask", "Ask a sub-module.", func(ctx context.Context, a queryArgs) (string, error) {
			srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nsub"))
			defer srv.Close()
			sub := predict.NewModule(mustSig(t, "question -> answer"))
			res, err := sub.Call(adapter.WithTrace(ctx, inner.trace()), srv.Client(), adapter.Values{"question": a.Query})
			if err != nil {
				return "", err
			}
			return res.Outputs[0]["answer"].(string), nil
		})
		require.NoError(t, err)
		agent, err := predict.NewReAct(mustSig(t, "question -> answer"), []types.Tool{tool})
		require.NoError(t, err)
		srv := lmtest.NewServer(step("Ask.", "ask", `{"query": "x"}`), step("Done.", "finish", "{}"), answer("42"))
		defer srv.Close()
		var opts []adapter.CallOption
		top := &spans{t: t}
		if outer {
			opts = append(opts, adapter.UseTrace(top.trace()))
		}
		_, err = agent.Call(t.Context(), srv.Client(), adapter.Values{"question": "q"}, opts...)
		require.NoError(t, err)
		require.NotEmpty(t, inner.events)
		if !outer {
			assert.Equal(t, "module start #1 Predict parent=-", inner.events[0])
			assert.Equal(t, "call start #2 parent=#1 chat", inner.events[1])
			continue
		}
		// The inner trace does not know the ReAct run or its step; the
		// outer one hears of the sub-module's run too, under the tool's
		// step, as its own.
		assert.Equal(t, "module start #1 Predict parent=#2", inner.events[0])
		assert.Contains(t, top.events, "module start #1 ReAct parent=-")
	}
}
