package adapter_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = adapter.Decode[decodeCostOut](vals) }), "values of their fields' types exactly are stored directly")
	assert.LessOrEqual(t, testing.AllocsPerRun(100, func() { _, _ = adapter.Decode[decodeCostOut](adapter.Values{"score": int64(3)}) }), 2.0, "converted: the struct, which reflect moves to the heap, and the converted value")
}

// level is a type defined on string, which Decode's direct path leaves to
// reflection.
type level string

// decodeAll has a field of each kind Decode stores directly and of types
// it converts to or cannot.
type decodeAll struct {
	S   string
	I   int
	F   float64
	B   bool
	L   level
	I64 int64
	U8  uint8
	F32 float32
	P   *string
	Xs  []string
	A   any
}

// TestDecodeDirectAgreesWithReflect: over generated Values (each field
// missing, nil, of its type, of a type it converts from, or of one it
// cannot take; extra keys), Decode (whose values of string, int, float64
// and bool fields exactly are stored without reflection) gives what the
// reflection path gives: the same struct, or an error naming the same
// field.
func TestDecodeDirectAgreesWithReflect(t *testing.T) {
	str := "p"
	candidates := map[string][]any{
		"s":   {"x", "", level("l"), 3, nil},
		"i":   {7, -1, int64(8), int8(2), 2.5, "9", nil},
		"f":   {1.5, 3.0, float32(2), 4, "1.5", nil},
		"b":   {true, false, "true", 1, nil},
		"l":   {level("warn"), "info", 3, nil},
		"i64": {int64(5), 6, uint(2), "x", nil},
		"u8":  {uint8(1), 300, 2, nil},
		"f32": {float32(1), 2.5, nil},
		"p":   {&str, "p", nil},
		"xs":  {[]string{"a"}, []any{"a"}, "a", nil},
		"a":   {1, "x", []int{1}, nil},
	}
	keys := []string{"s", "i", "f", "b", "l", "i64", "u8", "f32", "p", "xs", "a"}
	rng := rand.New(rand.NewPCG(48, 1))
	for range 5000 {
		vals := adapter.Values{}
		for _, k := range keys {
			if rng.IntN(4) == 0 {
				continue // missing
			}
			c := candidates[k]
			vals[k] = c[rng.IntN(len(c))]
		}
		if rng.IntN(3) == 0 {
			vals["extra"] = rng.IntN(5)
		}
		got, err := adapter.Decode[decodeAll](vals)
		want, wantErr := adapter.DecodeReflect[decodeAll](vals)
		if wantErr != nil {
			require.Error(t, err, "%v", vals)
			assert.Equal(t, wantErr.Error(), err.Error(), "%v", vals)
			continue
		}
		require.NoError(t, err, "%v", vals)
		assert.Equal(t, want, got, "%v", vals)
	}
	// A struct of direct kinds only, values of their types: no reflection.
	type direct struct {
		Name  string
		N     int
		Score float64
		OK    bool
	}
	got, err := adapter.Decode[direct](adapter.Values{"name": "n", "n": 2, "score": 0.5, "ok": true, "other": 1})
	require.NoError(t, err)
	assert.Equal(t, direct{"n", 2, 0.5, true}, got)
	_, err = adapter.Decode[direct](adapter.Values{"name": "n", "n": "2"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `field "n"`)
}
