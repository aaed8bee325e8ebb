package jsonx

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestDecodePython: Python's json constants where a number may stand,
// nowhere else; a text that already holds a stand-in is refused.
func TestDecodePython(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
		ok   bool
	}{
		{`[NaN, Infinity, -Infinity, 1]`, []any{json.Number("NaN"), json.Number("+Inf"), json.Number("-Inf"), json.Number("1")}, true},
		{`{"NaN": "Infinity", "x": NaN}`, map[string]any{"NaN": "Infinity", "x": json.Number("NaN")}, true},
		{`{"a \"NaN\"": [[-Infinity]]}`, map[string]any{`a "NaN"`: []any{[]any{json.Number("-Inf")}}}, true},
		{`NaN`, json.Number("NaN"), true},
		{`[1e+9999999991, NaN]`, nil, false},
		{`[NaNa]`, nil, false},
		{`[xNaN]`, nil, false},
		{`[Infinityy]`, nil, false},
		{`[nan, inf]`, nil, false},
		{`[1, 2]`, []any{json.Number("1"), json.Number("2")}, true},
	} {
		got, err := DecodePython(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v", tc.in, err)
			continue
		}
		if tc.ok && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v", tc.in, got)
		}
	}
}

// FuzzDecodePython: never a panic; whatever Decode reads, DecodePython
// reads the same; a constant it reads stands where a number may.
func FuzzDecodePython(f *testing.F) {
	for _, s := range []string{`[NaN, Infinity, -Infinity]`, `{"NaN": NaN}`, `"Infinity"`, `[1e+9999999991, NaN]`, `[-NaN]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := DecodePython(s)
		want, werr := Decode(s)
		if werr == nil && (err != nil || !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: Decode %#v, DecodePython %#v %v", s, want, got, err)
		}
	})
}
