package adapter

import (
	"reflect"
	"strings"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// Chat is DSPy's ChatAdapter: every field in a [[ ## name ## ]] section,
// the reply ended by [[ ## completed ## ]]. Its prompts are byte-identical
// to DSPy 3.3.1's. Its parser reads what DSPy reads and, without another LM
// call, the slips real models make: marker drift (bold, heading, case,
// spacing, mid-line, "]]:", missing or extra brackets), the answer given
// as JSON, fenced JSON, XML elements or "Answer: …" labels instead of
// markers, a field given with a label ("## Title", "**Title:**") among
// fields given with markers, bare text for a single str output, an output named with a
// prefix or suffix of its name, a code fence around the reply, <think>
// blocks and preambles before the first marker, and chatter after the last
// field. A marker in the middle of a line is recovery only: it never
// overrides a line-start marker of its field.
//
// A field's text is read without its surrounding white space, as DSPy
// reads it; a blank section of an Optional[str] is "". In an assistant
// turn of a demo or FormatFinetune, None for a type whose text "None"
// reads as a value (Optional[str]) leaves the field's section out, since a
// missing nullable output reads as None (DSPy writes "None", which reads
// back as the string). Values are not escaped, as in DSPy: one holding
// text the reader takes for a field marker cannot be carried.
//
// The zero value is ready to use and safe for concurrent use.
type Chat struct {
	// Options are the settings Chat shares with the other adapters: a JSON
	// fallback unless NoFallback, native tool calling off unless
	// NativeTools turns it on, as in DSPy's ChatAdapter.
	Options Options
}

// Name returns "chat".
func (Chat) Name() string { return "chat" }

// NativeTools reports whether Chat asks for native function calling (off
// unless Options.NativeTools turns it on) and its parallel_tool_calls.
func (c Chat) NativeTools() (bool, Switch) { return c.Options.nativeTools(false) }

// WithNativeTools returns c with native function calling on.
func (c Chat) WithNativeTools() Adapter { c.Options.NativeTools = On; return c }

// Fallback returns the adapter a failed parse is retried with: the JSON
// adapter with c's tool options and the pieces of its Prompt JSON writes
// as Chat does; nil with NoFallback.
func (c Chat) Fallback() Adapter { return c.Options.fallback() }

// DSPy's texts for demos with missing fields.
const (
	incompleteDemoPrefix = "This is an example of the task, though some input or output fields are not supplied."
	notSuppliedExample   = "Not supplied for this particular example. "
	notSuppliedHistory   = "Not supplied for this conversation history message. "
)

// Format renders the system message, the demos as user/assistant pairs
// (incomplete demos first, then complete ones, as DSPy orders them) and the
// user message with the output reminder.
func (c Chat) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	native, _ := c.NativeTools()
	return chatLayout.format(c.Options.Prompt, sig, demos, inputs, native)
}

// outputRequirements returns the output requirements Format ends the
// request with, which a re-ask repeats (see outputRequirer).
func (c Chat) outputRequirements(sig *signature.Signature) (string, error) {
	return chatLayout.requirements(c.Options.Prompt, sig)
}

// chatLayout is how the Chat adapter writes a conversation.
var chatLayout = layout{
	system: chatSystem, structure: chatStructure, reminder: chatReminder,
	user: chatUser, assistant: chatAssistant,
}

// userFunc and assistantFunc render one turn of an adapter's conversation.
// missing is the text of an output missing from vals: a demo's or a
// training example's; "" for a History turn, whose missing outputs come
// as nil and show as None, as DSPy shows them (a demo's None is written so
// that it reads back as None: see omitNone).
type (
	userFunc      func(a *arena, sig *signature.Signature, vals Values, prefix, reminder string) (string, error)
	assistantFunc func(a *arena, sig *signature.Signature, vals Values, missing string) (string, error)
)

// demoKind is how DSPy's format_demos takes a demo.
type demoKind uint8

