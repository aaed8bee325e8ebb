package adapter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

// Coalesced is the middleware that shares calls in flight, without a
// cache: identical requests (the key of [Cached]: the same LM, model,
// messages and options; a Stream's and a Call's alike) in flight at once
// make one LM call, whose reply each of them gets. [Cached] does the same
// and stores the reply; use Coalesced where no reply may be kept. Requests
// share a call only through one middleware value given to
// [WithMiddleware] (beneath the call's retries and [Trace], which so
// report each caller's request on its own goroutine), or called outside
// the pipeline; build it once, with the LM. Among a call's own middlewares
// ([UseMiddleware]) it shares nothing, and a Cached there only caches:
// its call would carry one caller's retries and report to that caller's
// trace. Requests through an LM without an identity (see [Identifier]) are
// neither cached nor coalesced.
//
// The first request sends the call; the others join it while it runs,
// and until the pipeline that takes its reply over has accepted (and
// stored) or refused it. The call is sent as the first request's call
// sends it (its [Limits], say): what the others get is what a cache hit
// would give them. A [Call] that joins gets the
// whole reply; a [Stream] that joins gets the deltas so far at once, then
// the rest as they arrive, the same chunks as the stream that sent it (a
// stream that joins a Call's request gets the reply replayed as deltas, as
// a cache hit is). Each parses the reply itself, so its Result is what
// its own request would have given, except that it spent nothing: a
// request that joined another's reports no usage (its response neither)
// and is counted in Result.Coalesced and LMCallDoneInfo.Coalesced. The
// tokens are counted once, in the Result of the request that sent the
// call. Callers that join share its outcome whatever it is: its error,
// or a reply their parse refuses; their own retries then coalesce again.
//
// The call runs on its own goroutine, with the context values of the
// request that sent it and none of its cancellation: a caller whose
// context ends, or a stream whose consumer breaks out, stops waiting at
// once (with its context's error) and the call goes on for the others;
// should the request that sent it leave, the first caller left takes the
// reply over, with its tokens, and stores it. The call is cancelled when
// every caller waiting for it has gone. A panic beneath the middleware is
// raised again in every caller waiting.
//
// Calls are coalesced within a process; replicas share replies through a
// cache they share (Redis, disk), not their calls in flight.
func Coalesced() Middleware { return Cached(nil) }

// joinHook, when set (by tests), runs each time a request joins another's
// call in flight.
var joinHook atomic.Pointer[func()]

// flights are the calls in flight through one Cached middleware, by key.
// Its mutex guards the flights too.
type flights struct {
	c  Cache // nil: nothing is stored
	mu sync.Mutex
	m  map[string]*flight
}

// flight is one request that callers asked at once (its waiters): looked
// up in the cache by the first, then, on a miss, sent on a goroutine of
// its own (call). Its fields are guarded by flights.mu, except what the
// goroutine counts in the call's state until the outcome.
type flight struct {
	g       *flights
	key     string
	waiters []waiter // attached, in the order they came
	first   [4]waiter
	n       waiter // the last waiter's number
	call    *flightCall

	// wake is closed at the stream's next piece and at the end, finished
	// at the end; each is made when someone waits on it.
	wake, finished chan struct{}

	// The outcome: owner is the waiter that takes the reply over (the
	// tokens, the cache write); kept that the flight stays joinable until
	// the owner's pipeline settles.
	done  bool
	o     outcome
	owner waiter // 0: none
	kept  bool
}

// waiter numbers a caller of a flight, from 1.
type waiter uint32

// flightCall is a flight's LM call, once sent.
type flightCall struct {
	cancel context.CancelFunc // ends the call
	meter  meter              // what the call counted; out is the flight
	retry  wire.RetrySlot     // the Retry-After the call's reply carried

	// The stream so far: choice 0's pieces as they arrived.
	log   []wire.Delta
	sent  bool // a piece of text went out
	whole bool // the reply streamed to its end
	msg   openai.ChatCompletionMessage
}

// outcome is what a flight's request got.
type outcome struct {
	resp     openai.ChatCompletionResponse
	err      error
	hit      bool // answered by the cache
	extras   WireExtras
	panicked any
}

// errFlightExited is the outcome of a call whose goroutine exited without
// returning (runtime.Goexit beneath the cache).
var errFlightExited = errors.New("adapter: the shared LM call's goroutine exited without a reply")

