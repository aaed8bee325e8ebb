package predict

import (
	"fmt"

	adapter "github.com/sigwire/adapter"
)

// The options of this package. Module options (Option: WithDemos,
// WithInstructions, WithNativeReasoning, WithMaxIters, …) are
// adapter.CallOptions, given to a constructor or to a call; BestOfN and
// Refine take AttemptOptions; Load takes LoadOptions. As in the root
// package, With… sets a setting.

// Option configures a module. It is an adapter.CallOption: a module takes
// the pipeline's options (adapter.UseAdapter, adapter.WithRequest,
// adapter.UseTrace, …) as the defaults of every call it makes, ranked
// below the call's own options and the context's adapter, and this
// package's (WithDemos, WithInstructions, WithMaxIters), which a call may give
// too, for that call.
type Option = adapter.CallOption

// moduleOption is an Option only modules read; the pipeline ignores it.
type moduleOption interface {
	adapter.CallOption
	applyModule(*config)
}

type config struct {
	instructions *string
	demos        []adapter.Values
	demosSet     bool
	maxIters     *int // ReAct's step limit (WithMaxIters); nil means the default
	// nativeReasoning: a ChainOfThought's reasoning is a types.Reasoning
	// (WithNativeReasoning).
	nativeReasoning bool
}

type nativeReasoningOption struct{ adapter.EmptyCallOption }

func (nativeReasoningOption) applyModule(c *config) { c.nativeReasoning = true }

// WithNativeReasoning, given to NewChainOfThought or
// NewChainOfThoughtModule, types the reasoning output as types.Reasoning,
// as DSPy's dspy.ChainOfThought(sig, rationale_field_type=dspy.Reasoning)
// does: with an LM that reasons natively (adapter.Capabilities.Reasoning:
// the o-series, DeepSeek's reasoner, or any declared with
// adapter.WithCapabilities), the reasoning field leaves the prompt,
// reasoning_effort is sent ("low" unless the call's request sets it;
// "none" keeps the field in the prompt), and the reasoning is the reply's
// reasoning_content — the model thinks once, natively, instead of also
// writing a reasoning field (DSPy's open requests #8764, #9646). With any
// other LM, and with GPT-5 models over Chat Completions (which return no
// reasoning text), the prompt is DSPy's for that signature: ChainOfThought's,
// except that the user message asks for the reasoning "formatted as a
// valid Python str". The value in Result.Outputs is a types.Reasoning;
// ChainOfThought.Call returns its text; a Stream carries native reasoning
// in Reasoning chunks, not as field deltas. A model that reasons natively
// but returns no reasoning text leaves it empty. Other modules, and a
// call, ignore the option.
func WithNativeReasoning() Option { return nativeReasoningOption{} }

type instructionsOption struct {
	adapter.EmptyCallOption
	text string
}

func (o instructionsOption) applyModule(c *config) { c.instructions = &o.text }

// WithInstructions sets the signature's instructions, for a module or, on
// a call, for that call.
func WithInstructions(text string) Option { return instructionsOption{text: text} }

type demosOption struct {
	adapter.EmptyCallOption
	demos []adapter.Values
}

func (o demosOption) applyModule(c *config) { c.demos, c.demosSet = o.demos, true }

// WithDemos sets the demos as Values, for a module or, on a call, for that
// call. Typed modules also take typed demos (Predict.WithDemos).
func WithDemos(demos ...adapter.Values) Option {
	return demosOption{demos: append([]adapter.Values(nil), demos...)}
}

// split separates the module options from the pipeline's.
func split(opts []adapter.CallOption) (config, []adapter.CallOption) {
	var rest []adapter.CallOption
	var c *config // allocated for the first module option only: applying one moves it to the heap
	for _, o := range opts {
		if m, ok := o.(moduleOption); ok {
			if c == nil {
				c = new(config)
			}
			m.applyModule(c)
		} else if o != nil {
			rest = append(rest, o)
		}
	}
	if c == nil {
		return config{}, rest
	}
	return *c, rest
}

// DefaultMaxIters is the number of tool calls a ReAct run makes at most
// unless WithMaxIters says otherwise: DSPy's default.
const DefaultMaxIters = 20

// WithMaxIters sets how many steps (tool calls) a ReAct run makes at most
// before it extracts the outputs from what it has (default 20, as DSPy),
// for a ReAct or, on a call, for that call. A "max_iters" input may lower
// it for a call; raising it takes WithMaxItersFromInputs.
func WithMaxIters(n int) Option { return maxItersOption{n: n} }

