package adapter_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

type mood string

func (mood) EnumValues() []string { return []string{"positive", "negative"} }

type label string

func ptr[T any](v T) *T { return &v }

var inputSig = must(signature.Parse(
	"n: int, x: float, items: list[str], tags: dict[str, int], m: Mood, lit: Literal['a', 'b'], opt: Optional[int], flag: bool, q, u: Union[int, str], anything: Any -> answer",
	signature.WithTypes(map[string]reflect.Type{"Mood": reflect.TypeFor[mood]()})))

// validInputs is a full set of inputs of exactly the fields' types.
func validInputs() adapter.Values {
	return adapter.Values{"n": 1, "x": 1.5, "items": []string{"a"}, "tags": map[string]int{"a": 1}, "m": mood("positive"), "lit": "a",
		"opt": ptr(1), "flag": true, "q": "question", "u": 1, "anything": []any{1, "x"}}
}

// formatInputs formats in (over validInputs) with Chat and returns the
// values Call would send, read back from what Format accepted.
func withInput(name string, v any) adapter.Values {
	in := validInputs()
	in[name] = v
	return in
}

// TestInputsConverted: inputs are converted to their field's Go type where
// nothing is lost (DESIGN decision 2; issue 21 item 4).
func TestInputsConverted(t *testing.T) {
	for _, tt := range []struct {
		field string
		in    any
		want  any
	}{
		{"n", int64(3), 3},
		{"n", 3.0, 3},
		{"n", json.Number("3"), 3},
		{"n", uint8(3), 3},
		{"x", 2, 2.0},
		{"x", float32(0.5), 0.5},
		{"x", json.Number("2.5"), 2.5},
		{"items", []any{"a", "b"}, []string{"a", "b"}},
		{"items", [2]string{"a", "b"}, []string{"a", "b"}},
		{"items", []label{"a"}, []string{"a"}},
		{"items", []string(nil), []string{}}, // Go's empty slice: [], not None
		{"items", []any(nil), []string{}},
		{"tags", map[string]int(nil), map[string]int{}},
		{"tags", map[string]any{"a": 1.0, "b": int64(2)}, map[string]int{"a": 1, "b": 2}},
		{"m", "negative", mood("negative")},
		{"lit", label("b"), "b"},
		{"opt", 3, ptr(3)},
		{"opt", int64(4), ptr(4)},
		{"opt", nil, (*int)(nil)},
		{"q", label("why?"), "why?"},
		{"u", int64(42), 42},
		{"u", "x", "x"},
		{"anything", map[string]any{"k": []any{1}}, map[string]any{"k": []any{1}}},
	} {
		srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nok"))
		in := withInput(tt.field, tt.in)
		_, err := adapter.Call(context.Background(), srv.Client(), inputSig, nil, in)
		require.NoError(t, err, "%s = %#v", tt.field, tt.in)
		srv.Close()
		assert.Equal(t, tt.in, in[tt.field], "the caller's map is not changed")

		// What the prompt shows is what the converted value shows.
		want := withInput(tt.field, tt.want)
		got, err := adapter.Chat{}.Format(inputSig, nil, in)
		require.NoError(t, err)
		exp, err := adapter.Chat{}.Format(inputSig, nil, want)
		require.NoError(t, err)
		assert.Equal(t, exp, got, "%s = %#v", tt.field, tt.in)
	}
}

// TestInputsRefused: a value that does not fit its field is an *InputError
// naming the field, before any LM call (security review #13).
func TestInputsRefused(t *testing.T) {
	for _, tt := range []struct {
		field string
		in    any
		is    error
	}{
		{"q", 42, adapter.ErrInputType},
		{"q", map[string]string{"a": "b"}, adapter.ErrInputType},
		{"q", []int{1}, adapter.ErrInputType},
		{"q", nil, adapter.ErrInputType},
		{"q", make(chan int), adapter.ErrInputType},
		{"q", func() {}, adapter.ErrInputType},
		{"n", 2.5, adapter.ErrInputType},
		{"n", "42", adapter.ErrInputType},
		{"n", "DROP TABLE", adapter.ErrInputType},
		{"n", true, adapter.ErrInputType},
		{"n", 1e20, adapter.ErrInputType},
		{"n", uint64(1 << 63), adapter.ErrInputType},
		{"n", make(chan int), adapter.ErrInputType},
		{"x", "1.5", adapter.ErrInputType},
		{"x", int64(1<<53 + 1), adapter.ErrInputType},
		{"items", "a, b", adapter.ErrInputType},
		{"items", nil, adapter.ErrInputType}, // None for a list that is not Optional
		{"tags", nil, adapter.ErrInputType},
		{"items", []any{"a", 1}, adapter.ErrInputType},
		{"items", []any{[]any{}}, adapter.ErrInputType}, // found by FuzzInputs: a list as a str item panicked
		{"tags", map[string]any{"a": []string{"x"}}, adapter.ErrInputType},
		{"tags", map[string]any{"a": "x"}, adapter.ErrInputType},
		{"tags", []string{"a"}, adapter.ErrInputType},
		{"m", "happy", adapter.ErrNotInSet},
		{"m", mood("happy"), adapter.ErrNotInSet},
		{"lit", "c", adapter.ErrNotInSet},
		{"opt", 1.5, adapter.ErrInputType},
		{"flag", 1, adapter.ErrInputType},
		{"u", 1.5, adapter.ErrInputType},
		{"anything", make(chan int), adapter.ErrInputType},
		{"anything", func() {}, adapter.ErrInputType},
		{"anything", []any{1, func() {}}, adapter.ErrInputType},
		{"anything", map[string]any{"f": make(chan int)}, adapter.ErrInputType},
	} {
		srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nok"))
		_, err := adapter.Call(context.Background(), srv.Client(), inputSig, nil, withInput(tt.field, tt.in))
		var ie *adapter.InputError
		if assert.True(t, errors.As(err, &ie), "%s = %#v: %v", tt.field, tt.in, err) {
			assert.Equal(t, tt.field, ie.Field)
		}
		assert.ErrorIs(t, err, tt.is, "%s = %#v", tt.field, tt.in)
		assert.Empty(t, srv.Requests(), "no LM call")
		srv.Close()

		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
			_, err := a.Format(inputSig, nil, withInput(tt.field, tt.in))
			assert.ErrorIs(t, err, tt.is, "%s: Format with %s = %#v", a.Name(), tt.field, tt.in)
		}
	}

	// The review's reproducers: no address in the prompt.
	s := must(signature.Parse("n: int -> answer"))
	_, err := adapter.Chat{}.Format(s, nil, adapter.Values{"n": make(chan int)})
	assert.ErrorIs(t, err, adapter.ErrInputType)
	_, err = adapter.JSON{}.Format(must(signature.Parse("question -> answer")), nil, adapter.Values{"question": func() {}})
	assert.ErrorIs(t, err, adapter.ErrInputType)
	_, err = adapter.Chat{}.Format(s, nil, adapter.Values{"n": "DROP TABLE"})
	assert.ErrorIs(t, err, adapter.ErrInputType)
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nok"))
	defer srv.Close()
	var streamErr error
	for _, e := range adapter.Stream(context.Background(), srv.Client(), s, nil, adapter.Values{"n": "DROP TABLE"}) {
		streamErr = e
	}
	assert.ErrorIs(t, streamErr, adapter.ErrInputType)
	assert.Empty(t, srv.Requests())
}

