package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	adapter "github.com/sigwire/adapter"
)

type decodeCostOut struct {
	Reasoning string `json:"reasoning"`
	Answer    string `json:"answer" desc:"a short answer"`
	Score     int
	skipped   int    //nolint:unused // unexported: not a field
	Ignored   string `json:"-"`
}

// TestDecodeFieldsKeptPerType: ValuesOf and Decode, which a typed
// predict.Predict runs on every call, read a struct type's fields once
// (issue 32: its tags were parsed again on every call, an eighth of a
// typed call's CPU); a call costs the map and the boxed values alone.
func TestDecodeFieldsKeptPerType(t *testing.T) {
	v := decodeCostOut{Reasoning: "r", Answer: "a", Score: 3}
	vals, err := adapter.ValuesOf(v)
	assert.NoError(t, err)
	assert.Equal(t, adapter.Values{"reasoning": "r", "answer": "a", "score": 3}, vals)
	back, err := adapter.Decode[decodeCostOut](vals)
	assert.NoError(t, err)
	assert.Equal(t, decodeCostOut{Reasoning: "r", Answer: "a", Score: 3}, back)
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = adapter.ValuesOf(v) }), 4.0, "the map and three boxed values")
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = adapter.Decode[decodeCostOut](vals) }), 1.0, "the struct, which reflect moves to the heap")
}
