package adapter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sigwire/adapter"
)

// TestContextLayers: what WithAdapter, WithTrace and StartModule put on a
// context is seen by the contexts derived from it and by no other: a
// layer that changes one part leaves its parent, its siblings and the
// other parts as they were.
func TestContextLayers(t *testing.T) {
	var seen []string
	trace := func(name string) *adapter.Trace {
		return &adapter.Trace{ModuleStart: func(adapter.ModuleStartInfo) { seen = append(seen, name) }}
	}
	parent := adapter.WithTrace(adapter.WithAdapter(context.Background(), adapter.JSON{}), trace("parent"))
	xml := adapter.WithAdapter(parent, adapter.XML{})
	traced := adapter.WithTrace(parent, trace("child"))
	cleared := adapter.WithAdapter(traced, nil)
	module, done := adapter.StartModule(traced, "Predict", nil)
	done(nil, nil)

	for name, c := range map[string]struct {
		ctx  context.Context
		want adapter.Adapter
	}{"parent": {parent, adapter.JSON{}}, "xml": {xml, adapter.XML{}}, "traced": {traced, adapter.JSON{}}, "module": {module, adapter.JSON{}}} {
		got, ok := adapter.AdapterFrom(c.ctx)
		assert.True(t, ok, name)
		assert.Equal(t, c.want, got, name)
	}
	_, ok := adapter.AdapterFrom(cleared)
	assert.False(t, ok, "WithAdapter(ctx, nil) hides the adapter beneath")

	seen = nil
	adapter.StartModule(xml, "Predict", nil)
	assert.Equal(t, []string{"parent"}, seen, "a sibling's trace is not the parent's")
	seen = nil
	adapter.StartModule(cleared, "Predict", nil)
	assert.Equal(t, []string{"parent", "child"}, seen, "traces compose; clearing the adapter keeps them")

	var parents []uint64
	tr := &adapter.Trace{ModuleStart: func(i adapter.ModuleStartInfo) { parents = append(parents, i.ParentID, i.ID) }}
	outer, _ := adapter.StartModule(context.Background(), "ReAct", nil, adapter.UseTrace(tr))
	adapter.StartModule(outer, "Predict", nil, adapter.UseTrace(tr))
	adapter.StartModule(adapter.WithAdapter(outer, adapter.XML{}), "Predict", nil, adapter.UseTrace(tr))
	adapter.StartModule(context.Background(), "Predict", nil, adapter.UseTrace(tr))
	assert.Equal(t, uint64(0), parents[0])
	assert.Equal(t, parents[1], parents[2], "a run inside a module names it as its parent")
	assert.Equal(t, parents[1], parents[4], "through other layers too")
	assert.Equal(t, uint64(0), parents[6], "and no other context does")
}
