package predict

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/internal/pyjson"
	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
	"github.com/sigwire/adapter/types"
)

// ReAct is DSPy's dspy.ReAct: an agent that, step by step, thinks, picks a
// tool and its arguments, and reads the tool's result, until it calls the
// finish tool or runs out of steps; then a ChainOfThought extracts the
// signature's outputs from the trajectory. Its two predictors, "react" and
// "extract.predict", send exactly the prompts DSPy 3.3.1 sends, so a
// program optimised with DSPy loads with Load and runs here unchanged.
//
// A ReAct is safe for concurrent use; Load returns a new one. Build it
// with NewReAct: a nil or zero ReAct's Call, Stream and Load return an
// error.
type ReAct struct {
	sig      *signature.Signature
	tools    []types.Tool // the caller's tools, then finish
	byName   map[string]types.Tool
	maxIters int
	// itersFromInputs: "max_iters" in the inputs may raise maxIters
	// (WithMaxItersFromInputs).
	itersFromInputs bool
	// errorText is the observation of a failed step (WithToolErrorText);
	// nil for DSPy's.
	errorText func(tool string, err error) string
	// concurrency bounds the tool runs of one step (WithToolConcurrency).
	concurrency int
	// v2: DSPy's ReActV2 (NewReActV2): the react predictor is the
	// conversation one, a reply may call several tools, the steps end on
	// submit, and no extract call follows.
	v2      bool
	react   *Module
	extract *Module
}

// finishName is the tool that ends a run.
const finishName = "finish"

var strSpec = func() *signature.TypeSpec {
	s, err := signature.SpecOf(reflect.TypeFor[string]())
	if err != nil {
		panic(err)
	}
	return s
}()

// NewReAct returns a ReAct for sig that may call tools, which must be
// callable (built with types.NewTool) and have distinct names other than
// "finish", which ReAct adds. Options: WithMaxIters, WithMaxItersFromInputs,
// WithToolErrorText, WithToolConcurrency, and
// adapter.CallOptions (adapter.UseAdapter, adapter.WithRequest, …), which
// apply to both predictors as their defaults; demos come from Load.
func NewReAct(sig *signature.Signature, tools []types.Tool, opts ...Option) (*ReAct, error) {
	if sig == nil {
		return nil, errors.New("predict: ReAct: nil signature")
	}
	cfg, rest := split(opts)
	if cfg.instructions != nil || cfg.demosSet {
		return nil, errors.New("predict: ReAct: WithInstructions and WithDemos do not apply (give the signature its instructions; demos come from Load)")
	}
	maxIters := DefaultMaxIters
	if cfg.maxIters != nil {
		if maxIters = *cfg.maxIters; maxIters < 0 {
			return nil, fmt.Errorf("predict: ReAct: WithMaxIters(%d) is negative", maxIters)
		}
	}
	concurrency, err := concurrencyOf(opts, DefaultToolConcurrency)
	if err != nil {
		return nil, err
	}
	r := &ReAct{sig: sig, maxIters: maxIters, itersFromInputs: hasOption[maxItersFromInputsOption](opts),
		errorText: errorTextOf(opts, nil), byName: map[string]types.Tool{},
		concurrency: concurrency}
	for _, t := range tools {
		switch {
		case t.Name == "":
			return nil, errors.New("predict: ReAct: a tool has no name")
		case t.Name == finishName:
			return nil, errors.New(`predict: ReAct: "finish" is the tool ReAct adds to end a run; name yours otherwise`)
		case !t.Callable():
			return nil, fmt.Errorf("predict: ReAct: tool %s has no function (build it with types.NewTool)", t.Name)
		}
		if _, dup := r.byName[t.Name]; dup {
			return nil, fmt.Errorf("predict: ReAct: two tools are named %s", t.Name)
		}
		r.byName[t.Name] = t
		r.tools = append(r.tools, t)
	}
	outputs := quotedNames(sig.Outputs())
	finish, err := types.NewTool(finishName,
		"Marks the task as complete. That is, signals that all information for producing the outputs, i.e. "+outputs+", are now available to be extracted.",
		func(context.Context, struct{}) (string, error) { return "Completed.", nil })
	if err != nil {
		return nil, err
	}
	r.byName[finishName] = finish
	r.tools = append(r.tools, finish)

	reactSig, err := r.reactSignature()
	if err != nil {
		return nil, fmt.Errorf("predict: ReAct: %w", err)
	}
	extractSig, err := extractSignature(sig)
	if err != nil {
		return nil, fmt.Errorf("predict: ReAct: %w", err)
	}
	r.react = NewModule(reactSig, rest...)
	r.extract = NewModule(extractSig, rest...)
	r.extract.kind = "ChainOfThought"
	return r, nil
}

