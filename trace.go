package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/signature"
)

// Trace observes the pipeline, in the manner of net/http/httptrace: set
// the functions you need, nil ones are skipped. Every attempt is reported,
// the fallback's included (Attempt 2), and every LM call, a retry after a
// rejected response format included. The functions run synchronously on
// the calling goroutine and must not modify what they are given. Requests
// never carry the API key (it lives in the client), so a Trace cannot leak
// it.
//
// Every step has a start and an end event, enough to open and close a
// span (see examples/otel for OpenTelemetry): a module run (predict's
// modules, through [StartModule]), a Call or Stream, each format, each LM
// request, each parse, each tool run. Every event of one Call or Stream
// carries the same CallID, assigned once per call and unique in the
// process, so hooks that see concurrent calls can tell them apart; a call
// made inside a module run names that run as its ParentID, and a module
// run inside another names the outer one. Tool runs (ToolStart, ToolDone)
// are reported by the code that runs tools — predict.ReAct,
// types.ToolCalls.Execute — through [Trace.RunTool].
type Trace struct {
	ModuleStart func(ModuleStartInfo)
	ModuleDone  func(ModuleDoneInfo)
	CallStart   func(CallStartInfo)
	CallDone    func(CallDoneInfo)
	FormatStart func(FormatStartInfo)
	FormatDone  func(FormatInfo)
	LMCallStart func(LMCallStartInfo)
	LMCallDone  func(LMCallDoneInfo)
	ParseStart  func(ParseStartInfo)
	ParseDone   func(ParseInfo)
	ToolStart   func(ToolStartInfo)
	ToolDone    func(ToolDoneInfo)
	// CacheError reports a failure of a cache that can fail (see
	// [FallibleCache]) during a call: the call went on as after a miss.
	CacheError func(CacheErrorInfo)
}

// CacheOp is what a cache was asked to do when it failed.
type CacheOp string

// The operations a [CacheErrorInfo] names.
const (
	CacheLookup CacheOp = "lookup" // reading an entry: the call went to the LM
	CacheStore  CacheOp = "store"  // writing an accepted reply: the reply was still returned
)

// CacheErrorInfo reports a cache's failure during a call ([FallibleCache]):
// Redis down or slow, a disk error, a corrupt or foreign entry. Nothing
// wrong was served: a failed lookup is a miss, a failed store loses only
// the entry. Each is also counted in Result.CacheErrors.
type CacheErrorInfo struct {
	CallID uint64
	Op     CacheOp
	Key    string // the entry's key (the LM's identity is hashed into it)
	Err    error
	// Context is the context of the request the cache served.
	Context context.Context
}

// ModuleStartInfo reports a module run starting (a predict module's Call
// or Stream).
type ModuleStartInfo struct {
	// ID identifies the run; ParentID the module run it is part of (0 for
	// none).
	ID, ParentID uint64
	// Module is the module's kind: Predict, ChainOfThought, ReAct.
	Module string
	Inputs Values
	// Context is the run's context, for hooks that open spans under the
	// caller's.
	Context context.Context
}

// ModuleDoneInfo reports a module run's end.
type ModuleDoneInfo struct {
	ID, ParentID uint64
	Module       string
	Result       *Result
	Err          error
	Duration     time.Duration
}

// CallStartInfo reports a Call or Stream starting, its inputs checked.
type CallStartInfo struct {
	CallID   uint64
	ParentID uint64 // the module run the call is part of (0 for none)
	// Adapter is the adapter the call uses first.
	Adapter   string
	Signature *signature.Signature
	Inputs    Values
	Stream    bool
	// Context is the call's context, for hooks that open spans under the
	// caller's.
	Context context.Context
}

// CallDoneInfo reports a Call's or Stream's end: its Result (usage, calls,
// outputs) and error, as Call returns them.
type CallDoneInfo struct {
	CallID, ParentID uint64
	Result           *Result
	Err              error
	Duration         time.Duration
}

// FormatStartInfo reports an adapter about to format. For the fallback
// adapter (Attempt 2), FallbackCause is the first adapter's error: why the
// fallback runs. For a re-ask ([WithReask]), which adds the reply and its
// error to the adapter's messages rather than formatting anew, Reask
// numbers it and ReaskCause is the error of the reply it asks the model
// to correct.
type FormatStartInfo struct {
	CallID        uint64
	Adapter       string
	Attempt       int
	FallbackCause error
	// Reask numbers the re-asks of a call (1 for its first; they go on
	// across the fallback): 0 for an adapter's first request.
	Reask      int
	ReaskCause error
}

// ParseStartInfo reports a choice's completion about to be parsed.
type ParseStartInfo struct {
	CallID     uint64
	Adapter    string
	Attempt    int
	Reask      int // the re-ask whose reply this is (0: none)
	Completion string
}