// do answers req: a hit, the reply of an identical request in flight, or
// its own call's.
func (g *flights) do(ctx context.Context, key string, next Invoker, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if scopeOf(ctx).callLevel {
		return g.alone(ctx, key, next, req)
	}
	f, w, first := g.join(key)
	if !first {
		if h := joinHook.Load(); h != nil {
			(*h)()
		}
		return g.wait(ctx, f, w, req)
	}
	if g.c != nil {
		if e, ok := g.get(ctx, f); ok {
			g.finish(ctx, f, outcome{resp: hitResponse(e), hit: true, extras: e.Extras})
			return g.wait(ctx, f, w, req)
		}
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &flightCall{cancel: cancel}
	c.meter.out = f
	c.retry.Retry.Store(int64(retryOf(ctx)))
	g.mu.Lock()
	f.call = c
	g.mu.Unlock()
	go f.run(flightContext(fctx, c), c, next, req)
	return g.wait(ctx, f, w, req)
}

// alone answers a request on its own: from the cache, or by its call,
// whose reply is stored once the pipeline accepted it.
func (g *flights) alone(ctx context.Context, key string, next Invoker, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	if g.c == nil {
		return next(ctx, req)
	}
	st := meterOf(ctx)
	if e, ok := g.lookup(ctx, st, key); ok {
		if st != nil {
			st.count(Counts{CacheHits: 1})
			st.setExtras(e.Extras)
		}
		return hitResponse(e), nil
	}
	handed := false // to store, which stores or releases
	defer func() {
		if !handed {
			g.release(ctx, key)
		}
	}()
	resp, err := next(ctx, req)
	if err == nil && finishedNormally(resp) {
		entry := CacheEntry{Response: resp}
		if st != nil {
			entry.Extras = st.replyExtras()
		}
		handed = true
		g.store(ctx, st, key, entry, nil)
	}
	return resp, err
}

// hitResponse is the response of a hit: it spent no tokens.
func hitResponse(e CacheEntry) openai.ChatCompletionResponse {
	resp := e.Response
	resp.Usage = openai.Usage{}
	return resp
}

// store puts entry in the cache once the pipeline accepted its reply (at
// once outside the pipeline, st nil), or releases the key's miss when it
// refused it; then runs done whatever the verdict.
func (g *flights) store(ctx context.Context, st *meter, key string, entry CacheEntry, done func()) {
	settle := func(accepted bool) {
		switch {
		case g.c == nil:
		case accepted:
			g.put(context.WithoutCancel(ctx), st, key, entry)
		default:
			g.release(ctx, key)
		}
		if done != nil {
			done()
		}
	}
	if st != nil {
		st.onSettle(settle)
	} else {
		settle(true)
	}
}

// get looks the flight's key up; a panic in the cache is the outcome of
// the callers waiting too.
func (g *flights) get(ctx context.Context, f *flight) (e CacheEntry, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			g.finish(ctx, f, outcome{panicked: p})
			panic(p)
		}
	}()
	return g.lookup(ctx, meterOf(ctx), f.key)
}

// lookup reads key from the cache; a FallibleCache's failure is counted
// and traced in st (the call's state; nil outside the pipeline) and is a
// miss.
func (g *flights) lookup(ctx context.Context, st *meter, key string) (CacheEntry, bool) {
	fc, ok := g.c.(FallibleCache)
	if !ok {
		return g.c.Get(ctx, key)
	}
	e, hit, err := fc.Lookup(ctx, key)
	if err != nil {
		st.cacheError(ctx, CacheLookup, key, err)
		return CacheEntry{}, false
	}
	return e, hit
}

// put stores entry under key; a FallibleCache's failure is counted and
// traced in st, as lookup's.
func (g *flights) put(ctx context.Context, st *meter, key string, entry CacheEntry) {
	fc, ok := g.c.(FallibleCache)
	if !ok {
		g.c.Put(ctx, key, entry)
		return
	}
	if err := fc.Store(ctx, key, entry); err != nil {
		st.cacheError(ctx, CacheStore, key, err)
	}
}

// release tells a [CacheReleaser] that no entry will be stored under key
// after its miss.
func (g *flights) release(ctx context.Context, key string) {
	if r, ok := g.c.(CacheReleaser); ok {
		r.Release(context.WithoutCancel(ctx), key)
	}
}

// join attaches a caller to the flight of key, starting one if there is
// none (first).
func (g *flights) join(key string) (f *flight, w waiter, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f = g.m[key]; f == nil {
		f = &flight{g: g, key: key}
		f.waiters = f.first[:0]
		g.m[key] = f
		first = true
	}
	f.n++
	f.waiters = append(f.waiters, f.n)
	return f, f.n, first
}