func quotedNames(fs []signature.Field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = "`" + f.Name + "`"
	}
	return strings.Join(names, ", ")
}

// reactSignature is DSPy's react signature: the task's inputs, then
// trajectory; next_thought, next_tool_name (one of the tools' names) and
// next_tool_args; the agent instructions listing the tools.
func (r *ReAct) reactSignature() (*signature.Signature, error) {
	sig := r.sig
	var instr []string
	if sig.Instructions() != "" {
		instr = append(instr, sig.Instructions()+"\n")
	}
	inputs, outputs := quotedNames(sig.Inputs()), quotedNames(sig.Outputs())
	instr = append(instr,
		"You are an Agent. In each episode, you will be given the fields "+inputs+" as input. And you can see your past trajectory so far.",
		"Your goal is to use one or more of the supplied tools to collect any necessary information for producing "+outputs+".\n",
		"To do this, you will interleave next_thought, next_tool_name, and next_tool_args in each turn, and also when finishing the task.",
		"After each tool call, you receive a resulting observation, which gets appended to your trajectory.\n",
		"When writing next_thought, you may reason about the current situation and plan for future steps.",
		"When selecting the next_tool_name and its next_tool_args, the tool must be one of:\n",
	)
	names := make([]any, len(r.tools))
	for i, t := range r.tools {
		instr = append(instr, "("+strconv.Itoa(i+1)+") "+t.String())
		names[i] = t.Name
	}
	instr = append(instr, "When providing `next_tool_args`, the value inside the field must be in JSON format")
	lit, err := signature.Literal(names...)
	if err != nil {
		return nil, err
	}
	react := sig
	for _, f := range sig.Outputs() {
		react = react.Delete(f.Name)
	}
	for _, f := range []struct {
		role  signature.Role
		field signature.Field
	}{
		{signature.Input, signature.Field{Name: "trajectory"}},
		{signature.Output, signature.Field{Name: "next_thought"}},
		{signature.Output, signature.Field{Name: "next_tool_name", Spec: lit}},
		{signature.Output, signature.Field{Name: "next_tool_args", Type: reflect.TypeFor[ToolArgs]()}},
	} {
		if react, err = react.Append(f.role, f.field); err != nil {
			return nil, err
		}
	}
	return react.WithInstructions(strings.Join(instr, "\n")), nil
}

// extractSignature is DSPy's extract ChainOfThought: the task's inputs,
// then trajectory; reasoning, then the task's outputs; its instructions.
func extractSignature(sig *signature.Signature) (*signature.Signature, error) {
	ex, err := sig.Append(signature.Input, signature.Field{Name: "trajectory"})
	if err != nil {
		return nil, err
	}
	if ex, err = ex.Prepend(signature.Output, signature.Field{Name: "reasoning"}); err != nil {
		return nil, err
	}
	return ex.WithInstructions(sig.Instructions()), nil
}

// errNotBuilt is the error of a nil or zero ReAct's Call, Stream and Load:
// ErrZeroModule, as every module's.
var errNotBuilt error = zeroError{"ReAct", "NewReAct"}

// built reports whether r was made by NewReAct (or Load).
func (r *ReAct) built() bool {
	return r != nil && r.sig != nil && r.react != nil && (r.extract != nil || r.v2) && r.byName != nil
}

// Signature returns the task signature (nil for a nil or zero ReAct).
func (r *ReAct) Signature() *signature.Signature {
	if r == nil {
		return nil
	}
	return r.sig
}

// React returns the "react" predictor: the module that picks each step
// (nil for a nil or zero ReAct).
func (r *ReAct) React() *Module {
	if r == nil {
		return nil
	}
	return r.react
}

// Extract returns the "extract.predict" predictor: the ChainOfThought that
// reads the outputs from the trajectory (nil for a nil or zero ReAct).
func (r *ReAct) Extract() *Module {
	if r == nil {
		return nil
	}
	return r.extract
}

// Tools returns the tools the agent may call, finish last (none for a nil
// or zero ReAct).
func (r *ReAct) Tools() []types.Tool {
	if r == nil {
		return nil
	}
	return slices.Clone(r.tools)
}

