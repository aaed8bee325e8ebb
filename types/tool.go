package types

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"

	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// strSpec is a str field's type: an attachment's marker is written as a
// str value shows it.
var strSpec = func() *signature.TypeSpec {
	s, err := signature.SpecOf(reflect.TypeFor[string]())
	if err != nil {
		panic(err)
	}
	return s
}()

// Tool is DSPy's dspy.Tool as an input: a function the model may call,
// shown by name, description and argument schemas. Args keeps the order
// the arguments were given in (a JSON object's member order), which the
// prompt shows.
type Tool struct {
	Name string
	Desc string
	Args json.RawMessage // a JSON object: argument name → JSON Schema

	call func(context.Context, []byte) (any, error) `json:"-"` // set by NewTool
}

// String is DSPy's str(tool): "name, whose description is <desc>…</desc>.
// It takes arguments {…}." with the arguments as a Python dict.
func (t Tool) String() string {
	args := "{}"
	if len(bytes.TrimSpace(t.Args)) > 0 {
		if r, err := pyReprJSON(t.Args); err == nil {
			args = r
		}
	}
	if t.Desc == "" {
		return t.Name + ". It takes arguments " + args + "."
	}
	return t.Name + ", whose description is <desc>" + strings.ReplaceAll(t.Desc, "\n", "  ") + "</desc>. It takes arguments " + args + "."
}

// MarshalText is the tool as the prompt shows it (String).
func (t Tool) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalJSON reads {"name": …, "desc": …, "args": {…}}.
func (t *Tool) UnmarshalJSON(b []byte) error {
	var w struct {
		Name string          `json:"name"`
		Desc string          `json:"desc"`
		Args json.RawMessage `json:"args"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("types: Tool: %w", err)
	}
	*t = Tool{Name: w.Name, Desc: w.Desc, Args: w.Args}
	return nil
}

// pyReprJSON renders JSON as Python's repr of the decoded value, keeping
// object member order: {'query': {'type': 'string'}, 'k': 3}.
func pyReprJSON(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := reprValue(dec, &b, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func reprValue(dec *json.Decoder, b *strings.Builder, depth int) error {
	if depth > 100 {
		return errors.New("nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch x := tok.(type) {
	case json.Delim:
		closing := map[json.Delim]byte{'{': '}', '[': ']'}[x]
		b.WriteByte(byte(x))
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if x == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				b.WriteString(pyjson.Repr(k))
				b.WriteString(": ")
			}
			if err := reprValue(dec, b, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteByte(closing)
	case json.Number:
		b.WriteString(x.String())
	default:
		b.WriteString(pyjson.Repr(x))
	}
	return nil
}

// ToolCall is one call the model asks for.
//
// Args holds the arguments as decoded JSON: numbers are int when they are
// integers that fit, float64 when written with a fraction or exponent, and
// json.Number (exact) beyond that. When the model's arguments cannot be
// read as one JSON object without guessing (malformed, cut off, given
// twice, not an object) Args is nil, Err says why and RawArgs keeps the
// text: Execute then reports the error to the model as the call's result
// and does not run the tool.
//
// Key order. DSPy keeps a call's arguments in the model's order (a Python
// dict keeps insertion order); Args, a Go map, has none. So every call
// read from a reply (NativeValue, ParseField, UnmarshalJSON) also keeps
// the arguments in the model's order in RawArgs, and everything that
// shows the arguments again — MarshalJSON (a History turn, a demo),
// NativeToolTurn (the native replay), Execute (the arguments traced and
// handed to the tool) — writes Args' values in RawArgs' order. The order
// is taken object by object, at every depth: an object of Args whose keys
// are not exactly those of the object at the same place in RawArgs (Args
// changed after reading, RawArgs from elsewhere, a call built by hand
// with no RawArgs) is written with its keys sorted, as encoding/json
// writes a map. The values written are always Args', never RawArgs'.
type ToolCall struct {
	ID   string         `json:"id,omitempty"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
	// Err is set when the arguments could not be read; see ErrToolArguments.
	Err error `json:"-"`
	// RawArgs is the arguments as JSON in the model's key order: for a
	// native call (NativeValue) and whenever Err is set, the text the
	// model wrote; for a call read from text (ParseField, UnmarshalJSON),
	// the arguments object read, written compactly, whether it came as an
	// object or as a string holding one. Only its key order is used when
	// Args are shown (see Key order above); with Err set, it is what is
	// shown.
	RawArgs string `json:"-"`
}

// ToolCalls is DSPy's dspy.ToolCalls as an output: the calls the model
// wants made. Parsing accepts what models write: {"tool_calls": [...]}, a
// bare list of calls, one call; calls as {name, args}, {name, arguments}
// or {"function": {name, arguments}}, arguments as a JSON string (repaired
// if need be); the id from id or call_id.
type ToolCalls struct {
	Calls []ToolCall
	// Results are the outcomes of the calls, when known (in a History
	// turn); they are shown as a tool_call_results user message after the
	// turn, never as part of the calls.
	Results *ToolCallResults
}

// ToolCallResult is the outcome of one call.
type ToolCallResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Value   any    `json:"value"`
	IsError bool   `json:"is_error"`
	// Err is a failed call's Go error, where the code that ran it kept it
	// (a predict.ReActV2 run's history does; a *adapter.PanicError for a
	// tool that panicked): Value is then the text the model was shown. It
	// is not written or read as JSON.
	Err error `json:"-"`
}

