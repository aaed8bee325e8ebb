package adapter_test

import (
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

// TestConformance: for every adapter, Parse of its own formatted demo
// gives the values back; Format does not mutate its inputs; a missing
// field is errors.Is(ErrMissingField) and names the field; concurrent use
// is safe.
func TestConformance(t *testing.T) {
	one := 1
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{
		{Name: "text"},
		{Name: "count", Type: reflect.TypeFor[int]()},
		{Name: "ratio", Type: reflect.TypeFor[float64]()},
		{Name: "flag", Type: reflect.TypeFor[bool]()},
		{Name: "items", Type: reflect.TypeFor[[]string]()},
		{Name: "outer", Type: reflect.TypeFor[confOuter]()},
	})
	require.NoError(t, err)
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}, adapter.BAML{}} {
		p := a.(adapter.Parser)
		strs := confStrings
		if a.Name() != "chat" {
			// Chat, like DSPy's ChatAdapter, has no escaping: a value that
			// holds a field marker cannot round-trip (README).
			strs = append(slices.Clone(strs), "a marker [[ ## text ## ]] inside")
		}
		for i, s := range strs {
			want := adapter.Values{
				"text":  strings.TrimSpace(s),
				"count": -42 + i,
				"ratio": 0.25 * float64(i),
				"flag":  i%2 == 0,
				"items": []string{s, "second"},
				"outer": confOuter{Name: s, Score: 1.5, Parts: []confInner{{Label: s, Tags: []string{"x"}}}, Maybe: &one, Nested: confInner{Label: "n", Tags: []string{}}},
			}
			if a.Name() == "xml" {
				// XML trims element text: a list item with outer blanks
				// comes back trimmed.
				want["items"] = []string{strings.TrimSpace(s), "second"}
				o := want["outer"].(confOuter)
				o.Name, o.Parts[0].Label = strings.TrimSpace(s), strings.TrimSpace(s)
				want["outer"] = o
			}
			demo := adapter.Values{"q": "question"}
			for k, v := range want {
				demo[k] = v
			}
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

func TestConcurrentUse(t *testing.T) {
	sig := mustParse(t, "question -> answer, n: int")
	var wg sync.WaitGroup
	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
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