// Load returns a copy of r with the saved "react" and "extract.predict"
// predictors of prog (instructions, field texts, demos) loaded as
// Module.Load loads them, with opts (WithFieldsByPosition). For a ReAct saved inside
// another module, load prog.Sub("its.path"). A nil or zero ReAct cannot
// load.
//
// A program saved by DSPy 3.5 or later is a *VersionError
// (ErrDSPyVersion), WithAnyDSPyVersion or not: DSPy 3.5's dspy.ReAct is
// what DSPy 3.3.1 called ReActV2, which NewReActV2 loads. The state of
// DSPy's ReActV2 saved by any other version (a "react" predictor with the
// fields history, tools and tool_calls, and no "extract.predict") is
// refused too, with an error matching ErrWrongModule that names
// NewReActV2.
func (r *ReAct) Load(prog Program, opts ...LoadOption) (*ReAct, error) {
	if !r.built() {
		return nil, errNotBuilt
	}
	if err := checkReActProgram(prog, opts); err != nil {
		return nil, err
	}
	react, err := r.react.Load(prog, "react", opts...)
	if err != nil {
		return nil, err
	}
	extract, err := r.extract.Load(prog, "extract.predict", opts...)
	if err != nil {
		return nil, err
	}
	c := *r
	c.react, c.extract = react, extract
	return &c, nil
}

// Ignored lists what Load left out of the two saved predictors, each line
// prefixed by the predictor's name.
func (r *ReAct) Ignored() []string {
	if !r.built() {
		return nil
	}
	var out []string
	for _, p := range []struct {
		name string
		m    *Module
	}{{"react", r.react}, {"extract.predict", r.extract}} {
		for _, s := range p.m.Ignored() {
			out = append(out, p.name+": "+s)
		}
	}
	return out
}

// Sub returns the predictors saved under path (a module holding the
// program's module as an attribute), with "path." removed from their
// names: prog.Sub("react") of a program whose predictors are
// "react.react" and "react.extract.predict".
func (p Program) Sub(path string) Program {
	sub := Program{Predictors: map[string]SavedPredictor{}, DSPyVersion: p.DSPyVersion}
	for k, v := range p.Predictors {
		if rest, ok := strings.CutPrefix(k, path+"."); ok {
			sub.Predictors[rest] = v
		}
	}
	return sub
}

// Trajectory is what a ReAct run did, step by step. It marshals to DSPy's
// trajectory object, in order: {"thought_0": …, "tool_name_0": …,
// "tool_args_0": {…}, "observation_0": …, "thought_1": …}.
//
// A ReActV2 keeps its steps in one too (its Result shows them as a
// History): a reply may ask for several calls, each an entry of its own,
// numbered on, in the model's order; the reply's thought is the first
// call's, and the entries of one reply share their Turn.
type Trajectory []Step

// Step is one step of a run: the model's thought, the tool it called with
// which arguments, and what came back. In a ReActV2 it is one call of the
// model's reply (see Trajectory).
type Step struct {
	// Index numbers the step in the trajectory's keys (thought_<Index>).
	// When the context window forced the oldest steps out, the remaining
	// ones keep their numbers, as in DSPy.
	Index   int
	Thought string
	// Tool is the tool called; "" for a reply that called none.
	Tool string
	// Args are the arguments as the model wrote them, in its order: the
	// JSON the tool was called with and the trace's ToolStart shows. The
	// tool decodes them as Args.Decode does, so what they show is what it
	// ran with; arguments it refused (a key that is not exactly an
	// argument's name) ran nothing, and Err says why. Arguments that are
	// not one JSON object (a ReActV2 call's, cut off or malformed) are
	// empty here; the call ran nothing and Err holds their text.
	Args ToolArgs
	// Observation is the tool's result or, when it failed, the text the
	// model was shown: "Execution error in <tool>: <error>", or what
	// WithToolErrorText made of the error. Where the library added to
	// the result or cut it before the model saw it (the calls a reply
	// asked for past MaxToolCallsPerStep, noted after its last call), it
	// is that text.
	Observation any
	// Err is the tool's error, nil when it succeeded.
	Err error
	// Turn numbers, from 0, the react call (the model's reply) that asked
	// for the call: Index for a ReAct; the calls of one ReActV2 reply share
	// it. A stream's chunks carry Turn+1 as Chunk.Step.
	Turn int
	// CallID is the call's id in a ReActV2's conversation: the
	// provider's, or "call_<turn>_<n>" where the provider gave none or
	// gave one twice; "" for a ReAct.
	CallID string

	// unread marks a ReActV2 call whose arguments could not be read;
	// rawArgs is what the model wrote, replayed as it was.
	unread  bool
	rawArgs string
	// noThought marks a ReActV2 step whose reply gave no next_thought
	// (Thought is then ""): its turn has none, where an empty one shows.
	noThought bool
}

