package jsonx

import (
	"reflect"
	"testing"
)

// FuzzDecodeFlat: the fast path agrees with encoding/json whenever it
// accepts a reply.
func FuzzDecodeFlat(f *testing.F) {
	for _, s := range []string{`{"a": "x", "b": 1.5e3, "c": null, "d": true}`, `{}`, `{"a":"é","a":"b"}`, `{"a": -0, "b": "\u00e9"}`, `{"a": 01}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flat, ok := DecodeFlat(s)
		if !ok {
			return
		}
		strict, err := Decode(s)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses: %v", s, err)
		}
		if !reflect.DeepEqual(any(flat), strict) {
			t.Fatalf("%q: fast %#v, strict %#v", s, flat, strict)
		}
	})
}
