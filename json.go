package adapter

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// JSON is DSPy's JSONAdapter: inputs in [[ ## name ## ]] sections, the
// outputs asked for as one JSON object. Its prompts are byte-identical to
// DSPy 3.3.1's.
//
// The zero value is ready to use and safe for concurrent use.
type JSON struct {
	// NoNativeTools turns off native function calling, which the JSON
	// adapter uses by default (as DSPy's JSONAdapter does): a ToolCalls
	// output is answered through the request's tools when the LM supports
	// them.
	NoNativeTools bool
}

func (j JSON) nativeTools() bool { return !j.NoNativeTools }

func init() { jsonFallback = JSON{} }

// Name returns "json".
func (JSON) Name() string { return "json" }

// Format renders the system message, the demos (assistant turns as JSON
// objects) and the user message with the JSON reminder.
func (j JSON) Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error) {
	if sig == nil {
		return nil, errNilSignature
	}
	msgs := make([]openai.ChatCompletionMessage, 0, 2+2*len(demos))
	sys, err := jsonSystem(sig)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: sys})
	return formatTurns(msgs, sig, demos, inputs, jsonUser, jsonAssistant, !j.NoNativeTools)
}

func jsonSystem(sig *signature.Signature) (string, error) {
	var b strings.Builder
	b.Grow(512)
	b.WriteString("Your input fields are:\n")
	writeFieldDescriptions(&b, sig, false)
	b.WriteString("\nYour output fields are:\n")
	writeFieldDescriptions(&b, sig, true)
	b.WriteString("\nAll interactions will be structured in the following way, with the appropriate values filled in.\n\nInputs will have the following structure:\n\n")
	for i := range sig.NumInputs() {
		if i > 0 {
			b.WriteString("\n\n")
		}
		name := sig.Input(i).Name
		writeHeader(&b, name)
		b.WriteString("{" + name + "}")
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
				return "", err
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
	b.WriteByte('\n')
	writeObjective(&b, sig.Instructions())
	return b.String(), nil
}

// jsonUser is Chat's user message with the JSON reminder.
func jsonUser(sig *signature.Signature, vals Values, prefix string, main bool) (string, error) {
	if !main {
		return chatUser(sig, vals, prefix, false)
	}
	return userMessage(sig, vals, prefix, jsonReminder)
}

// writeJSONReminder writes DSPy's JSONAdapter.user_message_output_requirements.
func writeJSONReminder(b *strings.Builder, sig *signature.Signature) {
	b.WriteString("Respond with a JSON object in the following order of fields: ")
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteString(", then ")
		}
		f := sig.Output(i)
		b.WriteString("`" + f.Name + "`")
		if !f.Spec.IsStr() {
			b.WriteString(" (must be formatted as a valid Python ")
			b.WriteString(f.Spec.String())
			b.WriteByte(')')
		}
	}
	b.WriteByte('.')
}

// jsonAssistant renders the outputs as DSPy's JSONAdapter does:
// json.dumps({name: value}, indent=2, ensure_ascii=False), a missing field
// as the missing text.
func jsonAssistant(sig *signature.Signature, vals Values, missing string) (string, error) {
	if sig.NumOutputs() == 0 {
		return "{}", nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := range sig.NumOutputs() {
		if i > 0 {
			b.WriteByte(',')
		}
		f := sig.Output(i)
		b.WriteString("\n  ")
		b.WriteString(pyjson.Quote(f.Name))
		b.WriteString(": ")
		v, ok := vals[f.Name]
		if !ok {
			b.WriteString(pyjson.Quote(missing))
			continue
		}
		enc, err := pyjson.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return "", &InputError{Field: f.Name, Err: err}
		}
		b.Write(enc)
	}
	b.WriteString("\n}")
	return b.String(), nil
}

// Parse reads the output fields from a JSON reply: strict JSON first, then
// the JSON object found in prose or a code fence, then (only on that span)
// a repaired object. It unwraps a single wrapper key ({"json": {...}},
// {"properties": {...}}), a tool-call envelope ({"name": …, "arguments":
// {...}}) and a double-encoded reply, reads Chat markers or XML elements
// given instead of JSON, accepts a bare array for a single list output,
// key case differences, and a renamed key where exactly one output and one
// key are left over and one name contains the other. Values go through
// [ParseValue] (strings) or the same rules for decoded JSON values.
func (JSON) Parse(sig *signature.Signature, completion string) (Values, error) {
	return parseJSONFields(sig, completion, "json")
}

