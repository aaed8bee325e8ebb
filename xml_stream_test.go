package adapter_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

func TestXMLFieldStream(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer")
	reply := "<think>Let me see.</think>\nHere:\n<reasoning>\n  Tom &amp; Jerry &lt;3 and <![CDATA[a < b]]> &copy;  \n</reasoning>\n<answer>1940</answer>"
	for _, size := range []int{1, 2, 3, 5, 7, 16, 64} {
		got := streamWith(adapter.XML{}.NewFieldStream(sig), reply, size)
		assert.Equal(t, "Tom & Jerry <3 and a < b &copy;", join(got["reasoning"]), "size %d", size)
		assert.Equal(t, "1940", join(got["answer"]), "size %d", size)
	}
	srv := lmtest.NewServer(lmtest.Text(reply).WithReasoning("").ChunkSize(4))
	defer srv.Close()
	fields, reasoning, last, err := collect(t, adapter.Stream(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "q"}, adapter.UseAdapter(adapter.XML{})))
	require.NoError(t, err)
	assert.Equal(t, "Let me see.", reasoning)
	assert.Equal(t, "1940", fields["answer"])
	assert.Equal(t, "xml", last.Adapter)
	assert.Equal(t, adapter.Values{"reasoning": "Tom & Jerry <3 and a < b &copy;", "answer": "1940"}, last.Result.Outputs[0])
}

// wellFormedFields matches replies whose two fields are plain elements:
// each opened once, closed by its own tag, holding no markup but CDATA
// sections (the keyword in capitals) that end at their first "]]>", as XML
// reads them (FuzzXMLStream found ".*?" spanning "]]></reasoning]]>", and
// "<![cDATA[" taken for a section: values holding their own closing tag,
// which the stream documents it cannot follow).
var wellFormedFields = regexp.MustCompile(`(?is)^[^<]*(?:<think>[^<]*</think>[^<]*)?(?:(?:<reasoning>(?:[^<]|(?-i:<!\[CDATA\[)(?:[^\]]|\][^\]])*\]\]>)*</reasoning>|<answer>(?:[^<]|(?-i:<!\[CDATA\[)(?:[^\]]|\][^\]])*\]\]>)*</answer>)[^<]*){2}$`)

// FuzzXMLStream: for replies Parse reads from plain elements
// (wellFormedFields), the joined deltas of each str field equal the parsed
// value; through Stream, a consumer that applies deltas and replacements
// ends with each str output's value, whatever the reply
// (fuzzDeltasAreTheValue).
func FuzzXMLStream(f *testing.F) {
	f.Add("<answer>a &amp; b</answer><reasoning><![CDATA[x]]></reasoning>", uint8(1))
	f.Add("<think>hm</think><reasoning>r</reasoning>\n<answer>  spaced  </answer>", uint8(3))
	sig := must(signature.Parse("question -> reasoning, answer"))
	srv := newValueServer(f)
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		got := streamWith(adapter.XML{}.NewFieldStream(sig), text, int(size%64)+1)
		fuzzDeltasAreTheValue(t, srv, adapter.XML{}, sig, text, int(size%64)+1)
		vals, err := adapter.XML{}.Parse(sig, text)
		var pe *adapter.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("untyped error %T", err)
		}
		if err != nil || !strings.Contains(text, "<") || strings.Contains(text, "[[") || strings.ContainsAny(text, "{") {
			return
		}
		lower := strings.ToLower(text)
		if !wellFormedFields.MatchString(text) || strings.Count(lower, "<answer>") != 1 || strings.Count(lower, "<reasoning>") != 1 {
			return // repeated, unclosed, nested or self-containing elements
		}
		for _, name := range []string{"reasoning", "answer"} {
			if join(got[name]) != vals[name] {
				t.Fatalf("field %s: stream %q, parse %q", name, join(got[name]), vals[name])
			}
		}
	})
}