// MarshalJSON writes DSPy's trajectory object.
func (t Trajectory) MarshalJSON() ([]byte, error) {
	var o pyjson.Object
	for _, s := range t {
		n := strconv.Itoa(s.Index)
		o.Set("thought_"+n, s.Thought)
		if s.Tool == "" {
			continue
		}
		o.Set("tool_name_"+n, s.Tool)
		o.Set("tool_args_"+n, s.Args)
		o.Set("observation_"+n, s.Observation)
	}
	return o.MarshalJSON()
}

// text renders the trajectory as DSPy's adapters show it to the model:
// one "[[ ## key ## ]]" block per key, values as a str field shows them;
// a media value a tool returned is sent as a content part where it is.
func (t Trajectory) text() (string, error) {
	var b strings.Builder
	for _, s := range t {
		n := strconv.Itoa(s.Index)
		keys := [...]struct {
			key string
			v   any
		}{{"thought_" + n, s.Thought}, {"tool_name_" + n, s.Tool}, {"tool_args_" + n, s.Args}, {"observation_" + n, s.Observation}}
		shown := keys[:]
		if s.Tool == "" {
			shown = keys[:1]
		}
		for _, kv := range shown {
			text, err := shownText(kv.v)
			if err != nil {
				return "", err
			}
			b.WriteString("\n\n[[ ## ")
			b.WriteString(kv.key)
			b.WriteString(" ## ]]\n")
			b.WriteString(text)
		}
	}
	return strings.TrimSpace(b.String()), nil
}

// shownText is a value of the trajectory as the model is shown it: as a
// str field shows it, except that media a tool returned (an Image, alone
// or in a list with text) keep their content-part markers, which the
// adapter turns into parts of the user message: a list that holds media
// shows its items one per line, text as it is, media as parts. (It is
// value.Format, not adapter.FormatValue, which would make the markers
// text.)
func shownText(v any) (string, error) {
	items, ok := v.([]any)
	if !ok || !slices.ContainsFunc(items, isMedia) {
		return value.Format(v, strSpec)
	}
	lines := make([]string, len(items))
	for i, it := range items {
		if s, ok := it.(string); ok {
			lines[i] = s
			continue
		}
		s, err := value.Format(it, strSpec)
		if err != nil {
			return "", err
		}
		lines[i] = s
	}
	return strings.Join(lines, "\n"), nil
}

func isMedia(v any) bool {
	_, ok := v.(adapter.Formatter)
	return ok
}

// turns reports how many react calls the trajectory's steps came from.
func (t Trajectory) turns() int {
	n := 0
	for i, s := range t {
		if i == 0 || s.Turn != t[i-1].Turn {
			n++
		}
	}
	return n
}

// run is one ReAct run's state.
type run struct {
	r      *ReAct
	ctx    context.Context
	lm     adapter.LM
	inputs adapter.Values
	opts   []adapter.CallOption
	traj   Trajectory
	total  *adapter.Result
	// maxIters is this call's step limit; concurrency its bound on the
	// tool runs of a step.
	maxIters, concurrency int
	// errorText is this call's observation of a failed step.
	errorText func(tool string, err error) string
	// stepOpts are the options of the react calls.
	stepOpts []adapter.CallOption
	// next is the Index of the next step.
	next int
	// limits are the call's; their tool-result bounds cut what the
	// model is shown of each result.
	limits adapter.Limits
	// stream is set for Stream: the LM, and yield, which sends a chunk to
	// the caller (false: the caller stopped).
	stream adapter.StreamingLM
	yield  func(adapter.Chunk) bool
	// ids are a ReActV2's calls' ids so far.
	ids map[string]bool
	// prior are the turns of a ReActV2's "history" input; submitted the
	// outputs of the run's last successful submit.
	prior     []map[string]any
	submitted *submitted
	// notes become the Result's Notes.
	notes []string
}

