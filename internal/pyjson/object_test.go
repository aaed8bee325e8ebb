package pyjson

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeKeepsOrder(t *testing.T) {
	v, err := Decode([]byte(`{"zeta": {"b": 1, "a": [1.0, 2, 1e2, 12345678901234567890]}, "alpha": "é\u00e9", "zeta": null, "x": true}`))
	require.NoError(t, err)
	o, ok := v.(Object)
	require.True(t, ok)
	assert.Equal(t, []string{"zeta", "alpha", "x"}, o.Keys(), "a repeated key keeps its first place, as in a Python dict")
	z, _ := o.Get("zeta")
	assert.Nil(t, z, "and takes its last value")

	v, err = Decode([]byte(`{"b": {"d": 1, "c": [1.0, 2, 1e2, 12345678901234567890, "s"]}, "a": "é\u00e9"}`))
	require.NoError(t, err)
	b, err := Marshal(v)
	require.NoError(t, err)
	assert.Equal(t, `{"b": {"d": 1, "c": [1.0, 2, 100.0, 12345678901234567890, "s"]}, "a": "éé"}`, string(b), "json.dumps of json.loads")
	assert.Equal(t, `{'b': {'d': 1, 'c': [1.0, 2, 100.0, 12345678901234567890, 's']}, 'a': 'éé'}`, Str(v), "str() of the dict")
	std, err := json.Marshal(v)
	require.NoError(t, err)
	assert.Equal(t, `{"b":{"d":1,"c":[1.0,2,100.0,12345678901234567890,"s"]},"a":"éé"}`, string(std), "encoding/json keeps the order too")

	_, err = Decode([]byte(`{"a": 1} x`))
	assert.Error(t, err)
	_, err = Decode([]byte(`{"a": `))
	assert.Error(t, err)
	assert.Equal(t, map[string]any{"b": map[string]any{"d": 1, "c": []any{1.0, 2, 100.0, json.Number("12345678901234567890"), "s"}}, "a": "éé"}, Plain(v))
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"b": {"d": 1, "c": [1.0, 2]}, "a": "x"}`))
	f.Add([]byte(`[[[[]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		b, err := Marshal(v)
		if err != nil {
			return // NaN-free JSON cannot fail, but deep nesting can
		}
		w, err := Decode(b)
		if err != nil {
			t.Fatalf("Marshal wrote invalid JSON %q for %q: %v", b, data, err)
		}
		if Str(v) != Str(w) {
			t.Fatalf("round trip changed %q into %q", Str(v), Str(w))
		}
	})
}

// TestObjectBuildsAsSet: NewObject and Decode, which index the keys of a
// wide object, build the object Set builds a member at a time (first
// position, last value), over random key sequences either side of
// indexFrom, repeats included.
func TestObjectBuildsAsSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := r.IntN(4 * indexFrom)
		keys := r.IntN(2*n+1) + 1
		var want Object
		members := make([]Member, n)
		var text strings.Builder
		text.WriteByte('{')
		for i := range members {
			members[i] = Member{"k" + strconv.Itoa(r.IntN(keys)), i}
			want.Set(members[i].Key, i)
			if i > 0 {
				text.WriteByte(',')
			}
			fmt.Fprintf(&text, "%q:%d", members[i].Key, i)
		}
		text.WriteByte('}')
		assert.Equal(t, want.members, NewObject(members...).members, "NewObject(%v)", members)
		got, err := Decode([]byte(text.String()))
		require.NoError(t, err)
		assert.Equal(t, want.members, got.(Object).members, "Decode(%s)", text.String())
	}
}

// BenchmarkDecodeWideObject: decoding an object of n keys is linear in n
// (it was quadratic: 160 000 keys took minutes).
func BenchmarkDecodeWideObject(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		var text strings.Builder
		text.WriteByte('{')
		for i := range n {
			if i > 0 {
				text.WriteByte(',')
			}
			fmt.Fprintf(&text, `"k%d":%d`, i, i)
		}
		text.WriteByte('}')
		data := []byte(text.String())
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