// ToolCallResults is DSPy's dspy.ToolCallResults.
type ToolCallResults struct {
	Results []ToolCallResult `json:"tool_call_results"`
}

// ToolCallResults returns the calls' results for the turn's
// tool_call_results message (the root's optional interface).
func (tc ToolCalls) ToolCallResults() (any, bool) {
	if tc.Results == nil {
		return nil, false
	}
	return *tc.Results, true
}

// TypeDescription is DSPy's ToolCalls.description().
func (ToolCalls) TypeDescription() string {
	return "Tool calls must be a JSON object with `tool_calls`, a list of calls. Each call must include `name` and `args`. Example: {\"tool_calls\": [{\"name\": \"search\", \"args\": {\"query\": \"cats\"}}]}"
}

// PromptSchema is the schema DSPy shows for ToolCalls (ids hidden).
func (ToolCalls) PromptSchema() map[string]any {
	return map[string]any{
		"$defs": map[string]any{"ToolCall": map[string]any{
			"properties": map[string]any{
				"args": map[string]any{"additionalProperties": true, "title": "Args", "type": "object"},
				"name": map[string]any{"title": "Name", "type": "string"},
			},
			"required": []any{"name", "args"},
			"title":    "ToolCall",
			"type":     "object",
		}},
		"properties": map[string]any{"tool_calls": map[string]any{"items": map[string]any{"$ref": "#/$defs/ToolCall"}, "title": "Tool Calls", "type": "array"}},
		"required":   []any{"tool_calls"},
		"title":      "ToolCalls",
		"type":       "object",
	}
}

// MarshalJSON writes {"tool_calls": [{"name": …, "args": {…}}]}, ids left
// out, as DSPy formats ToolCalls, the arguments in the model's key order
// (see [ToolCall]).
//
// A call whose arguments could not be read shows them as the text the
// model wrote (a JSON string), never as an empty object, so that a History
// turn replays what was asked; reading it back gives the same error.
func (tc ToolCalls) MarshalJSON() ([]byte, error) {
	type call struct {
		Name string `json:"name"`
		Args any    `json:"args"`
	}
	calls := make([]call, len(tc.Calls))
	for i, c := range tc.Calls {
		var args any = c.RawArgs
		if c.Args != nil || c.Err == nil {
			a, err := argsJSON(c.argsInOrder())
			if err != nil {
				return nil, fmt.Errorf("types: ToolCalls: the arguments of %q: %w", c.Name, err)
			}
			args = json.RawMessage(a)
		}
		calls[i] = call{c.Name, args}
	}
	return json.Marshal(struct {
		Calls []call `json:"tool_calls"`
	}{calls})
}

