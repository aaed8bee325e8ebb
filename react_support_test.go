package adapter_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
)

// TestJSONUserMessageEmptyLastInput: DSPy strips the JSON adapter's user
// message once, reminder included, so an empty last input keeps its blank
// line (ReAct's first step has an empty trajectory). Regression: the input
// sections were stripped before the reminder was added.
func TestJSONUserMessageEmptyLastInput(t *testing.T) {
	sig := mustParse(t, "question, trajectory -> answer")
	msgs, err := adapter.JSON{}.Format(sig, nil, adapter.Values{"question": "q", "trajectory": ""})
	require.NoError(t, err)
	assert.Equal(t, "[[ ## question ## ]]\nq\n\n[[ ## trajectory ## ]]\n\n\nRespond with a JSON object in the following order of fields: `answer`.", msgs[1].Content)
	msgs, err = adapter.Chat{}.Format(sig, nil, adapter.Values{"question": "q", "trajectory": ""})
	require.NoError(t, err)
	assert.Equal(t, "[[ ## question ## ]]\nq\n\n[[ ## trajectory ## ]]\n\n\nRespond with the corresponding output fields, starting with the field `[[ ## answer ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`.", msgs[1].Content)
}