// TestInputConstraints: input fields' constraints hold before the call.
func TestInputConstraints(t *testing.T) {
	sig, err := signature.New("", []signature.Field{
		{Name: "count", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: signature.GE, Value: 0}}},
		{Name: "query", Constraints: []signature.Constraint{{Op: signature.MinLength, Value: 3}}},
	}, []signature.Field{{Name: "answer"}})
	require.NoError(t, err)
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nok"))
	defer srv.Close()
	for _, in := range []adapter.Values{{"count": -1, "query": "cats"}, {"count": 1, "query": "ca"}} {
		_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in)
		assert.ErrorIs(t, err, adapter.ErrConstraint, "%v", in)
		var ie *adapter.InputError
		assert.True(t, errors.As(err, &ie))
	}
	assert.Empty(t, srv.Requests())
	_, err = adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"count": int64(0), "query": "cat"})
	assert.NoError(t, err)
}

// TestFormatNilSignature: Format with a nil signature is an error in every
// adapter, never a panic (security review #15).
func TestFormatNilSignature(t *testing.T) {
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}, adapter.TwoStep{Extractor: lmtest.NewServer().Client()}} {
		assert.NotPanics(t, func() {
			_, err := a.Format(nil, nil, adapter.Values{"q": "x"})
			assert.Error(t, err, a.Name())
		}, a.Name())
	}
}

// FuzzInputs: any JSON-decoded value (the usual source of inputs), given
// to a field of any type, is converted or refused with an *InputError,
// never a panic.
func FuzzInputs(f *testing.F) {
	for _, s := range []string{`3`, `3.0`, `2.5`, `"x"`, `["a", "b"]`, `["a", 1]`, `{"a": 1}`, `{"a": "x"}`, `null`, `true`, `"positive"`, `"a"`, `1e400`, `-9223372036854775809`, `[[["a"]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var plain, numbers any
		if json.Unmarshal([]byte(s), &plain) != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		_ = dec.Decode(&numbers)
		for i := range inputSig.NumInputs() {
			name := inputSig.Input(i).Name
			for _, v := range []any{plain, numbers} {
				_, err := adapter.Chat{}.Format(inputSig, nil, withInput(name, v))
				var ie *adapter.InputError
				if err != nil && (!errors.As(err, &ie) || ie.Field != name) {
					t.Fatalf("%s = %s: %v", name, s, err)
				}
			}
		}
	})
}

// TestUnknownInputSuggestsField: a misspelt input name says which field
// was probably meant.
func TestUnknownInputSuggestsField(t *testing.T) {
	sig := mustParse(t, "question, context: list[str] -> answer")
	_, err := adapter.Chat{}.Format(sig, nil, adapter.Values{"question": "q", "context": []string{}})
	require.NoError(t, err)
	srv := lmtest.NewServer()
	defer srv.Close()
	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"qustion": "q", "context": []string{}})
	var ie *adapter.InputError
	require.ErrorAs(t, err, &ie)
	assert.ErrorIs(t, err, adapter.ErrUnknownInput)
	assert.Equal(t, `adapter: input "qustion": unknown input field (did you mean "question"?)`, err.Error())
	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q", "context": []string{}, "zzz": 1})
	assert.Equal(t, `adapter: input "zzz": unknown input field`, err.Error())
	// Several unknown keys: the first in sorted order, every time (not the
	// first a map iteration happens to give).
	for range 20 {
		_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"question": "q", "zz": 1, "mm": 2, "aa": 3, "yy": 4})
		assert.Equal(t, `adapter: input "aa": unknown input field`, err.Error())
	}
}