// wrapperDepth bounds how many wrapper objects are unwrapped.
const wrapperDepth = 3

// wrapped returns what a wrapper object holds: the value of its only key
// ({"json": {...}}, {"function": {...}}), or the arguments of a tool-call
// envelope ({"name": "respond", "arguments": {...}}).
func wrapped(obj map[string]any) (any, bool) {
	if len(obj) == 1 {
		for _, v := range obj {
			return v, true
		}
	}
	if _, named := obj["name"].(string); !named || len(obj) > 4 {
		return nil, false
	}
	var args any
	found := 0
	for _, k := range [...]string{"arguments", "parameters", "args", "input"} {
		if v, ok := obj[k]; ok {
			args = v
			found++
		}
	}
	return args, found == 1
}

func parseJSONFields(sig *signature.Signature, completion, adapter string) (Values, error) {
	return parseJSON(sig, completion, adapter, true)
}

// parseJSON is the JSON parser; with markers set, a reply without JSON
// but with Chat markers is read as sections (once: that parse does not
// come back here).
func parseJSON(sig *signature.Signature, completion, adapter string, markers bool) (Values, error) {
	text := stripReasoning(sig, completion)
	var top any
	var err error
	if flat, ok := decodeFlat(strings.TrimSpace(text)); ok {
		top = flat
	} else {
		top, err = decodeReply(text)
		if errors.Is(err, ErrAmbiguous) {
			if v, ok := pickObject(sig, text); ok {
				top, err = v, nil
			}
		}
	}
	if str, ok := top.(string); ok && err == nil {
		// A double-encoded reply: the object serialised into a JSON string.
		if inner, err2 := decodeReply(str); err2 == nil {
			top = inner
		}
	}
	obj, isObj := top.(map[string]any)
	if err == nil && !isObj {
		arr, isArr := top.([]any)
		if isArr && sig.NumOutputs() == 1 && isListKind(sig.Output(0).Spec) {
			obj, isObj = map[string]any{sig.Output(0).Name: arr}, true
		} else {
			err = errNotObject
		}
	}
	if markers && errors.Is(err, errNotObject) {
		switch {
		case hasOutputMarker(sig, text):
			// Chat markers instead of JSON: read them.
			return parseChat(sig, completion, adapter, false)
		case hasOutputElement(sig, text):
			// XML elements instead of JSON (the XML parser does not come
			// back here: it found elements).
			return parseXMLFields(sig, completion, adapter)
		}
	}
	if err != nil {
		return nil, &ParseError{Adapter: adapter, Completion: completion, Err: err}
	}
	obj = unwrap(sig, obj)
	var buf [8]keyRef
	keys := mapKeys(sig, obj, buf[:0])
	vals := make(Values, sig.NumOutputs())
	for i, k := range keys {
		if !k.ok {
			continue
		}
		f := sig.Output(i)
		v, err := decodedValue(obj[k.key], f)
		if err != nil {
			return nil, &ParseError{Adapter: adapter, Field: f.Name, Completion: completion, Partial: vals, Err: err}
		}
		vals[f.Name] = v
	}
	return finishOutputs(sig, vals, completion, adapter)
}

// unwrap returns the object inside wrapper objects (see wrapped) when obj
// itself has no output key.
func unwrap(sig *signature.Signature, obj map[string]any) map[string]any {
	for range wrapperDepth {
		if matchesAnyOutput(sig, obj) {
			break
		}
		v, ok := wrapped(obj)
		if !ok {
			break
		}
		if str, ok := v.(string); ok {
			// A stringified object under a wrapper key.
			v, _ = decodeReply(str)
		}
		inner, ok := v.(map[string]any)
		if !ok {
			break
		}
		obj = inner
	}
	return obj
}

// maxCandidates bounds the objects pickObject compares.
const maxCandidates = 16

