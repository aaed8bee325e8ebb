package adapter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// TestParseErrorText: an error says what happened in words a user
// reads once: a reply in plain prose is not reported as one forgotten
// field, and type names take their article.
func TestParseErrorText(t *testing.T) {
	sig, err := signature.Parse("question -> category: int, confidence: float")
	if err != nil {
		t.Fatal(err)
	}
	type parser interface {
		Parse(*signature.Signature, string) (adapter.Values, error)
	}
	cases := []struct {
		reply string
		want  string
		other string // must not appear
	}{
		{"I cannot decide between the two.", "none of the output fields", ""},
		{"[[ ## category ## ]]\n3\n", "output field missing", "none of the output fields"},
		{`{"category": "x", "confidence": 0.5}`, `"x" is not an int`, "a int"},
	}
	for _, a := range []parser{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
		for _, c := range cases {
			_, err := a.Parse(sig, c.reply)
			if err == nil {
				t.Fatalf("%T %q: no error", a, c.reply)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || c.other != "" && strings.Contains(msg, c.other) {
				t.Errorf("%T %q: %s\nwant %q", a, c.reply, msg, c.want)
			}
			var pe *adapter.ParseError
			if !errors.As(err, &pe) || pe.Field == "" || pe.Completion != c.reply {
				t.Errorf("%T %q: %#v: want a ParseError naming the field and keeping the reply", a, c.reply, err)
			}
			if strings.Contains(c.want, "missing") || strings.Contains(c.want, "none") {
				if !errors.Is(err, adapter.ErrMissingField) {
					t.Errorf("%T %q: %v does not match ErrMissingField", a, c.reply, err)
				}
			}
		}
	}
}
