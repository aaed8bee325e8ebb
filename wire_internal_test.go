package adapter

import (
	"encoding/json"
	"testing"
)

// FuzzUnquote: for every well-formed JSON string literal, the stream's
// fast unquote gives what encoding/json gives (a streamed reply reads as
// the same reply sent whole).
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"q\" \\ \/"`, `"\u00e9\ud83d\ude00"`, `"\ud83d x"`, `"\udc00\ud800"`, `"\u0000"`, "\"\xff\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		b := []byte(lit)
		if len(b) < 2 || b[0] != '"' || !json.Valid(b) {
			return
		}
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			return
		}
		var c wireContent
		if err := c.UnmarshalJSON(b); err != nil {
			t.Fatalf("%q: %v", lit, err)
		}
		if c.text != want {
			t.Fatalf("%q: got %q, encoding/json %q", lit, c.text, want)
		}
	})
}
