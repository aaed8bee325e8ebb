package predict

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/jsonx"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// ReActV2 is DSPy's dspy.ReActV2, which DSPy 3.5 made its dspy.ReAct: an
// agent whose one predictor, "react", answers each step with its thought
// and the tool calls it wants, natively (the provider's function calling)
// or in the text, and reads their results from a History of the steps so
// far; it ends when it calls the submit tool, whose arguments are the
// signature's outputs, or, when the steps run out, with one more request
// that asks for submit (the "forced submit"). There is no finish tool and
// no extract call. Its requests are DSPy 3.3.1's dspy.ReActV2's byte for
// byte with every adapter: Chat in the text or natively, JSON, XML.
//
// Native function calling is the adapter's setting, as in DSPy: off for
// Chat and XML unless turned on (adapter.Options.NativeTools, or
// WithNativeTools on the adapter value), on for JSON and BAML; and an LM
// that does not declare Capabilities.Tools is asked in the text.
//
// A ReActV2 is safe for concurrent use; Load returns a new one. Build it
// with NewReActV2: a nil or zero ReActV2's methods return an error.
type ReActV2 struct {
	r *ReAct
}

// submitName is the tool that ends a ReActV2 run with the outputs.
const submitName = "submit"

// The termination reasons of a ReActV2 run (Result.Outputs[0]
// ["termination_reason"]), DSPy's.
const (
	// TerminatedBySubmit: the model called submit with valid outputs.
	TerminatedBySubmit = "submit"
	// TerminatedByForcedSubmit: the steps ended without submit, and the
	// request that asks for it got it.
	TerminatedByForcedSubmit = "forced_submit"
	// The reasons the steps ended without submit, which a run that the
	// forced submit did not save ends with: WithMaxIters steps were made; a
	// reply called no tool; a reply could not be read; the prompt
	// exceeded the context window.
	TerminatedMaxIters       = "max_iters"
	TerminatedEmptyToolCalls = "empty_tool_calls"
	TerminatedParseError     = "parse_error"
	TerminatedContextWindow  = "context_window_exceeded"
	// TerminatedByBudget: the run's budget (adapter.WithBudget) refused a
	// request; the run ended there, without the forced submit. DSPy has
	// no budget: this reason is the library's own.
	TerminatedByBudget        = "budget"
	terminationReasonField    = "termination_reason"
	v2ModuleName              = "ReActV2"
	errV2SubmitReservedPrefix = "predict: ReActV2: "
)

// NewReActV2 returns a ReActV2 for sig that may call tools, which must be
// callable (built with types.NewTool) and have distinct names other than
// "submit", which ReActV2 adds last. sig may have no input named "history"
// or "tools" (the react predictor's own, as DSPy 3.4.1 rules). Options:
// WithMaxIters, WithMaxItersFromInputs, WithToolErrorText, WithToolConcurrency, and
// adapter.CallOptions (adapter.UseAdapter, adapter.WithRequest, …), which
// apply to the react predictor as its defaults; demos come from Load.
func NewReActV2(sig *signature.Signature, tools []types.Tool, opts ...Option) (*ReActV2, error) {
	if sig == nil {
		return nil, errors.New("predict: ReActV2: nil signature")
	}
	for _, name := range []string{historyField, toolsField} {
		if _, _, ok := sig.Field(name); ok {
			return nil, fmt.Errorf("predict: ReActV2: the signature has a field named %q, the react predictor's own (rename it)", name)
		}
	}
	cfg, rest := split(opts)
	if cfg.instructions != nil || cfg.demosSet {
		return nil, errors.New("predict: ReActV2: WithInstructions and WithDemos do not apply (give the signature its instructions; demos come from Load)")
	}
	maxIters := DefaultMaxIters
	if cfg.maxIters != nil {
		if maxIters = *cfg.maxIters; maxIters < 0 {
			return nil, fmt.Errorf("predict: ReActV2: WithMaxIters(%d) is negative", maxIters)
		}
	}
	concurrency, err := concurrencyOf(opts, DefaultToolConcurrency)
	if err != nil {
		return nil, err
	}
	r := &ReAct{sig: sig, maxIters: maxIters, itersFromInputs: hasOption[maxItersFromInputsOption](opts),
		errorText: errorTextOf(opts, nil), byName: map[string]types.Tool{}, v2: true, concurrency: concurrency}
	for _, t := range tools {
		switch {
		case t.Name == "":
			return nil, errors.New("predict: ReActV2: a tool has no name")
		case t.Name == submitName:
			return nil, errors.New("predict: ReActV2: `submit` is reserved by ReActV2 as the final-output tool")
		case !t.Callable():
			return nil, fmt.Errorf("predict: ReActV2: tool %s has no function (build it with types.NewTool)", t.Name)
		}
		if _, dup := r.byName[t.Name]; dup {
			return nil, fmt.Errorf("predict: ReActV2: two tools are named %s", t.Name)
		}
		r.byName[t.Name] = t
		r.tools = append(r.tools, t)
	}
	submit, err := submitTool(sig)
	if err != nil {
		return nil, fmt.Errorf("predict: ReActV2: %w", err)
	}
	r.byName[submitName] = submit
	r.tools = append(r.tools, submit)
	reactSig, err := r.conversationSignature()
	if err != nil {
		return nil, fmt.Errorf("predict: ReActV2: %w", err)
	}
	r.react = NewModule(reactSig, rest...)
	return &ReActV2{r: r}, nil
}

