package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// Formatter is implemented by values that stand for content parts of a
// user message rather than text: images (and, where the client can send
// them, audio and files). Wherever such a value appears in a user message,
// alone or inside a list or struct, the message is split into content
// parts at that place, exactly where DSPy splits it. An error (a part the
// client cannot send) fails Format, naming the field.
type Formatter interface {
	FormatParts() ([]openai.ChatMessagePart, error)
}

// Conversation is implemented by an input value that stands for earlier
// turns of the conversation (DSPy's History). Each turn holds values of the
// signature's fields; it becomes a user message (its inputs) and an
// assistant message (its outputs, a missing one as None) between the demos
// and the request. Only the first such input counts; it stays listed in the
// system message, as DSPy lists it.
//
// A turn may instead be one chat message, written as users write them:
// {"role": "user", "content": "…"}, with role "user", "assistant" or
// "system" and content a string. It is sent as a message of that role
// with that content, in its place among the turns (DSPy 3.3.1 drops such
// a turn, showing an assistant reply of None). A "tool" message answers a
// call by its id, which such a turn cannot give: tool calls and their
// results are a field turn's ToolCalls value. A turn that is neither, that
// mixes both shapes, or whose role or content is another value, is an
// *InputError (ErrHistoryTurn) naming the turn and its keys.
type Conversation interface {
	Turns() []Values
}

var (
	conversationType = reflect.TypeFor[Conversation]()
	formatterType    = reflect.TypeFor[Formatter]()
)

// formatTurns appends what follows the system message and the demos, as
// DSPy's Adapter.format does: the conversation history (the input of
// index history, the first whose type is a Conversation; -1 for none, see
// sigTraits), then the request (its inputs already converted to their
// fields' types, see convertInputs) ending in the output requirements,
// reminder. A turn holding tool calls is replayed as the provider's tool
// calls when the adapter asks for native tools.
func (l *layout) formatTurns(ar *arena, msgs []openai.ChatCompletionMessage, sig *signature.Signature, history int, inputs Values, reminder string, nativeTools bool) ([]openai.ChatCompletionMessage, error) {
	var err error
	user, assistant := l.user, l.assistant
	reqSig, reqInputs := sig, inputs
	if history >= 0 {
		name := sig.Input(history).Name
		reqSig = sig.Delete(name)
		reqInputs = make(Values, len(inputs))
		for k, v := range inputs {
			if k != name {
				reqInputs[k] = v
			}
		}
		if conv, ok := asConversation(inputs[name]); ok {
			for i, turn := range conv.Turns() {
				role, content, isMessage, err := messageTurn(sig, turn)
				if err != nil {
					return nil, &InputError{Field: name, Err: fmt.Errorf("%w: turn %d: %w", ErrHistoryTurn, i+1, err)}
				}
				if isMessage {
					msgs = append(msgs, openai.ChatCompletionMessage{Role: role, Content: content})
					continue
				}
				u, err := user(ar, reqSig, turn, "", "")
				if err != nil {
					return nil, err
				}
				if u != "" {
					msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: u})
				}
				if nativeTools {
					var handled bool
					if msgs, handled, err = appendNativeToolTurn(ar, msgs, reqSig, turn, assistant); err != nil {
						return nil, err
					} else if handled {
						continue
					}
				}
				full := make(Values, len(turn)+reqSig.NumOutputs())
				for k, v := range turn {
					full[k] = v
				}
				for i := range reqSig.NumOutputs() {
					if _, ok := full[reqSig.Output(i).Name]; !ok {
						full[reqSig.Output(i).Name] = nil // DSPy renders a missing output as None
					}
				}
				a, err := assistant(ar, reqSig, full, "")
				if err != nil {
					return nil, err
				}
				if a != "" {
					msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: a})
				}
				if msgs, err = appendToolResults(ar, msgs, reqSig, turn, user); err != nil {
					return nil, err
				}
			}
		}
	}
	u, err := user(ar, reqSig, reqInputs, "", reminder)
	if err != nil {
		return nil, err
	}
	if u != "" {
		msgs = appendMessage(msgs, openai.ChatMessageRoleUser, u)
	}
	return msgs, nil
}

// The keys of a Conversation turn written as a chat message, and the
// roles it may have.
const (
	turnRole    = "role"
	turnContent = "content"
)

var messageRoles = []string{openai.ChatMessageRoleUser, openai.ChatMessageRoleAssistant, openai.ChatMessageRoleSystem}

