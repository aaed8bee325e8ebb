package adapter_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// outputField returns the one output field of "question -> x: T".
func outputField(t *testing.T, typ reflect.Type) (*signature.Signature, signature.Field) {
	t.Helper()
	sig, err := signature.New("", []signature.Field{{Name: "question"}}, []signature.Field{{Name: "x", Type: typ}})
	require.NoError(t, err)
	return sig, sig.Outputs()[0]
}

// An unsigned field takes every value of its type: a uint64 above
// math.MaxInt64 reads exactly (int parsing went through int64 and refused
// it), and the range check names the Go type.
func TestUint64ReadsExactly(t *testing.T) {
	_, f := outputField(t, reflect.TypeFor[uint64]())
	for text, want := range map[string]uint64{
		"18446744073709551615":       math.MaxUint64,
		"9223372036854775808":        1 << 63,
		"18,446,744,073,709,551,615": math.MaxUint64,
		"0xFFFFFFFFFFFFFFFF":         math.MaxUint64,
		"1.8446744073709551615e19":   math.MaxUint64,
		"18446744073709551615.0":     math.MaxUint64,
		"-0":                         0,
	} {
		v, err := adapter.ParseValue(text, f)
		require.NoError(t, err, text)
		assert.Equal(t, want, v, text)
	}
	for _, text := range []string{"18446744073709551616", "-1", "1e20", "99999999999999999999999"} {
		_, err := adapter.ParseValue(text, f)
		assert.Error(t, err, text)
		assert.ErrorContains(t, err, "out of range", text)
	}
	_, f64 := outputField(t, reflect.TypeFor[int64]())
	for text, want := range map[string]int64{"-9223372036854775808": math.MinInt64, "9223372036854775807": math.MaxInt64} {
		v, err := adapter.ParseValue(text, f64)
		require.NoError(t, err, text)
		assert.Equal(t, want, v, text)
	}
	for _, text := range []string{"9223372036854775808", "-9223372036854775809", "18446744073709551615"} {
		_, err := adapter.ParseValue(text, f64)
		assert.ErrorContains(t, err, "out of range for int64", text)
	}
	_, f8 := outputField(t, reflect.TypeFor[uint8]())
	_, err := adapter.ParseValue("256", f8)
	assert.ErrorContains(t, err, "out of range for uint8")
}

// A []byte value is written as base64, as encoding/json writes it, and is
// read back as base64: text that is not base64 is an error, never its
// UTF-8 bytes.
func TestBytesReadAsBase64(t *testing.T) {
	_, f := outputField(t, reflect.TypeFor[[]byte]())
	for text, want := range map[string][]byte{
		"aGVsbG8=":       []byte("hello"),
		`"aGVsbG8="`:     []byte("hello"),
		"aGVs\nbG8=":     []byte("hello"),
		"[104, 105]":     []byte("hi"),
		`""`:             {},
		"AAH/":           {0, 1, 255},
		"```\nAAH/\n```": nil, // a fence is no base64
	} {
		v, err := adapter.ParseValue(text, f)
		if want == nil {
			assert.Error(t, err, text)
			continue
		}
		require.NoError(t, err, text)
		assert.Equal(t, want, v, text)
	}
	for _, text := range []string{"hello world", "hello", "aGVsbG8", "[1, 300]", "12"} {
		_, err := adapter.ParseValue(text, f)
		assert.Error(t, err, text)
	}
}

// TestWideValuesRoundTrip: for every adapter, the assistant turn a demo
// with uint64 and []byte values is formatted into reads back as the demo.
func TestWideValuesRoundTrip(t *testing.T) {
	type blob []byte
	type octet uint8
	type rec struct {
		ID   uint64            `json:"id"`
		Data []byte            `json:"data"`
		Tags map[string][]byte `json:"tags"`
	}
	for _, tc := range []struct {
		typ reflect.Type
		v   any
	}{
		{reflect.TypeFor[uint64](), uint64(math.MaxUint64)},
		{reflect.TypeFor[uint64](), uint64(1<<63 + 12345)},
		{reflect.TypeFor[[]uint64](), []uint64{0, math.MaxUint64, 1 << 63}},
		{reflect.TypeFor[*uint64](), func() *uint64 { u := uint64(math.MaxUint64); return &u }()},
		{reflect.TypeFor[[]byte](), []byte("hello\x00\xff")},
		{reflect.TypeFor[[]byte](), []byte{}},
		{reflect.TypeFor[blob](), blob("named")},
		{reflect.TypeFor[blob](), blob{0xd3, 0x4d, 0x34}}, // "0000": no list[int] of one 0
		{reflect.TypeFor[[]octet](), []octet{1, 2}},
		{reflect.TypeFor[[][]byte](), [][]byte{[]byte("a"), {0xfe, 0xff}}},
		{reflect.TypeFor[map[string][]byte](), map[string][]byte{"k": {1, 2, 3}}},
		{reflect.TypeFor[rec](), rec{ID: math.MaxUint64, Data: []byte("x"), Tags: map[string][]byte{"t": []byte("\x00")}}},
	} {
		sig, _ := outputField(t, tc.typ)
		for _, a := range rtAdapters {
			msgs, err := a.Format(sig, []adapter.Values{{"question": "q", "x": tc.v}}, adapter.Values{"question": "next"})
			require.NoError(t, err)
			got, err := a.(adapter.Parser).Parse(sig, msgs[2].Content)
			if assert.NoError(t, err, "%s %s: %s", a.Name(), tc.typ, msgs[2].Content) {
				assert.Equal(t, tc.v, got["x"], "%s %s: %s", a.Name(), tc.typ, msgs[2].Content)
			}
		}
	}
}
