package pyjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type inner struct {
	X float64 `json:"x"`
}

type sample struct {
	Name   string   `json:"name"`
	Tags   []string `json:"tags"`
	Score  *float64 `json:"score,omitempty"`
	Inner  inner    `json:"inner"`
	hidden int
	Skip   int `json:"-"`
}

func TestFloat(t *testing.T) {
	for f, want := range map[float64]string{
		3: "3.0", 0.5: "0.5", 1e-5: "1e-05", 1e16: "1e+16", 1e15: "1000000000000000.0",
		-2.5: "-2.5", 0.0001: "0.0001", 123456789.123: "123456789.123", 1.5e300: "1.5e+300",
	} {
		assert.Equal(t, want, Float(f), "%v", f)
	}
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `"a\"b\\c\nü\u0001 `+"\u2028\"", Quote("a\"b\\c\nü\x01 \u2028"))
	assert.Equal(t, "\"\ufffd\"", Quote("\xff"))
}

func TestMarshal(t *testing.T) {
	b, err := Marshal(map[string]any{"b": []any{1, 2.0, "ü"}, "a": nil, "c": true})
	require.NoError(t, err)
	assert.Equal(t, `{"a": null, "b": [1, 2.0, "ü"], "c": true}`, string(b))

	b, err = Marshal(sample{Name: "n", Inner: inner{X: 1}, hidden: 3})
	require.NoError(t, err)
	assert.Equal(t, `{"name": "n", "tags": null, "inner": {"x": 1.0}}`, string(b))

	b, err = Marshal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC))
	require.NoError(t, err)
	assert.Equal(t, `"2024-01-02T03:04:05Z"`, string(b))
}

func TestMarshalIndent(t *testing.T) {
	b, err := MarshalIndent(map[string]any{"a": []int{1, 2}, "b": map[string]int{}, "c": []int{}}, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {},\n  \"c\": []\n}", string(b))
	b, err = MarshalIndent([]string{"x"}, "  ", "  ")
	require.NoError(t, err)
	assert.Equal(t, "[\n    \"x\"\n  ]", string(b))
}

func TestStr(t *testing.T) {
	assert.Equal(t, "None", Str(nil))
	assert.Equal(t, "True", Str(true))
	assert.Equal(t, "3.0", Str(3.0))
	assert.Equal(t, "x", Str("x"))
	assert.Equal(t, `['a', "it's", 1, None]`, Str([]any{"a", "it's", 1, nil}))
	assert.Equal(t, `{'k': 1.5}`, Str(map[string]float64{"k": 1.5}))
	assert.Equal(t, `'a\nb'`, Repr("a\nb"))
}

func TestCycle(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	_, err := Marshal(m)
	assert.ErrorIs(t, err, ErrTooDeep)
}

func TestWriteQuoteMatchesQuote(t *testing.T) {
	for _, s := range []string{"", "plain", `a "q" \ b`, "line\nbreak\r\t\b\f", "\x01\x1f", "é ✓ \xff end", "«»"} {
		var b strings.Builder
		WriteQuote(&b, s)
		if b.String() != Quote(s) {
			t.Errorf("%q: WriteQuote %q, Quote %q", s, b.String(), Quote(s))
		}
	}
}

// TestMarshalASCII: Python's json.dumps with ensure_ascii=True: each
// non-ASCII character a \uXXXX escape, beyond U+FFFF a surrogate pair;
// ASCII text as Marshal writes it.
func TestMarshalASCII(t *testing.T) {
	for v, want := range map[string]string{
		"Zürich":   `"Z\u00fcrich"`,
		"neige ❄":  `"neige \u2744"`,
		"𝄞 clef":   `"\ud834\udd1e clef"`,
		"plain\n":  `"plain\n"`,
		"tab\tend": `"tab\tend"`,
	} {
		b, err := MarshalASCII(map[string]any{"k": v})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); got != `{"k": `+want+`}` {
			t.Errorf("%q: got %s, want %s", v, got, want)
		}
	}
}

// FuzzMarshalASCII: whatever the text, MarshalASCII writes only ASCII
// that decodes back to the same value as Marshal's output (the escapes
// change the spelling, never the value).
func FuzzMarshalASCII(f *testing.F) {
	for _, s := range []string{"Zürich", "𝄞", "\u2028", "a\"b\\c", "\x00\x7f", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := map[string]any{s: []any{s, 1.5}}
		a, err := MarshalASCII(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range a {
			if c >= 0x80 {
				t.Fatalf("%q: non-ASCII byte in %q", s, a)
			}
		}
		m, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var x, y any
		if err := json.Unmarshal(a, &x); err != nil {
			t.Fatalf("%q: %q is not JSON: %v", s, a, err)
		}
		if err := json.Unmarshal(m, &y); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !reflect.DeepEqual(x, y) {
			t.Fatalf("%q: %v != %v", s, x, y)
		}
	})
}