// FormatInfo reports the messages an adapter produced.
type FormatInfo struct {
	CallID  uint64 // the Call or Stream this event belongs to
	Adapter string
	Attempt int // 1, or 2 for the fallback adapter
	// Reask is the re-ask these messages are (0: none); its messages end
	// with the reply and the user turn stating its error.
	Reask    int
	Messages []openai.ChatCompletionMessage
	Duration time.Duration
	Err      error
}

// LMCallStartInfo reports a request about to be sent.
type LMCallStartInfo struct {
	CallID  uint64
	Adapter string
	// Attempt is the adapter's: 1, or 2 for the fallback adapter.
	Attempt int
	// Reask is the re-ask this request is (0: none; see [WithReask]).
	Reask int
	// Retry numbers the sends of one request: 0 for the first, n for the
	// n-th retry (see [Retry]).
	Retry   int
	Request openai.ChatCompletionRequest
	Stream  bool
}

// LMCallDoneInfo reports an LM call's outcome. For a stream, Response is
// the reply assembled from it, Completions holds the text received, and
// Duration spans the whole stream.
//
// Usage is what the request spent, as Result.Usage counts it: the sum of
// Usage over a call's LMCallDone events (those of calls an adapter makes
// while parsing, such as TwoStep's extraction, included) is the call's
// Result.Usage. A request answered by a cache ([Cached], beneath the
// trace: on the LM) is reported with Cached set and spent nothing: its
// Usage, and its Response's, are zero. So is a request that got the reply
// of an identical one in flight at the same time (Coalesced set, see
// [Coalesced]): the tokens are reported once, with the request that took
// the call's reply over. A cache among the call's own middlewares
// ([UseMiddleware]) answers above the trace: its hits are not reported
// here, only counted in Result.CacheHits.
type LMCallDoneInfo struct {
	CallID  uint64
	Adapter string
	// Attempt is the adapter's: 1, or 2 for the fallback adapter.
	Attempt int
	// Reask is the re-ask this request is (0: none).
	Reask int
	// Retry numbers the sends of one request: 0 for the first, n for the
	// n-th retry.
	Retry       int
	Request     openai.ChatCompletionRequest
	Response    openai.ChatCompletionResponse
	Completions []string
	Usage       openai.Usage
	// Cached is set when a cache answered: no request reached the LM.
	Cached bool
	// Coalesced is set when the request shared the LM call of an
	// identical request in flight (see [Coalesced]): it sent none.
	Coalesced bool
	// Requests counts the requests this call actually sent to the LM
	// (Result.Requests): 0 for a cache hit or a joined call, 1 most
	// often, more when a middleware beneath the trace (one given to
	// WithMiddleware) sent several through its chain.
	Requests int
	Stream   bool
	Duration time.Duration
	Err      error
}

// ParseInfo reports the parse of one choice's completion.
type ParseInfo struct {
	CallID     uint64
	Adapter    string
	Attempt    int
	Reask      int // the re-ask whose reply this is (0: none)
	Completion string
	Outputs    Values
	Duration   time.Duration
	Err        error
}

// ToolStartInfo reports a tool about to run.
type ToolStartInfo struct {
	// CallID is the call whose reply asked for the tool (0 when unknown,
	// such as tool calls built by hand); ParentID the module run the tool
	// runs in (0 for none).
	CallID, ParentID uint64
	// Tool is the tool's name; ToolCallID the model's id for the call
	// ("" in text mode, where calls have none).
	Tool, ToolCallID string
	// Args are the arguments as JSON.
	Args json.RawMessage
	// ResultBytes bounds the text of the result the model is shown, as
	// [Limits].ToolResultBytes does (0: its default; negative: no
	// bound). The code that runs the tool sets it: ToolCalls.Execute to
	// its limits', an agent's run to the result's share of what a request
	// may carry.
	ResultBytes int
}

// ToolDoneInfo reports a tool's outcome: its result, or the error it
// returned (an unknown tool or arguments it could not take included).
type ToolDoneInfo struct {
	ToolStartInfo
	// Result is the tool's result as the model is shown it: when its text
	// passed ResultBytes, that text cut, with the note that says so.
	Result any
	// Cut counts the bytes of the result's text the model was not shown
	// (0 when it was shown whole).
	Cut      int
	Err      error
	Duration time.Duration
}