// pickObject chooses the answer among several JSON objects in a reply
// when that takes no judgement: the only one with output keys (the others
// are drafts or examples with other keys), or the one that holds every
// other candidate's output keys with the same values (a partial draft,
// then the complete answer). Two candidates that disagree stay ambiguous.
func pickObject(sig *signature.Signature, text string) (map[string]any, bool) {
	var cands []map[string]any
	for _, span := range jsonx.Objects(text, maxCandidates) {
		v, err := decodeSpan(span)
		if err != nil {
			return nil, false // an object we cannot read might be the answer
		}
		obj, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if obj = unwrap(sig, obj); matchesAnyOutput(sig, obj) {
			cands = append(cands, obj)
		}
	}
	for _, c := range cands {
		if holdsAll(sig, c, cands) {
			return c, true
		}
	}
	return nil, false
}

// holdsAll reports whether big has every output key of each candidate with
// an equal value.
func holdsAll(sig *signature.Signature, big map[string]any, cands []map[string]any) bool {
	for _, c := range cands {
		for k, v := range c {
			if resolveMarkerName(sig, k) < 0 {
				continue
			}
			w, ok := big[k]
			if !ok || !reflect.DeepEqual(v, w) {
				return false
			}
		}
	}
	return true
}

func isListKind(spec *signature.TypeSpec) bool {
	if spec.Kind() == signature.KindOptional {
		spec = spec.Elem()
	}
	return spec.Kind() == signature.KindList
}

func matchesAnyOutput(sig *signature.Signature, obj map[string]any) bool {
	for k := range obj {
		if resolveMarkerName(sig, k) >= 0 {
			return true
		}
	}
	return false
}

// keyRef is the object key an output field was found under.
type keyRef struct {
	key string
	ok  bool
}

// mapKeys maps output indexes to the object's keys: exact names, then a
// unique case-insensitive match, then one renamed key where exactly one
// output and one key are left and one name contains the other.
func mapKeys(sig *signature.Signature, obj map[string]any, keys []keyRef) []keyRef {
	n := sig.NumOutputs()
	for range n {
		keys = append(keys, keyRef{})
	}
	used := 0
	for k := range obj {
		i := resolveMarkerName(sig, k)
		if i < 0 {
			continue
		}
		if prev := keys[i]; prev.ok {
			if prev.key == sig.Output(i).Name || k != sig.Output(i).Name {
				continue // the exact name wins over a case variant
			}
			used--
		}
		keys[i] = keyRef{k, true}
		used++
	}
	if used != n-1 || len(obj) != used+1 {
		return keys
	}
	missing := 0
	for i, k := range keys {
		if !k.ok {
			missing = i
		}
	}
	f := sig.Output(missing)
	if f.HasDefault {
		return keys
	}
	for k := range obj {
		if resolveMarkerName(sig, k) >= 0 {
			continue
		}
		a, b := normKey(k), normKey(f.Name)
		if a != "" && b != "" && (strings.Contains(a, b) || strings.Contains(b, a)) {
			keys[missing] = keyRef{k, true}
		}
	}
	return keys
}

func normKey(s string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(s))
}

// decodeReply decodes the JSON value of a reply: the whole text strictly,
// else an object serialised into a string under a wrapper key, else the
// span found in prose or a fence (strictly, then repaired). A repair of a
// value cut off mid-way is ErrTruncated; a second, different object after
// the first is ErrAmbiguous (nothing says which one is the answer).
func decodeReply(text string) (any, error) {
	t := strings.TrimSpace(text)
	if v, err := jsonx.Decode(t); err == nil || isDuplicate(err) {
		return v, ambiguousKey(err)
	}
	if inner, ok := stringWrapped(t); ok {
		if v, err := decodeReply(inner); err == nil {
			if _, isObj := v.(map[string]any); isObj {
				return v, nil
			}
		}
	}
	span, start, ok := jsonx.Extract(t)
	if !ok {
		return nil, errNotObject
	}
	v, err := decodeSpan(span)
	if err != nil {
		return nil, ambiguousKey(err)
	}
	if _, isObj := v.(map[string]any); isObj {
		if span2, _, ok := jsonx.Extract(t[start+len(span):]); ok && strings.HasPrefix(span2, "{") {
			if v2, err := jsonx.Decode(span2); err == nil && !reflect.DeepEqual(v, v2) {
				return nil, wrapf(ErrAmbiguous, "the reply holds two different JSON objects")
			}
		}
	}
	return v, nil
}

// isDuplicate reports a *jsonx.DuplicateKeyError.
func isDuplicate(err error) bool {
	var dk *jsonx.DuplicateKeyError
	return errors.As(err, &dk)
}

