package predict

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/types"
)

// ToolArgs are the arguments of one tool call as the model wrote them: a
// JSON object whose members keep their order (DSPy's dict). It is the type
// of ReAct's next_tool_args output, shown to the model as dict[str, Any],
// and of Step.Args. The zero value is the empty object.
type ToolArgs json.RawMessage

// TypeName is the name the model sees: dict[str, Any].
func (ToolArgs) TypeName() string { return "dict[str, Any]" }

// PromptSchema is the schema DSPy shows for dict[str, Any].
func (ToolArgs) PromptSchema() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": true}
}

// MarshalJSON writes the object, {} for the zero value.
func (a ToolArgs) MarshalJSON() ([]byte, error) {
	if len(a) == 0 {
		return []byte("{}"), nil
	}
	return a, nil
}

// UnmarshalJSON reads a JSON object, keeping its members' order.
func (a *ToolArgs) UnmarshalJSON(b []byte) error {
	args, err := toolArgsOf(string(b))
	if err != nil {
		return err
	}
	*a = args
	return nil
}

// ParseField reads the arguments from a field's text as DSPy reads a
// dict[str, Any]: JSON, in a fence or among prose, a Python dict literal,
// or JSON missing its closing braces after complete values. A value cut
// off mid-way is ErrTruncated; anything but an object is an error.
func (a *ToolArgs) ParseField(raw string) error {
	s := strings.TrimSpace(raw)
	var first ToolArgs
	for _, obj := range jsonx.Objects(s, 4) {
		args, err := toolArgsOf(obj)
		switch {
		case err != nil:
		case first == nil:
			first = args
		case string(args) != string(first):
			// Two sets of arguments: running either would be a guess.
			return fmt.Errorf("predict: tool arguments %s hold two different objects: %w", clipText(s), adapter.ErrAmbiguous)
		}
	}
	span, _, ok := jsonx.Extract(s)
	if !ok {
		return fmt.Errorf("predict: tool arguments %s are not a JSON object", clipText(s))
	}
	fixed, err := jsonx.Exact(span)
	var dup *jsonx.DuplicateKeyError
	switch {
	case errors.Is(err, jsonx.ErrCut):
		return fmt.Errorf("predict: tool arguments %s: %w: %w", clipText(s), adapter.ErrTruncated, err)
	case errors.As(err, &dup):
		return fmt.Errorf("predict: tool arguments %s: %w: %w", clipText(s), adapter.ErrAmbiguous, err)
	case err != nil:
		return fmt.Errorf("predict: tool arguments %s: %w", clipText(s), err)
	}
	args, err := toolArgsOf(fixed)
	if err != nil {
		return err
	}
	*a = args
	return nil
}

// Decode decodes the arguments into v exactly as a tool made by
// types.NewTool decodes them (types.DecodeArgs): a key must be an
// argument's name exactly, so arguments a tool would refuse ("amount"
// beside "AMOUNT") are refused here too, and code that inspects or
// approves the arguments reads the values the tool runs with.
func (a ToolArgs) Decode(v any) error {
	b, _ := a.MarshalJSON()
	return types.DecodeArgs(b, v)
}

// inModelOrder returns a with its members in the order the model wrote
// them in reply, the text a was read from. An adapter that reads the reply
// as JSON (the JSON adapter, the Chat adapter's JSON fallback) hands
// ToolArgs a decoded Go map, which has no order, so the members come
// sorted; DSPy keeps the model's order, and the reply still has it. The
// first object in reply, at any depth (a JSON string holding one
// included), whose members and values are a's is a as written. Without
// one (the arguments were repaired), a is kept.
func (a ToolArgs) inModelOrder(reply string) ToolArgs {
	if len(a) == 0 || reply == "" {
		return a
	}
	want, err := sortedJSON(a)
	if err != nil {
		return a
	}
	var keys []string
	if obj, err := pyjson.Decode(a); err == nil {
		if o, ok := obj.(pyjson.Object); ok {
			keys = o.Keys()
			slices.Sort(keys)
		}
	}
	if len(keys) < 2 && !strings.Contains(string(a[1:]), "{") {
		return a // one member and nothing nested: no order to recover
	}
	f := orderFinder{want: want, keys: keys, budget: maxOrderChecks}
	for _, span := range jsonx.Objects(reply, 8) {
		v, err := pyjson.Decode([]byte(span))
		if err != nil {
			continue
		}
		if found, ok := f.find(v, 0); ok {
			return found
		}
	}
	return a
}

// maxOrderChecks bounds the candidate objects inModelOrder compares in
// full (each costs a re-encoding), so a reply full of look-alikes costs
// linear time.
const maxOrderChecks = 64

type orderFinder struct {
	want   string   // the arguments, keys sorted
	keys   []string // their top-level keys, sorted
	budget int
}

// find walks v depth first, in order, for an object equal to the wanted
// arguments.
func (f *orderFinder) find(v any, depth int) (ToolArgs, bool) {
	if depth > 64 || f.budget <= 0 {
		return nil, false
	}
	switch x := v.(type) {
	case pyjson.Object:
		if x.Len() == len(f.keys) {
			keys := x.Keys()
			slices.Sort(keys)
			if slices.Equal(keys, f.keys) {
				f.budget--
				if b, err := x.MarshalJSON(); err == nil {
					if args, err := toolArgsOf(string(b)); err == nil {
						if got, err := sortedJSON(args); err == nil && got == f.want {
							return args, true
						}
					}
				}
			}
		}
		for _, m := range x.Members() {
			if found, ok := f.find(m.Value, depth+1); ok {
				return found, true
			}
		}
	case []any:
		for _, e := range x {
			if found, ok := f.find(e, depth+1); ok {
				return found, true
			}
		}
	case string:
		if t := strings.TrimSpace(x); strings.HasPrefix(t, "{") {
			if inner, err := pyjson.Decode([]byte(t)); err == nil {
				return f.find(inner, depth+1)
			}
		}
	}
	return nil, false
}

// sortedJSON is a's JSON with every object's keys sorted: equal for two
// sets of arguments that differ only in order.
func sortedJSON(a ToolArgs) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(a))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// toolArgsOf decodes s, which must be one JSON object without a key given
// twice with different values, into its canonical form: compact, members
// in order, strings and numbers as Python's json.dumps writes them.
func toolArgsOf(s string) (ToolArgs, error) {
	if _, err := jsonx.Decode(s); err != nil {
		var dup *jsonx.DuplicateKeyError
		if errors.As(err, &dup) {
			return nil, fmt.Errorf("predict: tool arguments: %w: %v", adapter.ErrAmbiguous, err)
		}
		return nil, fmt.Errorf("predict: tool arguments: %w", err)
	}
	v, err := pyjson.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("predict: tool arguments: %w", err)
	}
	obj, ok := v.(pyjson.Object)
	if !ok {
		return nil, fmt.Errorf("predict: tool arguments %s are not a JSON object", clipText(s))
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("predict: tool arguments: %w", err)
	}
	return ToolArgs(b), nil
}

func clipText(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}
