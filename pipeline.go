package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/internal/wire"
	"github.com/sigwire/adapter/signature"
)

// The pipeline: Call and Stream both prepare a run and call run.do, which
// goes through the same stages for every adapter tried (the primary, then
// its fallback once), and again from send to validate for each re-ask
// (WithReask: the adapter's messages, its reply, a user turn with the
// reply's error; see reask.go):
//
//	prepare   options, arguments, inputs, trace, timeout      (once per call)
//	plan      the outputs' NativeHooks shape the request       planNative
//	format    the adapter writes the messages                  Adapter.Format
//	send      shaped request through the invoker chain          run.send
//	          (call middlewares → retry → trace → LM middlewares → sender);
//	          the sender is the one seam: blocking, or streaming with field
//	          deltas routed to the caller as they arrive
//	check     refusal, content filter, truncation, empty       run.read
//	parse     the adapter's parser, panics turned into errors  run.read
//	fill      native values (tool calls, reasoning) and what    fillNative
//	          the wire carried (citations, see WireReader)
//	validate  output constraints                               checkConstraints
//
// Both senders return the whole reply as an openai.ChatCompletionResponse,
// so everything after the send is written once. Prepare runs the same
// stages and takes the first request where send hands it to the invoker
// chain (run.capture): nothing beneath, middlewares included, runs.
// What a call keeps, and for how long, is mapped in state.go.

// errNoOutputFields: a signature without outputs asks the LM for nothing.
var errNoOutputFields = errors.New("adapter: the signature has no output fields: nothing to ask the LM for")

// callTimeout is the cause of a call's own WithTimeout expiring, told
// apart from the caller's deadline: it names the option and its duration.
type callTimeout time.Duration

func (d callTimeout) Error() string {
	return fmt.Sprintf("the call's WithTimeout(%v) ran out", time.Duration(d))
}

// errNilContext is every entry point's answer to a nil context.
var errNilContext = errors.New("adapter: nil context: pass context.Background() or a request's context")

// prepare checks the arguments and builds the run. The returned context
// carries the call's state and timeout; cancel releases it.
func (r *run) prepare(ctx context.Context, lm LM, sig *signature.Signature, demos []Values, inputs Values, opts []CallOption) (context.Context, context.CancelFunc, error) {
	switch {
	case ctx == nil:
		return nil, nil, errNilContext
	case isNilLM(lm):
		return nil, nil, errors.New("adapter: nil LM: pass an *openai.Client or another LM")
	case sig == nil:
		return nil, nil, errNilSignature
	case sig.NumOutputs() == 0:
		return nil, nil, errNoOutputFields
	}
	r.sig, r.demos = sig, demos
	// The options are applied to a pooled config and copied: an option
	// is an interface, so the config it is applied to goes to the heap.
	// No option keeps the config it is given.
	c := traceConfigs.Get().(*callConfig)
	c.apply(opts)
	r.cfg = *c
	*c = callConfig{}
	traceConfigs.Put(c)
	in, err := prepareInputs(sig, inputs)
	if err != nil {
		return nil, nil, err
	}
	r.inputs = in
	r.runHeap = new(runHeap)
	sc := &r.scope
	*sc = scopeOf(ctx)
	r.adapter = r.cfg.resolve(ctx)
	r.parent = sc.parent
	r.cfg.trace = composeTrace(sc.trace, r.cfg.trace)
	r.lm, r.mw = peel(lm)
	r.caps.caps, r.caps.guessed = capabilitiesOf(lm, r.cfg.model())
	r.meter.ident.lm = r.lm
	if r.cfg.trace != nil {
		r.meter.trace, r.meter.callID = r.cfg.trace, r.cfg.callID()
	}
	sc.meter, sc.ident = &r.meter, &r.meter.ident
	r.meter.budget = r.cfg.budget
	r.ctx = scopeContext{Context: ctx, scope: sc} // not sc.on: the run holds it
	ctx = &r.ctx
	cancel := context.CancelFunc(func() {})
	if r.cfg.timeout > 0 {
		ctx, cancel = context.WithTimeoutCause(ctx, r.cfg.timeout, callTimeout(r.cfg.timeout))
	}
	return ctx, cancel, nil
}