// messageTurn reads a Conversation turn written as a chat message
// ({"role": …, "content": …}, the role not a field of sig): ok reports it,
// with the message's role and content. A turn with no "role" key is a turn
// of sig's fields (ok false), as DSPy renders it, unless none of its keys
// names a field and it holds no tool calls, which DSPy would show as None
// replies. The error says what is wrong, naming the keys.
func messageTurn(sig *signature.Signature, turn Values) (role, content string, ok bool, err error) {
	isField := func(k string) bool { _, _, f := sig.Field(k); return f }
	keys := slices.Sorted(maps.Keys(turn))
	if _, hasRole := turn[turnRole]; !hasRole || isField(turnRole) {
		for _, k := range keys {
			if isField(k) {
				return "", "", false, nil
			}
			if _, calls := turn[k].(nativeToolTurn); calls {
				return "", "", false, nil
			}
		}
		if len(keys) == 0 {
			return "", "", false, errors.New("an empty turn (no field of the signature, no message)")
		}
		return "", "", false, fmt.Errorf("no key names a field of the signature (%s); a chat message needs %q and %q", quoteKeys(keys), turnRole, turnContent)
	}
	var fields, others []string
	for _, k := range keys {
		switch {
		case isField(k):
			fields = append(fields, k)
		case k != turnRole && k != turnContent:
			others = append(others, k)
		}
	}
	switch {
	case len(fields) > 0:
		return "", "", false, fmt.Errorf("%q makes it a chat message, but it also holds the signature's fields %s (its keys: %s): a turn is one or the other", turnRole, quoteKeys(fields), quoteKeys(keys))
	case len(others) > 0:
		return "", "", false, fmt.Errorf("a chat message holds %q and %q only, not %s", turnRole, turnContent, quoteKeys(others))
	}
	role, isString := turn[turnRole].(string)
	switch {
	case !isString:
		return "", "", false, fmt.Errorf("%q is %s, not a string", turnRole, typeName(turn[turnRole]))
	case role == openai.ChatMessageRoleTool:
		return "", "", false, fmt.Errorf("%q %q: a tool message answers a tool call by its id; give the calls and their results as a ToolCalls value in a turn of the signature's fields", turnRole, role)
	case !slices.Contains(messageRoles, role):
		return "", "", false, fmt.Errorf("%q %q: want %s", turnRole, role, quoteKeys(messageRoles))
	}
	c, present := turn[turnContent]
	if !present {
		return "", "", false, fmt.Errorf("a chat message without %q", turnContent)
	}
	if content, isString = c.(string); !isString {
		return "", "", false, fmt.Errorf("%q is %s, not a string", turnContent, typeName(c))
	}
	return role, content, true, nil
}

func quoteKeys(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = strconv.Quote(k)
	}
	return strings.Join(q, ", ")
}

func typeName(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}

// expandAll splits the user messages of msgs at content-part markers and
// removes the parts key from the others.
func expandAll(msgs []openai.ChatCompletionMessage) {
	for i := range msgs {
		if msgs[i].Role == openai.ChatMessageRoleUser {
			expandParts(&msgs[i])
		} else {
			msgs[i].Content = value.StripKey(msgs[i].Content)
		}
	}
}

// toolResulter is implemented by a turn's tool-calls value that knows the
// calls' results (types.ToolCalls).
type toolResulter interface {
	ToolCallResults() (any, bool)
}

// appendToolResults adds, after a history turn whose tool calls carry
// results, DSPy's user message holding them as a tool_call_results field.
func appendToolResults(ar *arena, msgs []openai.ChatCompletionMessage, sig *signature.Signature, turn Values, user userFunc) ([]openai.ChatCompletionMessage, error) {
	for i := range sig.NumOutputs() {
		tr, ok := turn[sig.Output(i).Name].(toolResulter)
		if !ok {
			continue
		}
		results, ok := tr.ToolCallResults()
		if !ok {
			continue
		}
		rsig, err := signature.New("", []signature.Field{{Name: "tool_call_results", Type: reflect.TypeOf(results)}}, nil)
		if err != nil {
			return nil, err
		}
		u, err := user(ar, rsig, Values{"tool_call_results": results}, "", "")
		if err != nil {
			return nil, err
		}
		return append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: u}), nil
	}
	return msgs, nil
}

// nativeToolTurn is implemented by a turn's tool-calls value that can
// replay itself as native messages (types.ToolCalls): the calls for the
// assistant message and one tool message per result, ok when the results
// answer the calls one for one.
type nativeToolTurn interface {
	NativeToolTurn() (calls []openai.ToolCall, results []openai.ChatCompletionMessage, ok bool)
}

