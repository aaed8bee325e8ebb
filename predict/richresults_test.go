package predict_test

import (
	"context"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/types"
)

// imageParts lists the image URLs of a message's content parts.
func imageParts(m openai.ChatCompletionMessage) []string {
	var out []string
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeImageURL && p.ImageURL != nil {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}

// TestToolReturnsImage: a tool that returns an image (alone, or in a list
// with text) reaches the model as an image part a vision model reads, in
// every mode: natively, the tool message (text only on OpenAI-compatible
// routes) names the attachment and a user message after the turn's tool
// messages carries it as an image_url part; in the text, the
// tool_call_results message holds the part where the result is. Before,
// the native tool message was the image's JSON ({"url": …}): the model
// never saw it.
func TestToolReturnsImage(t *testing.T) {
	cat, err := types.NewImage("https://example.com/cat.png")
	require.NoError(t, err)
	dog, err := types.NewImage("data:image/png;base64,iVBORw0KGgo=")
	require.NoError(t, err)
	shot, err := types.NewTool("shot", "A screenshot.", func(context.Context, struct{}) (any, error) { return cat, nil })
	require.NoError(t, err)
	album, err := types.NewTool("album", "Captioned photos.", func(context.Context, struct{}) (any, error) {
		return []any{"the dog, asleep", dog}, nil
	})
	require.NoError(t, err)
	agent, err := predict.NewReActV2(mustSig(t, "question -> answer"), []types.Tool{shot, album})
	require.NoError(t, err)

	t.Run("native", func(t *testing.T) {
		srv := lmtest.NewServer(
			nativeStep("", fcall("a", "shot", `{}`), fcall("b", "album", `{}`)),
			nativeStep("", fcall("c", "submit", `{"answer": "a cat and a dog"}`)))
		defer srv.Close()
		xml := adapter.UseAdapter(adapter.XML{Options: adapter.Options{NativeTools: adapter.On}})
		res, err := agent.Call(t.Context(), toolsLM(srv), adapter.Values{"question": "What do you see?"}, xml)
		require.NoError(t, err)
		assert.Equal(t, "a cat and a dog", res.Outputs[0]["answer"])
		msgs := srv.Requests()[1].Chat.Messages
		var tools []openai.ChatCompletionMessage
		at := -1
		for i, m := range msgs {
			if m.Role == openai.ChatMessageRoleTool {
				tools, at = append(tools, m), i
			}
		}
		require.Len(t, tools, 2)
		assert.Equal(t, "[attachment 1: image, in the message after the tool results]", tools[0].Content)
		assert.Equal(t, "the dog, asleep\n[attachment 1: image, in the message after the tool results]", tools[1].Content)
		next := msgs[at+1]
		assert.Equal(t, openai.ChatMessageRoleUser, next.Role, "the attachments follow the tool messages")
		assert.Equal(t, []string{cat.URL, dog.URL}, imageParts(next))
		assert.Contains(t, next.MultiContent[0].Text, "shot (call a), attachment 1:")
	})
	t.Run("text", func(t *testing.T) {
		srv := lmtest.NewServer(
			lmtest.Text("[[ ## next_thought ## ]]\nlook\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"shot\", \"args\": {}}]}\n\n[[ ## completed ## ]]"),
			lmtest.Text("[[ ## next_thought ## ]]\ndone\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"submit\", \"args\": {\"answer\": \"a cat\"}}]}\n\n[[ ## completed ## ]]"))
		defer srv.Close()
		_, err := agent.Call(t.Context(), srv.Client(), adapter.Values{"question": "What do you see?"})
		require.NoError(t, err)
		var found []string
		for _, m := range srv.Requests()[1].Chat.Messages {
			found = append(found, imageParts(m)...)
		}
		assert.Equal(t, []string{cat.URL}, found)
	})
}