const (
	demoDropped    demoKind = iota // neither complete nor kept
	demoIncomplete                 // kept, written first, with the incomplete prefix
	demoComplete                   // every field has a non-nil value
)

// formatDemos appends the demos as DSPy's format_demos does: a demo is
// complete when every field has a non-nil value; an incomplete one is kept
// if it has at least one input and one output key; incomplete demos come
// first.
func formatDemos(ar *arena, msgs []openai.ChatCompletionMessage, sig *signature.Signature, demos []Values, user userFunc, assistant assistantFunc) ([]openai.ChatCompletionMessage, error) {
	var kindBuf [16]demoKind
	kinds := kindBuf[:0]
	if len(demos) > len(kindBuf) {
		kinds = make([]demoKind, 0, len(demos))
	}
	for _, d := range demos {
		kinds = append(kinds, kindOf(sig, d))
	}
	for _, pass := range [...]demoKind{demoIncomplete, demoComplete} {
		for i, d := range demos {
			if kinds[i] != pass {
				continue
			}
			prefix, missing := incompleteDemoPrefix, notSuppliedExample
			if pass == demoComplete {
				prefix, missing = "", notSuppliedHistory
			}
			u, err := user(ar, sig, d, prefix, "")
			if err != nil {
				return nil, err
			}
			a, err := assistant(ar, sig, d, missing)
			if err != nil {
				return nil, err
			}
			msgs = appendMessage(msgs, openai.ChatMessageRoleUser, u)
			msgs = appendMessage(msgs, openai.ChatMessageRoleAssistant, a)
		}
	}
	return msgs, nil
}

// appendMessage appends a message with a role and text, written in place
// (appending a whole message struct costs a write barrier per field while
// the collector runs).
func appendMessage(msgs []openai.ChatCompletionMessage, role, content string) []openai.ChatCompletionMessage {
	if len(msgs) < cap(msgs) {
		msgs = msgs[:len(msgs)+1]
	} else {
		msgs = append(msgs, openai.ChatCompletionMessage{})
	}
	m := &msgs[len(msgs)-1]
	m.Role, m.Content = role, content
	return msgs
}

// kindOf returns how format_demos takes demo d.
func kindOf(sig *signature.Signature, d Values) demoKind {
	complete := true
	var hasIn, hasOut bool
	for i := range sig.NumInputs() {
		v, ok := d[sig.InputName(i)]
		hasIn = hasIn || ok
		complete = complete && ok && !isNil(v)
	}
	for i := range sig.NumOutputs() {
		v, ok := d[sig.OutputName(i)]
		hasOut = hasOut || ok
		complete = complete && ok && !isNil(v)
	}
	switch {
	case complete:
		return demoComplete
	case hasIn && hasOut:
		return demoIncomplete
	}
	return demoDropped
}

// isNil reports a nil value, including a typed nil pointer, slice or map
// (Go's spelling of Python's None).
func isNil(v any) bool {
	switch v.(type) {
	case nil:
		return true
	case string:
		return false // the common case, without reflection
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// chatSystem renders the system message: field descriptions, the field
// structure with type notes, and the task description.
func chatSystem(sig *signature.Signature) (string, error) { return systemText(sig, chatStructure) }

// chatStructure writes DSPy's ChatAdapter.format_field_structure: every
// field in its [[ ## name ## ]] section, the outputs with their type notes.
func chatStructure(b *strings.Builder, sig *signature.Signature) error {
	b.WriteString("All interactions will be structured in the following way, with the appropriate values filled in.\n\n")
	for i := range sig.NumInputs() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		writeHeader(b, sig.Input(i).Name)
		writePlaceholder(b, sig.Input(i).Name)
	}
	b.WriteString("\n\n")
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		f := sig.Output(i)
		writeHeader(b, f.Name)
		writePlaceholder(b, f.Name)
		note, err := typeNote(f)
		if err != nil {
			return err
		}
		if note != "" {
			b.WriteString("        # note: the value you produce ")
			b.WriteString(note)
		}
	}
	b.WriteString("\n\n[[ ## completed ## ]]")
	return nil
}

