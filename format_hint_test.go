package adapter_test

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/signature"
)

// Each adapter starts a conversation's buffer at the size of the latest
// one it wrote for the signature: conversations much larger and much
// smaller than the one before come out as they do the first time.
func TestFormatSizeHint(t *testing.T) {
	inputs := map[string]adapter.Values{
		"small": {"question": "q?", "context": "c."},
		"large": {"question": strings.Repeat("why? ", 2000), "context": strings.Repeat("because. ", 3000)},
	}
	for _, a := range markerAdapters {
		want := map[string][]openai.ChatCompletionMessage{}
		for name, in := range inputs {
			fresh := must(signature.Parse("question, context -> reasoning, answer"))
			want[name] = must(a.Format(fresh, benchDemos, in))
		}
		sig := must(signature.Parse("question, context -> reasoning, answer"))
		for _, name := range []string{"small", "large", "small", "large", "large", "small"} {
			msgs, err := a.Format(sig, benchDemos, inputs[name])
			require.NoError(t, err)
			assert.Equal(t, want[name], msgs, "%s: %s after others", a.Name(), name)
		}
	}
}