// Call runs the agent on inputs: up to WithMaxIters steps, each an LM call
// that picks a tool and a run of it,
// then the extract call. The Result's Outputs[0] holds the extract's
// outputs (reasoning and the signature's outputs) and "trajectory", a
// Trajectory; Calls and Usage count every LM call. inputs may hold
// "max_iters" (an int) to lower the step limit for this call, unless the
// signature has such an input; it raises the limit above WithMaxIters (as
// DSPy lets any max_iters do) only with WithMaxItersFromInputs, since inputs
// often come from end users and each step is an LM call.
//
// As in DSPy, a tool's error becomes the step's observation (see
// WithToolErrorText) and the run goes on; a reply naming no tool the agent
// has (the reply the adapter read last: the fallback's, when there was
// one) ends the steps and goes to the extract call, while a last reply
// that yields none of the react fields, a refusal or an LM error ends the
// call with that error; when the prompt exceeds the context window
// (errors.Is(err, adapter.ErrContextWindow)), the oldest step is dropped
// and the call tried again, up to three times. Every tool run is reported
// to the call's Trace (ToolStart, ToolDone).
//
// What a tool receives: the arguments the model wrote, decoded as
// types.DecodeArgs decodes them (a key must be an argument's name
// exactly), which are the arguments Step.Args and the trace show. What the
// model receives: each tool's result and, for a failed step, its error's
// text verbatim unless WithToolErrorText says otherwise.
//
// A budget in opts (adapter.WithBudget) spans the run: every step's
// request and the extract call's spend from it. When it refuses one (an
// error matching adapter.ErrBudget), the run ends there, with no extract
// call (it would need a request the budget refuses): the Result holds
// every call made so far and, in Outputs[0], the "trajectory" of the steps
// that ran, beside no outputs; the error matches adapter.ErrBudget and says
// at which step the run stopped. Another error comes with the Result of
// the calls so far, without outputs.
func (r *ReAct) Call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts ...adapter.CallOption) (*adapter.Result, error) {
	ctx, done := adapter.StartModule(ctx, "ReAct", inputs, opts...)
	res, err := r.call(ctx, lm, inputs, opts)
	done(res, err)
	return res, err
}

func (r *ReAct) call(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts []adapter.CallOption) (*adapter.Result, error) {
	st, err := r.start(ctx, lm, inputs, opts)
	if err != nil {
		return nil, err
	}
	if err := st.steps(); err != nil {
		return st.failed(err)
	}
	res, err := st.withTruncation(0, func() (*adapter.Result, error) {
		in, err := st.extractInputs()
		if err != nil {
			return nil, err
		}
		return r.extract.Call(ctx, lm, in, st.opts...)
	})
	if err != nil {
		return st.failed(st.stopped(err, "before the extract call"))
	}
	return st.finish(res), nil
}

// stopped is err, when the run's budget refused its request (it matches
// adapter.ErrBudget), said to have stopped the run where it did; other
// errors as they are.
func (st *run) stopped(err error, where string) error {
	if !errors.Is(err, adapter.ErrBudget) {
		return err
	}
	name := "ReAct"
	if st.r.v2 {
		name = v2ModuleName
	}
	return fmt.Errorf("predict: %s: stopped by its budget %s: %w", name, where, err)
}

// failed is what a ReAct run that failed with err returns: the Result of
// its calls so far and err; when its budget stopped it, the Result also
// holds what the run did, Outputs[0]["trajectory"], beside no outputs.
func (st *run) failed(err error) (*adapter.Result, error) {
	if !errors.Is(err, adapter.ErrBudget) {
		return st.total, err
	}
	out := *st.total
	out.Outputs = []adapter.Values{{"trajectory": st.traj}}
	if len(st.notes) > 0 {
		out.Notes = append(slices.Clip(out.Notes), st.notes...)
	}
	return &out, err
}

func (r *ReAct) start(ctx context.Context, lm adapter.LM, inputs adapter.Values, opts []adapter.CallOption) (*run, error) {
	if !r.built() {
		return nil, errNotBuilt
	}
	maxIters := r.maxIters
	fromInputs := r.itersFromInputs || hasOption[maxItersFromInputsOption](opts)
	errorText := errorTextOf(opts, r.errorText)
	if errorText == nil {
		errorText = executionError
	}
	concurrency, err := concurrencyOf(opts, r.concurrency)
	if err != nil {
		return nil, err
	}
	c, opts := split(opts)
	switch {
	case c.instructions != nil || c.demosSet:
		return nil, errors.New("predict: ReAct: WithInstructions and WithDemos do not apply to a call (they would change both predictors)")
	case c.maxIters != nil && *c.maxIters < 0:
		return nil, fmt.Errorf("predict: ReAct: WithMaxIters(%d) is negative", *c.maxIters)
	case c.maxIters != nil:
		maxIters = *c.maxIters
	}
	if v, ok := inputs["max_iters"]; ok {
		if _, _, isField := r.sig.Field("max_iters"); !isField {
			n, ok := wholeNumber(v)
			if !ok || n < 0 {
				return nil, fmt.Errorf("predict: ReAct: max_iters %v is not a number of steps", v)
			}
			if fromInputs || n < maxIters {
				maxIters = n
			}
			inputs = withoutInput(inputs, "max_iters")
		}
	}
	st := &run{r: r, ctx: ctx, lm: lm, inputs: inputs, opts: opts, total: &adapter.Result{}, maxIters: maxIters,
		concurrency: concurrency, errorText: errorText, stepOpts: opts,
		limits: adapter.CallLimits(r.react.callOptions(opts)...)}
	return st, nil
}

