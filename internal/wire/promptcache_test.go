package wire

import (
	"encoding/json"
	"reflect"
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

// FuzzMarkPromptCache: whatever the body, marking never panics; from a
// chat request it either fails or gives valid JSON in which each message
// says what it said (its text, parts beyond cache_control unchanged), the
// marks placed carry cache_control on their last part, the other members
// are the body's, and prompt_cache_key is the key.
func FuzzMarkPromptCache(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}]}`, "s", 0, 0, "k")
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{}]}],"x":1}`, "", 2, 0, "")
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"x"}}]}]}`, "", 1, 0, "")
	f.Add(`{}`, "", 0, 0, "k")
	f.Add(` {"messages":[{"content":"\u0073","role":"system"}] } `, "s", 0, 0, "")
	f.Fuzz(func(t *testing.T, body, content string, parts, index int, key string) {
		if index < 0 || index > 8 || parts < 0 {
			return
		}
		role := "system"
		var in map[string]any
		if json.Unmarshal([]byte(body), &in) == nil {
			if msgs, ok := in["messages"].([]any); ok && index < len(msgs) {
				if m, ok := msgs[index].(map[string]any); ok {
					role, _ = m["role"].(string)
				}
			}
		}
		pc := &PromptCache{Marks: []CacheMark{{Index: index, Role: role, Content: content, Parts: parts}}, Key: key}
		out, err := markPromptCache([]byte(body), pc)
		if err != nil || in == nil {
			return
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: invalid JSON %q: %v", body, out, err)
		}
		if key != "" {
			var want string // as encoding/json writes it: invalid UTF-8 as U+FFFD
			kb, _ := json.Marshal(key)
			_ = json.Unmarshal(kb, &want)
			if got["prompt_cache_key"] != want {
				t.Fatalf("%q: prompt_cache_key %v, want %q", out, got["prompt_cache_key"], key)
			}
			if _, had := in["prompt_cache_key"]; !had {
				delete(got, "prompt_cache_key")
			}
		}
		gotMsgs, _ := got["messages"].([]any)
		inMsgs, _ := in["messages"].([]any)
		delete(got, "messages")
		delete(in, "messages")
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("%q → %q: other members changed", body, out)
		}
		if len(gotMsgs) != len(inMsgs) {
			t.Fatalf("%q → %q: %d messages, %d before", body, out, len(gotMsgs), len(inMsgs))
		}
		placed := pc.Missed() == 0
		for i := range inMsgs {
			a, b := inMsgs[i], gotMsgs[i]
			am, aok := a.(map[string]any)
			bm, bok := b.(map[string]any)
			if !aok || !bok {
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("message %d changed: %v → %v", i, a, b)
				}
				continue
			}
			ac, bc := am["content"], bm["content"]
			delete(am, "content")
			delete(bm, "content")
			if !reflect.DeepEqual(am, bm) {
				t.Fatalf("message %d's members changed: %v → %v", i, am, bm)
			}
			if i == index && placed {
				bp, ok := bc.([]any)
				if !ok || len(bp) == 0 {
					t.Fatalf("marked message %d's content %v", i, bc)
				}
				last, _ := bp[len(bp)-1].(map[string]any)
				if last["cache_control"] == nil {
					t.Fatalf("marked message %d has no cache_control: %v", i, bc)
				}
				if s, ok := ac.(string); ok {
					ac = []any{map[string]any{"type": "text", "text": s, "cache_control": map[string]any{"type": "ephemeral"}}}
				} else if ap, ok := ac.([]any); ok && len(ap) > 0 {
					if l, ok := ap[len(ap)-1].(map[string]any); ok && l["cache_control"] == nil {
						l["cache_control"] = map[string]any{"type": "ephemeral"}
					}
				}
			}
			if !reflect.DeepEqual(ac, bc) {
				t.Fatalf("message %d's content changed: %v → %v", i, ac, bc)
			}
		}
	})
}