// flightContext is the context of a flight's call: the values of the
// request that sent it, with the call's own state and retry slot.
func flightContext(ctx context.Context, c *flightCall) context.Context {
	s := scopeOf(ctx)
	if s.meter != nil {
		c.meter.budget = s.meter.budget // the request is the caller's: its budget pays
	}
	s.meter = &c.meter
	return context.WithValue(s.on(ctx), wire.RetryKey{}, &c.retry)
}

// run makes the flight's call.
func (f *flight) run(ctx context.Context, c *flightCall, next Invoker, req openai.ChatCompletionRequest) {
	o := outcome{err: errFlightExited}
	defer func() { f.g.finish(ctx, f, o) }()
	defer func() {
		if p := recover(); p != nil {
			o = outcome{panicked: p}
		}
	}()
	resp, err := next(ctx, req)
	o = outcome{resp: resp, err: err, extras: c.meter.replyExtras()}
}

// finish records the flight's outcome and wakes its waiters. The first
// waiter still attached (the one that sent the call, unless it left) takes
// the reply over; a reply to be stored keeps the flight joinable until
// that waiter's pipeline settles, so that no identical request in between
// sends its own. A call's outcome that will not be stored releases the
// key's miss.
func (g *flights) finish(ctx context.Context, f *flight, o outcome) {
	g.mu.Lock()
	f.o, f.done = o, true
	if len(f.waiters) > 0 {
		f.owner = f.waiters[0]
	}
	f.kept = o.err == nil && o.panicked == nil && !o.hit && f.owner != 0 && finishedNormally(o.resp)
	if !f.kept {
		g.forget(f)
	}
	f.wakeAll()
	c, owned, kept := f.call, f.owner != 0, f.kept
	g.mu.Unlock()
	if c != nil {
		c.cancel()
		if !owned {
			c.meter.settle(false) // no one takes it over
		}
		if !kept {
			g.release(ctx, f.key)
		}
	}
}

// wakeAll wakes the waiters (g.mu held).
func (f *flight) wakeAll() {
	if f.wake != nil {
		close(f.wake)
		f.wake = nil
	}
	if f.done && f.finished != nil {
		close(f.finished)
		f.finished = nil
	}
}

// forget removes f from the flights that requests join (g.mu held).
func (g *flights) forget(f *flight) {
	if g.m[f.key] == f {
		delete(g.m, f.key)
	}
}

// detach removes w from f's waiters (g.mu held).
func (f *flight) detach(w waiter) {
	if i := slices.Index(f.waiters, w); i >= 0 {
		f.waiters = slices.Delete(f.waiters, i, i+1)
	}
}

// wait waits for the flight's outcome, passing the stream so far and then
// the rest to a stream's output as it arrives.
func (g *flights) wait(ctx context.Context, f *flight, w waiter, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	var out streamOut
	if st := meterOf(ctx); st != nil && req.Stream {
		out = st.out
	}
	next, started := 0, false
	for {
		g.mu.Lock()
		var log []wire.Delta
		if out != nil && f.call != nil {
			log = f.call.log[next:]
		}
		done := f.done
		var wake <-chan struct{}
		switch {
		case len(log) > 0 || done:
		case out != nil:
			if f.wake == nil {
				f.wake = make(chan struct{})
			}
			wake = f.wake
		default:
			if f.finished == nil {
				f.finished = make(chan struct{})
			}
			wake = f.finished
		}
		g.mu.Unlock()

		if len(log) > 0 {
			if !started {
				if err := out.start(); err != nil {
					g.leave(ctx, f, w)
					return openai.ChatCompletionResponse{}, err
				}
				started = true
			}
			for _, d := range log {
				d.ToolCalls = slices.Clone(d.ToolCalls) // each caller's own
				if !out.delta(d) {
					g.leave(ctx, f, w)
					return openai.ChatCompletionResponse{}, errStopped
				}
			}
			next += len(log)
			continue
		}
		if done {
			return g.take(ctx, f, w, out, started)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			if g.leaveUnlessDone(f, w) {
				err := ctx.Err()
				if out != nil {
					if sent, _ := out.status(); sent {
						err = &deliveredError{err}
					}
				}
				return openai.ChatCompletionResponse{}, err
			}
		}
	}
}

// leaveUnlessDone detaches a waiter whose context ended, unless the
// outcome is in: then it takes it. The last waiter to leave a call in
// flight cancels it.
func (g *flights) leaveUnlessDone(f *flight, w waiter) bool {
	g.mu.Lock()
	if f.done {
		g.mu.Unlock()
		return false
	}
	f.detach(w)
	var c *flightCall
	if len(f.waiters) == 0 {
		g.forget(f) // a new request sends its own
		c = f.call
	}
	g.mu.Unlock()
	if c != nil {
		c.cancel()
	}
	return true
}

