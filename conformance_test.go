package adapter_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

type confInner struct {
	Label string   `json:"label"`
	Tags  []string `json:"tags"`
}

type confOuter struct {
	Name   string      `json:"name"`
	Score  float64     `json:"score"`
	Parts  []confInner `json:"parts"`
	Maybe  *int        `json:"maybe"`
	Nested confInner   `json:"nested"`
}

// confStrings are awkward texts every adapter must carry.
var confStrings = []string{
	"plain",
	`quotes " and ' and \ backslash`,
	"line one\nline two\n\nline four",
	"xml ]]> and <tag> and &amp; and < & >",
	"json {\"a\": [1, 2]} inside",
	"unicode: 日本語, émoji 🎉, zero-width \u200b",
	"  leading and trailing blanks are trimmed  ",
}

// confSig is the conformance signature: one output of every kind.
func confSig(t *testing.T) *signature.Signature {
	t.Helper()
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{
		{Name: "text"},
		{Name: "count", Type: reflect.TypeFor[int]()},
		{Name: "ratio", Type: reflect.TypeFor[float64]()},
		{Name: "flag", Type: reflect.TypeFor[bool]()},
		{Name: "items", Type: reflect.TypeFor[[]string]()},
		{Name: "outer", Type: reflect.TypeFor[confOuter]()},
	})
	require.NoError(t, err)
	return sig
}

// confWant is the i-th conformance value set, carrying s in every string.
func confWant(i int, s string) adapter.Values {
	one := 1
	return adapter.Values{
		"text":  strings.TrimSpace(s),
		"count": -42 + i,
		"ratio": 0.25 * float64(i),
		"flag":  i%2 == 0,
		"items": []string{s, "second"},
		"outer": confOuter{Name: s, Score: 1.5, Parts: []confInner{{Label: s, Tags: []string{"x"}}}, Maybe: &one, Nested: confInner{Label: "n", Tags: []string{}}},
	}
}

// confDemo is want as a demo, with its input.
func confDemo(want adapter.Values) adapter.Values {
	demo := adapter.Values{"q": "question"}
	for k, v := range want {
		demo[k] = v
	}
	return demo
}

// confMarker is a value holding a field marker, which Chat, like DSPy's
// ChatAdapter, cannot carry: it has no escaping (README).
const confMarker = "a marker [[ ## text ## ]] inside"

// TestConformance: for every adapter, Parse of its own formatted demo
// gives the values back; Format does not mutate its inputs; a missing
// field is errors.Is(ErrMissingField) and names the field; concurrent use
// is safe. TestRoundTripProperty (roundtrip_test.go) checks the round
// trip over generated signatures and values.
func TestConformance(t *testing.T) {
	sig := confSig(t)
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
		p := a.(adapter.Parser)
		strs := confStrings
		if a.Name() != "chat" {
			strs = append(slices.Clone(strs), confMarker)
		}
		for i, s := range strs {
			// A field's own text is trimmed (as DSPy reads it); a string
			// inside a list or struct comes back exactly, in XML too.
			want := confWant(i, s)
			demo := confDemo(want)
			before := fmt.Sprintf("%#v", demo)
			msgs, err := a.Format(sig, []adapter.Values{demo}, adapter.Values{"q": "next"})
			require.NoError(t, err, a.Name())
			assert.Equal(t, before, fmt.Sprintf("%#v", demo), "%s: Format mutated its inputs", a.Name())
			got, err := p.Parse(sig, msgs[2].Content)
			if !assert.NoError(t, err, "%s: %q\n%s", a.Name(), s, msgs[2].Content) {
				continue
			}
			for k, v := range want {
				assert.Equal(t, v, got[k], "%s: field %s of %q", a.Name(), k, s)
			}
		}
		// A missing field.
		_, err := p.Parse(mustParse(t, "q -> first, second"), map[string]string{
			"chat": "[[ ## first ## ]]\nx", "json": `{"first": "x"}`, "xml": "<first>x</first>", "baml": `{"first": "x"}`}[a.Name()])
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe, a.Name())
		assert.True(t, errors.Is(err, adapter.ErrMissingField), a.Name())
		assert.Equal(t, "second", pe.Field, a.Name())
	}
}