func writeHeader(b *strings.Builder, name string) {
	b.WriteString("[[ ## ")
	b.WriteString(name)
	b.WriteString(" ## ]]\n")
}

func writePlaceholder(b *strings.Builder, name string) {
	b.WriteByte('{')
	b.WriteString(name)
	b.WriteByte('}')
}

// formatted is one field value rendered for a message.
type formatted struct {
	text    string
	present bool
}

// formatFields renders the values of the fields of role r present in
// vals into dst, and returns the total length.
func formatFields(dst []formatted, sig *signature.Signature, r signature.Role, vals Values) ([]formatted, int, error) {
	size := 0
	for i := range numFields(sig, r) {
		name := fieldName(sig, r, i)
		v, ok := vals[name]
		if !ok {
			dst = append(dst, formatted{})
			continue
		}
		s, isStr := v.(string) // a string is its own text (value.Format's fast path)
		if !isStr {
			var err error
			if s, err = formatValue(v, fieldAt(sig, r, i)); err != nil {
				return nil, 0, err
			}
		}
		dst = append(dst, formatted{s, true})
		size += len(s) + len(name) + 16
	}
	return dst, size, nil
}

// chatUser renders DSPy's format_user_message_content, the user message of
// Chat and JSON: the prefix, one [[ ## name ## ]] section per input present
// in vals, and the reminder of the output fields ("" but on the main
// request); joined by blank lines and stripped.
func chatUser(a *arena, sig *signature.Signature, vals Values, prefix, reminder string) (string, error) {
	var buf [8]formatted
	fs, size, err := formatFields(buf[:0], sig, signature.Input, vals)
	if err != nil {
		return "", err
	}
	b := &a.b
	start := b.Len()
	b.Grow(size + len(prefix) + len(reminder) + 2)
	b.WriteString(prefix)
	for i, f := range fs {
		if !f.present {
			continue
		}
		b.WriteString("\n\n")
		writeHeader(b, sig.InputName(i))
		b.WriteString(f.text)
	}
	if reminder != "" {
		b.WriteString("\n\n")
		b.WriteString(reminder)
	}
	return a.since(start), nil
}

// chatReminder is DSPy's user_message_output_requirements for a signature.
func chatReminder(sig *signature.Signature) (string, error) {
	var b strings.Builder
	b.WriteString("Respond with the corresponding output fields, starting with the field ")
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteString(", then ")
		}
		f := sig.Output(i)
		b.WriteString("`[[ ## ")
		b.WriteString(f.Name)
		b.WriteString(" ## ]]`")
		writeTypeInfo(&b, f)
	}
	b.WriteString(", and then ending with the marker for `[[ ## completed ## ]]`.")
	return b.String(), nil
}

// writeTypeInfo writes DSPy's type_info of an output in the reminder:
// nothing for a str, the type's own hint when it gives one (ToolCalls),
// else "(must be formatted as a valid Python <type>)".
func writeTypeInfo(b *strings.Builder, f signature.Field) {
	if hint := f.Spec.FormatHint(); hint != "" {
		b.WriteString(" (")
		b.WriteString(hint)
		b.WriteByte(')')
		return
	}
	if !f.Spec.IsStr() {
		b.WriteString(" (must be formatted as a valid Python ")
		b.WriteString(f.Spec.String())
		b.WriteByte(')')
	}
}