// RunTool runs a tool for a call, reporting it to t: ToolStart before,
// ToolDone after with run's result or error and the time it took. Code that
// runs tools for a model (predict.ReAct, types.ToolCalls.Execute) runs each
// one through it, so that every tool run can be traced; t may be nil.
//
// A panic in run is recovered: it is the tool's error, a *[PanicError]
// holding the value and the stack, which ToolDone gets and the model is
// shown as the tool's failure ("panic: " and the value). A panic in a hook
// is not recovered.
//
// A result whose text (as a str field shows it) passes info.ResultBytes
// is cut on a rune boundary, and a note after it says how many bytes the
// model is not shown; RunTool returns that text, and ToolDone gets it with
// the count (ToolDoneInfo.Cut). A result holding content parts (an image)
// is not cut.
func (t *Trace) RunTool(ctx context.Context, info ToolStartInfo, run func(context.Context) (any, error)) (any, error) {
	if info.ParentID == 0 {
		info.ParentID = scopeOf(ctx).parent
	}
	if t != nil && t.ToolStart != nil {
		t.ToolStart(info)
	}
	start := time.Now()
	res, err := recovered(func() (any, error) { return run(ctx) })
	cut := 0
	if err == nil {
		res, cut = clipToolResult(res, inForce(info.ResultBytes, DefaultToolResultBytes, math.MaxInt))
	}
	if t != nil && t.ToolDone != nil {
		t.ToolDone(ToolDoneInfo{ToolStartInfo: info, Result: res, Cut: cut, Err: err, Duration: time.Since(start)})
	}
	return res, err
}

// strSpec is a str field's type: a tool result is shown as one.
var strSpec = func() *signature.TypeSpec {
	s, err := signature.SpecOf(stringType)
	if err != nil {
		panic(err)
	}
	return s
}()

// clipToolResult returns v as the model is shown it within n bytes: v
// itself when its text fits (or cannot be shown, or holds content parts),
// else the text cut on a rune boundary with a note, and the bytes cut.
func clipToolResult(v any, n int) (any, int) {
	if s, ok := v.(string); ok && len(s) <= n {
		return v, 0 // the usual case, without formatting
	}
	s, err := value.Format(v, strSpec)
	if err != nil || len(s) <= n || strings.Contains(s, value.PartsOpen) {
		return v, 0
	}
	k := n
	for k > 0 && !utf8.RuneStart(s[k]) {
		k--
	}
	cut := len(s) - k
	return s[:k] + fmt.Sprintf("\n\n[%d more bytes of this result were cut: the model is shown at most %d bytes of it]", cut, n), cut
}

// CallTrace returns the hooks a call with ctx and opts reports to: the
// trace set on ctx with [WithTrace], then those of [UseTrace] options in
// order; nil when there are none. Code that works for a call outside the
// pipeline, such as running the tools a reply asked for, reports through
// it.
func CallTrace(ctx context.Context, opts ...CallOption) *Trace {
	// The traces in the order callConfig.apply applies their options (the
	// Defaults first), without applying the others: only UseTrace sets
	// a trace.
	t := traceFrom(ctx)
	for _, o := range opts {
		if d, ok := o.(defaults); ok {
			t = d.traces(t)
		}
	}
	for _, o := range opts {
		if o, ok := o.(traceOption); ok {
			t = composeTrace(t, o.t)
		}
	}
	return t
}

// traceConfigs are the configs run.prepare and CallLimits apply options
// to (see there).
var traceConfigs = sync.Pool{New: func() any { return new(callConfig) }}

var lastCallID atomic.Uint64

// StartModule reports a module run to the trace of ctx and opts
// (ModuleStart) and returns the context for the calls it makes, whose
// events then name the run as their parent, and a function to call with
// the run's outcome when it ends (ModuleDone). Modules (package predict)
// call it around each run; name is the module's kind (Predict,
// ChainOfThought, ReAct).
//
// A run no trace hears of (none on ctx or in opts) leaves ctx as it is: a
// trace set beneath it (WithTrace in a tool, say) sees the runs it starts
// as the parent's, that is, with no parent.
func StartModule(ctx context.Context, name string, inputs Values, opts ...CallOption) (context.Context, func(*Result, error)) {
	t := CallTrace(ctx, opts...)
	if t == nil {
		return ctx, moduleDoneUntraced
	}
	id := lastCallID.Add(1)
	var parent uint64
	if ctx != nil { // a nil context goes on to the module's Call, which refuses it
		s := scopeOf(ctx)
		parent, s.parent = s.parent, id
		ctx = s.on(ctx)
	}
	if t.ModuleStart != nil {
		t.ModuleStart(ModuleStartInfo{ID: id, ParentID: parent, Module: name, Inputs: inputs, Context: ctx})
	}
	if t.ModuleDone == nil {
		return ctx, moduleDoneUntraced
	}
	start := time.Now()
	return ctx, func(res *Result, err error) {
		t.ModuleDone(ModuleDoneInfo{ID: id, ParentID: parent, Module: name, Result: res, Err: err, Duration: time.Since(start)})
	}
}