// hasOption reports whether opts hold an option of type O.
func hasOption[O adapter.CallOption](opts []adapter.CallOption) bool {
	for _, o := range opts {
		if _, ok := o.(O); ok {
			return true
		}
	}
	return false
}

func wholeNumber(v any) (int, bool) {
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return int(rv.Int()), rv.Int() <= math.MaxInt32
	case rv.CanUint():
		return int(rv.Uint()), rv.Uint() <= math.MaxInt32
	case rv.CanFloat():
		f := rv.Float()
		return int(f), f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32
	}
	return 0, false
}

func withInput(in adapter.Values, k string, v any) adapter.Values {
	out := make(adapter.Values, len(in)+1)
	for key, val := range in {
		out[key] = val
	}
	out[k] = v
	return out
}

func withoutInput(in adapter.Values, k string) adapter.Values {
	out := make(adapter.Values, len(in))
	for key, val := range in {
		if key != k {
			out[key] = val
		}
	}
	return out
}

// errStopped ends a stream whose consumer stopped reading.
var errStopped = errors.New("predict: stream stopped")

// Status messages a streaming ReAct sends around each tool run: DSPy's
// StatusMessageProvider defaults.
func toolStartStatus(tool string) string { return "Calling tool " + tool + "..." }

const toolEndStatus = "Tool calling finished! Querying the LLM with tool calling results..."

// steps runs the react loop: a call that picks the tools, their runs,
// until finish, or maxIters.
func (st *run) steps() error {
	tr := adapter.CallTrace(st.ctx, st.r.react.callOptions(st.opts)...)
	for turn := range st.maxIters {
		var callID uint64
		idHook := adapter.UseTrace(&adapter.Trace{FormatDone: func(i adapter.FormatInfo) { callID = i.CallID }})
		res, err := st.withTruncation(turn+1, func() (*adapter.Result, error) {
			in, err := st.reactInputs()
			if err != nil {
				return nil, err
			}
			return st.callReact(turn, in, append(slices.Clip(st.stepOpts), idHook))
		})
		if err != nil {
			if !errors.Is(err, adapter.ErrBudget) && (errors.Is(err, adapter.ErrContextWindow) || toolChoiceError(err)) {
				break // DSPy ends the steps and extracts from what it has
			}
			return st.stopped(err, fmt.Sprintf("at step %d", turn+1))
		}
		thought, calls := st.readStep(res, turn)
		if len(calls) == 0 {
			st.traj = append(st.traj, Step{Index: st.next, Turn: turn, Thought: thought})
			st.next++
			break
		}
		if !st.send(adapter.Chunk{Step: turn + 1, ToolCalls: chosenCalls(calls)}) {
			return errStopped
		}
		steps, err := st.runCalls(tr, callID, turn, thought, false, calls)
		if err != nil {
			return err
		}
		st.traj = append(st.traj, steps...)
		if slices.ContainsFunc(calls, func(c toolCall) bool { return c.name == finishName }) {
			break
		}
	}
	return nil
}

// send sends a chunk to a Stream's caller; false when the caller stopped.
// Call sends nothing.
func (st *run) send(c adapter.Chunk) bool {
	return st.yield == nil || st.yield(c)
}

// reactInputs are the inputs of the next react call: the task's and the
// trajectory as text.
func (st *run) reactInputs() (adapter.Values, error) {
	text, err := st.traj.text()
	if err != nil {
		return nil, err
	}
	return withInput(st.inputs, "trajectory", text), nil
}

// extractInputs are the inputs of the extract call: the task's and the
// trajectory as text.
func (st *run) extractInputs() (adapter.Values, error) {
	text, err := st.traj.text()
	if err != nil {
		return nil, err
	}
	return withInput(st.inputs, "trajectory", text), nil
}

// callReact makes one react call, streaming it for Stream: the step's
// thought deltas reach the caller, tagged with the step.
func (st *run) callReact(turn int, in adapter.Values, opts []adapter.CallOption) (*adapter.Result, error) {
	if st.yield == nil {
		return st.r.react.Call(st.ctx, st.lm, in, opts...)
	}
	return st.streamCall(st.r.react, in, opts, func(ch adapter.Chunk) (adapter.Chunk, bool) { return stepChunk(ch, turn+1) })
}