// isNilLM reports a nil LM, or an LM that is a nil pointer.
func isNilLM(lm LM) bool {
	if lm == nil {
		return true
	}
	v := reflect.ValueOf(lm)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// do runs the adapter and, after a parse failure it could not recover,
// its fallback once; each attempt re-asks first while the call's budget
// lasts (see attempt). The error after a failed fallback is a
// *FallbackError: the fallback's error, with the first one as data.
func (r *run) do(ctx context.Context) (err error) {
	t, id := r.cfg.trace, r.cfg.callID()
	if t != nil && t.CallStart != nil {
		t.CallStart(CallStartInfo{CallID: id, ParentID: r.parent, Adapter: r.adapter.Name(), Signature: r.sig,
			Inputs: r.inputs, Stream: r.sink != nil, Context: ctx})
	}
	var start time.Time
	if t != nil && t.CallDone != nil {
		start = time.Now()
	}
	defer func() {
		if err != nil {
			if c, ok := context.Cause(ctx).(callTimeout); ok && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, c) {
				err = fmt.Errorf("%w (%w)", err, c) // named once: Go's HTTP client may have named it already
			}
			if r.guessFailed(err) {
				err = &CapabilityGuessError{Model: r.cfg.model(), Guess: r.caps.caps, Err: err}
			}
		}
		r.meter.settle(false) // a verdict the attempt never gave (a panic) drops what waited for it
		r.finish()
		if t != nil && t.CallDone != nil {
			t.CallDone(CallDoneInfo{CallID: id, ParentID: r.parent, Result: &r.res, Err: err, Duration: time.Since(start)})
		}
	}()
	a := r.adapter
	err = r.attempt(ctx, a, 1, nil)
	if err == nil || r.stopped() || r.cfg.noFallback || !fallsBack(err) {
		return err
	}
	fb, ok := a.(Fallbacker)
	if !ok {
		return err
	}
	next := fb.Fallback()
	if next == nil || ctx.Err() != nil {
		return err // no fallback, or no time left for one
	}
	r.res.FallbackCause = err
	if ferr := r.attempt(ctx, next, 2, err); ferr != nil {
		if r.stopped() {
			return ferr
		}
		return &FallbackError{First: err, Err: ferr}
	}
	return nil
}

// guessFailed reports a call error that guessed capabilities may explain
// (see CapabilityGuessError): a parse failure after a hook did without a
// native feature the guess denied, or a request a hook shaped from the
// guess that the provider rejected.
func (r *run) guessFailed(err error) bool {
	if !r.caps.guessed {
		return false
	}
	var pe *ParseError
	if r.guessNote && errors.As(err, &pe) {
		return true
	}
	var le *LMError
	if r.guessUsed && errors.As(err, &le) && !errors.Is(err, ErrContextWindow) {
		st := statusOf(le.Err)
		return st == http.StatusBadRequest || st == http.StatusUnprocessableEntity
	}
	return false
}

// fallsBack reports a parse failure that the fallback adapter may
// recover: not a truncation, which another adapter would only pay for
// again.
func fallsBack(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe) && !errors.Is(err, ErrTruncated)
}

func (r *run) stopped() bool { return r.sink != nil && r.sink.stopped }

// finish adds the state's counters to the result's own (Calls, Reasks).
func (r *run) finish() {
	s := &r.meter
	s.mu.Lock()
	r.res.Usage, r.res.UsageByModel = s.usage, s.byModel
	r.res.Counts.Add(s.counts)
	s.mu.Unlock()
}

