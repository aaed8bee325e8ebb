package predict

import (
	"encoding/json"
	"errors"
	"fmt"
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
