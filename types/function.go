package types

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	adapter "github.com/sigwire/adapter"
)

// Func is a Go function a Tool calls: typed arguments in, a result out.
type Func[A, R any] func(ctx context.Context, args A) (R, error)

// NewTool makes a Tool from a Go function whose arguments are a struct.
// The arguments' JSON Schema comes from the struct (invopop/jsonschema:
// json tags name the arguments, jsonschema tags describe them); calling
// the tool decodes JSON arguments strictly into the struct before calling
// fn, as [DecodeArgs] does: a key must be an argument's name exactly (the
// json tag's name, or the Go field name of a field without one), so an
// unknown key, or a case or Unicode-folding variant of a name ("AMOUNT"
// beside "amount"), is an error matching ErrArgumentName and fn does not
// run. The tool therefore runs with exactly the values its arguments show
// as written, in a trace or to an approval step.
func NewTool[A, R any](name, desc string, fn Func[A, R]) (Tool, error) {
	if name == "" || fn == nil {
		return Tool{}, errors.New("types: NewTool needs a name and a function")
	}
	t := reflect.TypeFor[A]()
	if t.Kind() != reflect.Struct {
		return Tool{}, fmt.Errorf("types: tool %s: arguments must be a struct, not %s", name, t)
	}
	r := &jsonschema.Reflector{ExpandedStruct: true, DoNotReference: true, AllowAdditionalProperties: true}
	s := r.ReflectFromType(t)
	props := []byte("{}")
	if s.Properties != nil {
		b, err := json.Marshal(s.Properties)
		if err != nil {
			return Tool{}, fmt.Errorf("types: tool %s: %w", name, err)
		}
		props = b
	}
	required := requiredArgs(s)
	call := func(ctx context.Context, raw []byte) (any, error) {
		var args A
		if err := DecodeArgs(raw, &args); err != nil {
			return nil, fmt.Errorf("types: tool %s: arguments: %w", name, err)
		}
		if missing := missingArgs(raw, required); len(missing) > 0 {
			return nil, fmt.Errorf("types: tool %s: arguments: %w: %s", name, ErrMissingArgument, strings.Join(missing, ", "))
		}
		return fn(ctx, args)
	}
	return Tool{Name: name, Desc: desc, Args: props, call: call}, nil
}

// requiredArgs are the arguments a call must give: those the struct's
// schema requires (no omitempty) that have no default.
func requiredArgs(s *jsonschema.Schema) []string {
	var out []string
	for _, name := range s.Required {
		if s.Properties != nil {
			if p, ok := s.Properties.Get(name); ok && p != nil && p.Default != nil {
				continue
			}
		}
		out = append(out, name)
	}
	return out
}

// missingArgs lists the required arguments raw (one JSON object, already
// decoded once by DecodeArgs) does not give, in the struct's order.
func missingArgs(raw []byte, required []string) []string {
	if len(required) == 0 {
		return nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil // DecodeArgs read it: not reached
	}
	var missing []string
	for _, name := range required {
		if _, ok := keys[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing
}

// Callable reports whether the tool has a function to call (NewTool made
// it), as opposed to a Tool read from JSON to be shown in prompts.
func (t Tool) Callable() bool { return t.call != nil }

// Call runs the tool with JSON arguments. A Tool built without a function
// (from JSON, for prompts) cannot be called.
func (t Tool) Call(ctx context.Context, args json.RawMessage) (any, error) {
	if t.call == nil {
		return nil, fmt.Errorf("types: tool %s has no function", t.Name)
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	return t.call(ctx, args)
}

// Execute runs each call with the tool of its name and returns the
// results, errors included as results (IsError, the error's text unless
// WithToolErrorText says otherwise), in call order. A call
// whose arguments could not be read (its Err is set) is not run: its
// result is the error, for the model to see and correct. Once ctx is done,
// the remaining calls are not run either (with a nil ctx, none is). Every
// call is reported to the trace on ctx (adapter.WithTrace): ToolStart with
// its arguments — the JSON the tool is handed, Args as encoding/json
// writes them but in the model's key order (see [ToolCall]); for a call
// whose arguments could not be read, their text as a JSON string — ToolDone with its result or error (an unknown tool,
// unreadable arguments and a call not run included). A result whose text
// passes the bound on one result (WithLimits; 64 KiB by default) is cut,
// with a note saying how much the model is not shown; a tool's panic is
// its error (see adapter.Trace.RunTool).
func (tc ToolCalls) Execute(ctx context.Context, tools []Tool, opts ...ExecuteOption) ToolCallResults {
	var cfg executeConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	errText := func(tool string, err error) string {
		if cfg.errorText != nil {
			return cfg.errorText(tool, err)
		}
		return err.Error()
	}
	byName := make(map[string]Tool, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
	}
	out := ToolCallResults{Results: make([]ToolCallResult, 0, len(tc.Calls))}
	if ctx == nil {
		for _, c := range tc.Calls {
			out.Results = append(out.Results, ToolCallResult{CallID: c.ID, Name: c.Name, IsError: true,
				Value: errText(c.Name, fmt.Errorf("the call to %q was not run: nil context", c.Name))})
		}
		return out
	}
	tr := adapter.CallTrace(ctx)
	for _, c := range tc.Calls {
		res := ToolCallResult{CallID: c.ID, Name: c.Name}
		var args []byte
		var err error
		switch {
		case c.Err != nil:
			args, err = json.Marshal(c.RawArgs)
		default:
			args, err = argsJSON(c.argsInOrder())
		}
		if err == nil {
			info := adapter.ToolStartInfo{Tool: c.Name, ToolCallID: c.ID, Args: args, ResultBytes: cfg.resultBytes}
			res.Value, err = tr.RunTool(ctx, info, func(ctx context.Context) (any, error) {
				if c.Err != nil {
					return nil, fmt.Errorf("the call to %q was not run: its arguments could not be read (%w); send them again as one JSON object", c.Name, c.Err)
				}
				if err := ctx.Err(); err != nil {
					return nil, fmt.Errorf("the call to %q was not run: %w", c.Name, err)
				}
				t, ok := byName[c.Name]
				if !ok {
					return nil, fmt.Errorf("no tool named %q", c.Name)
				}
				return t.Call(ctx, args)
			})
		}
		if err != nil {
			res.Value, res.IsError = errText(c.Name, err), true
		}
		out.Results = append(out.Results, res)
	}
	return out
}

// ExecuteOption configures Execute.
type ExecuteOption func(*executeConfig)

type executeConfig struct {
	errorText   func(tool string, err error) string
	resultBytes int
}

// WithLimits sets the bound on each result's text the model is shown
// (l.ToolResultBytes; its other fields do not apply to Execute): a
// longer result's Value is its text cut, with a note saying so, as
// adapter.Trace.RunTool cuts it. The default is
// adapter.DefaultToolResultBytes; a negative bound turns it off.
func WithLimits(l adapter.Limits) ExecuteOption {
	return func(c *executeConfig) { c.resultBytes = l.ToolResultBytes }
}

// WithToolErrorText sets the text a failed call's result shows the model
// (its Value): f gets the tool's name and the error: the tool's own, an
// unknown tool, arguments that could not be read or were refused, a call
// not run because the context was done. By default the result is the
// error's text verbatim, as in DSPy, so whatever a tool's error holds (a
// URL with an API key in its query, a path, a stack) reaches the model and
// the provider; f may redact or replace it. The trace's ToolDone still
// gets the error itself. A nil f keeps the default.
func WithToolErrorText(f func(tool string, err error) string) ExecuteOption {
	return func(c *executeConfig) { c.errorText = f }
}
