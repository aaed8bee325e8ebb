package types_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/types"
)

// historyReplies are one reply per adapter, answering "answer".
var historyReplies = map[string]string{
	"chat": "[[ ## answer ## ]]\nAnn.\n\n[[ ## completed ## ]]",
	"json": `{"answer": "Ann."}`,
	"xml":  "<answer>Ann.</answer>",
}

// TestHistoryMessageTurns: a History whose turns are chat messages as
// users write them ({"role": "user", "content": …}; DSPy 3.3.1 drops them
// and shows two None replies, open requests #9115, #9326) reaches the
// model as messages of those roles, in order, among the turns of the
// signature's fields, which render as DSPy renders them; through Call,
// Stream and the real client, for Chat, JSON and XML, written in Go or
// read from JSON.
func TestHistoryMessageTurns(t *testing.T) {
	sig := parse(t, "question, history: History -> answer")
	fieldTurn := map[string]any{"question": "Where do I live?", "answer": "Oslo."}
	h := types.History{Messages: []map[string]any{
		{"role": "system", "content": "The user is Ann."},
		{"role": "user", "content": "Hi, I'm Ann."},
		{"role": "assistant", "content": "Hello Ann."},
		fieldTurn,
		{"role": "user", "content": ""},
	}}
	var fromJSON types.History
	require.NoError(t, json.Unmarshal([]byte(`{"messages": [{"role": "system", "content": "The user is Ann."}, {"role": "user", "content": "Hi, I'm Ann."},
		{"role": "assistant", "content": "Hello Ann."}, {"question": "Where do I live?", "answer": "Oslo."}, {"content": "", "role": "user"}]}`), &fromJSON))

	for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
		// What DSPy sends for the field turn alone.
		only, err := a.Format(sig, nil, adapter.Values{"question": "What's my name?", "history": types.History{Messages: []map[string]any{fieldTurn}}})
		require.NoError(t, err, a.Name())
		require.Len(t, only, 4, a.Name())

		for name, hist := range map[string]types.History{"go": h, "json": fromJSON} {
			srv := lmtest.NewServer(lmtest.Text(historyReplies[a.Name()]), lmtest.Text(historyReplies[a.Name()]))
			in := adapter.Values{"question": "What's my name?", "history": hist}
			res, err := adapter.Call(context.Background(), srv.Client(), sig, nil, in, adapter.UseAdapter(a))
			require.NoError(t, err, "%s %s", a.Name(), name)
			assert.Equal(t, "Ann.", res.Outputs[0]["answer"])
			for chunk, err := range adapter.Stream(context.Background(), srv.Client(), sig, nil, in, adapter.UseAdapter(a)) {
				require.NoError(t, err, "%s %s", a.Name(), name)
				if chunk.Done {
					assert.Equal(t, "Ann.", chunk.Result.Outputs[0]["answer"])
				}
			}
			require.Len(t, srv.Requests(), 2)
			for _, req := range srv.Requests() {
				msgs := req.Chat.Messages
				require.Len(t, msgs, 8, "%s %s: system, three messages, the field turn's two, a message, the request", a.Name(), name)
				assert.Equal(t, only[0], msgs[0], a.Name())
				assert.Equal(t, openai.ChatCompletionMessage{Role: "system", Content: "The user is Ann."}, msgs[1], a.Name())
				assert.Equal(t, openai.ChatCompletionMessage{Role: "user", Content: "Hi, I'm Ann."}, msgs[2], a.Name())
				assert.Equal(t, openai.ChatCompletionMessage{Role: "assistant", Content: "Hello Ann."}, msgs[3], a.Name())
				assert.Equal(t, only[1:3], msgs[4:6], "%s %s: the field turn as DSPy renders it", a.Name(), name)
				assert.Equal(t, openai.ChatCompletionMessage{Role: "user", Content: ""}, msgs[6], a.Name())
				assert.Equal(t, only[3], msgs[7], a.Name())
				for _, m := range msgs {
					assert.NotContains(t, m.Content, "None", "%s %s: no None reply", a.Name(), name)
					assert.NotContains(t, m.Content, "null", "%s %s: no null reply", a.Name(), name)
				}
			}
			srv.Close()
		}
	}
}