// moduleDoneUntraced ends a module run no trace hears of.
func moduleDoneUntraced(*Result, error) {}

// callID returns the call's identity, assigning it on first use.
func (c *callConfig) callID() uint64 {
	if c.id == 0 {
		c.id = lastCallID.Add(1)
	}
	return c.id
}

// WithTrace returns a context whose calls report to t, after any trace
// already on ctx.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	s := scopeOf(ctx)
	s.trace = composeTrace(s.trace, t)
	return s.on(ctx)
}

func traceFrom(ctx context.Context) *Trace { return scopeOf(ctx).trace }

func composeTrace(a, b *Trace) *Trace {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &Trace{
		ModuleStart: chain(a.ModuleStart, b.ModuleStart),
		ModuleDone:  chain(a.ModuleDone, b.ModuleDone),
		CallStart:   chain(a.CallStart, b.CallStart),
		CallDone:    chain(a.CallDone, b.CallDone),
		FormatStart: chain(a.FormatStart, b.FormatStart),
		ParseStart:  chain(a.ParseStart, b.ParseStart),
		FormatDone:  chain(a.FormatDone, b.FormatDone),
		LMCallStart: chain(a.LMCallStart, b.LMCallStart),
		LMCallDone:  chain(a.LMCallDone, b.LMCallDone),
		ParseDone:   chain(a.ParseDone, b.ParseDone),
		ToolStart:   chain(a.ToolStart, b.ToolStart),
		ToolDone:    chain(a.ToolDone, b.ToolDone),
		CacheError:  chain(a.CacheError, b.CacheError),
	}
}

func chain[T any](f, g func(T)) func(T) {
	switch {
	case f == nil:
		return g
	case g == nil:
		return f
	}
	return func(x T) { f(x); g(x) }
}

// tracer fires a call's trace events; the zero value fires nothing.
type tracer struct {
	t       *Trace
	adapter string
	attempt int
	call    uint64
	reask   int
}

// now is the start of a traced stage; the zero time when nothing is
// traced, so an untraced call does not read the clock.
func (r tracer) now() time.Time {
	if r.t == nil {
		return time.Time{}
	}
	return time.Now()
}

// since is a traced stage's duration (0 when nothing is traced).
func (r tracer) since(start time.Time) time.Duration {
	if r.t == nil {
		return 0
	}
	return time.Since(start)
}

// formatStart reports an attempt's format: the fallback's after cause,
// or, when r.reask is set, the re-ask after cause.
func (r tracer) formatStart(cause error) {
	if r.t == nil || r.t.FormatStart == nil {
		return
	}
	info := FormatStartInfo{CallID: r.call, Adapter: r.adapter, Attempt: r.attempt, Reask: r.reask}
	if r.reask > 0 {
		info.ReaskCause = cause
	} else {
		info.FallbackCause = cause
	}
	r.t.FormatStart(info)
}

func (r tracer) parseStart(completion string) {
	if r.t != nil && r.t.ParseStart != nil {
		r.t.ParseStart(ParseStartInfo{CallID: r.call, Adapter: r.adapter, Attempt: r.attempt, Reask: r.reask, Completion: completion})
	}
}

func (r tracer) format(msgs []openai.ChatCompletionMessage, d time.Duration, err error) {
	if r.t != nil && r.t.FormatDone != nil {
		r.t.FormatDone(FormatInfo{CallID: r.call, Adapter: r.adapter, Attempt: r.attempt, Reask: r.reask, Messages: msgs, Duration: d, Err: err})
	}
}

func (r tracer) lmStart(req openai.ChatCompletionRequest, retry int) {
	if r.t != nil && r.t.LMCallStart != nil {
		r.t.LMCallStart(LMCallStartInfo{CallID: r.call, Adapter: r.adapter, Attempt: r.attempt, Reask: r.reask, Retry: retry, Request: req, Stream: req.Stream})
	}
}

func (r tracer) lmDone(info LMCallDoneInfo) {
	if r.t != nil && r.t.LMCallDone != nil {
		info.CallID, info.Adapter, info.Attempt, info.Reask = r.call, r.adapter, r.attempt, r.reask
		r.t.LMCallDone(info)
	}
}

func (r tracer) parse(completion string, vals Values, d time.Duration, err error) {
	if r.t != nil && r.t.ParseDone != nil {
		r.t.ParseDone(ParseInfo{CallID: r.call, Adapter: r.adapter, Attempt: r.attempt, Reask: r.reask, Completion: completion, Outputs: vals, Duration: d, Err: err})
	}
}
