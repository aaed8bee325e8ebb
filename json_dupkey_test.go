package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// TestJSONRepeatedKey: a key given twice with the same value, written in
// other spacing, with a trailing comma, beside a comment or with escapes,
// reads that value, as DSPy reads it (issue 45: refused as "two different
// values"); two different values stay ErrAmbiguous.
// (Generated spellings: internal/reply's TestRepeatedKeyComparesValues.)
func TestJSONRepeatedKey(t *testing.T) {
	sig := mustParse(t, "q -> tags: list[str], path: str, score: float")
	want := adapter.Values{"tags": []string{"a", "b"}, "path": "x/y", "score": 0.5}
	for _, reply := range []string{
		`{"tags": ["a", "b"], "path": "x/y", "score": 0.5, "tags": ["a","b"]}`,
		`{"tags": ["a", "b",], "path": "x/y", "score": 0.5, "tags": ["a", "b"]}`,
		"{\"tags\": [\"a\", \"b\"], // first\n\"path\": \"x\\/y\" /* c */, \"score\": 0.5, \"path\": \"x/y\"}",
		`{"tags": ["a", "b"], "path": "x/y", "score": 0.5, "score": 0.50, "score": 5e-1}`,
	} {
		for _, p := range []adapter.Parser{adapter.JSON{}, adapter.Chat{}, adapter.XML{}} {
			got, err := p.Parse(sig, reply)
			require.NoError(t, err, "%T %s", p, reply)
			assert.Equal(t, want, got, "%T %s", p, reply)
		}
	}
	for _, reply := range []string{
		`{"tags": ["a", "b"], "path": "x/y", "score": 0.5, "tags": ["b", "a"]}`,
		`{"tags": ["a", "b"], "path": "x/y", "score": 0.5, "path": "x/z",}`,
	} {
		_, err := adapter.JSON{}.Parse(sig, reply)
		assert.ErrorIs(t, err, adapter.ErrAmbiguous, reply)
	}
}
