package adapter

import (
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// JSON is DSPy's JSONAdapter: inputs in [[ ## name ## ]] sections, the
// outputs asked for as one JSON object. Its prompts are byte-identical to
// DSPy 3.3.1's.
//
// The zero value is ready to use and safe for concurrent use.
type JSON struct {
	// Options are the settings JSON shares with the other adapters:
	// native tool calling on unless NativeTools turns it off, as in DSPy's
	// JSONAdapter; no fallback (NoFallback does nothing).
	Options Options
}

// Name returns "json".
func (JSON) Name() string { return "json" }

// NativeTools reports whether JSON asks for native function calling (on
// unless Options.NativeTools turns it off) and its parallel_tool_calls.
func (j JSON) NativeTools() (bool, Switch) { return j.Options.nativeTools(true) }

// WithNativeTools returns j with native function calling on.
func (j JSON) WithNativeTools() Adapter { j.Options.NativeTools = On; return j }

// Format renders the system message, the demos (assistant turns as JSON
// objects) and the user message with the JSON reminder.
func (j JSON) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	native, _ := j.NativeTools()
	return jsonLayout.format(j.Options.Prompt, sig, demos, inputs, native)
}

// outputRequirements returns the output requirements Format ends the
// request with, which a re-ask repeats (see outputRequirer).
func (j JSON) outputRequirements(sig *signature.Signature) (string, error) {
	return jsonLayout.requirements(j.Options.Prompt, sig)
}

// jsonLayout is how the JSON adapter writes a conversation.
var jsonLayout = layout{
	system: jsonSystem, structure: jsonStructure, reminder: jsonReminder,
	user: chatUser, assistant: jsonAssistant,
}

// jsonSystem renders the JSON adapter's system message.
func jsonSystem(sig *signature.Signature) (string, error) { return systemText(sig, jsonStructure) }

// jsonStructure writes DSPy's JSONAdapter.format_field_structure: the
// inputs in [[ ## name ## ]] sections, the outputs as a JSON object of
// placeholders with their type notes.
func jsonStructure(b *strings.Builder, sig *signature.Signature) error {
	b.WriteString("All interactions will be structured in the following way, with the appropriate values filled in.\n\nInputs will have the following structure:\n\n")
	for i := range sig.NumInputs() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		name := sig.Input(i).Name
		writeHeader(b, name)
		writePlaceholder(b, name)
	}
	b.WriteString("\n\nOutputs will be a JSON object with the following fields.\n\n")
	if sig.NumOutputs() == 0 {
		b.WriteString("{}")
	} else {
		b.WriteString("{")
		for i := range sig.NumOutputs() {
			if i > 0 {
				b.WriteByte(',')
			}
			f := sig.Output(i)
			note, err := typeNote(f)
			if err != nil {
				return err
			}
			placeholder := "{" + f.Name + "}"
			if note != "" {
				placeholder += "        # note: the value you produce " + note
			}
			b.WriteString("\n  ")
			b.WriteString(pyjson.Quote(f.Name))
			b.WriteString(": ")
			b.WriteString(pyjson.Quote(placeholder))
		}
		b.WriteString("\n}")
	}
	return nil
}

// jsonReminder is DSPy's JSONAdapter.user_message_output_requirements for
// a signature.
func jsonReminder(sig *signature.Signature) (string, error) {
	var b strings.Builder
	b.WriteString("Respond with a JSON object in the following order of fields: ")
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteString(", then ")
		}
		f := sig.Output(i)
		b.WriteString("`" + f.Name + "`")
		writeTypeInfo(&b, f)
	}
	b.WriteByte('.')
	return b.String(), nil
}

// jsonAssistant renders the outputs as DSPy's JSONAdapter does:
// json.dumps({name: value}, indent=2, ensure_ascii=False), a missing field
// as the missing text.
func jsonAssistant(a *arena, sig *signature.Signature, vals Values, missing string) (string, error) {
	if sig.NumOutputs() == 0 {
		return "{}", nil
	}
	b := &a.b // sized by arena.grow for the whole conversation
	start := b.Len()
	b.WriteByte('{')
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteByte(',')
		}
		name := sig.OutputName(i)
		b.WriteString("\n  ")
		pyjson.WriteQuote(b, name)
		b.WriteString(": ")
		v, ok := vals[name]
		if !ok {
			pyjson.WriteQuote(b, missing)
			continue
		}
		if s, isStr := v.(string); isStr {
			pyjson.WriteQuote(b, s) // the common case, without reflection
			continue
		}
		enc, err := pyjson.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return "", &InputError{Field: name, Err: err}
		}
		b.Write(enc)
	}
	b.WriteString("\n}")
	return b.String()[start:], nil
}

