package adapter_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// TestXMLCost: what the XML adapter allocates on the reference workload
// (issue 32). Parse scanned a reply's elements into a slice grown per
// element, filed them under their outputs in a slice per output, and
// scanned a nested element's children into another; Format concatenated
// every field's element before writing it. Now a level's elements are
// scanned on the stack and filed in one allocation, and the elements are
// written piece by piece into the conversation's buffer (a nested
// value's tags too, its strings and ints read without copying them out,
// a map's values copied out at once): Parse 13 -> 10 allocations, Format
// 5 -> 3, a nested reply's Parse 45 -> 36, nested demos' Format 43 -> 14,
// a Call 28 -> 23. (Of a Parse's 10, the output map and the values are every
// adapter's; the XML reader's own are the elements filed and a string
// leaf per field, which its Field.Value holds.) Then, with the pipeline's
// cuts and three more: the outputs' element lists on the stack, a leaf
// boxed again only when quotes came off it, an int's out-of-range error
// made only when it is one (it was 7 allocations per int read, in every
// adapter): Parse 7, nested 21, Format 2, nested 13, Call 13.
func TestXMLCost(t *testing.T) {
	x := adapter.XML{}
	nestedSig := must(signature.Parse("question -> tags: list[str], scores: dict[str, int], note: Optional[str]"))
	nestedDemos := []adapter.Values{
		{"question": "Colours of the French flag?", "tags": []string{"blue", "white", "red"}, "scores": map[string]int{"blue": 1, "white": 2, "red": 3}, "note": nil},
		{"question": "Primary colours?", "tags": []string{"red", "yellow", "blue"}, "scores": map[string]int{"red": 3, "yellow": 1, "blue": 2}, "note": "three"},
	}
	nestedInputs := adapter.Values{"question": "Colours of a rainbow?"}
	nested := "<tags>\n<item>red</item>\n<item>green</item>\n</tags>\n<scores><a>1</a><b>2</b></scores>\n<note />"

	// The values first: a count is worth nothing for a wrong answer.
	got, err := x.Parse(benchSig, benchXMLReply)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"reasoning": "The context states that water boils at 100 degrees Celsius at sea level.", "answer": "100 °C"}, got)
	got, err = x.Parse(nestedSig, nested)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"tags": []string{"red", "green"}, "scores": map[string]int{"a": 1, "b": 2}, "note": (*string)(nil)}, got)
	msgs, err := x.Format(benchSig, benchDemos, benchInputs)
	require.NoError(t, err)
	assert.Contains(t, msgs[len(msgs)-1].Content, "<question>\nWhat is the boiling point of water at sea level?\n</question>\n\n<context>\n")
	msgs, err = x.Format(nestedSig, nestedDemos, nestedInputs)
	require.NoError(t, err)
	assert.Equal(t, "<tags><item>blue</item><item>white</item><item>red</item></tags>\n\n<scores><blue>1</blue><red>3</red><white>2</white></scores>\n\n<note />", msgs[2].Content)

	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	lm := &fakeLM{replies: []string{benchXMLReply}}
	opts := []adapter.CallOption{adapter.UseAdapter(x), adapter.NoRetry()}
	for _, c := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"Parse", 7, func() { _, _ = x.Parse(benchSig, benchXMLReply) }},
		{"Parse nested", 21, func() { _, _ = x.Parse(nestedSig, nested) }},
		{"Format", 2, func() { _, _ = x.Format(benchSig, benchDemos, benchInputs) }},
		{"Format nested", 13, func() { _, _ = x.Format(nestedSig, nestedDemos, nestedInputs) }},
		{"Call", 13, func() {
			if _, err := adapter.Call(context.Background(), lm, benchSig, benchDemos, benchInputs, opts...); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		allocs := testing.AllocsPerRun(100, c.f)
		t.Logf("XML %s: %v allocations", c.name, allocs)
		assert.LessOrEqual(t, allocs, c.max, c.name)
	}
}