// attempt runs the stages with adapter a, the n-th adapter tried (after
// cause, for the fallback), and again for each re-ask its replies get.
func (r *run) attempt(ctx context.Context, a Adapter, n int, cause error) error {
	tr := tracer{t: r.cfg.trace, adapter: a.Name(), attempt: n, call: r.cfg.callID()}
	tr.formatStart(cause)
	ps, err := r.parserFor(ctx, a)
	if err != nil {
		return err
	}
	req := r.cfg.template()
	plan, err := planNative(a, r.sig, r.inputs, r.caps, &req)
	if err != nil {
		return err
	}
	for _, n := range plan.notes {
		if !slices.Contains(r.res.Notes, n) { // once per call, not per attempt
			r.res.Notes = append(r.res.Notes, n)
		}
	}
	r.guessNote = r.guessNote || plan.guessNote
	r.guessUsed = r.guessUsed || plan.guessUsed
	fsig, fin, dropped := plan.sig, plan.inputs, plan.dropped
	start := tr.now()
	msgs, err := a.Format(fsig, r.demos, fin)
	tr.format(msgs, tr.since(start), err)
	if err != nil {
		return err
	}
	if typ, ok := wire.FirstRawPart(msgs); ok {
		if !carriesRawParts(r.lm) {
			return r.unsupportedPart(typ)
		}
		ctx = wire.MarkRawParts(ctx)
	}
	if req.Temperature == ZeroTemperature {
		ctx = wire.MarkZeroTemperature(ctx)
	}
	var pc *wire.PromptCache
	if r.cfg.promptCache {
		if ctx, pc, err = r.promptCache(ctx, msgs); err != nil {
			return err
		}
	}
	r.tier = 0
	ask := msgs
	for {
		r.failed = ""
		resp, err := r.send(ctx, a, tr, fsig, &req, ask)
		if pc != nil && pc.Missed() > 0 {
			r.note("prompt cache: a message to mark was not on the wire as the adapter wrote it (a middleware moved or changed it): it was not marked")
		}
		if err == nil {
			if err = ended(ctx, a); err == nil {
				err = r.read(a, tr, ps, fsig, dropped, resp)
			}
			if cerr := ended(ctx, a); cerr != nil && !r.stopped() {
				err = cerr // whatever the parse gave: the caller is gone
			}
		}
		r.meter.settle(err == nil)
		if err == nil {
			if r.sink != nil {
				r.sink.complete(r.res.Outputs[0])
			}
			return nil
		}
		if r.res.Reasks >= r.cfg.reask || r.failed == "" || !correctable(err) || r.stopped() || ctx.Err() != nil {
			return err
		}
		// Ask again: the adapter's messages, the reply and its error.
		r.res.Reasks++
		r.res.ReaskCause = err
		tr.reask = r.res.Reasks
		tr.formatStart(err)
		start := tr.now()
		ask = reaskMessages(msgs, r.failed, err, requirementsOf(a, fsig))
		tr.format(ask, tr.since(start), nil)
		if r.sink != nil && !r.sink.emit(Chunk{Reask: r.res.Reasks}) {
			return errStopped
		}
	}
}

// ended is the error of a call whose context ended once its reply was in
// (before or while it was parsed and checked): an *LMError wrapping the
// context's error, so errors.Is(err, context.Canceled) (or
// DeadlineExceeded) holds and no parse error, value or re-ask follows
// from a reply nobody waits for any more.
func ended(ctx context.Context, a Adapter) error {
	if err := ctx.Err(); err != nil {
		return &LMError{Adapter: a.Name(), Err: fmt.Errorf("%w: the call's context ended after its reply arrived, before it was parsed and checked", err)}
	}
	return nil
}

// send shapes the request, sends it through the invoker chain, and moves
// one response-format tier down, once, when the provider rejects it.
func (r *run) send(ctx context.Context, a Adapter, tr tracer, fsig *signature.Signature, base *openai.ChatCompletionRequest, msgs []openai.ChatCompletionMessage) (openai.ChatCompletionResponse, error) {
	var bottom Invoker
	if s := r.sink; s != nil {
		s.adapter, s.fsig, s.newFS = a.Name(), fsig, nil
		if sp, ok := a.(StreamParser); ok {
			s.newFS = func() FieldStream { return reply.WithThink(fsig, sp.NewFieldStream(fsig)) }
		}
		bottom = s.sender(r.stream, r.cfg.limits)
		r.meter.out = s
	} else {
		bottom = blockingSender(r.lm, r.cfg.limits)
	}
	call := r.capture
	fb, _ := r.lm.(*FallbackLM)
	switch {
	case call != nil && fb != nil && fb.targets[0].Model != "":
		capture, model := call, fb.targets[0].Model
		call = func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			req.Model = model // the first target's request
			return capture(ctx, req)
		}
	case call != nil:
	case fb != nil:
		sink, limits := r.sink, r.cfg.limits
		call = r.fallbackInvoker(fb, r.mw, func(lm LM) Invoker {
			if sink == nil {
				return blockingSender(lm, limits)
			}
			s, ok := lm.(StreamingLM)
			if !ok {
				return func(context.Context, openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
					return openai.ChatCompletionResponse{}, cannotStream(lm)
				}
			}
			return sink.sender(s, limits)
		}, tr)
	default:
		call = r.invoker(wrapInvoker(r.mw, bottom), tr)
	}
	shaper, shapes := a.(RequestShaper)
	var rejected error
	for level := r.tier; ; level++ {
		r.tier = level
		shaped := *base // base is the attempt's: not written to
		req := &shaped
		if r.sink != nil {
			req.Stream = true
			if req.StreamOptions == nil {
				req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
			}
		}
		req.Messages = msgs
		mode := ""
		if shapes {
			m, ok, err := shapeRequest(a, shaper, fsig, req, r.caps.caps, level)
			if err != nil {
				return openai.ChatCompletionResponse{}, err
			}
			if !ok {
				return openai.ChatCompletionResponse{}, &LMError{Adapter: a.Name(), Err: rejected}
			}
			mode = m
		}
		r.res.Mode = requestMode(mode, req)
		if err := ctx.Err(); err != nil {
			return openai.ChatCompletionResponse{}, &LMError{Adapter: a.Name(), Err: err}
		}
		r.meter.setExtras(WireExtras{})
		if r.sink != nil {
			r.sink.begin()
		}
		resp, err := call(ctx, *req)
		r.res.Calls++
		if err == nil && r.sink != nil {
			err = r.sink.accept(resp)
		}
		if err == nil {
			return resp, nil
		}
		if r.stopped() {
			return resp, errStopped
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if shapes && level == 0 && req.ResponseFormat != nil && (r.cfg.req == nil || r.cfg.req.ResponseFormat == nil) &&
			isFormatRejection(err) && !errors.Is(err, ErrDelivered) {
			rejected = err // the provider rejected the response format: one tier down, once
			continue
		}
		if isPromptFilter(err) {
			return resp, &RefusalError{Adapter: a.Name(), FinishReason: string(openai.FinishReasonContentFilter), Err: err}
		}
		return resp, &LMError{Adapter: a.Name(), Err: err}
	}
}