// streamCall streams a call of m, passing its chunks through keep to the
// caller, and returns the Done chunk's Result.
func (st *run) streamCall(m *Module, in adapter.Values, opts []adapter.CallOption, keep func(adapter.Chunk) (adapter.Chunk, bool)) (*adapter.Result, error) {
	for ch, err := range m.Stream(st.ctx, st.stream, in, opts...) {
		switch {
		case err != nil:
			return ch.Result, err
		case ch.Done:
			return ch.Result, nil
		}
		out, ok := keep(ch)
		if !ok {
			continue
		}
		if !st.yield(out) {
			return nil, errStopped
		}
	}
	return nil, errors.New("predict: ReAct: a stream ended without a result")
}

// stepChunk is what a Stream's caller gets of a react call's chunk: the
// thought's deltas and reasoning, tagged with the step; not the tool's
// name and arguments as they are written (they come whole, once chosen),
// nor text outside the fields, nor the tool calls as they accumulate.
func stepChunk(ch adapter.Chunk, step int) (adapter.Chunk, bool) {
	switch {
	case ch.Field != "next_thought" && (ch.Field != "" || ch.Delta != "" || ch.Replace):
		return ch, false
	case ch.ToolCalls != nil && ch.Reasoning == "" && ch.Delta == "":
		return ch, false
	}
	ch.ToolCalls, ch.Step = nil, step
	return ch, true
}

// toolCall is a call a react reply asked for.
type toolCall struct {
	id, name string
	args     ToolArgs
	// err: the arguments could not be read (raw is what the model wrote);
	// the call runs nothing.
	err error
	raw string
	// dropped counts, on a ReActV2 reply's last call kept, the calls past
	// MaxToolCallsPerStep, which the model is told of.
	dropped int
}

// readStep reads a react reply: its thought and the calls it asks for.
func (st *run) readStep(res *adapter.Result, turn int) (string, []toolCall) {
	pred := res.Outputs[0]
	thought, _ := pred["next_thought"].(string)
	c := toolCall{}
	c.name, _ = pred["next_tool_name"].(string)
	c.args, _ = pred["next_tool_args"].(ToolArgs)
	if len(res.Completions) > 0 {
		c.args = c.args.inModelOrder(res.Completions[0])
	}
	return thought, []toolCall{c}
}

// chosenCalls are a step's calls as a Stream's caller gets them.
func chosenCalls(calls []toolCall) []openai.ToolCall {
	out := make([]openai.ToolCall, len(calls))
	for i, c := range calls {
		args := c.raw
		if c.err == nil {
			b, _ := c.args.MarshalJSON()
			args = string(b)
		}
		out[i] = openai.ToolCall{ID: c.id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: c.name, Arguments: args}}
	}
	return out
}

// toolChoiceError reports a reply that has the react fields but one whose
// value is not of its type — a tool the agent does not have, arguments
// that are not an object — in the reply the adapter read last: DSPy's
// ValueError, on which ReAct stops stepping and extracts. Anything else
// the last reply or call gave (no output fields, a refusal, an LM error)
// is DSPy's AdapterParseError or the LM's own error, which ends the call;
// the first adapter's error, which a failed fallback keeps as data
// (adapter.FallbackError.First), does not decide (DSPy's fallback
// replaces it).
func toolChoiceError(err error) bool {
	var pe *adapter.ParseError
	return errors.As(err, &pe) && pe.Field != "" &&
		!errors.Is(pe, adapter.ErrMissingField) && !errors.Is(pe, adapter.ErrTruncated) &&
		!errors.Is(pe, adapter.ErrEmptyResponse) && !errors.Is(pe, adapter.ErrParserPanic)
}

// withTruncation makes a call and, while the prompt exceeds the context
// window, drops the oldest step (for a ReActV2, the oldest
// reply's calls) and calls again: three attempts, as DSPy's
// _call_with_potential_trajectory_truncation. A trajectory of one step or
// none cannot be cut; both failures match adapter.ErrContextWindow. A
// Stream's caller is told of each retry (truncatedStatus, on the step it
// is for, 0 for the extract call): what it was sent of the failed call
// is replaced by the new call's chunks.
func (st *run) withTruncation(step int, call func() (*adapter.Result, error)) (*adapter.Result, error) {
	var last error
	for range 3 {
		res, err := call()
		st.total.Add(res)
		if err == nil || !errors.Is(err, adapter.ErrContextWindow) {
			return res, err
		}
		last = err
		if n := st.traj.turns(); n <= 1 {
			return nil, fmt.Errorf("predict: ReAct: the prompt exceeds the context window and the trajectory (%d steps) cannot be truncated further: %w", n, err)
		}
		first := st.traj[0].Turn
		st.traj = slices.DeleteFunc(slices.Clone(st.traj), func(s Step) bool { return s.Turn == first })
		if !st.send(adapter.Chunk{Step: step, Status: truncatedStatus}) {
			return nil, errStopped
		}
	}
	return nil, fmt.Errorf("predict: ReAct: the context window was exceeded even after 3 attempts to truncate the trajectory: %w", last)
}