// UnmarshalJSON reads any of the shapes ParseField reads. A key given
// twice with different values is an error (adapter.ErrAmbiguous); a call
// whose stringified arguments cannot be read is kept with its Err set.
func (tc *ToolCalls) UnmarshalJSON(b []byte) error {
	v, err := jsonx.Decode(string(b))
	if err != nil {
		return toolCallsError(err)
	}
	return tc.fromDecoded(v, string(b), newArgReader())
}

// fromDecoded reads the calls from v, decoded from text; text, decoded
// again keeping each object's key order, gives every call's arguments
// their order (RawArgs).
func (tc *ToolCalls) fromDecoded(v any, text string, r *argReader) error {
	order, err := pyjson.Decode([]byte(text))
	if err != nil {
		order = nil // no order: the arguments render sorted
	}
	calls, err := toolCallsFrom(v, order, r)
	if err != nil {
		return err
	}
	tc.Calls, tc.Results = calls, nil
	if m, ok := v.(map[string]any); ok && m["tool_call_results"] != nil {
		raw, err := json.Marshal(m["tool_call_results"])
		if err != nil {
			return err
		}
		var r ToolCallResults
		var list []ToolCallResult
		switch {
		case decodeNumbers(raw, &r) == nil && r.Results != nil:
		case decodeNumbers(raw, &list) == nil:
			r.Results = list
		default:
			return fmt.Errorf("types: ToolCalls: tool_call_results is not a list of results")
		}
		for i := range r.Results {
			r.Results[i].Value = plainNumbers(r.Results[i].Value)
		}
		tc.Results = &r
	}
	return nil
}

// toolCallsError wraps a decoding error, keeping an ambiguity matchable.
func toolCallsError(err error) error {
	var dk *jsonx.DuplicateKeyError
	if errors.As(err, &dk) {
		return fmt.Errorf("types: ToolCalls: %w: %w", adapter.ErrAmbiguous, err)
	}
	return fmt.Errorf("types: ToolCalls: %w", err)
}

// ParseField reads tool calls from a field's text: JSON, or JSON with the
// slips jsonx repairs without changing a value (a Python literal's quotes
// and None, trailing commas, closing braces missing after a complete
// string). Text cut off inside a value, or right after a number, is an
// error matching adapter.ErrTruncated, never a call.
func (tc *ToolCalls) ParseField(raw string) error {
	s := strings.TrimSpace(raw)
	r := newArgReader()
	v, text, err := r.decode(s)
	if err != nil {
		if errors.Is(err, adapter.ErrTruncated) || errors.Is(err, adapter.ErrAmbiguous) {
			return fmt.Errorf("types: ToolCalls: %w", err)
		}
		return fmt.Errorf("types: ToolCalls: %q is not a list of calls: %w", clip(s), err)
	}
	return tc.fromDecoded(v, text, r)
}

// maxArgRepair bounds the bytes JSON repair may read while one reply's
// tool calls are parsed (repair is quadratic in its worst case, and the
// number of calls in a reply is the model's choice); arguments past it
// must be strict JSON.
const maxArgRepair = 4 * jsonx.MaxRepair

// argReader decodes JSON from one reply, strictly or through jsonx's
// guarded repair, within a repair budget.
type argReader struct{ repairLeft int }

func newArgReader() *argReader { return &argReader{repairLeft: maxArgRepair} }

