package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

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
