package adapter

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// Values maps field names to Go values. Output values have exactly the
// field's Go type (int for int, []string for list[str], *int for
// Optional[int], the struct value for a struct type).
type Values = map[string]any

// LM is the language model the pipeline calls. *openai.Client satisfies it,
// and so does any OpenAI-compatible client wrapped to this one method.
type LM interface {
	CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)
}

// StreamingLM is an LM that can also stream. *openai.Client satisfies it.
type StreamingLM interface {
	LM
	CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error)
}

// Adapter turns a signature, demos and inputs into chat messages. Format is
// pure: no context, no I/O; it never mutates its arguments.
//
// An adapter also implements [Parser] or [CallingParser]; one that
// implements neither fails every call before any LM request, with an error
// naming it. Parse is not a method of Adapter because an adapter such as
// [TwoStep] cannot read a reply without LM calls of its own: its Parse
// could only fail. An adapter written outside the package states which it
// implements at compile time:
//
//	var _ adapter.Parser = Mine{}
//
// Other capabilities are detected by type assertion: [RequestShaper],
// [Fallbacker], [NativeToolAdapter], [StreamParser].
type Adapter interface {
	// Name is the adapter's short name: chat, json, xml, twostep.
	Name() string
	Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error)
}

// Parser is implemented by adapters that read the output fields from the
// completion text alone. Parse is pure. It returns every output field, with
// defaults applied, or an error; on error a *ParseError carries the values
// it could read.
type Parser interface {
	Parse(sig *signature.Signature, completion string) (Values, error)
}

// CallingParser is implemented by adapters whose parse makes LM calls of
// its own, such as TwoStep's extraction. The pipeline calls ParseCall
// instead of Parse, with a context that carries the call's [Trace], and
// adds the calls, usage, retries, cache hits and coalesced requests of the
// returned Result to its own.
type CallingParser interface {
	ParseCall(ctx context.Context, sig *signature.Signature, completion string) (Values, *Result, error)
}

// RequestShaper is implemented by adapters that set LM options for their
// calls, such as the JSON adapter's response_format. Level 0 is the
// preferred form; when the provider rejects it (HTTP 400 about the
// response format), the pipeline asks for level 1, once. ShapeRequest
// returns the name of the mode it set (reported in [Result].Mode), and ok
// false when there is no such level.
type RequestShaper interface {
	ShapeRequest(sig *signature.Signature, req *openai.ChatCompletionRequest, caps Capabilities, level int) (mode string, ok bool, err error)
}

// Fallbacker is implemented by adapters that retry a call once with another
// adapter when their parse fails (DSPy's ChatAdapter falls back to its
// JSONAdapter). Fallback returns nil when the adapter has none.
type Fallbacker interface {
	Fallback() Adapter
}

// Options are the settings the Chat, JSON, XML and BAML adapters share,
// as slog's handlers share HandlerOptions: each adapter holds them in its
// Options field,
//
//	adapter.Chat{Options: adapter.Options{NativeTools: adapter.On}}
//
// and the zero Options are DSPy's defaults. An adapter written outside the
// package can hold them too; the pipeline sees its native tool calling
// through [NativeToolAdapter].
type Options struct {
	// NoFallback turns off the one retry with the JSON adapter after a
	// parse failure Chat or XML cannot recover (DSPy's
	// use_json_adapter_fallback=False). JSON and BAML never fall back to
	// another adapter, as in DSPy. The call option [NoFallback] turns it
	// off for one call.
	NoFallback bool
	// NativeTools turns native function calling on or off (DSPy's
	// use_native_function_calling). On, a ToolCalls output is answered
	// through the request's tools (from a Tool input) when the LM supports
	// them; off, tools, tool_choice and parallel_tool_calls are removed from
	// the request and the calls are asked for in the text. Auto (the zero
	// value) keeps the adapter's default, DSPy's: on for JSON and BAML,
	// off for Chat and XML.
	NativeTools Switch
	// ParallelToolCalls, On or Off, is sent as parallel_tool_calls with
	// native tool calls (DSPy's parallel_tool_calls), unless the request
	// template says, together with tool_choice "auto" unless the template
	// sets a tool_choice, as DSPy sends it; Auto leaves both to the
	// provider.
	ParallelToolCalls Switch
	// Prompt changes pieces of the prompt (see [Prompt]); nil keeps
	// DSPy's.
	Prompt *Prompt
}