// shapeRequest shapes req with a's RequestShaper. An adapter that shapes
// as JSON does (see shapesAsJSON) is shaped directly, on req; another's
// gets a copy on the heap (an interface's method may keep the pointer),
// copied back, so that req stays where the caller has it.
func shapeRequest(a Adapter, shaper RequestShaper, fsig *signature.Signature, req *openai.ChatCompletionRequest, caps Capabilities, level int) (string, bool, error) {
	if shapesAsJSON(a) {
		return shapeJSON(fsig, req, caps, level)
	}
	shaped := new(openai.ChatCompletionRequest)
	*shaped = *req
	mode, ok, err := shaper.ShapeRequest(fsig, shaped, caps, level)
	*req = *shaped
	return mode, ok, err
}

// requestMode is the Mode a request reports: the shaper's, else the
// response format the request carries, else ModePrompt.
func requestMode(mode string, req *openai.ChatCompletionRequest) string {
	switch {
	case mode != "":
		return mode
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "":
		return string(req.ResponseFormat.Type)
	}
	return ModePrompt
}

// invoker builds an attempt's chain around inv (the sender wrapped in the
// LM's own middlewares): the call's middlewares, retries, the trace (so
// it sees every request). The context tells the call's middlewares from
// those beneath them (scope.callLevel).
func (r *run) invoker(inv Invoker, tr tracer) Invoker {
	if tr.t != nil {
		next, s := inv, &r.meter // not r: the run stays on the stack
		inv = func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			retry := retryOf(ctx)
			tr.lmStart(req, retry)
			s.takeSpent()
			before := s.snapshot()
			start := time.Now()
			resp, err := next(ctx, req)
			after := s.snapshot()
			tr.lmDone(LMCallDoneInfo{Retry: retry, Request: req, Response: resp, Completions: completions(resp), Usage: s.takeSpent(),
				Cached: after.CacheHits > before.CacheHits, Coalesced: after.Coalesced > before.Coalesced, Requests: after.Requests - before.Requests,
				Stream: req.Stream, Duration: time.Since(start), Err: err})
			return resp, err
		}
	}
	if !r.cfg.noRetry {
		inv = retrying(r.cfg.retry.withDefaults(), inv)
	}
	if len(r.cfg.middleware) == 0 {
		return inv
	}
	below := inv
	top := wrapInvoker(r.cfg.middleware, func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		s := scopeOf(ctx)
		s.callLevel = false
		return below(s.on(ctx), req)
	})
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		s := scopeOf(ctx)
		s.callLevel = true
		return top(s.on(ctx), req)
	}
}

