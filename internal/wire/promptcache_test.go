package wire

import (
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarkPromptCache: the wrapper puts cache_control on the last part of
// the marked messages only where the body holds them as the pipeline
// wrote them, adds prompt_cache_key, and leaves every other byte alone.
func TestMarkPromptCache(t *testing.T) {
	body := func(msgs ...openai.ChatCompletionMessage) []byte {
		b, err := json.Marshal(openai.ChatCompletionRequest{Model: "m", Messages: msgs, Temperature: 0.5})
		require.NoError(t, err)
		return b
	}
	sys := openai.ChatCompletionMessage{Role: "system", Content: `say "user" <b>`}
	user := openai.ChatCompletionMessage{Role: "user", Content: "user"} // its content's JSON is in the body before it, as a role
	parts := openai.ChatCompletionMessage{Role: "user", MultiContent: []openai.ChatMessagePart{
		{Type: "text", Text: "look"}, {Type: "image_url", ImageURL: &openai.ChatMessageImageURL{URL: "data:image/png;base64,AAAA"}}}}
	last := openai.ChatCompletionMessage{Role: "user", Content: "question"}
	cc := `"cache_control":{"type":"ephemeral"}`
	cases := []struct {
		name   string
		msgs   []openai.ChatCompletionMessage
		marks  []CacheMark
		key    string
		want   string // the messages member as sent
		missed int
	}{
		{"text messages", []openai.ChatCompletionMessage{sys, user, last},
			[]CacheMark{{Index: 0, Role: "system", Content: sys.Content}, {Index: 1, Role: "user", Content: "user"}}, "",
			`[{"role":"system","content":[{"type":"text","text":"say \"user\" \u003cb\u003e",` + cc + `}]},{"role":"user","content":[{"type":"text","text":"user",` + cc + `}]},{"role":"user","content":"question"}]`, 0},
		{"parts: the last one", []openai.ChatCompletionMessage{sys, parts, last},
			[]CacheMark{{Index: 1, Role: "user", Parts: 2}}, "",
			`[{"role":"system","content":"say \"user\" \u003cb\u003e"},{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"},` + cc + `}]},{"role":"user","content":"question"}]`, 0},
		{"a changed message is not marked", []openai.ChatCompletionMessage{sys, user, last},
			[]CacheMark{{Index: 0, Role: "system", Content: "other"}, {Index: 2, Role: "system", Content: "question"}, {Index: 5, Role: "user", Content: "x"}, {Index: 1, Role: "user", Parts: 2}}, "",
			`[{"role":"system","content":"say \"user\" \u003cb\u003e"},{"role":"user","content":"user"},{"role":"user","content":"question"}]`, 4},
		{"key only", []openai.ChatCompletionMessage{sys, last}, nil, `k"1`,
			`[{"role":"system","content":"say \"user\" \u003cb\u003e"},{"role":"user","content":"question"}]`, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := body(c.msgs...)
			pc := &PromptCache{Marks: c.marks, Key: c.key}
			out, err := markPromptCache(in, pc)
			require.NoError(t, err)
			var got map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(out, &got))
			assert.Equal(t, c.want, string(got["messages"]))
			assert.Equal(t, c.missed, pc.Missed())
			var orig map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(in, &orig))
			if c.key != "" {
				var k string
				require.NoError(t, json.Unmarshal(got["prompt_cache_key"], &k))
				assert.Equal(t, c.key, k)
				delete(got, "prompt_cache_key")
			} else {
				assert.NotContains(t, got, "prompt_cache_key")
			}
			delete(got, "messages")
			delete(orig, "messages")
			assert.Equal(t, orig, got, "the rest of the request is unchanged")
			if c.missed == len(c.marks) && c.key == "" {
				assert.Equal(t, string(in), string(out), "nothing to mark: the body as it was")
			}
		})
	}
}
