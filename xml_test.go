package adapter_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

func TestXMLParseVariants(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer: int, tags: list[str]")
	want := adapter.Values{"reasoning": "r & d", "answer": 42, "tags": []string{"a", "b"}}
	for name, reply := range map[string]string{
		"strict":             "<reasoning>\nr &amp; d\n</reasoning>\n\n<answer>\n42\n</answer>\n\n<tags><item>a</item><item>b</item></tags>",
		"unescaped &":        "<reasoning>r & d</reasoning><answer>42</answer><tags><item>a</item><item>b</item></tags>",
		"tag case":           "<Reasoning>r & d</Reasoning><ANSWER>42</ANSWER><Tags><item>a</item><item>b</item></Tags>",
		"prose and fence":    "Sure! Here you go:\n```xml\n<reasoning>r & d</reasoning>\n<answer>42</answer>\n<tags>[\"a\", \"b\"]</tags>\n```\nHope this helps.",
		"think first":        "<think>The <answer> is 42.</think>\n<reasoning>r & d</reasoning><answer>42</answer><tags><item>a</item><item>b</item></tags>",
		"wrapper element":    "<response><reasoning>r & d</reasoning><answer>42</answer><tags><item>a</item><item>b</item></tags></response>",
		"missing close":      "<reasoning>r & d\n<answer>42</answer><tags><item>a</item><item>b</item></tags>",
		"repeated same":      "<reasoning>r & d</reasoning><answer>42</answer><answer>42</answer><tags><item>a</item><item>b</item></tags>",
		"repeated list tags": "<reasoning>r & d</reasoning><answer>42</answer><tags>a</tags><tags>b</tags>",
		"CDATA":              "<reasoning><![CDATA[r & d]]></reasoning><answer> 42 </answer><tags><item><![CDATA[a]]></item><item>b</item></tags>",
		"json instead":       `{"reasoning": "r & d", "answer": 42, "tags": ["a", "b"]}`,
		"chat markers":       "[[ ## reasoning ## ]]\nr & d\n\n[[ ## answer ## ]]\n42\n\n[[ ## tags ## ]]\n[\"a\", \"b\"]",
	} {
		got, err := adapter.XML{}.Parse(sig, reply)
		if assert.NoError(t, err, name) {
			assert.Equal(t, want, got, name)
		}
	}
}

func TestXMLParseErrors(t *testing.T) {
	sig := mustParse(t, "question -> reasoning, answer: int")
	for name, tt := range map[string]struct {
		reply string
		field string
		err   error
	}{
		"truncated last": {"<reasoning>fine</reasoning><answer>4", "answer", adapter.ErrTruncated},
		"missing":        {"<reasoning>fine</reasoning>", "answer", adapter.ErrMissingField},
		"not an int":     {"<reasoning>x</reasoning><answer>many</answer>", "answer", nil},
		"conflicting":    {"<reasoning>x</reasoning><answer>1</answer><answer>2</answer>", "answer", adapter.ErrAmbiguous},
	} {
		_, err := adapter.XML{}.Parse(sig, tt.reply)
		var pe *adapter.ParseError
		require.ErrorAs(t, err, &pe, name)
		assert.Equal(t, tt.field, pe.Field, name)
		assert.Equal(t, tt.reply, pe.Completion, name)
		if tt.err != nil {
			assert.ErrorIs(t, err, tt.err, name)
		}
	}
	_, err := adapter.XML{}.Parse(mustParse(t, "q -> items: list[int]"), "<items><item>1</item><item>2")
	assert.ErrorIs(t, err, adapter.ErrTruncated, "an item cut off")
}

type xmlPlace struct {
	City string   `json:"city"`
	Tags []string `json:"tags"`
}

type xmlTrip struct {
	Name   string            `json:"name"`
	Stops  []xmlPlace        `json:"stops"`
	Home   *xmlPlace         `json:"home"`
	Scores map[string]int    `json:"scores"`
	Notes  map[string]string `json:"notes"`
}