// decode reads s as strict JSON, else repaired by jsonx (size and depth
// caps, no invented numbers, re-validated); a repair that would complete a
// cut value, a number at the end included, is adapter.ErrTruncated. It
// returns the JSON text it read too: s, or s repaired.
func (r *argReader) decode(s string) (any, string, error) {
	v, err := jsonx.Decode(s)
	var dk *jsonx.DuplicateKeyError
	switch {
	case err == nil:
		return v, s, nil
	case errors.As(err, &dk):
		return nil, "", fmt.Errorf("%w: %w", adapter.ErrAmbiguous, err)
	case len(s) > r.repairLeft:
		if len(s) > jsonx.MaxRepair {
			return nil, "", fmt.Errorf("not JSON (%v), and %w", err, jsonx.ErrTooLarge)
		}
		return nil, "", fmt.Errorf("not JSON (%v), and the reply's %d-byte repair budget is spent", err, maxArgRepair)
	}
	r.repairLeft -= len(s)
	fixed, err := jsonx.Exact(s)
	switch {
	case errors.Is(err, jsonx.ErrCut):
		return nil, "", fmt.Errorf("%w: %w", adapter.ErrTruncated, err)
	case errors.As(err, &dk):
		return nil, "", fmt.Errorf("%w: %w", adapter.ErrAmbiguous, err)
	case err != nil:
		return nil, "", err
	}
	v, err = jsonx.Decode(fixed)
	return v, fixed, err
}

// toolCallsFrom reads the calls in v; order is v as pyjson decodes it
// (objects keeping their key order), or nil.
func toolCallsFrom(v, order any, r *argReader) ([]ToolCall, error) {
	switch x := v.(type) {
	case []any:
		olist, _ := order.([]any)
		if len(olist) != len(x) {
			olist = nil
		}
		out := make([]ToolCall, 0, len(x))
		for i, c := range x {
			var oc any
			if olist != nil {
				oc = olist[i]
			}
			call, err := toolCallFrom(c, oc, r)
			if err != nil {
				return nil, err
			}
			out = append(out, call)
		}
		return out, nil
	case map[string]any:
		if list, ok := x["tool_calls"]; ok {
			return toolCallsFrom(list, member(order, "tool_calls"), r)
		}
		call, err := toolCallFrom(x, order, r)
		if err != nil {
			return nil, err
		}
		return []ToolCall{call}, nil
	}
	return nil, fmt.Errorf("types: ToolCalls: %T is not a list of calls", v)
}

// member is the value of key in order, a pyjson.Object, or nil.
func member(order any, key string) any {
	if o, ok := order.(pyjson.Object); ok {
		v, _ := o.Get(key)
		return v
	}
	return nil
}

func toolCallFrom(v, order any, r *argReader) (ToolCall, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return ToolCall{}, fmt.Errorf("types: ToolCalls: a call is %T, not an object", v)
	}
	if fn, ok := m["function"].(map[string]any); ok {
		order = member(order, "function")
		merged := map[string]any{"id": m["id"], "call_id": m["call_id"]}
		for k, v := range fn {
			merged[k] = v
		}
		m = merged
	}
	name, _ := m["name"].(string)
	if name == "" {
		return ToolCall{}, errors.New("types: ToolCalls: a call has no name")
	}
	call := ToolCall{Name: name}
	if id, ok := m["id"].(string); ok {
		call.ID = id
	} else if id, ok := m["call_id"].(string); ok {
		call.ID = id
	}
	key := "args"
	args, ok := m[key]
	if !ok {
		key = "arguments"
		args = m[key]
	}
	call.Args, call.RawArgs, call.Err = r.args(args, member(order, key))
	return call, nil
}

