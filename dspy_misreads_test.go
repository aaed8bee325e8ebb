package adapter_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// TestDSPySilentMisreads: replies DSPy 3.3.1's own parsers read without
// an error into values the reply does not state (testdata/
// dspy_silent_misreads.json, recorded by running DSPy's ChatAdapter,
// JSONAdapter and XMLAdapter on each completion): None for an Optional
// it could not read, a marker line sliced unstripped ("]] 1999"), marker
// and heading lines inside the previous field, the markup of repeated XML
// lists. The library reads what each reply states (docs/compatibility.md,
// "DSPy's silent misreads").
func TestDSPySilentMisreads(t *testing.T) {
	data, err := os.ReadFile("testdata/dspy_silent_misreads.json")
	require.NoError(t, err)
	var file struct {
		Cases []struct {
			ID, Adapter, Signature, Completion string
			Stated                             map[string]any
			DSPy                               struct {
				Values map[string]any `json:"values"`
			} `json:"dspy_3_3_1"`
		}
	}
	require.NoError(t, json.Unmarshal(data, &file))
	require.NotEmpty(t, file.Cases)
	parsers := map[string]adapter.Parser{"chat": adapter.Chat{}, "json": adapter.JSON{}, "xml": adapter.XML{}}
	for _, c := range file.Cases {
		assert.NotEqual(t, c.Stated, c.DSPy.Values, "%s: DSPy reads what the reply states: not a misread", c.ID)
		got, err := parsers[c.Adapter].Parse(mustParse(t, c.Signature), c.Completion)
		require.NoError(t, err, c.ID)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		var asJSON map[string]any
		require.NoError(t, json.Unmarshal(b, &asJSON))
		assert.Equal(t, c.Stated, asJSON, c.ID)
	}
}