// submitArgs are the submit tool's arguments as the model wrote them: one
// JSON object, read in order.
type submitArgs struct{ obj pyjson.Object }

// UnmarshalJSON keeps the object.
func (a *submitArgs) UnmarshalJSON(b []byte) error {
	v, err := pyjson.Decode(b)
	if err != nil {
		return err
	}
	o, ok := v.(pyjson.Object)
	if !ok {
		return errors.New("the arguments are not a JSON object")
	}
	a.obj = o
	return nil
}

// submitTool is DSPy's submit tool for sig: one argument per output field,
// with the JSON Schema pydantic gives its type; it checks and converts
// each to its field's type and returns them, or fails naming what is
// missing or invalid, for the model to correct.
func submitTool(sig *signature.Signature) (types.Tool, error) {
	outs := sig.Outputs()
	var args pyjson.Object
	schemas := make([]any, len(outs))
	for i, f := range outs {
		schema, err := f.Spec.PydanticSchema()
		if err != nil {
			schema = []byte(`{"type": "string"}`) // DSPy's fallback
		}
		v, err := pyjson.Decode(schema)
		if err != nil {
			return types.Tool{}, err
		}
		args.Set(f.Name, v)
		schemas[i] = v
	}
	tool, err := types.NewTool(submitName, "Submit the final outputs for the task.", func(_ context.Context, a submitArgs) (submitted, error) {
		var missing []string
		for _, f := range outs {
			if _, ok := a.obj.Get(f.Name); !ok {
				missing = append(missing, f.Name)
			}
		}
		if len(missing) > 0 {
			return submitted{}, fmt.Errorf("Missing required final output field(s): %s", strings.Join(missing, ", "))
		}
		out := submitted{values: adapter.Values{}}
		for i, f := range outs {
			raw, _ := a.obj.Get(f.Name)
			if err := validateSchema(raw, schemas[i]); err != nil {
				return submitted{}, fmt.Errorf("Arg %s is invalid: %w", f.Name, err)
			}
			b, err := pyjson.Marshal(raw)
			if err != nil {
				return submitted{}, fmt.Errorf("Arg %s is invalid: %w", f.Name, err)
			}
			tree, err := jsonx.Decode(string(b))
			if err != nil {
				return submitted{}, fmt.Errorf("Arg %s is invalid: %w", f.Name, err)
			}
			v, err := value.FromJSON(tree, f.Spec)
			if err != nil {
				return submitted{}, fmt.Errorf("Arg %s is invalid: %w", f.Name, err)
			}
			out.values[f.Name] = v
			out.order = append(out.order, f.Name)
		}
		for _, m := range a.obj.Members() {
			if _, _, ok := sig.Field(m.Key); !ok || !slices.Contains(out.order, m.Key) {
				out.extra = append(out.extra, m.Key)
			}
		}
		return out, nil
	})
	if err != nil {
		return types.Tool{}, err
	}
	b, err := args.MarshalJSON()
	if err != nil {
		return types.Tool{}, err
	}
	tool.Args = b
	return tool, nil
}

// submitted is what a successful submit returns: the outputs, typed, in
// the signature's order, and the names of the arguments that are no
// output (DSPy drops them silently; the run reports them).
type submitted struct {
	values adapter.Values
	order  []string
	extra  []string
}

