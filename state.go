package adapter

import (
	"context"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// A call's state. One Call or Stream is a run; what it knows lives in a
// few places, by who may hold it and for how long:
//
//	lifetime     type              where                            holds
//	per call     run               the stack of Call (of Stream's   options, adapter, LM, signature,
//	                               iterator); nothing points to it  inputs, stream sink, re-ask state
//	per call     runHeap           the heap, one allocation; may    the meter, the scope and context,
//	                               outlive the call                 the Result
//	per call     meter             in runHeap; on the context as    counts, usage, settle hooks, what
//	                               scope.meter, where middlewares   the reply carried (extras), budget,
//	                               report into it                   the identity of the LM beneath
//	per context  scope             on a context (scopeContext),     adapter, trace, module run, meter,
//	                               never written once there         LM identity, callLevel
//	per attempt  tracer, parser,   locals of run.attempt: one       the adapter tried (the primary or
//	             nativePlan        adapter and its re-asks          its fallback) and how it parses
//	per request  run.tier,         set again for each request by    the response-format level; the
//	             meter.extras,     run.send and the trace's         reply's extras; its usage, for the
//	             meter.spent       wrapper                          trace
//	per flight   flightCall.meter  a call that callers share        what that call counted; adopted by
//	                               (coalesce.go)                    the caller that takes it over
//
// The split is for allocations (the *_cost_test.go budgets): a call's
// state is one allocation (runHeap), and a layer that changes the scope
// one more (ownScopeContext).

// run is one Call or Stream. It lives on the stack of Call (or of
// Stream's iterator): what outlives the call or is reachable from the
// call's context, its middlewares, its trace and its Result is in
// runHeap, on the heap. Nothing may keep a pointer to the run itself
// (a closure, an interface), or the whole run (a request template among
// it) moves to the heap with every call.
type run struct {
	*runHeap
	cfg     callConfig
	adapter Adapter
	lm      LM           // the LM without the library's wrappers (see peel)
	mw      []Middleware // the middlewares of those wrappers
	stream  StreamingLM  // lm, for a Stream
	caps    lmCaps
	sig     *signature.Signature
	demos   []Values
	inputs  Values
	parent  uint64      // the module run this call is part of
	sink    *streamSink // nil for a Call

	// guessNote: a native hook noted what it did from guessed
	// capabilities (see Plan.Note); a parse failure then names the guess.
	// guessUsed: a hook moved a field to a native feature the guess
	// granted; the provider's rejection then names it.
	guessNote, guessUsed bool

	// capture, set by Prepare, takes the first request in place of the
	// invoker chain and fails with errPrepared: nothing is sent.
	capture Invoker

	// tier is the response-format level the attempt's requests start at
	// (a re-ask keeps the level the provider took); failed is the text of
	// the choice whose parse or constraints failed the latest read.
	tier   int
	failed string
}

// runHeap is the part of a run that others point to: its meter (on its
// context, read by its middlewares, adopted by a shared call), the scope
// on its context, and the Result the caller gets. One
// allocation per call; never reused, as any of them may be held after the
// call returns.
type runHeap struct {
	meter meter        // shared through the context: never copy it
	scope scope        // the scope on the call's context, once put there never changed
	ctx   scopeContext // the call's context, carrying scope
	res   Result
	// one holds Result.Outputs and Result.Completions for a reply of one
	// choice, the usual one.
	one struct {
		outputs     [1]Values
		completions [1]string
	}
}

// meter is what one Call or Stream shares, through the context, with
// the middlewares of its LM requests: counters, the usage of the requests
// actually sent, cache writes waiting for the pipeline's verdict, what
// the latest reply carried on the wire beyond go-openai's types (set by
// the senders and by a cache hit, cleared before each request), and where
// a streamed reply goes. It is on the context of the call's requests
// (scope.meter), beside the identity of the LM beneath the middlewares
// (scope.ident), which a cache reads. A call in flight that callers share
// (see [Cached]) has a meter of its own, which the caller that takes its
// reply over adopts.
type meter struct {
	trace  *Trace // the call's, for what its middlewares report (CacheError)
	callID uint64

	ident   lmIdent   // of the LM beneath the middlewares (run.lm)
	out     streamOut // a Stream's sink, a shared call's flight; nil for a Call
	mu      sync.Mutex
	counts  Counts // what the middlewares and senders counted (the pipeline counts Calls and Reasks in the Result)
	usage   openai.Usage
	spent   openai.Usage // since the last takeSpent: the request in hand's, for the trace
	byModel map[string]openai.Usage
	settled []func(accepted bool)
	extras  WireExtras
	budget  Budget // WithBudget's: the senders reserve from it
}

// cacheError counts a cache's failure in the call (s nil: outside the
// pipeline, nothing counts it) and reports it to the call's trace.
func (s *meter) cacheError(ctx context.Context, op CacheOp, key string, err error) {
	if s == nil {
		return
	}
	s.count(Counts{CacheErrors: 1})
	if s.trace != nil && s.trace.CacheError != nil {
		s.trace.CacheError(CacheErrorInfo{CallID: s.callID, Op: op, Key: key, Err: err, Context: ctx})
	}
}

// count adds c to the call's counts (s nil: outside the pipeline, nothing
// counts).
func (s *meter) count(c Counts) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.counts.Add(c)
	s.mu.Unlock()
}