// appendNativeToolTurn replays a history turn holding tool calls as DSPy
// does with native function calling: the assistant message holds the other
// outputs present (or no content) and, when the results match the calls,
// the calls themselves, followed by one tool message per result. It
// reports false for turns without tool calls. The calls are looked for
// among the outputs and, since native mode leaves the tool-calls output out
// of the signature it formats, among the turn's other values.
func appendNativeToolTurn(ar *arena, msgs []openai.ChatCompletionMessage, sig *signature.Signature, turn Values, assistant assistantFunc) ([]openai.ChatCompletionMessage, bool, error) {
	name, nt := turnToolCalls(sig, turn)
	if nt == nil {
		return msgs, false, nil
	}
	csig := sig.Delete(name)
	for i := range sig.NumOutputs() {
		f := sig.Output(i)
		if v, ok := turn[f.Name]; f.Name != name && (!ok || isNil(v)) {
			csig = csig.Delete(f.Name)
		}
	}
	content := ""
	if csig.NumOutputs() > 0 {
		var err error
		if content, err = assistant(ar, csig, turn, ""); err != nil {
			return nil, true, err
		}
	}
	calls, results, ok := nt.NativeToolTurn()
	if content == "" && !ok {
		return msgs, true, nil
	}
	m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content}
	if ok {
		m.ToolCalls = calls
	}
	msgs = append(msgs, m)
	if ok {
		msgs = append(msgs, results...)
	}
	return msgs, true, nil
}

// turnToolCalls finds a turn's tool calls: an output's value first, then
// the value of a key that names no field of sig (the output native mode
// left out), the first such key in sorted order.
func turnToolCalls(sig *signature.Signature, turn Values) (string, nativeToolTurn) {
	for i := range sig.NumOutputs() {
		if v, ok := turn[sig.Output(i).Name].(nativeToolTurn); ok {
			return sig.Output(i).Name, v
		}
	}
	var name string
	var nt nativeToolTurn
	for k, v := range turn {
		if _, _, isField := sig.Field(k); isField || (nt != nil && k > name) {
			continue
		}
		if t, ok := v.(nativeToolTurn); ok {
			name, nt = k, t
		}
	}
	return name, nt
}

func asConversation(v any) (Conversation, bool) {
	if c, ok := v.(Conversation); ok {
		return c, true
	}
	rv := reflect.ValueOf(v)
	if rv.IsValid() && rv.Kind() != reflect.Pointer {
		p := reflect.New(rv.Type())
		p.Elem().Set(rv)
		c, ok := p.Interface().(Conversation)
		return c, ok
	}
	return nil, false
}

// expandParts splits a user message whose text holds content-part markers
// into text parts (unstripped, empty ones left out) and the parts the
// markers carry. Only markers rendered from a Formatter value count (they
// carry value.PartsKey): marker text that came in plain text, an input
// string, a demo or a History turn, stays text, as written. A message
// whose text holds DSPy's start marker all the same is sent as content
// parts, as DSPy sends every user message holding it (textParts).
func expandParts(m *openai.ChatCompletionMessage) {
	content := m.Content
	if !strings.Contains(content, value.PartsKey) {
		textParts(m) // the common case: no Formatter value, so no marker and no key
		return
	}
	if !strings.Contains(content, value.PartsOpen) {
		m.Content = value.StripKey(content)
		textParts(m)
		return
	}
	var parts []openai.ChatMessagePart
	text := func(s string) {
		if s != "" {
			parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: value.StripKey(s)})
		}
	}
	for {
		i := strings.Index(content, value.PartsOpen)
		if i < 0 {
			break
		}
		j := strings.Index(content[i+len(value.PartsOpen):], value.PartsEnd)
		if j < 0 {
			break
		}
		text(content[:i])
		payload := strings.TrimSpace(content[i+len(value.PartsOpen) : i+len(value.PartsOpen)+j])
		parts = append(parts, decodeParts(payload)...)
		content = content[i+len(value.PartsOpen)+j+len(value.PartsEnd):]
	}
	text(content)
	m.Content, m.MultiContent = "", parts
}

// textParts sends a user message whose text holds DSPy's start marker but
// no marker of a Formatter value as one text part holding that text: DSPy
// turns every user message holding the start marker into content parts
// (a demo value SIMBA cut short, an input quoting the marker), and the text
// stays text here, so that is one text part, byte for byte DSPy's when the
// marker has no end. Where DSPy would also read a complete marker's parts
// out of the text, it stays text here (see expandParts).
func textParts(m *openai.ChatCompletionMessage) {
	if m.Content != "" && strings.Contains(m.Content, value.PartsStart) {
		m.MultiContent = []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: m.Content}}
		m.Content = ""
	}
}

// decodeParts reads a marker's payload: a JSON list of parts, or one
// escaped inside a JSON string (a marker within a JSON dump, such as a list
// of images); anything else is kept as text.
func decodeParts(payload string) []openai.ChatMessagePart {
	var parts []openai.ChatMessagePart
	if json.Unmarshal([]byte(payload), &parts) == nil {
		return parts
	}
	var unquoted string
	if json.Unmarshal([]byte(`"`+payload+`"`), &unquoted) == nil && json.Unmarshal([]byte(unquoted), &parts) == nil {
		return parts
	}
	return []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: payload}}
}
