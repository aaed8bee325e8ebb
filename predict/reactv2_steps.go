package predict

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// MaxToolCallsPerStep is how many of one reply's tool calls run, at most
// (a stream cannot carry more; a blocking reply may). The calls past it
// run nothing and are left out of the trajectory and of every later
// request, so that one reply cannot make each later prompt larger than
// itself; the model is told how many were left out, in the tool message
// of the step's last call (and that step's Observation).
const MaxToolCallsPerStep = 128

// The react predictor's own fields (ReActV2).
const (
	historyField   = "history"
	toolsField     = "tools"
	toolCallsField = "tool_calls"
)

// conversationSignature is DSPy's ReActV2 react signature: the task's
// inputs, made optional (the conversation's first turn holds them),
// "history" and "tools"; "next_thought" (a types.Reasoning, as DSPy's)
// and "tool_calls"; ReActV2's instructions.
func (r *ReAct) conversationSignature() (*signature.Signature, error) {
	sig := r.sig
	react := sig
	for _, f := range sig.Outputs() {
		react = react.Delete(f.Name)
	}
	var err error
	thoughtType := reflect.TypeFor[types.Reasoning]()
	conv := reflect.TypeFor[adapter.Conversation]()
	for _, f := range sig.Inputs() {
		if f.Type.Implements(conv) || reflect.PointerTo(f.Type).Implements(conv) {
			return nil, fmt.Errorf("input %q is a conversation history: the react predictor holds the steps in a history of its own, and a prompt has one", f.Name)
		}
		if f.Spec.Nullable() {
			continue
		}
		opt := f.Spec.OrNone()
		if react, err = react.Update(f.Name, func(o *signature.Field) { o.Type, o.Spec = opt.GoType(), opt }); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		role  signature.Role
		field signature.Field
	}{
		{signature.Input, signature.Field{Name: historyField, Type: reflect.TypeFor[types.History]()}},
		{signature.Input, signature.Field{Name: toolsField, Type: reflect.TypeFor[[]types.Tool]()}},
		{signature.Output, signature.Field{Name: "next_thought", Type: thoughtType}},
		{signature.Output, signature.Field{Name: toolCallsField, Type: reflect.TypeFor[types.ToolCalls]()}},
	} {
		if react, err = react.Append(f.role, f.field); err != nil {
			return nil, err
		}
	}
	names := make([]string, len(r.tools))
	for i, t := range r.tools {
		names[i] = "`" + t.Name + "`"
	}
	inputs, outputs := quotedNames(sig.Inputs()), quotedNames(sig.Outputs())
	instr := strings.Join([]string{
		sig.Instructions(),
		"You are an Agent. Use the supplied tools to produce " + outputs + " from " + inputs + ".",
		"Call tools when more information is needed.",
		"When the final answer is ready, call `submit` with " + outputs + ".",
		"The available tools are: " + strings.Join(names, ", ") + ".",
	}, "\n")
	return react.WithInstructions(strings.TrimSpace(instr)), nil
}

// conversation is the steps as the turns of ReActV2's history: per reply,
// its thought (unless the reply gave none; an empty one is kept, as
// DSPy's) and its tool calls with their results, their values as the
// tools returned them, which the adapter replays natively (the
// assistant's tool calls and tool messages) or in the text.
func (t Trajectory) conversation() ([]map[string]any, error) {
	var turns []map[string]any
	for i := 0; i < len(t); {
		j := i + 1
		for j < len(t) && t[j].Turn == t[i].Turn {
			j++
		}
		turn := map[string]any{}
		if !t[i].noThought {
			turn["next_thought"] = t[i].Thought
		}
		var tc types.ToolCalls
		var results types.ToolCallResults
		for _, s := range t[i:j] {
			if s.Tool == "" {
				continue
			}
			call := types.ToolCall{ID: s.CallID, Name: s.Tool}
			if s.unread {
				call.Err, call.RawArgs = s.Err, s.rawArgs
			} else {
				// RawArgs gives the replay the model's key order (see
				// types.ToolCall); Args, its values.
				call.Args, call.RawArgs = argsMap(s.Args), string(s.Args)
			}
			tc.Calls = append(tc.Calls, call)
			results.Results = append(results.Results, types.ToolCallResult{CallID: s.CallID, Name: s.Tool, Value: s.Observation, IsError: s.Err != nil, Err: s.Err})
		}
		if len(tc.Calls) > 0 {
			tc.Results = &results
			turn[toolCallsField] = tc
		}
		turns = append(turns, turn)
		i = j
	}
	return turns, nil
}