// Switch is an adapter setting that is On, Off, or left to a default:
// Auto, its zero value.
type Switch uint8

// The positions of a Switch.
const (
	Auto Switch = iota // the default: the adapter's, or the provider's
	On
	Off
)

// String returns "auto", "on" or "off".
func (s Switch) String() string {
	switch s {
	case Auto:
		return "auto"
	case On:
		return "on"
	case Off:
		return "off"
	}
	return fmt.Sprintf("Switch(%d)", uint8(s))
}

// or reports whether s is on, def standing for Auto.
func (s Switch) or(def bool) bool {
	switch s {
	case On:
		return true
	case Off:
		return false
	}
	return def
}

// nativeTools is what an adapter holding o tells [NativeToolAdapter]:
// native function calling as NativeTools says (def for Auto), and its
// parallel_tool_calls.
func (o Options) nativeTools(def bool) (bool, Switch) {
	return o.NativeTools.or(def), o.ParallelToolCalls
}

// fallback is the JSON adapter a Chat or XML adapter holding o retries a
// failed parse with, nil with NoFallback: asking for native tools as the
// adapter does (off by default), with its parallel_tool_calls and the
// pieces of its Prompt that JSON writes as the others do (DSPy's
// ChatAdapter passes use_native_function_calling and parallel_tool_calls
// to its fallback JSONAdapter).
func (o Options) fallback() Adapter {
	if o.NoFallback {
		return nil
	}
	native := Off
	if o.NativeTools == On {
		native = On
	}
	switch fp := o.Prompt.forFallback(); {
	case fp != nil || o.ParallelToolCalls != Auto:
		return JSON{Options: Options{NativeTools: native, ParallelToolCalls: o.ParallelToolCalls, Prompt: fp}}
	case native == On:
		return nativeJSON
	}
	return textJSON
}

// The usual fallbacks (no Prompt pieces, no parallel_tool_calls), made
// into Adapter values once.
var (
	nativeJSON Adapter = JSON{Options: Options{NativeTools: On}}
	textJSON   Adapter = JSON{Options: Options{NativeTools: Off}}
)

// defaultAdapter holds the process-wide default; nil means Chat{}.
var defaultAdapter atomic.Pointer[Adapter]

// DefaultAdapter returns the adapter used when neither the call, the
// context nor the caller's default names one: Chat, with its JSON
// fallback, as in DSPy, unless [SetDefaultAdapter] changed it.
func DefaultAdapter() Adapter {
	if a := defaultAdapter.Load(); a != nil {
		return *a
	}
	return Chat{}
}

// SetDefaultAdapter changes the process-wide default adapter (DSPy's
// dspy.configure(adapter=…)); nil restores Chat. It is safe to call while
// calls run: each call reads the default once. Per-call and per-context
// choices ([UseAdapter], [WithAdapter]) beat it.
func SetDefaultAdapter(a Adapter) {
	if a == nil {
		defaultAdapter.Store(nil)
		return
	}
	defaultAdapter.Store(&a)
}

// WithAdapter returns a context whose calls use a, unless a call names its
// own adapter with [UseAdapter]. It is how an adapter is swapped per call
// for code that does not expose call options (DSPy's dspy.context(adapter=)).
func WithAdapter(ctx context.Context, a Adapter) context.Context {
	s := scopeOf(ctx)
	s.adapter = a
	return s.on(ctx)
}

// AdapterFrom returns the adapter set on ctx by [WithAdapter].
func AdapterFrom(ctx context.Context) (Adapter, bool) {
	a := scopeOf(ctx).adapter
	return a, a != nil
}

// ZeroTemperature asks for a temperature of 0. go-openai's request struct
// drops a temperature of 0 (omitempty), which makes the server use its
// default (often 1); set Temperature to ZeroTemperature for deterministic
// decoding. It is the smallest float32 above 0: through a client wrapped
// with [HTTPDoer] the pipeline sends it as "temperature": 0, through any
// other as go-openai writes it, 1e-45. The request itself (in a [Trace],
// a cache key) keeps ZeroTemperature.
const ZeroTemperature float32 = 1e-45