func TestXMLNestedRoundTrip(t *testing.T) {
	sig, err := signature.New("", []signature.Field{{Name: "q"}}, []signature.Field{
		{Name: "trip", Type: typeOf[xmlTrip]()},
		{Name: "note"},
	})
	require.NoError(t, err)
	trip := xmlTrip{
		Name:   `Tom & Jerry <travel> "]]>"`,
		Stops:  []xmlPlace{{City: "Köln", Tags: []string{"a<b", "c&d"}}, {City: "Zürich", Tags: []string{}}},
		Scores: map[string]int{"x": 1, "two words": 2},
		Notes:  map[string]string{},
	}
	demo := adapter.Values{"q": "x", "trip": trip, "note": "</note> & <![CDATA[ ]]>"}
	msgs, err := adapter.XML{}.Format(sig, []adapter.Values{demo}, adapter.Values{"q": "y"})
	require.NoError(t, err)
	assistant := msgs[2].Content
	assert.Contains(t, assistant, `<entry key="two words">2</entry>`)
	got, err := adapter.XML{}.Parse(sig, assistant)
	require.NoError(t, err, assistant)
	assert.Equal(t, demo["note"], got["note"])
	gotTrip := got["trip"].(xmlTrip)
	assert.Equal(t, trip.Name, gotTrip.Name)
	assert.Equal(t, trip.Stops, gotTrip.Stops)
	assert.Nil(t, gotTrip.Home)
	assert.Equal(t, trip.Scores, gotTrip.Scores)
}

// FuzzXMLParse: the XML parser never panics and returns typed errors.
func FuzzXMLParse(f *testing.F) {
	addCorpusSeeds(f, "xml")
	for _, s := range []string{
		"<answer>42</answer><tags><item>a</item></tags>",
		"<answer>fish & chips</answer>",
		"<tags><item>1</item><item>2",
		"<a><![CDATA[x]]></a><answer>x</answer><answer>y</answer>",
		"<entry key=\"answer\">3</entry>",
		"<<<answer>>>",
	} {
		f.Add(s)
	}
	sig := must(signature.Parse("question -> answer: int, tags: list[str]"))
	f.Fuzz(func(t *testing.T, text string) {
		vals, err := adapter.XML{}.Parse(sig, text)
		if err != nil {
			var pe *adapter.ParseError
			if !errors.As(err, &pe) || pe.Completion != text {
				t.Fatalf("untyped error or raw text lost %T: %v", err, err)
			}
			return
		}
		if _, ok := vals["answer"].(int); !ok {
			t.Fatalf("answer is %T", vals["answer"])
		}
		if _, ok := vals["tags"].([]string); !ok {
			t.Fatalf("tags is %T", vals["tags"])
		}
	})
}

var benchXMLReply = "<reasoning>\nThe context states that water boils at 100 degrees Celsius at sea level.\n</reasoning>\n\n<answer>\n100 °C\n</answer>"

func BenchmarkXMLFormat(b *testing.B) {
	benchFormat(b, adapter.XML{})
}

func BenchmarkXMLParse(b *testing.B) {
	benchParse(b, adapter.XML{}, benchXMLReply)
}

func BenchmarkXMLParseNested(b *testing.B) {
	sig := must(signature.Parse("question -> tags: list[str], scores: dict[str, int], note: Optional[str]"))
	reply := "<tags>\n<item>red</item>\n<item>green</item>\n</tags>\n<scores><a>1</a><b>2</b></scores>\n<note />"
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (adapter.XML{}).Parse(sig, reply); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkXMLFormatNewDemos is BenchmarkXMLFormat with demos that change
// on every call (two sets of the same size take turns), so Format never
// reuses the demos it rendered last.
func BenchmarkXMLFormatNewDemos(b *testing.B) {
	other := make([]adapter.Values, len(benchDemos))
	for i, d := range benchDemos {
		other[i] = adapter.Values{}
		for k, v := range d {
			other[i][k] = v.(string) + "."
		}
	}
	sets := [2][]adapter.Values{benchDemos, other}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := (adapter.XML{}).Format(benchSig, sets[i%2], benchInputs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkXMLFormatNested is XML's Format of demos whose outputs are a
// list and a dict, written as nested elements on every call (demos that
// are not all strings are not kept rendered).
func BenchmarkXMLFormatNested(b *testing.B) {
	sig := must(signature.Parse("question -> tags: list[str], scores: dict[str, int]"))
	demos := []adapter.Values{
		{"question": "Colours of the French flag?", "tags": []string{"blue", "white", "red"}, "scores": map[string]int{"blue": 1, "white": 2, "red": 3}},
		{"question": "Primary colours?", "tags": []string{"red", "yellow", "blue"}, "scores": map[string]int{"red": 3, "yellow": 1, "blue": 2}},
	}
	inputs := adapter.Values{"question": "Colours of a rainbow?"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (adapter.XML{}).Format(sig, demos, inputs); err != nil {
			b.Fatal(err)
		}
	}
}