// leave detaches a waiter that stopped before it took the outcome (a
// stream whose consumer broke out): before the outcome, as a cancelled
// waiter; after it, the next waiter takes the reply over if it was the
// owner, and if none is left the key's miss is released.
func (g *flights) leave(ctx context.Context, f *flight, w waiter) {
	if g.leaveUnlessDone(f, w) {
		return
	}
	g.mu.Lock()
	f.detach(w)
	var orphan *flightCall
	if f.owner == w {
		f.owner = 0
		if len(f.waiters) > 0 {
			f.owner = f.waiters[0]
		} else {
			g.forget(f)
			orphan = f.call
		}
	}
	g.mu.Unlock()
	if orphan != nil {
		orphan.meter.settle(false)
		g.release(ctx, f.key)
	}
}

// take gives a waiter the flight's outcome: the owner adopts what the call
// counted and settles the cache write; the others spent nothing.
func (g *flights) take(ctx context.Context, f *flight, w waiter, out streamOut, started bool) (openai.ChatCompletionResponse, error) {
	g.mu.Lock()
	f.detach(w)
	owner := f.owner == w
	o, c, kept := f.o, f.call, f.kept
	var whole bool
	var msg openai.ChatCompletionMessage
	if c != nil {
		whole, msg = c.whole, c.msg
	}
	g.mu.Unlock()
	if o.panicked != nil {
		panic(o.panicked)
	}
	resp, err := o.resp, o.err
	st := meterOf(ctx)
	if st != nil {
		switch {
		case o.hit:
			st.count(Counts{CacheHits: 1})
		case owner:
			if c != nil {
				st.adopt(&c.meter)
			}
		default:
			st.count(Counts{Coalesced: 1})
		}
		st.setExtras(o.extras)
		if c != nil {
			if after := c.retry.After.Load(); after > 0 {
				if slot, ok := ctx.Value(wire.RetryKey{}).(*wire.RetrySlot); ok {
					slot.After.Store(after)
				}
			}
		}
	}
	if !owner {
		resp.Usage = openai.Usage{} // no tokens were spent
	}
	switch {
	case out != nil && whole && err == nil:
		if !started {
			if err := out.start(); err != nil {
				return openai.ChatCompletionResponse{}, err
			}
		}
		out.streamedWhole(msg)
	case err != nil && out != nil && sentOf(out):
		if !errors.Is(err, ErrDelivered) {
			err = &deliveredError{err}
		}
	case err != nil:
		if d, ok := err.(*deliveredError); ok {
			err = d.err // this caller has seen nothing of it: it may retry
		}
	}
	if owner && kept {
		g.store(ctx, st, f.key, CacheEntry{Response: o.resp, Extras: o.extras}, func() {
			g.mu.Lock()
			g.forget(f)
			g.mu.Unlock()
		})
	}
	return resp, err
}

// sentOf reports whether text went out through out.
func sentOf(out streamOut) bool {
	sent, _ := out.status()
	return sent
}

// start begins a sending of the flight's request (see streamOut).
func (f *flight) start() error {
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	if f.call.sent {
		return errSentAgain
	}
	f.call.whole = false
	return nil
}

// delta records a piece of the stream and wakes the waiters.
func (f *flight) delta(d wire.Delta) bool {
	f.g.mu.Lock()
	c := f.call
	c.log = append(c.log, d)
	c.sent = c.sent || !d.End
	f.wakeAll()
	f.g.mu.Unlock()
	return true
}

func (f *flight) status() (sent, stopped bool) {
	f.g.mu.Lock()
	defer f.g.mu.Unlock()
	return f.call.sent, false
}

func (f *flight) streamedWhole(msg openai.ChatCompletionMessage) {
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	f.g.mu.Lock()
	f.call.whole, f.call.msg = true, msg
	f.g.mu.Unlock()
}

// finishedNormally reports a reply whose every choice ended as the model
// meant it to: stopped or calling tools, with no refusal.
func finishedNormally(resp openai.ChatCompletionResponse) bool {
	if len(resp.Choices) == 0 {
		return false
	}
	for _, ch := range resp.Choices {
		switch ch.FinishReason {
		case openai.FinishReasonStop, openai.FinishReasonToolCalls, openai.FinishReasonFunctionCall:
		default:
			return false
		}
		if ch.Message.Refusal != "" {
			return false
		}
	}
	return true
}