// argsMap is a call's arguments as ToolCall.Args holds them.
func argsMap(a ToolArgs) map[string]any {
	b, _ := a.MarshalJSON()
	v, err := pyjson.Decode(b)
	if err != nil {
		return map[string]any{}
	}
	m, ok := pyjson.Plain(v).(map[string]any)
	if !ok {
		return map[string]any{}
	}
	return m
}

// observationText is an observation as the model is shown it: as a str
// field shows the value.
func observationText(v any) (string, error) {
	return adapter.FormatValue(v, signature.Field{Name: "observation", Spec: strSpec})
}

// readNative reads a native react reply: its thought (ok false when the
// reply gave none) and its calls, each with an id unique in the run (the
// provider's, else "call_<turn>_<n>") and its arguments in the model's
// order.
func (st *run) readNative(res *adapter.Result, turn int) (string, bool, []toolCall) {
	pred := res.Outputs[0]
	thought, ok := pred["next_thought"].(string)
	if r, isReasoning := pred["next_thought"].(types.Reasoning); isReasoning {
		thought, ok = string(r), true
	}
	tc, _ := pred[toolCallsField].(types.ToolCalls)
	completion := ""
	if len(res.Completions) > 0 {
		completion = res.Completions[0]
	}
	if st.ids == nil {
		st.ids = map[string]bool{}
	}
	kept := tc.Calls[:min(len(tc.Calls), MaxToolCallsPerStep)]
	calls := make([]toolCall, len(kept))
	for i, c := range kept {
		id := c.ID
		for k := 0; id == "" || st.ids[id]; k++ {
			id = fmt.Sprintf("call_%d_%d", turn, i)
			if k > 0 {
				id += fmt.Sprintf("_%d", k)
			}
		}
		st.ids[id] = true
		call := toolCall{id: id, name: c.Name}
		switch {
		case c.Err != nil:
			call.err = fmt.Errorf("the call to %q was not run: its arguments could not be read (%w); send them again as one JSON object", c.Name, c.Err)
			call.raw = c.RawArgs
		default:
			call.args = nativeArgs(c, completion)
		}
		calls[i] = call
	}
	if len(calls) > 0 {
		calls[len(calls)-1].dropped = len(tc.Calls) - len(kept)
	}
	return thought, ok, calls
}

// droppedNote is what the model is told, after the result of a step's
// last call, of the calls past MaxToolCallsPerStep.
func droppedNote(n int) string {
	return fmt.Sprintf("\n\n[%d more tool calls of this reply were not run: a step runs at most %d calls; call them again if they are still needed.]", n, MaxToolCallsPerStep)
}

// nativeArgs are a call's arguments as ToolArgs, in the model's order: its
// text, else (arguments repaired, or read from the reply's text) the
// decoded values, ordered as the text has them.
func nativeArgs(c types.ToolCall, completion string) ToolArgs {
	raw := strings.TrimSpace(c.RawArgs)
	if raw != "" {
		if a, err := toolArgsOf(raw); err == nil {
			return a
		}
	}
	if c.Args == nil {
		return nil
	}
	b, err := json.Marshal(c.Args)
	if err != nil {
		return nil
	}
	a, err := toolArgsOf(string(b))
	if err != nil {
		return nil
	}
	if raw == "" {
		raw = completion
	}
	return a.inModelOrder(raw)
}
