package jsonx

import (
	"encoding/json"
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

// FuzzCursor: a document the Cursor reads whole is valid JSON, and each
// string it reads is the one encoding/json reads.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e3,true,false,null,{"b":"c\n\u00e9"}],"d":{}}`, `"x\ud83d\ude00"`, `[]`, `{"a":1,}`, `01`, "\"\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var c Cursor
		c.Reset(s)
		if c.Skip() && c.End() && !json.Valid([]byte(s)) {
			t.Fatalf("Cursor read %q, which is not JSON", s)
		}
		c.Reset(s)
		if got, ok := c.String(); ok && c.End() {
			var want string
			if err := json.Unmarshal([]byte(s), &want); err != nil || got != want {
				t.Fatalf("%q: Cursor %q, encoding/json %q (%v)", s, got, want, err)
			}
		}
		c.Reset(s)
		if got, ok := c.Int(); ok && c.End() {
			var want int64
			if err := json.Unmarshal([]byte(s), &want); err != nil || got != want {
				t.Fatalf("%q: Cursor %d, encoding/json %d (%v)", s, got, want, err)
			}
		}
	})
}