// MarshalJSON writes the outputs as the object DSPy's submit returns.
func (s submitted) MarshalJSON() ([]byte, error) {
	var o pyjson.Object
	for _, k := range s.order {
		o.Set(k, s.values[k])
	}
	return o.MarshalJSON()
}

// String is the outputs as compact JSON, as a trace or a stream's tool
// chunk prints the result.
func (s submitted) String() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return fmt.Sprint(s.values)
	}
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return string(b)
	}
	return c.String()
}

var errV2NotBuilt error = zeroError{"ReActV2", "predict.NewReActV2"}

func (a *ReActV2) built() bool { return a != nil && a.r.built() }

// Signature returns the task signature (nil for a nil or zero ReActV2).
func (a *ReActV2) Signature() *signature.Signature {
	if a == nil || a.r == nil {
		return nil
	}
	return a.r.sig
}

// React returns the "react" predictor (nil for a nil or zero ReActV2).
func (a *ReActV2) React() *Module {
	if a == nil || a.r == nil {
		return nil
	}
	return a.r.react
}

// Tools returns the tools the agent may call, submit last (none for a nil
// or zero ReActV2).
func (a *ReActV2) Tools() []types.Tool {
	if a == nil || a.r == nil {
		return nil
	}
	return slices.Clone(a.r.tools)
}

// Load returns a copy of a with the saved "react" predictor of prog
// (instructions, field texts, demos) loaded as Module.Load loads it: what
// DSPy's ReActV2 saves (and DSPy 3.5's ReAct). For a ReActV2 saved inside
// another module, load prog.Sub("its.path").
func (a *ReActV2) Load(prog Program, opts ...LoadOption) (*ReActV2, error) {
	if !a.built() {
		return nil, errV2NotBuilt
	}
	if _, _, err := checkVersion(prog, v2ModuleName, "react", loadConfigOf(opts)); err != nil {
		return nil, err
	}
	if _, ok := prog.Predictors["extract.predict"]; ok {
		return nil, wrongModuleError(`predict: ReActV2: the program has an "extract.predict" predictor: it is DSPy 3.3.1's ReAct (a trajectory, finish, an extract step), ` +
			"which ReActV2 cannot load: load it with predict.NewReAct(sig, tools).Load(prog)")
	}
	react, err := a.r.react.Load(prog, "react", opts...)
	if err != nil {
		return nil, err
	}
	c := *a.r
	c.react = react
	return &ReActV2{r: &c}, nil
}

// Ignored lists what Load left out of the saved predictor.
func (a *ReActV2) Ignored() []string {
	if !a.built() {
		return nil
	}
	return a.r.react.Ignored()
}

// Call runs the agent on inputs: up to WithMaxIters steps, each an LM call
// whose reply asks for tool calls, which run (at most WithToolConcurrency at
// once, their results in the model's order), until a call to submit
// succeeds; when the steps end without it, one more request asks for
// submit. The Result's Outputs[0] holds the signature's outputs (from
// submit), "history" (a types.History: one turn per step, as DSPy's
// Prediction.history: the task's inputs on the first, then next_thought,
// tool_calls with their results, and the outputs on the last) and
// "termination_reason" (TerminatedBySubmit, TerminatedByForcedSubmit, or
// why the steps ended). Calls and Usage count every LM call.
//
// inputs may hold "max_iters" (as for ReAct) and "history", a
// types.History of earlier turns (from an earlier run's Result) that the
// run goes on from, as DSPy's ReActV2 takes it.
//
// When the run ends without outputs (the forced submit did not give
// valid ones), the Result (with the history and the termination reason)
// comes with an error matching ErrNoSubmit: DSPy returns a prediction
// without the output fields.
//
// As in DSPy, a tool's error, a tool the agent does not have ("Unknown
// tool: <name>") and arguments the tool refuses are that call's result
// and the run goes on; a reply that cannot be read or a prompt past the
// context window ends the steps (no truncation) and goes to the forced
// submit; an LM error ends the call.
//
// A budget in opts (adapter.WithBudget) spans the run. When it refuses a
// step's request or the forced submit's (an error matching
// adapter.ErrBudget), the run ends there, with no forced submit: the
// Result holds every call so far, the history of the steps that ran and
// the termination reason TerminatedByBudget, and comes with an error that
// matches adapter.ErrBudget (not ErrNoSubmit) and says where the run
// stopped.
func (a *ReActV2) Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error) {
	ctx, done := adapter.StartModule(ctx, v2ModuleName, inputs, opts...)
	res, err := a.call(ctx, lm, inputs, opts)
	done(res, err)
	return res, err
}