// args reads a call's arguments: an object, or a string holding one. No
// arguments (absent, null, an empty string) are an empty object. Anything
// else is an error matching ErrToolArguments, with the text kept. The
// text returned for an object is RawArgs: order (the object as pyjson
// decoded it, keeping the model's key order; for a string, its text
// decoded again) as compact JSON, so that one call compares equal
// whichever shape it came in; "" without an order.
func (r *argReader) args(v, order any) (map[string]any, string, error) {
	var raw string
	if s, isStr := v.(string); isStr {
		if strings.TrimSpace(s) == "" {
			return map[string]any{}, "", nil
		}
		d, text, err := r.decode(strings.TrimSpace(s))
		if err != nil {
			return nil, s, fmt.Errorf("%w: %w", ErrToolArguments, err)
		}
		v, raw = d, s
		if order, err = pyjson.Decode([]byte(text)); err != nil {
			order = nil
		}
	}
	switch x := v.(type) {
	case nil:
		return map[string]any{}, "", nil
	case map[string]any:
		raw = ""
		if o, ok := order.(pyjson.Object); ok {
			if b, err := o.MarshalJSON(); err == nil {
				raw = string(b)
			}
		}
		return plainNumbers(x).(map[string]any), raw, nil
	}
	if raw == "" {
		b, _ := json.Marshal(v)
		raw = string(b)
	}
	return nil, raw, fmt.Errorf("%w: a %s, not an object", ErrToolArguments, jsonKind(v))
}

// jsonKind names a decoded JSON value's kind.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "string"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// plainNumbers turns json.Number into int (an integer that fits) or
// float64 (written with a fraction or exponent); an integer beyond int's
// range, or a number float64 cannot hold, stays a json.Number, exact.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && int64(int(i)) == i {
			return int(i)
		}
		if strings.ContainsAny(x.String(), ".eE") {
			if f, err := x.Float64(); err == nil {
				return f
			}
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	}
	return v
}

// ToolDefinition is the tool as an OpenAI function (DSPy's
// format_as_litellm_function_call): its arguments as the parameters'
// properties, in order, required unless they have a default.
func (t Tool) ToolDefinition() (openai.Tool, error) {
	args := bytes.TrimSpace(t.Args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	var schemas map[string]map[string]json.RawMessage
	if err := json.Unmarshal(args, &schemas); err != nil {
		return openai.Tool{}, fmt.Errorf("types: tool %s: args: %w", t.Name, err)
	}
	keys, err := objectKeys(args)
	if err != nil {
		return openai.Tool{}, fmt.Errorf("types: tool %s: args: %w", t.Name, err)
	}
	required := []string{}
	for _, k := range keys {
		if _, ok := schemas[k]["default"]; !ok {
			required = append(required, k)
		}
	}
	req, _ := json.Marshal(required)
	params := `{"type":"object","properties":` + string(args) + `,"required":` + string(req) + `}`
	return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: t.Name, Description: t.Desc, Parameters: json.RawMessage(params),
	}}, nil
}