// chatAssistant renders DSPy's format_assistant_message_content: every
// output in its section (missing ones as the missing text), stripped, then
// the completed marker.
func chatAssistant(a *arena, sig *signature.Signature, vals Values, missing string) (string, error) {
	var buf [8]formatted
	fs, size, err := formatFields(buf[:0], sig, signature.Output, vals)
	if err != nil {
		return "", err
	}
	b := &a.b
	start := b.Len()
	b.Grow(size + len(missing)*len(fs) + 32*len(fs) + 32)
	last := len(fs) - 1
	for last >= 0 && fs[last].present && omitNone(sig.Output(last), vals, missing) {
		last--
	}
	wrote := false
	for i, f := range fs {
		if f.present && omitNone(sig.Output(i), vals, missing) {
			continue
		}
		if wrote {
			b.WriteString("\n\n")
		}
		wrote = true
		text := f.text
		if !f.present {
			text = missing
		}
		name := sig.OutputName(i)
		if i == last {
			// The message is stripped: the last value loses its trailing
			// space, and an empty last value its header's line break.
			if text = strings.TrimRightFunc(text, unicode.IsSpace); text == "" {
				b.WriteString("[[ ## ")
				b.WriteString(name)
				b.WriteString(" ## ]]")
				continue
			}
		}
		writeHeader(b, name)
		b.WriteString(text)
	}
	if wrote {
		b.WriteString("\n\n")
	}
	b.WriteString("[[ ## completed ## ]]\n")
	return b.String()[start:], nil
}

// omitNone reports an output of a demo or training example (missing
// text given) whose value is None where the text "None" would read as a
// value (Optional[str] keeps it as the string "None", as DSPy does): its
// section is left out of the assistant turn, and a missing nullable output
// reads as None. DSPy writes "None" there, which it reads back as the
// string; a History turn still does, as DSPy's.
func omitNone(f signature.Field, vals Values, missing string) bool {
	return missing != "" && isNil(vals[f.Name]) && writesNoneAsEmpty(f.Spec)
}

// Parse reads the output fields from a Chat-format reply. See [Chat] for
// what it recovers. A field repeated with two different non-empty values
// is an ErrAmbiguous error; everything after the first completed marker is
// ignored. Missing fields take their default, nullable ones nil; any other
// missing field is an ErrMissingField error carrying the fields read.
func (Chat) Parse(sig *signature.Signature, completion string) (Values, error) {
	return parseReply(sig, completion, "chat", Chat{}.replyShape())
}

// replyShape: a Chat reply is read in field markers first.
func (Chat) replyShape() reply.Shape { return reply.Markers }

// NewFieldStream returns a FieldStream for Chat replies: it finds markers
// as the text arrives, with the same leniency as Parse, holding back only
// text that could still turn out to be part of a marker, trailing
// whitespace (which Parse trims), a str value that may turn out to be
// wrapped in quotes (Parse drops them), and a last line that may close a
// code fence around the whole reply. A field's marker given again after
// its text was sent streams as text outside any field: Parse keeps the
// first value. A leading <think> block streams as reasoning, as for every
// adapter.
//
// A marker in the middle of a line is recovery only for Parse: it counts
// unless the reply also marks that field (or, for completed, another
// output) at the start of a line later on. The stream cannot know that
// yet, so from such a marker on it holds everything back and, on Close,
// sends what Parse reads from the whole reply.
func (Chat) NewFieldStream(sig *signature.Signature) FieldStream {
	return reply.NewMarkerStream(sig, chatValues)
}

// chatValues is Chat's Parse, by which a Chat field stream settles a reply
// it could not follow (see NewFieldStream).
func chatValues(sig *signature.Signature, text string) (map[string]any, error) {
	return Chat{}.Parse(sig, text)
}

// FormatFinetune returns the conversation of one training example for
// OpenAI's chat fine-tuning, as DSPy's ChatAdapter.format_finetune_data
// builds it: the messages Format sends, then the assistant message holding
// outputs.
func (c Chat) FormatFinetune(sig *signature.Signature, demos []Values, inputs, outputs Values) ([]openai.ChatCompletionMessage, error) {
	msgs, err := c.Format(sig, demos, inputs)
	if err != nil {
		return nil, err
	}
	a, err := chatAssistant(&arena{}, sig, outputs, notSuppliedExample)
	if err != nil {
		return nil, err
	}
	return append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: value.StripKey(a)}), nil
}