func (a *ReActV2) call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts []adapter.CallOption) (*adapter.Result, error) {
	if !a.built() {
		return nil, errV2NotBuilt
	}
	st, err := a.r.start(ctx, lm, inputs, opts)
	if err != nil {
		return nil, err
	}
	return st.runV2()
}

// Stream runs the agent like Call and streams it, step by step, with
// ReAct.Stream's chunks: each step's next_thought deltas (Step set), its
// tool calls once chosen, each tool run's start and end; the forced
// submit's chunks as a step of its own; last, a Done chunk whose Result
// is what Call returns for the same replies. An error ends the sequence
// (after the Done chunk's Result for ErrNoSubmit, the error chunk carries
// the Result too); breaking out of the loop stops the run.
func (a *ReActV2) Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error] {
	return func(yield func(adapter.Chunk, error) bool) {
		ctx, done := adapter.StartModule(ctx, v2ModuleName, inputs, opts...)
		var res *adapter.Result
		var err error
		defer func() { done(res, err) }()
		if !a.built() {
			err = errV2NotBuilt
			yield(adapter.Chunk{}, err)
			return
		}
		var llm adapter.LM
		if lm != nil {
			llm = lm
		}
		st, err := a.r.start(ctx, llm, inputs, opts)
		if err != nil {
			yield(adapter.Chunk{}, err)
			return
		}
		st.stream = lm
		st.yield = func(c adapter.Chunk) bool { return yield(c, nil) }
		res, err = st.runV2()
		switch {
		case errors.Is(err, errStopped):
		case err != nil && res != nil:
			yield(adapter.Chunk{Adapter: res.Adapter, Result: res}, err)
		case err != nil:
			yield(adapter.Chunk{}, err)
		default:
			yield(adapter.Chunk{Adapter: res.Adapter, Done: true, Result: res}, nil)
		}
	}
}

// runV2 is a ReActV2 run: the steps, then, without a submit, the forced
// submit.
func (st *run) runV2() (*adapter.Result, error) {
	if err := st.v2Prior(); err != nil {
		return nil, err
	}
	tr := adapter.CallTrace(st.ctx, st.r.react.callOptions(st.opts)...)
	reason := TerminatedMaxIters
	var last *adapter.Result
	for turn := range st.maxIters {
		res, err := st.v2Step(tr, turn, false)
		if res != nil {
			last = res
		}
		if err != nil {
			var pe *adapter.ParseError
			switch {
			case errors.Is(err, adapter.ErrBudget):
				return st.finishV2(last, TerminatedByBudget), st.stopped(err, fmt.Sprintf("at step %d", turn+1))
			case errors.Is(err, errEmptyCalls):
				reason = TerminatedEmptyToolCalls
			case errors.As(err, &pe):
				reason = TerminatedParseError
			case errors.Is(err, adapter.ErrContextWindow):
				reason = TerminatedContextWindow
			default:
				return st.total, err
			}
			break
		}
		if st.submitted != nil {
			return st.finishV2(last, TerminatedBySubmit), nil
		}
	}
	res, err := st.v2Step(tr, st.maxIters, true)
	if res != nil {
		last = res
	}
	if err != nil {
		var pe *adapter.ParseError
		if errors.Is(err, adapter.ErrBudget) {
			return st.finishV2(last, TerminatedByBudget), st.stopped(err, "at the forced submit")
		}
		if !errors.As(err, &pe) && !errors.Is(err, adapter.ErrContextWindow) && !errors.Is(err, errEmptyCalls) {
			return st.total, err
		}
	}
	if st.submitted != nil {
		return st.finishV2(last, TerminatedByForcedSubmit), nil
	}
	out := st.finishV2(last, reason)
	return out, &NoSubmitError{Reason: reason}
}

// v2Prior takes a "history" input out of the inputs: the earlier turns
// the run goes on from.
func (st *run) v2Prior() error {
	prior, err := priorHistory(st.inputs)
	if err != nil {
		return err
	}
	st.prior = prior
	st.inputs = withoutInput(st.inputs, historyField)
	return nil
}