// objectKeys lists a JSON object's keys in order.
func objectKeys(raw []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

var (
	toolType  = reflect.TypeFor[Tool]()
	toolsType = reflect.TypeFor[[]Tool]()
)

// FormatHint is how DSPy asks for tool calls in the output reminder of the
// user message.
func (ToolCalls) FormatHint() string {
	return `must be a JSON object like {"tool_calls": [{"name": "...", "args": {...}}]}`
}

// PlanNative answers the field with native tool calls when the adapter
// asks for native function calling, the LM supports it and an input holds
// the tools (a Tool or []Tool): the tools go into the request, and the
// tools input and this output leave the prompt. Otherwise the calls are
// asked for in the text, as DSPy does for a model without function
// calling; when the adapter asked for native calls, the Plan's Note says
// why they were not (the Result's Notes).
func (ToolCalls) PlanNative(r adapter.NativeRequest) adapter.Plan {
	if !r.NativeTools {
		return adapter.Plan{}
	}
	if !hasToolInput(r.Signature) {
		return adapter.Plan{Err: errNoToolInput}
	}
	if !r.Caps.Tools {
		why := "the LM declares no tool support (adapter.Capabilities.Tools)"
		if r.Guessed {
			why = fmt.Sprintf("model %q is not known to support function calling (adapter.ModelCapabilities guessed from its name; declare it with adapter.WithCapabilities)", r.Request.Model)
		}
		return adapter.Plan{Note: fmt.Sprintf("%s: tool calls asked for in the text, not natively: %s", r.Field, why)}
	}
	for i := range r.Signature.NumInputs() {
		f := r.Signature.Input(i)
		if f.Type != toolType && f.Type != toolsType {
			continue
		}
		var tools []Tool
		switch v := r.Inputs[f.Name].(type) {
		case Tool:
			tools = []Tool{v}
		case []Tool:
			tools = v
		}
		defs := make([]openai.Tool, 0, len(tools))
		for _, t := range tools {
			d, err := t.ToolDefinition()
			if err != nil {
				return adapter.Plan{Note: fmt.Sprintf("%s: tool calls asked for in the text, not natively: tool %q has no definition to send: %v", r.Field, t.Name, err)}
			}
			defs = append(defs, d)
		}
		return adapter.Plan{
			Drop:       true,
			DropInputs: []string{f.Name},
			Request:    func(req *openai.ChatCompletionRequest) { req.Tools = defs },
		}
	}
	return adapter.Plan{}
}

// errNoToolInput: DSPy's check before a native tool call, whether or not
// the LM supports one.
var errNoToolInput = errors.New("the output receives tool calls, but no input field holds the tools: add an input of type list[Tool] (or Tool), or turn native tool calling off")

func hasToolInput(sig *signature.Signature) bool {
	for i := range sig.NumInputs() {
		if t := sig.Input(i).Type; t == toolType || t == toolsType {
			return true
		}
	}
	return false
}

// NativeValue reads the reply's native tool calls. Every call is kept, so
// that each id gets an answer: one whose arguments cannot be read, or
// that has no name, carries its Err (see [ToolCall]). Each call keeps its
// arguments' text in RawArgs, which gives their key order.
func (ToolCalls) NativeValue(choice openai.ChatCompletionChoice) (any, bool) {
	if len(choice.Message.ToolCalls) == 0 {
		return nil, false
	}
	var tc ToolCalls
	r := newArgReader()
	for _, c := range choice.Message.ToolCalls {
		call := ToolCall{ID: c.ID, Name: c.Function.Name}
		call.Args, _, call.Err = r.args(c.Function.Arguments, nil)
		call.RawArgs = c.Function.Arguments
		if call.Name == "" && call.Err == nil {
			call.Args, call.Err = nil, errors.New("the call names no tool")
		}
		tc.Calls = append(tc.Calls, call)
	}
	return tc, true
}

// NativeToolTurn replays the calls of a History turn as native messages:
// the calls (arguments as Python's json.dumps writes them, in the model's
// key order: see [ToolCall]) and one tool message per result; ok only
// when the results answer the calls one for one, by id.
func (tc ToolCalls) NativeToolTurn() ([]openai.ToolCall, []openai.ChatCompletionMessage, bool) {
	if tc.Results == nil || len(tc.Results.Results) != len(tc.Calls) {
		return nil, nil, false
	}
	calls := make([]openai.ToolCall, len(tc.Calls))
	msgs := make([]openai.ChatCompletionMessage, len(tc.Calls))
	var attached []attachment
	for i, c := range tc.Calls {
		r := tc.Results.Results[i]
		if c.ID == "" || r.CallID != c.ID {
			return nil, nil, false
		}
		var arguments string
		if c.Err != nil {
			arguments = c.RawArgs // what the model wrote: the turn replays it as it was
		} else {
			a, err := pyjson.MarshalASCII(c.argsInOrder()) // json.dumps(args), as DSPy replays them
			if err != nil {
				return nil, nil, false
			}
			arguments = string(a)
		}
		calls[i] = openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: c.Name, Arguments: arguments}}
		content, media, err := toolResultContent(r.Value)
		if err != nil {
			return nil, nil, false
		}
		for k, m := range media {
			attached = append(attached, attachment{call: c.ID, tool: r.Name, n: k + 1, v: m})
		}
		msgs[i] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: c.ID, Name: r.Name, Content: content}
	}
	if len(attached) > 0 {
		m, err := attachmentsMessage(attached)
		if err != nil {
			return nil, nil, false
		}
		msgs = append(msgs, m)
	}
	return calls, msgs, true
}