// completions returns each choice's text, in index order.
func completions(resp openai.ChatCompletionResponse) []string {
	if len(resp.Choices) == 0 {
		return nil
	}
	out := make([]string, len(resp.Choices))
	for i, ch := range sortedChoices(resp) {
		out[i] = ch.Message.Content
	}
	return out
}

func sortedChoices(resp openai.ChatCompletionResponse) []openai.ChatCompletionChoice {
	if slices.IsSortedFunc(resp.Choices, byIndex) {
		return resp.Choices
	}
	choices := slices.Clone(resp.Choices)
	slices.SortStableFunc(choices, byIndex)
	return choices
}

func byIndex(x, y openai.ChatCompletionChoice) int { return x.Index - y.Index }

// read checks the reply and parses every choice into r.res.
func (r *run) read(a Adapter, tr tracer, ps parser, fsig *signature.Signature, dropped []nativeField, resp openai.ChatCompletionResponse) error {
	res := &r.res
	res.Adapter = a.Name()
	res.Model, res.SystemFingerprint = resp.Model, resp.SystemFingerprint
	choices := sortedChoices(resp)
	res.Completions, res.Logprobs, res.Outputs = nil, nil, nil
	if len(choices) == 1 {
		one := &r.one
		one.completions[0], one.outputs[0] = choices[0].Message.Content, nil
		res.Completions = one.completions[:1:1]
	} else {
		res.Completions = completions(resp)
	}
	for i := range choices {
		if ch := &choices[i]; ch.LogProbs != nil {
			if res.Logprobs == nil {
				res.Logprobs = make([]*openai.LogProbs, len(choices))
			}
			res.Logprobs[i] = ch.LogProbs
		}
	}
	if len(choices) == 0 {
		return &ParseError{Adapter: a.Name(), Err: ErrEmptyResponse}
	}
	for i := range choices {
		if ch := &choices[i]; ch.Message.Refusal != "" || ch.FinishReason == openai.FinishReasonContentFilter {
			return &RefusalError{Adapter: a.Name(), Refusal: ch.Message.Refusal, FinishReason: string(ch.FinishReason), Completion: ch.Message.Content}
		}
	}
	wires := wireFields(r.sig)
	var extras WireExtras
	if len(wires) > 0 {
		extras = r.meter.replyExtras()
	}
	outs := r.one.outputs[:0:1]
	if len(choices) > 1 {
		outs = make([]Values, 0, len(choices))
	}
	for i := range choices {
		ch := &choices[i] // not copied: a choice is 288 bytes
		text := ch.Message.Content
		if ch.FinishReason == openai.FinishReasonLength || ch.FinishReason == "" {
			return r.truncated(a, tr, ps, fsig, *ch, resp.Usage)
		}
		var wv []wireValue
		if len(wires) > 0 {
			wv = readWires(wires, *ch, extras.Choice(ch.Index))
		}
		native := (len(dropped) > 0 || len(wires) > 0) && nativeValues(dropped, wv, *ch)
		if strings.TrimSpace(text) == "" && !native {
			return &ParseError{Adapter: a.Name(), Completion: text, Err: ErrEmptyResponse}
		}
		tr.parseStart(text)
		start := tr.now()
		vals, err := parseChoice(ps, fsig, text, native && len(ch.Message.ToolCalls) > 0)
		if err == nil && (len(dropped) > 0 || len(wires) > 0) {
			fillNative(vals, r.sig, dropped, wires, wv, *ch)
		}
		took := tr.since(start)
		if err == nil {
			// A broken constraint fails the parse: the trace's ParseDone
			// says so, as the call does.
			if pe := checkConstraints(r.sig, vals); pe != nil {
				pe.Adapter, pe.Completion = a.Name(), text
				vals, err = pe.Partial, pe // the values that hold, as the error's
			}
		}
		tr.parse(text, vals, took, err)
		if err != nil {
			r.failed = text
			return err
		}
		outs = append(outs, vals)
	}
	res.Outputs = outs
	return nil
}