// TestHistoryTurnRefused: a turn that is neither the signature's fields
// nor one chat message — both shapes at once, a tool message, another
// role, content that is not a string, other keys, no key naming a field —
// is an *adapter.InputError (ErrHistoryTurn) naming the history input, the
// turn and its keys, and nothing is sent. DSPy 3.3.1 shows each as None.
func TestHistoryTurnRefused(t *testing.T) {
	sig := parse(t, "question, history: History -> answer")
	for _, c := range []struct {
		turn map[string]any
		want string
	}{
		{map[string]any{"role": "user", "content": "Hi", "question": "Where?"},
			`turn 2: "role" makes it a chat message, but it also holds the signature's fields "question" (its keys: "content", "question", "role")`},
		{map[string]any{"role": "user", "question": "Where?", "answer": "Oslo."},
			`turn 2: "role" makes it a chat message, but it also holds the signature's fields "answer", "question"`},
		{map[string]any{"role": "tool", "content": "rain"},
			`turn 2: "role" "tool": a tool message answers a tool call by its id; give the calls and their results as a ToolCalls value`},
		{map[string]any{"role": "developer", "content": "Be brief."},
			`turn 2: "role" "developer": want "user", "assistant", "system"`},
		{map[string]any{"role": "User", "content": "Hi"}, `turn 2: "role" "User": want "user", "assistant", "system"`},
		{map[string]any{"role": 1, "content": "Hi"}, `turn 2: "role" is a int, not a string`},
		{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Hi"}}}, `turn 2: "content" is a []interface {}, not a string`},
		{map[string]any{"role": "assistant", "content": nil}, `turn 2: "content" is null, not a string`},
		{map[string]any{"role": "assistant"}, `turn 2: a chat message without "content"`},
		{map[string]any{"role": "user", "content": "Hi", "name": "ann"}, `turn 2: a chat message holds "role" and "content" only, not "name"`},
		{map[string]any{"content": "Hi"}, `turn 2: no key names a field of the signature ("content"); a chat message needs "role" and "content"`},
		{map[string]any{"user": "Hi", "assistant": "Hello"}, `turn 2: no key names a field of the signature ("assistant", "user")`},
		{map[string]any{}, `turn 2: an empty turn`},
	} {
		h := types.History{Messages: []map[string]any{{"role": "user", "content": "Hi, I'm Ann."}, c.turn}}
		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}, adapter.XML{}} {
			srv := lmtest.NewServer(lmtest.Text(historyReplies[a.Name()]))
			_, err := adapter.Call(context.Background(), srv.Client(), sig, nil, adapter.Values{"question": "What's my name?", "history": h}, adapter.UseAdapter(a))
			var inErr *adapter.InputError
			require.ErrorAs(t, err, &inErr, "%s %v", a.Name(), c.turn)
			assert.Equal(t, "history", inErr.Field)
			assert.ErrorIs(t, err, adapter.ErrHistoryTurn)
			assert.ErrorContains(t, err, c.want, a.Name())
			assert.Empty(t, srv.Requests(), "nothing is sent")
			srv.Close()
		}
	}

	// "content" a field of the signature: a field turn without "role"
	// renders as DSPy renders it; with "role" it is refused, not guessed.
	csig := parse(t, "content, history: History -> summary")
	msgs, err := adapter.Chat{}.Format(csig, nil, adapter.Values{"content": "x", "history": types.History{Messages: []map[string]any{{"content": "a", "summary": "b"}}}})
	require.NoError(t, err)
	assert.Equal(t, "[[ ## content ## ]]\na", msgs[1].Content)
	_, err = adapter.Chat{}.Format(csig, nil, adapter.Values{"content": "x", "history": types.History{Messages: []map[string]any{{"role": "user", "content": "a"}}}})
	assert.ErrorIs(t, err, adapter.ErrHistoryTurn)
	assert.ErrorContains(t, err, `turn 1: "role" makes it a chat message, but it also holds the signature's fields "content"`)

	// A field named "role": the turn is the signature's fields.
	rsig := parse(t, "role, history: History -> answer")
	msgs, err = adapter.Chat{}.Format(rsig, nil, adapter.Values{"role": "x", "history": types.History{Messages: []map[string]any{{"role": "admin", "answer": "b"}}}})
	require.NoError(t, err)
	assert.Equal(t, "[[ ## role ## ]]\nadmin", msgs[1].Content)
}

// FuzzHistoryTurns: whatever turns a History read from JSON holds,
// formatting either refuses it with an *InputError naming the history
// input or sends each chat-message turn as its own message, in order;
// never a panic.
func FuzzHistoryTurns(f *testing.F) {
	for _, s := range []string{
		`{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]}`,
		`{"messages": [{"question": "q", "answer": "a"}, {"role": "system", "content": "Be brief."}]}`,
		`{"messages": [{"role": "user", "content": "Hi", "question": "q"}]}`,
		`{"messages": [{"role": "tool", "content": "x"}, {}, {"content": "c"}]}`,
		`{"messages": [{"role": "user", "content": {"a": 1}}, {"role": null, "content": "x"}]}`,
		`{"messages": [{"question": "q", "tool_calls": {"tool_calls": [{"name": "f", "args": {}}]}}]}`,
	} {
		f.Add(s)
	}
	sig := parse(f, "question, history: History -> answer")
	f.Fuzz(func(t *testing.T, s string) {
		var h types.History
		if json.Unmarshal([]byte(s), &h) != nil {
			return
		}
		for _, a := range []adapter.Adapter{adapter.Chat{}, adapter.JSON{}} {
			msgs, err := a.Format(sig, nil, adapter.Values{"question": "now?", "history": h})
			if err != nil {
				var inErr *adapter.InputError
				if !errors.As(err, &inErr) || inErr.Field != "history" {
					t.Fatalf("%s: %v", a.Name(), err)
				}
				continue
			}
			next := 1
			for i, turn := range h.Messages {
				role, _ := turn["role"].(string)
				content, isText := turn["content"].(string)
				if len(turn) != 2 || !isText || role == "" {
					continue
				}
				for next < len(msgs) && (msgs[next].Role != role || msgs[next].Content != content) {
					next++
				}
				if next == len(msgs) {
					t.Fatalf("%s: turn %d (%q %q) is not sent", a.Name(), i+1, role, content)
				}
				next++
			}
		}
	})
}
