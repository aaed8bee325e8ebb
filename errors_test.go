package adapter_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
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

// TestConstraintPartial: a ParseError for a violated constraint keeps the
// values that satisfy theirs and never one that violates its own, in Call
// and Stream alike.
func TestConstraintPartial(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "q", Type: reflect.TypeFor[string]()}}, []signature.Field{
		{Name: "label", Type: reflect.TypeFor[string]()},
		{Name: "confidence", Type: reflect.TypeFor[float64](), Constraints: []signature.Constraint{{Op: "le", Value: 1.0}}},
		{Name: "score", Type: reflect.TypeFor[int](), Constraints: []signature.Constraint{{Op: "ge", Value: 0}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reply := "[[ ## label ## ]]\nbilling\n\n[[ ## confidence ## ]]\n92\n\n[[ ## score ## ]]\n-5\n\n[[ ## completed ## ]]"
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text(reply).ChunkSize(7) })
	check := func(name string, err error) {
		var pe *adapter.ParseError
		if !errors.As(err, &pe) || !errors.Is(err, adapter.ErrConstraint) {
			t.Fatalf("%s: %v: want a ParseError matching ErrConstraint", name, err)
		}
		if pe.Field != "confidence" || pe.Completion != reply {
			t.Errorf("%s: field %q, completion %q", name, pe.Field, pe.Completion)
		}
		want := adapter.Values{"label": "billing"}
		if !reflect.DeepEqual(pe.Partial, want) {
			t.Errorf("%s: Partial = %v, want %v", name, pe.Partial, want)
		}
	}
	in := adapter.Values{"q": "x"}
	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, in)
	check("Call", err)
	var streamErr error
	for _, err := range adapter.Stream(t.Context(), srv.Client(), sig, nil, in) {
		if err != nil {
			streamErr = err
		}
	}
	check("Stream", streamErr)
}