// An attachment is a media value (an Image, Audio, File or Document: an
// adapter.Formatter) a tool call's result holds: the n-th of the call's.
type attachment struct {
	call, tool string
	n          int
	v          adapter.Formatter
}

// toolResultContent is a result as its tool message shows it: a str as it
// is, another value as JSON (DSPy's); a result that holds media — a
// Formatter, or a list with some — shows its text items, one per line,
// and a line for each attachment, which follow as content parts in the
// user message after the turn's tool messages (a tool message can only
// hold text on OpenAI-compatible routes).
func toolResultContent(v any) (string, []adapter.Formatter, error) {
	items, media := mediaOf(v)
	if len(media) == 0 {
		if s, ok := v.(string); ok {
			return s, nil, nil
		}
		b, err := pyjson.Marshal(v)
		return string(b), nil, err
	}
	var lines []string
	k := 0
	for _, it := range items {
		if f, ok := it.(adapter.Formatter); ok && f != nil {
			k++
			lines = append(lines, fmt.Sprintf("[attachment %d: %s, in the message after the tool results]", k, attachmentKind(f)))
			continue
		}
		if s, ok := it.(string); ok {
			lines = append(lines, s)
			continue
		}
		b, err := pyjson.Marshal(it)
		if err != nil {
			return "", nil, err
		}
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n"), media, nil
}

// mediaOf returns a result's items (the result itself, or a list's
// elements) and the media values among them.
func mediaOf(v any) ([]any, []adapter.Formatter) {
	if f, ok := v.(adapter.Formatter); ok && f != nil {
		return []any{v}, []adapter.Formatter{f}
	}
	var items []any
	switch l := v.(type) {
	case []any:
		items = l
	default:
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || rv.Kind() != reflect.Slice || rv.Type().Elem().Kind() == reflect.Uint8 {
			return nil, nil
		}
		items = make([]any, rv.Len())
		for i := range items {
			items[i] = rv.Index(i).Interface()
		}
	}
	var media []adapter.Formatter
	for _, it := range items {
		if f, ok := it.(adapter.Formatter); ok && f != nil {
			media = append(media, f)
		}
	}
	return items, media
}

// attachmentKind names a media value by its first content part: image,
// audio, file.
func attachmentKind(f adapter.Formatter) string {
	parts, err := f.FormatParts()
	if err != nil || len(parts) == 0 {
		return "attachment"
	}
	switch parts[0].Type {
	case openai.ChatMessagePartTypeImageURL:
		return "image"
	case openai.ChatMessagePartTypeText:
		return "text"
	}
	if raw, ok := adapter.RawPartJSON(parts[0]); ok {
		var p struct{ Type string }
		if json.Unmarshal(raw, &p) == nil && p.Type != "" {
			switch p.Type {
			case "input_audio":
				return "audio"
			case "file":
				return "file"
			}
			return p.Type
		}
	}
	return "attachment"
}

// attachmentsMessage is the user message that carries a turn's
// attachments as content parts, each after a line naming its call.
func attachmentsMessage(attached []attachment) (openai.ChatCompletionMessage, error) {
	var b strings.Builder
	b.WriteString("The tool results above come with these attachments:")
	for _, a := range attached {
		marker, err := value.Format(a.v, strSpec)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		fmt.Fprintf(&b, "\n\n%s (call %s), attachment %d:\n%s", a.tool, a.call, a.n, marker)
	}
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: b.String()}, nil
}

// decodeNumbers decodes JSON keeping numbers as json.Number.
func decodeNumbers(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return dec.Decode(v)
}
