package types

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// History is DSPy's dspy.History: earlier turns of the conversation, each
// a map of the signature's field names to values. As an input it expands
// into user and assistant messages between the demos and the request
// (adapter.Conversation); a turn's missing outputs show as None.
//
// A turn may also be one chat message, as users write them:
// {"role": "user", "content": "Hi, I'm Ann."}, with role "user",
// "assistant" or "system" and content a string. It is sent as a message of
// that role, in its place among the turns (DSPy 3.3.1 drops such a turn
// and shows a None reply). A turn that mixes the two shapes, a "tool"
// message, another role or key, content that is not a string, or a turn
// none of whose keys names a field, is an *adapter.InputError
// (adapter.ErrHistoryTurn) naming the turn and its keys.
//
// Turns holding tool calls (a ToolCalls value) are shown as text, DSPy's
// non-native mode; their results follow as a tool_call_results user
// message.
type History struct {
	Messages []map[string]any `json:"messages"`
}

// Turns returns the messages.
func (h History) Turns() []map[string]any { return h.Messages }

// UnmarshalJSON reads {"messages": [{field: value, …}, …]}, keeping each
// object or array value as raw JSON so that its member order, which the
// prompt shows, survives; strings, numbers and bools are decoded.
func (h *History) UnmarshalJSON(b []byte) error {
	var w struct {
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("types: History: %w", err)
	}
	h.Messages = make([]map[string]any, len(w.Messages))
	for i, m := range w.Messages {
		turn := make(map[string]any, len(m))
		for k, raw := range m {
			t := bytes.TrimSpace(raw)
			switch {
			case len(t) == 0 || string(t) == "null":
				turn[k] = nil
			case t[0] == '{' && bytes.Contains(t, []byte(`"tool_calls"`)):
				// A turn's tool calls, with their results if given.
				var tc ToolCalls
				if err := tc.UnmarshalJSON(t); err != nil {
					return fmt.Errorf("types: History: %w", err)
				}
				turn[k] = tc
			case t[0] == '{' || t[0] == '[':
				turn[k] = json.RawMessage(t)
			default:
				var v any
				dec := json.NewDecoder(bytes.NewReader(t))
				dec.UseNumber()
				if err := dec.Decode(&v); err != nil {
					return fmt.Errorf("types: History: %w", err)
				}
				turn[k] = v
			}
		}
		h.Messages[i] = turn
	}
	return nil
}