// TestConformancePipeline: the adapters whose parse needs the pipeline —
// TwoStep, whose extractor LM reads the main LM's text, and Chat's
// fallback to JSON after an unreadable reply — run through Call against
// lmtest. Every value comes back; the main LM's text reaches the
// extractor intact; a missing field is errors.Is(ErrMissingField) and
// names the field.
func TestConformancePipeline(t *testing.T) {
	sig := confSig(t)
	in := adapter.Values{"q": "next"}
	reply := func(a adapter.Adapter, demo adapter.Values) string {
		msgs, err := a.Format(sig, []adapter.Values{demo}, in)
		require.NoError(t, err, a.Name())
		return msgs[2].Content
	}
	check := func(t *testing.T, want adapter.Values, res *adapter.Result, err error) {
		t.Helper()
		require.NoError(t, err)
		for k, v := range want {
			assert.Equal(t, v, res.Outputs[0][k], "field %s", k)
		}
	}
	for i, s := range append(slices.Clone(confStrings), confMarker) {
		want := confWant(i, s)
		demo := confDemo(want)
		if s != confMarker {
			t.Run(fmt.Sprintf("twostep/%d", i), func(t *testing.T) {
				ext := lmtest.NewServer(lmtest.Text(reply(adapter.Chat{}, demo)))
				defer ext.Close()
				ts := adapter.TwoStep{Extractor: ext.Client()}
				text := reply(ts, demo)
				main := lmtest.NewServer(lmtest.Text(text))
				defer main.Close()
				res, err := adapter.Call(context.Background(), main.Client(), sig, nil, in, adapter.UseAdapter(ts))
				check(t, want, res, err)
				reqs := ext.Requests()
				require.Len(t, reqs, 1)
				msgs := reqs[0].Chat.Messages
				assert.Contains(t, msgs[len(msgs)-1].Content, text, "the extractor reads the main LM's text intact")
			})
		}
		t.Run(fmt.Sprintf("fallback/%d", i), func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Text("I would rather not use that format."), lmtest.Text(reply(adapter.JSON{}, demo)))
			defer srv.Close()
			res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in)
			check(t, want, res, err)
			assert.Equal(t, "json", res.Adapter)
			assert.Equal(t, 2, res.Calls)
		})
	}
	missing := mustParse(t, "q -> first, second")
	t.Run("twostep missing", func(t *testing.T) {
		// The extractor's Chat falls back to JSON, as in DSPy.
		ext := lmtest.NewServer(lmtest.Text("[[ ## first ## ]]\nx\n\n[[ ## completed ## ]]"), lmtest.Text(`{"first": "x"}`))
		defer ext.Close()
		main := lmtest.NewServer(lmtest.Text("first: x"))
		defer main.Close()
		_, err := adapter.Call(context.Background(), main.Client(), missing, nil, in, adapter.UseAdapter(adapter.TwoStep{Extractor: ext.Client()}))
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, err, adapter.ErrMissingField)
		assert.Equal(t, "second", pe.Field)
	})
	t.Run("fallback missing", func(t *testing.T) {
		srv := lmtest.NewServer(lmtest.Text("[[ ## first ## ]]\nx"), lmtest.Text(`{"first": "x"}`))
		defer srv.Close()
		_, err := adapter.Call(context.Background(), srv.Client(), missing, nil, in)
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, err, adapter.ErrMissingField)
		assert.Equal(t, "second", pe.Field)
		assert.Len(t, srv.Requests(), 2, "the fallback ran")
	})
}

func TestConcurrentUse(t *testing.T) {
	sig := mustParse(t, "question -> answer, n: int")
	var wg sync.WaitGroup
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					msgs, err := a.Format(sig, []adapter.Values{{"question": "q", "answer": "a", "n": i}}, adapter.Values{"question": "x"})
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := a.(adapter.Parser).Parse(sig, msgs[2].Content); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}