// Parse reads the output fields from a JSON reply: a flat object without
// building a map, strict JSON, then the objects found in code fences and
// prose (the only one with output keys, one that holds every other's
// values, or the later one when the text between corrects the first),
// each strictly, with unquoted string values read as text, with one
// forgotten closing bracket supplied, then repaired (only that span). It
// unwraps a single wrapper key ({"json": {...}}, {"properties": {...}}), a
// tool-call envelope ({"name": …, "arguments": {...}}) and a
// double-encoded reply, accepts a bare array for a signature whose one
// output takes it (a list, Any, a union with a list member; any other
// reply that is a JSON array is an error, as in DSPy), key case
// differences, and a key that is a rename (prefix or suffix) of the one
// missing output. A reply in another shape (Chat markers, XML
// elements, labels, bare text for a single str output) is read as such.
// Values go through [ParseValue] (strings) or the same rules for decoded
// JSON values.
func (JSON) Parse(sig *signature.Signature, completion string) (Values, error) {
	return parseReply(sig, completion, "json", JSON{}.replyShape())
}

// replyShape: a JSON reply is read as JSON first.
func (JSON) replyShape() reply.Shape { return reply.JSON }

// NewFieldStream returns a FieldStream for JSON replies: the members of the
// reply's top-level object are routed to the output fields they name (as
// Parse names them: exact, then case-insensitive). A string value streams
// as it grows, its escapes decoded; any other value (a number, a bool,
// null, an array, an object) is reported once complete, as its JSON text.
// Text around the object (prose, a code fence) belongs to no field. A
// leading <think> block streams as reasoning, as for every adapter.
//
// A string's closing quote is held until the next significant byte
// confirms it ends the value (',', ':', '}', ']' or the end of the reply,
// as Parse reads an unescaped quote): in {"answer": "He said "hi" twice"}
// the inner quotes stream as part of the value. A key given again in the
// same object is not streamed again (Parse keeps one value, or reports
// two different ones); a later object (a correction after a draft)
// streams too, each field's first delta in it replacing what the field
// received from an earlier one (FieldDelta.Replace).
func (JSON) NewFieldStream(sig *signature.Signature) FieldStream {
	return reply.NewJSONStream(sig)
}

// decodedValue converts a decoded JSON value to the field's type: a string
// through ParseValue's text rules, anything else through the same rules for
// decoded values, paying JSON repair from the reply's budget b.
func decodedValue(v any, f signature.Field, b *jsonx.Budget) (any, error) {
	if s, ok := v.(string); ok {
		return value.ParseIn(s, f.Spec, b)
	}
	return value.FromJSONIn(v, f.Spec, b)
}

// Response modes of the JSON adapter, reported in [Result].Mode.
const (
	ModeJSONSchema = "json_schema" // strict structured outputs
	ModeJSONObject = "json_object" // JSON mode
	ModePrompt     = "prompt"      // JSON asked for in the prompt only
)

// ShapeRequest sets the response format, choosing the best tier the LM
// supports (see [Capabilities]): a strict json_schema built from the output
// fields, else json_object, else the prompt alone. A signature that strict
// mode cannot express (maps, Any) starts at json_object. A response format
// in the caller's request template is kept as it is.
func (JSON) ShapeRequest(sig *signature.Signature, req *openai.ChatCompletionRequest, caps Capabilities, level int) (string, bool, error) {
	return shapeJSON(sig, req, caps, level)
}

// shapesAsJSON reports an adapter whose ShapeRequest is shapeJSON (JSON,
// BAML), which the pipeline calls directly (see shapeRequest): through the
// RequestShaper interface the request would move to the heap, one
// allocation more per request.
func shapesAsJSON(a Adapter) bool {
	switch a.(type) {
	case JSON, BAML:
		return true
	}
	return false
}

// shapeJSON is the JSON and BAML adapters' ShapeRequest.
func shapeJSON(sig *signature.Signature, req *openai.ChatCompletionRequest, caps Capabilities, level int) (string, bool, error) {
	if req.ResponseFormat != nil {
		return string(req.ResponseFormat.Type), level == 0, nil
	}
	var tiers [3]string
	n := 0
	var schema *signature.StrictSchema
	if caps.StructuredOutputs {
		if s, err := sig.StrictSchema(); err == nil {
			schema = s
			tiers[n] = ModeJSONSchema
			n++
		}
	}
	if caps.JSONMode {
		tiers[n] = ModeJSONObject
		n++
	}
	tiers[n] = ModePrompt
	n++
	if level >= n {
		return "", false, nil
	}
	switch tiers[level] {
	case ModeJSONSchema:
		// The response format and its json_schema in one allocation.
		rf := &struct {
			format openai.ChatCompletionResponseFormat
			schema openai.ChatCompletionResponseFormatJSONSchema
		}{
			format: openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONSchema},
			schema: openai.ChatCompletionResponseFormatJSONSchema{Name: schema.Name, Schema: schema.Schema, Strict: true},
		}
		rf.format.JSONSchema = &rf.schema
		req.ResponseFormat = &rf.format
	case ModeJSONObject:
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return tiers[level], true, nil
}