// MaxIters is WithMaxIters under the name the ReAct surface was given
// first, which stays (DESIGN, decision 16, fixes it); write WithMaxIters,
// the name this package's options share with the root's.
func MaxIters(n int) Option { return WithMaxIters(n) }

type maxItersOption struct {
	adapter.EmptyCallOption
	n int
}

func (o maxItersOption) applyModule(c *config) { c.maxIters = &o.n }

// WithMaxItersFromInputs lets "max_iters" in a call's inputs raise the step
// limit above WithMaxIters (as DSPy lets it), for a ReAct or, on a call, for
// that call. Without it an input may only lower the limit: inputs often
// come from end users, and each step is an LM call.
func WithMaxItersFromInputs() Option { return maxItersFromInputsOption{} }

type maxItersFromInputsOption struct{ adapter.EmptyCallOption }

// applyModule: ReAct finds the option among its options itself.
func (maxItersFromInputsOption) applyModule(*config) {}

// WithToolErrorText sets the observation a failed step shows the model,
// for a ReAct or, on a call, for that call: f gets the tool's name and the
// error (the tool's own; arguments the tool refused; a tool the agent does
// not have; a result that cannot be shown). By default the observation is
// DSPy's "Execution error in <tool>: <error>", the error's text verbatim,
// so whatever a tool's error holds (a URL with an API key in its query, a
// path, a stack) reaches the model and the provider in the next prompt,
// and stays in the trajectory; f may redact or replace it. Step.Err and
// the trace's ToolDone keep the error itself. A nil f keeps the default.
// For native tool calls run by hand, types.WithToolErrorText does the same
// for ToolCalls.Execute.
func WithToolErrorText(f func(tool string, err error) string) Option {
	return toolErrorTextOption{f: f}
}

type toolErrorTextOption struct {
	adapter.EmptyCallOption
	f func(string, error) string
}

// applyModule: ReAct finds the option among its options itself.
func (toolErrorTextOption) applyModule(*config) {}

// errorTextOf returns the function of the last WithToolErrorText in opts,
// or def.
func errorTextOf(opts []adapter.CallOption, def func(string, error) string) func(string, error) string {
	for _, o := range opts {
		if t, ok := o.(toolErrorTextOption); ok {
			def = t.f
		}
	}
	return def
}

// DefaultToolConcurrency is how many of a step's tool calls run at once
// unless WithToolConcurrency says otherwise.
const DefaultToolConcurrency = 4

// WithToolConcurrency bounds how many of one step's tool calls run at once,
// for a ReActV2 (or an Agent) or, on a call, for that call (default
// DefaultToolConcurrency). A reply may ask for several calls: they start
// in the model's order, at most n
// at a time, and their results are kept in the model's order whatever
// order they finish in. Tools that run at once must be safe for
// concurrent use; WithToolConcurrency(1) runs them one after another. The
// trace's ToolStart and ToolDone hooks of one run are never called at
// once, though with n > 1 they run on the tools' goroutines. n must be at
// least 1.
func WithToolConcurrency(n int) Option { return concurrencyOption{n: n} }

type concurrencyOption struct {
	adapter.EmptyCallOption
	n int
}

// applyModule: ReActV2 finds the option among its options itself.
func (concurrencyOption) applyModule(*config) {}

// concurrencyOf returns the bound of the last WithToolConcurrency in opts, or
// def.
func concurrencyOf(opts []adapter.CallOption, def int) (int, error) {
	for _, o := range opts {
		if c, ok := o.(concurrencyOption); ok {
			if c.n < 1 {
				return 0, fmt.Errorf("predict: ReAct: WithToolConcurrency(%d) is less than 1", c.n)
			}
			def = c.n
		}
	}
	return def, nil
}

// AttemptOption configures BestOfN and Refine.
type AttemptOption func(*attemptConfig)

type attemptConfig struct {
	failCount    *int
	firstRollout int
	programCode  *string
	rewardCode   *string
	feedback     []adapter.CallOption
	refineOnly   []string // the Refine-only options given
}

// WithFailCount sets how many attempts may fail (the module's error, the
// reward's error or NaN, and for Refine a failed feedback step) before
// the call fails: the failure after the n-th ends it at once, with an
// *AttemptsError. The default is N, the number of attempts, as in DSPy:
// failures alone never end the call early. WithFailCount(0) fails at the first
// failure (DSPy reads 0 as "the default"). A request the call's budget
// refuses is no failure WithFailCount counts: it ends the call at once (see
// BestOfN.Call).
func WithFailCount(n int) AttemptOption { return func(c *attemptConfig) { c.failCount = &n } }