// truncatedStatus tells a Stream's caller that a call exceeded the
// context window and is made again without the oldest step.
const truncatedStatus = "The prompt exceeded the context window: dropping the oldest step of the trajectory and asking again..."

// finish is the run's Result: the counters of every call, the rest from
// the extract call, and the trajectory beside each choice's outputs.
func (st *run) finish(res *adapter.Result) *adapter.Result {
	out := runResult(st.total, res)
	out.Outputs = make([]adapter.Values, len(res.Outputs))
	for i, o := range res.Outputs {
		out.Outputs[i] = withInput(o, "trajectory", st.traj)
	}
	return out
}

// Stream runs the agent like Call and streams it, step by step. The
// chunks, in order (one vocabulary for ReAct and ReActV2):
//
//   - each step's thought, as it is written: chunks with Field
//     "next_thought" and a Delta (joined as adapter.Stream's deltas are,
//     anew from a chunk with Replace set), and Reasoning deltas from a
//     model that reasons natively, with Step set to the step's number,
//     from 1;
//   - the step's tool calls once chosen: one chunk whose ToolCalls holds
//     them whole (name, arguments as JSON, and the id for a ReActV2), Step
//     set;
//   - each tool run's start: a chunk with Status "Calling tool <name>..."
//     and Tool (Done false: its id, name and arguments), Step set;
//   - its end: a chunk with Status "Tool calling finished! Querying the
//     LLM with tool calling results..." and Tool (Done true, with the
//     Observation the model is shown and the Err of a failed run), Step
//     set. Several calls of a ReActV2 step run at once (WithToolConcurrency):
//     they start in the model's order and end as they finish; match them
//     by Tool.ID;
//   - then the extract call's chunks, as a ChainOfThought streams them
//     (Field "reasoning", then the signature's outputs; Step 0);
//   - last, a Done chunk whose Result is what Call returns for the same
//     replies, the trajectory beside the outputs.
//
// The Status texts are DSPy's streamify status messages. A reply the
// adapter cannot parse falls back to the adapter's fallback as a second
// stream of the step, as adapter.Stream does. An error ends the sequence,
// on a chunk whose Result is the one Call returns with it; breaking out
// of the loop stops the run: no further tool starts and no
// further LM call; tools already running get a cancelled context and are
// waited for.
func (r *ReAct) Stream(ctx context.Context, lm adapter.StreamingLM, inputs adapter.Values, opts ...adapter.CallOption) iter.Seq2[adapter.Chunk, error] {
	return func(yield func(adapter.Chunk, error) bool) {
		ctx, done := adapter.StartModule(ctx, "ReAct", inputs, opts...)
		var res *adapter.Result
		var err error
		defer func() { done(res, err) }()
		var llm adapter.LM
		if lm != nil {
			llm = lm
		}
		st, err := r.start(ctx, llm, inputs, opts)
		if err != nil {
			yield(adapter.Chunk{}, err)
			return
		}
		st.stream = lm
		st.yield = func(c adapter.Chunk) bool { return yield(c, nil) }
		if err = st.steps(); err != nil {
			if !errors.Is(err, errStopped) {
				res, err = st.failed(err)
				yield(adapter.Chunk{Result: res}, err)
			}
			return
		}
		keep := func(ch adapter.Chunk) (adapter.Chunk, bool) { return ch, true }
		res, err = st.withTruncation(0, func() (*adapter.Result, error) {
			in, err := st.extractInputs()
			if err != nil {
				return nil, err
			}
			return st.streamCall(r.extract, in, st.opts, keep)
		})
		switch {
		case errors.Is(err, errStopped):
		case err != nil:
			res, err = st.failed(st.stopped(err, "before the extract call"))
			yield(adapter.Chunk{Result: res}, err)
		default:
			res = st.finish(res)
			yield(adapter.Chunk{Adapter: res.Adapter, Done: true, Result: res}, nil)
		}
	}
}

// executionError is DSPy's observation for a failed step.
func executionError(tool string, err error) string {
	return fmt.Sprintf("Execution error in %s: %v", tool, err)
}