// truncated is the error for a reply cut by the token limit, or one
// without a finish reason (a stream that ended early; "null: incomplete"
// in the OpenAI API), with what Parse reads from it as Partial; an adapter
// whose parsing calls an LM (TwoStep) is not asked: a cut text is never
// sent to be extracted.
func (r *run) truncated(a Adapter, tr tracer, ps parser, sig *signature.Signature, ch openai.ChatCompletionChoice, usage openai.Usage) *ParseError {
	text := ch.Message.Content
	cause := fmt.Errorf("%w: the reply has no finish reason, so it did not finish (a stream that ended early, or an incomplete reply)", ErrTruncated)
	if ch.FinishReason == openai.FinishReasonLength {
		cause = fmt.Errorf("%w: the reply hit the token limit", ErrTruncated)
		if usage.CompletionTokens > 0 {
			cause = fmt.Errorf("%w: the reply hit the token limit after %d completion tokens", ErrTruncated, usage.CompletionTokens)
		}
		cause = fmt.Errorf("%w; raise MaxCompletionTokens (or MaxTokens) in the request to get the whole reply", cause)
	}
	pe := &ParseError{Adapter: a.Name(), Field: truncatedField(a, sig, text), Completion: text, Err: cause}
	if _, calls := a.(CallingParser); calls || strings.TrimSpace(text) == "" {
		return pe
	}
	tr.parseStart(text)
	start := tr.now()
	vals, err := ps.parse(sig, text)
	// The trace's ParseDone says the reply was cut, with the values that
	// stand (Partial, settled below), as the call does.
	took := tr.since(start)
	defer func() { tr.parse(text, pe.Partial, took, pe) }()
	pe.Partial = partialOf(vals, err)
	if len(pe.Partial) > 0 {
		// A value the cut may have shortened is not a value: one that reads
		// differently when more text follows ("0." then "9") was still
		// being written. Text keeps its partial string, as written so far.
		more := partialOf(ps.parse(sig, text+"9"))
		for i := range sig.NumOutputs() {
			f := sig.Output(i)
			v, ok := pe.Partial[f.Name]
			if ok && f.Spec.Kind() != signature.KindString && !reflect.DeepEqual(v, more[f.Name]) {
				delete(pe.Partial, f.Name)
			}
		}
	}
	return pe
}

// partialOf is what a parse read: its values, or a *ParseError's partial
// values.
func partialOf(vals Values, err error) Values {
	var pe *ParseError
	if err != nil && errors.As(err, &pe) {
		return pe.Partial
	}
	return vals
}

// parser parses an attempt's completions with its adapter: Parse, or
// ParseCall with the call's trace on the context and its LM calls, usage,
// retries, cache hits and coalesced calls counted in the run. Either way a panic while parsing is a
// *ParseError that keeps the reply.
type parser struct {
	a    Adapter
	p    Parser
	cp   CallingParser
	ctx  context.Context // for ParseCall
	heap *runHeap        // where ParseCall's calls are counted
}

// parserFor returns how a's completions are parsed.
func (r *run) parserFor(ctx context.Context, a Adapter) (parser, error) {
	if cp, ok := a.(CallingParser); ok {
		s := scopeOf(ctx)
		s.trace = r.cfg.trace
		return parser{a: a, cp: cp, ctx: s.on(ctx), heap: r.runHeap}, nil
	}
	if p, ok := a.(Parser); ok {
		return parser{a: a, p: p}, nil
	}
	return parser{}, fmt.Errorf("adapter: %s cannot parse completions", a.Name())
}

// parse parses one completion.
func (ps parser) parse(sig *signature.Signature, text string) (vals Values, err error) {
	defer func() {
		if p := recover(); p != nil {
			vals, err = nil, &ParseError{Adapter: ps.a.Name(), Completion: text, Err: fmt.Errorf("%w: %v", ErrParserPanic, p)}
		}
	}()
	if ps.cp == nil {
		return ps.p.Parse(sig, text)
	}
	vals, res, err := ps.cp.ParseCall(ps.ctx, sig, text)
	if res != nil {
		st := &ps.heap.meter
		st.count(res.Counts)
		for model, u := range res.UsageByModel {
			st.addUsage(model, u)
		}
	}
	return vals, err
}

// parseChoice parses a choice's text. With native tool calls, DSPy reads
// the text only if there is some, and a text it cannot read leaves the
// other outputs empty rather than failing the calls.
func parseChoice(ps parser, sig *signature.Signature, text string, toolCalls bool) (Values, error) {
	if !toolCalls {
		return ps.parse(sig, text)
	}
	if strings.TrimSpace(text) == "" || sig.NumOutputs() == 0 {
		return Values{}, nil
	}
	vals, err := ps.parse(sig, text)
	if err != nil {
		return Values{}, nil
	}
	return vals, nil
}