// ambiguousKey makes a repeated key with two values an ErrAmbiguous error.
func ambiguousKey(err error) error {
	if isDuplicate(err) {
		return wrapf(ErrAmbiguous, err.Error())
	}
	return err
}

// decodeSpan decodes an extracted span strictly, else repaired.
func decodeSpan(span string) (any, error) {
	if v, err := jsonx.Decode(span); err == nil || isDuplicate(err) {
		return v, err
	}
	fixed, info, err := jsonx.Repair(span)
	if err != nil {
		return nil, wrapf(errNotObject, err.Error())
	}
	if info.Truncated {
		return nil, ErrTruncated
	}
	return jsonx.Decode(fixed)
}

// stringWrapped recognises {"key": "{...}"} whose string holds a JSON
// object with unescaped quotes (models serialise the answer into a string
// under a wrapper key), and returns the object's text.
func stringWrapped(t string) (string, bool) {
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return "", false
	}
	body := strings.TrimSpace(t[1 : len(t)-1])
	if len(body) < 2 || body[0] != '"' {
		return "", false
	}
	end := strings.IndexByte(body[1:], '"')
	if end < 0 {
		return "", false
	}
	rest := strings.TrimSpace(body[end+2:])
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 3 || rest[0] != '"' || rest[len(rest)-1] != '"' || (rest[1] != '{' && rest[1] != '[') {
		return "", false
	}
	inner := rest[1 : len(rest)-1]
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\"`, `"`, `\\`, `\`).Replace(inner), true
}

// decodeFlat is the fast path for the common reply: one flat JSON object
// whose values are strings without escapes, numbers, true, false or null.
// It reports false for anything else, which the general decoder handles.
func decodeFlat(t string) (map[string]any, bool) {
	if len(t) < 2 || t[0] != '{' || t[len(t)-1] != '}' {
		return nil, false
	}
	m := make(map[string]any, 4)
	i := skipWS(t, 1)
	if t[i] == '}' {
		return m, i == len(t)-1
	}
	for {
		key, j, ok := flatString(t, i)
		if !ok {
			return nil, false
		}
		if i = skipWS(t, j); t[i] != ':' {
			return nil, false
		}
		i = skipWS(t, i+1)
		var v any
		switch c := t[i]; {
		case c == '"':
			v, j, ok = flatString(t, i)
		case c == '-' || c >= '0' && c <= '9':
			j = i + 1
			for j < len(t) && strings.IndexByte("0123456789.eE+-", t[j]) >= 0 {
				j++
			}
			v, ok = json.Number(t[i:j]), json.Valid([]byte(t[i:j]))
		case strings.HasPrefix(t[i:], "true"):
			v, j, ok = true, i+4, true
		case strings.HasPrefix(t[i:], "false"):
			v, j, ok = false, i+5, true
		case strings.HasPrefix(t[i:], "null"):
			v, j, ok = nil, i+4, true
		default:
			ok = false
		}
		if _, dup := m[key]; !ok || dup {
			return nil, false // a repeated key: the general decoder judges it
		}
		m[key] = v
		switch i = skipWS(t, j); t[i] {
		case ',':
			i = skipWS(t, i+1)
		case '}':
			return m, i == len(t)-1
		default:
			return nil, false
		}
	}
}

// skipWS skips JSON whitespace; it stops at the last byte at the latest.
func skipWS(t string, i int) int {
	for i < len(t)-1 {
		switch t[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return min(i, len(t)-1)
}

// flatString reads a JSON string without escapes or control characters at
// t[i] and returns its text and the index after it.
func flatString(t string, i int) (string, int, bool) {
	if t[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(t); j++ {
		switch c := t[j]; {
		case c == '"':
			s := t[i+1 : j]
			return s, j + 1, utf8.ValidString(s)
		case c == '\\' || c < 0x20:
			return "", 0, false
		}
	}
	return "", 0, false
}

// decodedValue converts a decoded JSON value to the field's type: a string
// through ParseValue's text rules, anything else through the same rules for
// decoded values.
func decodedValue(v any, f signature.Field) (any, error) {
	if s, ok := v.(string); ok {
		return parseValue(s, f)
	}
	return value.FromJSON(v, f.Spec)
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
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{
			Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
				Name:   schema.Name,
				Schema: schema.Schema,
				Strict: true,
			},
		}
	case ModeJSONObject:
		req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return tiers[level], true, nil
}