// WithFirstRollout sets the rollout number of the first attempt (default 0,
// then 1, 2, …): DSPy starts from the LM's rollout_id. Each attempt's
// requests carry its rollout number as their seed.
func WithFirstRollout(n int) AttemptOption { return func(c *attemptConfig) { c.firstRollout = n } }

// WithProgramCode sets the text Refine's feedback step shows as the program's
// code (DSPy's program_code, the source of the module's class, which Go
// cannot read at run time). The default is the program's Go type, such
// as "*predict.ChainOfThought[main.QA,main.Answer]". Refine only.
func WithProgramCode(text string) AttemptOption {
	return func(c *attemptConfig) { c.programCode = &text; c.refineOnly = append(c.refineOnly, "WithProgramCode") }
}

// WithRewardCode sets the text Refine's feedback step shows as the reward
// function's code (DSPy's reward_code, its source, which Go cannot read
// at run time). The default is the function's name as the Go runtime
// reports it, such as "main.oneWord". Refine only.
func WithRewardCode(text string) AttemptOption {
	return func(c *attemptConfig) { c.rewardCode = &text; c.refineOnly = append(c.refineOnly, "WithRewardCode") }
}

// WithFeedbackOptions sets the defaults of Refine's feedback call (its
// adapter, its request template: the model that writes the advice), below
// the options of the Refine call, which it also gets. Refine only.
func WithFeedbackOptions(opts ...adapter.CallOption) AttemptOption {
	return func(c *attemptConfig) {
		c.feedback = append(c.feedback, opts...)
		c.refineOnly = append(c.refineOnly, "WithFeedbackOptions")
	}
}

// LoadOption configures Load (Module.Load, Predict.Load,
// ChainOfThought.Load, ReAct.Load): WithFieldsByPosition, WithAnyDSPyVersion.
type LoadOption interface {
	applyLoad(*loadConfig)
}

type loadConfig struct {
	byPosition bool
	// allowVersion: a program of a DSPy whose prompts this library does
	// not reproduce loads under its profile (WithAnyDSPyVersion).
	allowVersion bool
}

// loadConfigOf applies opts.
func loadConfigOf(opts []LoadOption) loadConfig {
	var cfg loadConfig
	for _, o := range opts {
		if o != nil {
			o.applyLoad(&cfg)
		}
	}
	return cfg
}

type byPositionOption struct{}

func (byPositionOption) applyLoad(c *loadConfig) { c.byPosition = true }

// WithFieldsByPosition makes Load apply the saved texts to the
// signature's fields by position whatever their names, as DSPy's
// load_state does: the first saved prefix and description go to the first
// field, and so on. Demo keys that
// name no field are then left out, as in DSPy, and listed by Ignored, with
// the saved names the fields took the texts of. The number of fields must
// still match.
//
// Without it, Load refuses (FieldMismatchError) a predictor whose saved
// state shows that its fields had other names.
func WithFieldsByPosition() LoadOption { return byPositionOption{} }

type allowVersionOption struct{}

func (allowVersionOption) applyLoad(c *loadConfig) { c.allowVersion = true }

// WithAnyDSPyVersion makes Load go on with a program saved by a DSPy whose
// prompts this library does not reproduce byte for byte, DSPy 3.5 and
// later, which without it is a *VersionError. The module then runs under
// the profile "dspy-3.5" (Result.Profile): DSPy 3.5's choices where they
// are known exactly — XMLAdapter with native function calling as the
// module's default adapter (adapter.XML with adapter.Options{NativeTools:
// adapter.On}, which ranks, as a module's default does, below
// adapter.UseAdapter, adapter.WithAdapter and an adapter the module was
// built with), and a ChainOfThought's reasoning typed types.Reasoning
// (the model's native reasoning where it has it, as WithNativeReasoning)
// — and this library's DSPy 3.3.1 prompt text where DSPy 3.5's is not
// public (its XML prompt, ChainOfThought's "short plan"). A program of a
// later DSPy (3.6, …) runs under the same profile, the latest known.
//
// A ReAct cannot load such a program even with it: DSPy 3.5's dspy.ReAct
// is ReActV2, which NewReActV2 loads. Programs of DSPy 3.4 and earlier,
// and those with no version, load as without it. See
// docs/compatibility.md, "DSPy versions".
func WithAnyDSPyVersion() LoadOption { return allowVersionOption{} }