// snapshot returns the counts so far.
func (s *meter) snapshot() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// addUsage counts the usage of one LM reply, under its model.
func (s *meter) addUsage(model string, u openai.Usage) {
	if u == (openai.Usage{}) {
		return // a reply that reported no usage: nothing to count, no model to list
	}
	s.mu.Lock()
	s.usage = addUsage(s.usage, u)
	s.spent = addUsage(s.spent, u)
	if s.byModel == nil {
		s.byModel = map[string]openai.Usage{}
	}
	s.byModel[model] = addUsage(s.byModel[model], u)
	s.mu.Unlock()
}

// takeSpent returns the usage counted since it was last called.
func (s *meter) takeSpent() openai.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.spent
	s.spent = openai.Usage{}
	return u
}

// setExtras records what the reply in hand carried beyond go-openai's
// types.
func (s *meter) setExtras(e WireExtras) {
	s.mu.Lock()
	s.extras = e
	s.mu.Unlock()
}

// replyExtras returns what the reply in hand carried beyond go-openai's
// types.
func (s *meter) replyExtras() WireExtras {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.extras
}

// onSettle runs f with the pipeline's verdict on the reply of the
// current attempt: accepted or not.
func (s *meter) onSettle(f func(accepted bool)) {
	s.mu.Lock()
	s.settled = append(s.settled, f)
	s.mu.Unlock()
}

// settle runs what waited for the attempt's verdict.
func (s *meter) settle(ok bool) {
	s.mu.Lock()
	fs := s.settled
	s.settled = nil
	s.mu.Unlock()
	for _, f := range fs {
		f(ok)
	}
}

// adopt takes over what a shared call counted (see [Cached]): its usage,
// counters and the writes waiting for a verdict.
func (s *meter) adopt(from *meter) {
	from.mu.Lock()
	byModel, settled := from.byModel, from.settled
	from.settled = nil
	from.mu.Unlock()
	for model, u := range byModel {
		s.addUsage(model, u)
	}
	s.count(from.snapshot())
	s.mu.Lock()
	s.settled = append(s.settled, settled...)
	s.mu.Unlock()
}

// addUsage sums token counts, details included.
func addUsage(a, b openai.Usage) openai.Usage {
	a.PromptTokens += b.PromptTokens
	a.CompletionTokens += b.CompletionTokens
	a.TotalTokens += b.TotalTokens
	if d := b.PromptTokensDetails; d != nil {
		sum := openai.PromptTokensDetails{}
		if a.PromptTokensDetails != nil {
			sum = *a.PromptTokensDetails
		}
		sum.AudioTokens += d.AudioTokens
		sum.CachedTokens += d.CachedTokens
		a.PromptTokensDetails = &sum
	}
	if d := b.CompletionTokensDetails; d != nil {
		sum := openai.CompletionTokensDetails{}
		if a.CompletionTokensDetails != nil {
			sum = *a.CompletionTokensDetails
		}
		sum.AudioTokens += d.AudioTokens
		sum.ReasoningTokens += d.ReasoningTokens
		sum.AcceptedPredictionTokens += d.AcceptedPredictionTokens
		sum.RejectedPredictionTokens += d.RejectedPredictionTokens
		a.CompletionTokensDetails = &sum
	}
	return a
}

// scope is what the package keeps on a context, in one value: what the
// caller set there (the adapter of [WithAdapter], the trace of
// [WithTrace], the module run of [StartModule]) and what a call shares
// with the middlewares of its LM requests (its meter, the identity of the
// LM beneath them, whether they are the call's own). A layer that changes
// a part puts a copy with that part changed on a new context
// ([scope.on]); a scope on a context is never written to, so calls that
// share a parent context never see each other's state.
type scope struct {
	adapter Adapter // set with WithAdapter
	// trace is the trace set with WithTrace; on the context a
	// CallingParser is handed, the call's own (see run.parserFor).
	trace  *Trace
	parent uint64 // the module run the context belongs to (0 for none)
	// meter is the meter of the call in progress, or of a call in flight
	// that callers share (see Cached).
	meter *meter
	// ident is the identity of the LM beneath the middlewares that run
	// with the context: set by the pipeline for its LM, and by a
	// WithMiddleware wrapper called directly for the LM it wraps, so that
	// the innermost, the LM that answers, wins.
	ident *lmIdent
	// callLevel marks the context of a call's own middlewares
	// (UseMiddleware): true above the call's retries and trace, false
	// beneath them. A Cached there does not share calls in flight: the
	// call would carry one caller's retries and report to its trace, from
	// another goroutine and maybe after that caller's call ended.
	callLevel bool
}

type scopeKey struct{}

// scopeOf returns the scope of ctx (the zero scope for none, or for a
// nil context).
func scopeOf(ctx context.Context) scope {
	if ctx == nil {
		return scope{}
	}
	if s, ok := ctx.Value(scopeKey{}).(*scope); ok {
		return *s
	}
	return scope{}
}

// on returns a context whose scope is s.
func (s scope) on(ctx context.Context) context.Context {
	c := &ownScopeContext{own: s}
	c.Context, c.scope = ctx, &c.own
	return &c.scopeContext
}

// ownScopeContext is a scopeContext with its scope: the context and the
// scope in one allocation.
type ownScopeContext struct {
	scopeContext
	own scope
}

// scopeContext is a context carrying a scope, allocated with what holds
// the scope (a call's runHeap) rather than on its own.
type scopeContext struct {
	context.Context
	scope *scope
}

// Value returns the scope for scopeKey, and the parent's values
// otherwise.
func (c *scopeContext) Value(key any) any {
	if _, ok := key.(scopeKey); ok {
		return c.scope
	}
	return c.Context.Value(key)
}

// meterOf returns the meter of the call ctx is for, nil outside a call.
func meterOf(ctx context.Context) *meter { return scopeOf(ctx).meter }