// Result is what a call produced.
type Result struct {
	// Outputs holds one Values per choice (n > 1 gives several).
	Outputs []Values
	// Adapter names the adapter whose parse produced Outputs; after a
	// fallback it is the fallback's name.
	Adapter string
	// FallbackCause is why the fallback ran: the first adapter's error,
	// whenever the fallback ran (nil otherwise). When the fallback failed
	// too, the call's *FallbackError holds the same error as First.
	FallbackCause error
	// Counts are the call's counters (Calls, Requests, Reasks, Retries,
	// RetryWait, CacheHits, Coalesced, CacheErrors, ModelFallbacks), read as fields of the
	// Result: res.Calls, res.Requests.
	Counts
	// ReaskCause is why the latest re-ask (Reasks) ran: the error of the
	// reply it asked the model to correct (nil when none ran).
	ReaskCause error
	// Usage is the token usage summed over every LM request sent (a cache
	// hit spends none); UsageByModel splits it by the model that answered,
	// for a call that used two (TwoStep's extractor, a fallback through
	// another model); a model whose replies reported no usage is not
	// listed, and UsageByModel is nil when none did. [Result.Cost] prices
	// them.
	Usage        openai.Usage
	UsageByModel map[string]openai.Usage
	// Completions holds the raw text of each choice of the last LM call.
	Completions []string
	// Mode is how the last request asked for the reply's format:
	// ModeJSONSchema ("json_schema", strict structured outputs),
	// ModeJSONObject ("json_object", JSON mode) or ModePrompt ("prompt":
	// the prompt alone, no response_format). The JSON and BAML adapters
	// report their tier — after a provider rejected a response format, the
	// lower tier actually used; Chat, XML and TwoStep report "prompt",
	// unless the request template sets a response format, whose type they
	// report. A custom adapter's RequestShaper names its own mode. It is
	// "" only when no request was sent.
	Mode string
	// Model and SystemFingerprint are what the last reply said.
	Model, SystemFingerprint string
	// Logprobs holds each choice's log probabilities when the request asked
	// for them (Logprobs: true), else nil.
	Logprobs []*openai.LogProbs
	// Notes says what a module did that DSPy does silently, where it kept
	// DSPy's requests: what it left out of a reply or of the outputs (a
	// ReActV2's extra submit arguments, a reply's text beside its tool
	// calls that was not in the adapter's format, the calls a forced
	// submit's reply asked for besides submit), calls that ran after a
	// submit ended the run, or what a call did other than its adapter
	// asked (tool calls asked for in the text because the LM cannot make
	// them natively, and why; see [Plan].Note; a prompt cache asked for
	// with [WithPromptCache] and not marked, and why). Empty when there
	// is nothing to say; Add keeps both sides', each once.
	Notes []string
	// Profile names the DSPy profile a module (package predict) ran
	// under: whose choices it made, which DSPy's prompts it sent.
	// "dspy-3.3.1" is DSPy 3.3.1's prompts, byte for byte: every module
	// not loaded from a saved program, and those loaded from a program of
	// DSPy 3.4 or earlier; "dspy-3.5" is a program of DSPy 3.5 or later
	// loaded with predict.WithAnyDSPyVersion (DSPy 3.5's default adapter,
	// 3.3.1's prompt text; see docs/compatibility.md). It is "" for a
	// bare Call or Stream, which follows no profile.
	Profile string
}

// Counts are what a call counts, and what a module's run sums over its
// calls (Result.Add): each answered call, each request actually sent, and
// how the calls were answered.
type Counts struct {
	// Calls is the number of LM calls the pipeline made: one per attempt
	// (2 after a fallback, a re-ask or a rejected response format),
	// whether a request answered it, a cache (CacheHits) or an identical
	// call in flight (Coalesced), failed ones included.
	Calls int
	// Requests is the number of requests actually sent to the LM: Calls
	// less those a cache or a call in flight answered, plus every request
	// repeated by the retries (Retries) and every request a middleware
	// sent through the chain it was given (a fallback to another model,
	// say). A cache hit or a joined call sends none.
	Requests int
	// Reasks counts the times the call asked the model again with the
	// error of its reply (see [WithReask]), each an LM call counted in
	// Calls too.
	Reasks int
	// Retries counts the requests the retry middleware repeated (not
	// included in Calls; in Requests) and RetryWait the waits it
	// scheduled between them.
	Retries   int
	RetryWait time.Duration
	// CacheHits counts the calls a Cached middleware answered without a
	// request; Coalesced those that got the reply of an identical request
	// in flight at the same time instead of sending their own (see
	// [Coalesced]), which, like a hit, spent no tokens.
	CacheHits, Coalesced int
	// CacheErrors counts the failures of a cache that can fail (see
	// [FallibleCache]) during the call; each was reported to
	// [Trace].CacheError, and the call went on as after a miss.
	CacheErrors int
	// ModelFallbacks counts the times a [FallbackLM] moved the call to
	// its next model after a failure (each told in Result.Notes).
	ModelFallbacks int
}

