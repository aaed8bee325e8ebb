package adapter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
)

// TestModuleRunCost: a module run without trace hooks (every typed
// predict.Predict call) costs nothing: the call's options are not copied
// to look for a trace, no clock is read nor closure made for hooks that
// are not there (issue 32: a typed call's third-largest allocation was
// CallTrace's), and a run no trace hears of puts no id on its context
// (issue 48).
func TestModuleRunCost(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	ctx := context.Background()
	opts := []adapter.CallOption{adapter.NoRetry(), adapter.UseAdapter(adapter.Chat{})}
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = adapter.CallTrace(ctx, opts...) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, done := adapter.StartModule(ctx, "Predict", nil, opts...)
		done(nil, nil)
	}))
	// With a trace: the context value.
	traced := append(opts, adapter.UseTrace(&adapter.Trace{ModuleStart: func(adapter.ModuleStartInfo) {}}))
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() {
		_, done := adapter.StartModule(ctx, "Predict", nil, traced...)
		done(nil, nil)
	}), 1.0)
}

// TestModuleRunTraced: with hooks, a module run reports its start and
// its end, with its ID and duration, and the calls it makes name it as
// their parent.
func TestModuleRunTraced(t *testing.T) {
	var starts []adapter.ModuleStartInfo
	var dones []adapter.ModuleDoneInfo
	tr := &adapter.Trace{
		ModuleStart: func(i adapter.ModuleStartInfo) { starts = append(starts, i) },
		ModuleDone:  func(i adapter.ModuleDoneInfo) { dones = append(dones, i) },
	}
	for _, c := range []struct {
		ctx  context.Context
		opts []adapter.CallOption
	}{
		{adapter.WithTrace(context.Background(), tr), []adapter.CallOption{adapter.NoRetry()}},
		{context.Background(), []adapter.CallOption{adapter.NoRetry(), adapter.UseTrace(tr)}},
	} {
		starts, dones = nil, nil
		ctx, done := adapter.StartModule(c.ctx, "Predict", adapter.Values{"q": "x"}, c.opts...)
		inner, innerDone := adapter.StartModule(ctx, "ReAct", nil, c.opts...)
		_ = inner
		innerDone(nil, nil)
		done(nil, nil)
		if assert.Len(t, starts, 2) && assert.Len(t, dones, 2) {
			assert.Equal(t, starts[0].ID, starts[1].ParentID)
			assert.Equal(t, starts[1].ID, dones[0].ID)
			assert.Equal(t, starts[0].ID, dones[1].ID)
			assert.Equal(t, "Predict", dones[1].Module)
		}
	}
}