// forcedSubmit is the forced submit's request: it must call submit, and
// asks for no native reasoning (DSPy's reasoning_effort=None, which keeps
// next_thought in the prompt).
var forcedSubmit = adapter.WithRequest(openai.ChatCompletionRequest{
	ToolChoice:      openai.ToolChoice{Type: openai.ToolTypeFunction, Function: openai.ToolFunction{Name: submitName}},
	ReasoningEffort: "none",
})

// Prepare returns the request Call would send first for inputs, without
// sending it: the first step's react request (the tools, the history
// given, the task's inputs), or the forced submit's when the step limit
// is 0.
func (a *ReActV2) Prepare(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (openai.ChatCompletionRequest, error) {
	if !a.built() {
		return openai.ChatCompletionRequest{}, errV2NotBuilt
	}
	st, err := a.r.start(ctx, lm, inputs, opts)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	if err := st.v2Prior(); err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	in, err := st.v2Inputs()
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	stepOpts := st.stepOpts
	if st.maxIters == 0 {
		stepOpts = append(slices.Clip(stepOpts), forcedSubmit)
	}
	return a.r.react.Prepare(ctx, lm, in, stepOpts...)
}

func (a *ReActV2) prepare(ctx context.Context, lm adapter.LM, in adapter.Values, opts []adapter.CallOption) (openai.ChatCompletionRequest, error) {
	return a.Prepare(ctx, lm, in, opts...)
}

// errEmptyCalls: a step's reply called no tool.
var errEmptyCalls = errors.New("the reply called no tool")

// v2Step makes one react call and runs the calls its reply asks for (for
// the forced submit, only its submit calls); a successful submit sets
// st.submitted.
func (st *run) v2Step(tr *adapter.Trace, turn int, forced bool) (*adapter.Result, error) {
	var callID uint64
	idHook := adapter.UseTrace(&adapter.Trace{FormatDone: func(i adapter.FormatInfo) { callID = i.CallID }})
	in, err := st.v2Inputs()
	if err != nil {
		return nil, err
	}
	opts := append(slices.Clip(st.stepOpts), idHook)
	if forced {
		opts = append(opts, forcedSubmit)
	}
	res, err := st.callReact(turn, in, opts)
	st.total.Add(res)
	if err != nil {
		return res, err
	}
	thought, ok, calls := st.readNative(res, turn)
	if ok && len(calls) > 0 && !thoughtStated(res, thought) {
		// DSPy reads the text beside native calls only in the adapter's
		// own format; what it cannot read it drops, and so do the
		// requests. The Result says so.
		ok, thought = false, ""
		if len(res.Completions) > 0 && strings.TrimSpace(res.Completions[0]) != "" {
			// A stream's caller may have been sent the text as the
			// thought's deltas: it is told the thought is none after all.
			if !st.send(adapter.Chunk{Step: turn + 1, Field: "next_thought", Replace: true}) {
				return res, errStopped
			}
			st.note(fmt.Sprintf("step %d: the reply's text beside its tool calls is not in the adapter's format for next_thought; as in DSPy, it is not kept: %s",
				turn+1, value.Brief(res.Completions[0])))
		}
	}
	if forced {
		if n := len(calls); n > 0 {
			calls = slices.DeleteFunc(calls, func(c toolCall) bool { return c.name != submitName })
			if n > len(calls) {
				st.note(fmt.Sprintf("forced submit: %d calls besides submit were not run (as in DSPy, a forced submit runs only submit)", n-len(calls)))
			}
		}
	}
	if len(calls) == 0 {
		return res, errEmptyCalls
	}
	if !st.send(adapter.Chunk{Step: turn + 1, ToolCalls: chosenCalls(calls)}) {
		return res, errStopped
	}
	steps, err := st.runCalls(tr, callID, turn, thought, !ok, calls)
	if err != nil {
		return res, err
	}
	st.traj = append(st.traj, steps...)
	at := -1
	for i, s := range steps {
		if sub, ok := s.Observation.(submitted); ok && s.Tool == submitName && s.Err == nil {
			st.submitted, at = &sub, i // the last successful submit of the reply, as DSPy
			if len(sub.extra) > 0 {
				st.note(fmt.Sprintf("step %d: submit's arguments %s are no output of the signature; as in DSPy, they were dropped", turn+1, strings.Join(sub.extra, ", ")))
			}
		}
	}
	if at >= 0 {
		first := slices.IndexFunc(steps, func(s Step) bool {
			_, ok := s.Observation.(submitted)
			return ok && s.Tool == submitName && s.Err == nil
		})
		if n := len(steps) - 1 - first; n > 0 {
			st.note(fmt.Sprintf("step %d: %d calls of the reply ran after a submit succeeded (as in DSPy, every call of a reply runs); their results are in the history, the model never saw them", turn+1, n))
		}
	}
	return res, nil
}

// v2Inputs are the inputs of the next react call: the tools, the history
// (the earlier turns given, then this run's), and the task's inputs on
// this run's first turn — in the history once it has one.
func (st *run) v2Inputs() (adapter.Values, error) {
	turns, err := st.traj.conversation()
	if err != nil {
		return nil, err
	}
	in := adapter.Values{toolsField: st.r.tools}
	task := in
	if len(turns) > 0 {
		task = turns[0]
	}
	for k, v := range st.inputs {
		task[k] = v
	}
	in[historyField] = types.History{Messages: append(slices.Clip(st.prior), turns...)}
	return in, nil
}

// finishV2 is the run's Result: the counters of every call, the outputs
// submitted, the history (the outputs merged into the last turn, as DSPy
// does) and the termination reason.
func (st *run) finishV2(last *adapter.Result, reason string) *adapter.Result {
	if last == nil {
		last = &adapter.Result{}
	}
	out := runResult(st.total, last)
	turns, _ := st.traj.conversation()
	if len(turns) > 0 {
		for k, v := range st.inputs {
			turns[0][k] = v
		}
	}
	vals := adapter.Values{}
	if st.submitted != nil {
		for _, k := range st.submitted.order {
			vals[k] = st.submitted.values[k]
			if len(turns) > 0 {
				turns[len(turns)-1][k] = st.submitted.values[k]
			}
		}
	}
	vals[historyField] = types.History{Messages: append(slices.Clip(st.prior), turns...)}
	vals[terminationReasonField] = reason
	out.Outputs = []adapter.Values{vals}
	if len(st.notes) > 0 {
		out.Notes = append(slices.Clip(out.Notes), st.notes...)
	}
	return out
}

// priorHistory reads a "history" input: the earlier turns a run goes on
// from (a types.History, or what converts to one).
func priorHistory(in adapter.Values) ([]map[string]any, error) {
	v, ok := in[historyField]
	if !ok || v == nil {
		return nil, nil
	}
	switch h := v.(type) {
	case types.History:
		return h.Messages, nil
	case *types.History:
		if h == nil {
			return nil, nil
		}
		return h.Messages, nil
	}
	b, err := json.Marshal(v)
	if err == nil {
		var h types.History
		if err = json.Unmarshal(b, &h); err == nil {
			return h.Messages, nil
		}
	}
	return nil, &adapter.InputError{Field: historyField, Err: fmt.Errorf("%w: %T is not a types.History (%v)", adapter.ErrInputType, v, err)}
}

// NoSubmitError is the error of a ReActV2 run that ended without outputs:
// no submit succeeded, the forced submit included. It comes with the
// Result (history, termination reason). errors.Is(err, ErrNoSubmit)
// matches it.
type NoSubmitError struct {
	// Reason is the run's termination reason: why the steps ended.
	Reason string
}

// Error says why the steps ended.
func (e *NoSubmitError) Error() string {
	return "predict: ReActV2: the run ended without outputs (" + e.Reason + "), and the forced submit did not give them"
}

// Is matches ErrNoSubmit.
func (e *NoSubmitError) Is(target error) bool { return target == ErrNoSubmit }

// thoughtStated reports whether a reply with tool calls gives next_thought
// as DSPy reads one beside them: stated in the adapter's own format in the
// text, or from native reasoning (a thought the text does not hold).
func thoughtStated(res *adapter.Result, thought string) bool {
	text := ""
	if len(res.Completions) > 0 {
		text = res.Completions[0]
	}
	if thought != "" && !strings.Contains(text, thought) {
		return true // native reasoning
	}
	switch res.Adapter {
	case "chat":
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "[[ ## next_thought ## ]]") {
				return true
			}
		}
		return false
	case "xml":
		return strings.Contains(text, "<next_thought>") && strings.Contains(text, "</next_thought>")
	case "json", "baml":
		return strings.Contains(text, `"next_thought"`)
	}
	return true
}

// note adds a line to the run's Result.Notes: something the run did as
// DSPy does, silently there, that the caller should be able to see.
func (st *run) note(s string) { st.notes = append(st.notes, s) }
