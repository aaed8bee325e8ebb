package signature_test

import (
	"bytes"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter/signature"
)

// memoSig is a signature whose strict schema has $defs, descriptions and
// constraints: every part of the builder runs.
func memoSig(t *testing.T) *signature.Signature {
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{
		{Name: "tree", Type: reflect.TypeFor[strictNode](), Desc: "the tree"},
		{Name: "color", Type: reflect.TypeFor[strictColor]()},
		{Name: "n", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: signature.LE, Value: 5}}},
	})
	require.NoError(t, err)
	return sig
}

// TestStrictSchemaBuiltOnce: a signature is immutable, so its strict
// schema is built once and kept with it; a later call costs a copy of
// the bytes (issue 32: rebuilt and marshalled through invopop on every
// call, 69 % of a structured-output JSON call's CPU).
func TestStrictSchemaBuiltOnce(t *testing.T) {
	sig := memoSig(t)
	_, err := sig.StrictSchema()
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := sig.StrictSchema(); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0, "a kept schema costs its copy alone")
}

// TestStrictSchemaKeptIsCopied: what StrictSchema returns is the
// caller's: changing it changes neither the next result nor the schema
// of an equal signature, which is the same bytes.
func TestStrictSchemaKeptIsCopied(t *testing.T) {
	sig := memoSig(t)
	first, err := sig.StrictSchema()
	require.NoError(t, err)
	want := bytes.Clone(first.Schema)
	first.Name = "changed"
	for i := range first.Schema {
		first.Schema[i] = 'x'
	}
	again, err := sig.StrictSchema()
	require.NoError(t, err)
	assert.Equal(t, "DSPyProgramOutputs", again.Name)
	assert.Equal(t, string(want), string(again.Schema))
	other, err := memoSig(t).StrictSchema()
	require.NoError(t, err)
	assert.Equal(t, string(want), string(other.Schema), "byte-identical to a schema built afresh")
}

// TestStrictSchemaKeptError: a signature strict mode cannot express
// gives the same error every time, naming the field.
func TestStrictSchemaKeptError(t *testing.T) {
	sig, err := signature.Parse("q -> ok: int, scores: dict[str, int]")
	require.NoError(t, err)
	for range 3 {
		_, err := sig.StrictSchema()
		require.ErrorIs(t, err, signature.ErrNotStrict)
		var fe *signature.FieldError
		require.True(t, errors.As(err, &fe))
		assert.Equal(t, "scores", fe.Field)
	}
}

// TestStrictSchemaConcurrent: first calls from many goroutines at once
// (run with -race) all get the same bytes.
func TestStrictSchemaConcurrent(t *testing.T) {
	sig := memoSig(t)
	want, err := memoSig(t).StrictSchema()
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([][]byte, 16)
	for i := range got {
		wg.Go(func() {
			s, err := sig.StrictSchema()
			if err == nil {
				got[i] = s.Schema
				s.Schema[0] = 'x' // each caller owns its copy
			}
		})
	}
	wg.Wait()
	for i, g := range got {
		assert.Equal(t, "x"+string(want.Schema[1:]), string(g), "goroutine %d", i)
	}
}