// Add adds o's counts to c: the one place the counters are summed.
func (c *Counts) Add(o Counts) {
	c.Calls += o.Calls
	c.Requests += o.Requests
	c.Reasks += o.Reasks
	c.Retries += o.Retries
	c.RetryWait += o.RetryWait
	c.CacheHits += o.CacheHits
	c.Coalesced += o.Coalesced
	c.CacheErrors += o.CacheErrors
	c.ModelFallbacks += o.ModelFallbacks
}

// Add adds the counters of o, the Result of another call of the same run
// (a module's step, an attempt), to r: its Counts, Usage and
// UsageByModel, and appends those of o's Notes r does not have;
// ReaskCause becomes o's when o re-asked, so that it stays the latest
// re-ask's. The fields that
// describe one call's reply (Outputs, Adapter, FallbackCause,
// Completions, Mode, Model, SystemFingerprint, Logprobs) are left as they
// are. Profile, which describes the run, becomes o's when r has none. A
// nil o adds nothing. Modules (package predict) report every call of a
// run in one Result with it.
func (r *Result) Add(o *Result) {
	if o == nil {
		return
	}
	if r.Profile == "" {
		r.Profile = o.Profile
	}
	r.Counts.Add(o.Counts)
	for _, n := range o.Notes {
		if !slices.Contains(r.Notes, n) { // a note of every step is said once
			r.Notes = append(slices.Clip(r.Notes), n)
		}
	}
	if o.ReaskCause != nil {
		r.ReaskCause = o.ReaskCause
	}
	r.Usage = addUsage(r.Usage, o.Usage)
	if len(o.UsageByModel) > 0 { // a new map: r's may be another Result's too
		m := make(map[string]openai.Usage, len(r.UsageByModel)+len(o.UsageByModel))
		for model, u := range r.UsageByModel {
			m[model] = u
		}
		for model, u := range o.UsageByModel {
			m[model] = addUsage(m[model], u)
		}
		r.UsageByModel = m
	}
}

// Call runs the pipeline once: it checks the inputs, formats the messages
// with the resolved adapter, calls lm with the request template, and parses
// every choice into typed values.
//
// The adapter is, in order: [UseAdapter], [WithAdapter] on ctx, a module's default ([Defaults]),
// then [DefaultAdapter](). Errors: an error before any LM call for a nil
// context, LM or signature, and an *InputError for inputs that do not fit
// the signature; an *LMError (wrapping go-openai's error or the context's)
// for a failed call; a *RefusalError for a refusal or a content filter; a
// *ParseError when the reply cannot be read, including a reply cut off by
// the token limit ([ErrTruncated]) and an empty reply ([ErrEmptyResponse]).
// A parse failure of an adapter with a [Fallbacker] fallback is retried
// once with the fallback adapter (never after truncation, a refusal or an
// LM error); if that fails too, the error is a *[FallbackError]: of the
// fallback's class only (an LM failure is an *LMError and not a
// *ParseError), with the first adapter's *ParseError as data. With
// [WithReask], a reply the model can correct is first sent back with its
// error, as many times as the option allows, before the fallback runs.
//
// On an error after the first LM request, Call returns the Result as far
// as it got (calls, usage, raw completions) with the error.
func Call(ctx context.Context, lm LM, sig *signature.Signature, demos []Values, inputs Values, opts ...CallOption) (*Result, error) {
	var r run
	ctx, cancel, err := r.prepare(ctx, lm, sig, demos, inputs, opts)
	if err != nil {
		return nil, err
	}
	defer cancel()
	err = r.do(ctx)
	return &r.res, err
}
