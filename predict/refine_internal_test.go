package predict

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/types"
)

// orjson's float text (the ryu crate's format, which orjson used for
// floats): positional from 1e-5 to 1e16, an exponent otherwise, without
// "+" or zero padding; NaN and infinities as null.
func TestOrjsonFloat(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1.0", 0: "0.0", math.Copysign(0, -1): "-0.0", 0.5: "0.5", -2.25: "-2.25",
		0.1: "0.1", 123456.789: "123456.789", 1e15: "1000000000000000.0",
		1e16: "1e16", 1.5e16: "1.5e16", 1e300: "1e300",
		0.0001: "0.0001", 0.00001: "0.00001", 0.000009: "9e-6", 1e-7: "1e-7", 1.25e-10: "1.25e-10",
		math.NaN(): "null", math.Inf(1): "null", math.Inf(-1): "null",
	} {
		assert.Equal(t, want, orjsonFloat(f), "%v", f)
	}
}

// TestOrjsonFloatProperties: over random floats, the text reads back as
// the same float, never has "+", and is positional exactly in orjson's
// range.
func TestOrjsonFloatProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for range 20000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := orjsonFloat(f)
		back, err := strconv.ParseFloat(s, 64)
		require.NoError(t, err, s)
		require.Equal(t, f, back, s)
		require.NotContains(t, s, "+")
		abs := math.Abs(f)
		require.Equal(t, abs == 0 || abs >= 1e-5 && abs < 1e16, !strings.Contains(s, "e"), s)
	}
}

func TestOrjsonDump(t *testing.T) {
	var o pyjson.Object
	o.Set("b", 1.0)
	o.Set("a", []any{1, 2.5e-7, math.NaN(), "x\ny", "東京"})
	o.Set("img", types.Image{URL: "https://example.com/cat.png"})
	o.Set("empty", map[string]any{})
	o.Set("tools", []types.Tool{{Name: "search"}})
	o.Set("args", ToolArgs(`{"q": "go", "n": 1.0}`))
	s, err := orjsonDump(o)
	require.NoError(t, err)
	assert.Equal(t, `{
  "b": 1.0,
  "a": [
    1,
    2.5e-7,
    null,
    "x\ny",
    "東京"
  ],
  "img": "<non-serializable: Image>",
  "empty": {},
  "tools": [
    "<non-serializable: Tool>"
  ],
  "args": {
    "q": "go",
    "n": 1.0
  }
}`, s)
	s, err = orjsonDump([]string{"self"})
	require.NoError(t, err)
	assert.Equal(t, "[\n  \"self\"\n]", s)
}

func TestSplitLines(t *testing.T) {
	assert.Nil(t, splitLines(""))
	assert.Equal(t, []string{"a"}, splitLines("a\n"))
	assert.Equal(t, []string{"a", "", "b", "c"}, splitLines("a\n\nb\r\nc"))
	assert.Equal(t, []string{"a", "b"}, splitLines("a\rb"))
}

func TestOrdered(t *testing.T) {
	o := ordered(adapter.Values{"z": 1, "b": 2, "a": 3, "c": 4}, []string{"c", "a"})
	assert.Equal(t, []string{"c", "a", "b", "z"}, o.Keys())
}
