package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// The DSPy parity gaps of issue 20 on the parse side (the ones that
// involve tools are in types/parity_test.go).

// TestUnionWithStrKeepsText: Union[int, str, None] keeps the text "5" as
// the string "5" (pydantic's smart mode prefers the exact type; DSPy's
// parse_value validates the text as it is); Union[int, str] without None
// reads it as the int 5, as DSPy does.
func TestUnionWithStrKeepsText(t *testing.T) {
	withNone := mustParse(t, "q -> a: Union[int, str, None]")
	for _, p := range []adapter.Parser{adapter.Chat{}, adapter.XML{}} {
		reply := "[[ ## a ## ]]\n5"
		if _, ok := p.(adapter.XML); ok {
			reply = "<a>5</a>"
		}
		got, err := p.Parse(withNone, reply)
		require.NoError(t, err)
		assert.Equal(t, "5", got["a"], "%T", p)
	}
	got, err := adapter.JSON{}.Parse(withNone, `{"a": "5"}`)
	require.NoError(t, err)
	assert.Equal(t, "5", got["a"])
	got, err = adapter.JSON{}.Parse(withNone, `{"a": 5}`)
	require.NoError(t, err)
	assert.Equal(t, 5, got["a"], "a JSON number stays a number")

	got, err = adapter.Chat{}.Parse(mustParse(t, "q -> a: Union[int, str]"), "[[ ## a ## ]]\n5")
	require.NoError(t, err)
	assert.Equal(t, 5, got["a"])
}

// TestXMLRepeatedChildrenOfDictOfLists: repeated child elements of a
// dict[str, list[T]] field that are items collect into the list (they
// were [4] for <a>3</a><a>4</a>: the last one silently won); repeated
// children that each hold a whole list (<item> elements) repeat one
// value: the same list reads, two different ones are ambiguous (issue 45,
// as for a field: see TestXMLRepeatedLists).
func TestXMLRepeatedChildrenOfDictOfLists(t *testing.T) {
	sig := mustParse(t, "q -> groups: dict[str, list[int]]")
	got, err := adapter.XML{}.Parse(sig, "<groups><a>3</a><a>4</a><b>5</b></groups>")
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"a": {3, 4}, "b": {5}}, got["groups"])

	got, err = adapter.XML{}.Parse(sig, "<groups><a><item>3</item><item>4</item></a><a>\n<item>3</item>\n<item> 4 </item>\n</a></groups>")
	require.NoError(t, err)
	assert.Equal(t, map[string][]int{"a": {3, 4}}, got["groups"])

	_, err = adapter.XML{}.Parse(sig, "<groups><a><item>3</item></a><a><item>4</item></a></groups>")
	assert.ErrorIs(t, err, adapter.ErrAmbiguous)

	// A repeated child of a scalar member with two values is ambiguous.
	_, err = adapter.XML{}.Parse(mustParse(t, "q -> d: dict[str, int]"), "<d><a>3</a><a>4</a></d>")
	assert.ErrorIs(t, err, adapter.ErrAmbiguous)
}

// TestJSONTrailingCommaAtEnd: a trailing comma after complete members,
// then the end of the reply, is read when every output is there (the
// model stopped after a complete answer); with an output still missing it
// is a cut reply.
func TestJSONTrailingCommaAtEnd(t *testing.T) {
	sig := mustParse(t, "q -> answer, n: int")
	got, err := adapter.JSON{}.Parse(sig, `{"answer": "Paris", "n": 1,`)
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"answer": "Paris", "n": 1}, got)

	got, err = adapter.JSON{}.Parse(sig, "```json\n{\"answer\": \"Paris\", \"n\": 1,\n")
	require.NoError(t, err)
	assert.Equal(t, adapter.Values{"answer": "Paris", "n": 1}, got)

	_, err = adapter.JSON{}.Parse(sig, `{"answer": "Paris",`)
	assert.ErrorIs(t, err, adapter.ErrTruncated)
}
