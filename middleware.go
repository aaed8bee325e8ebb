package adapter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
)

// Invoker is one LM call as middleware sees it. For a [Stream] the request
// has Stream set, and the response is the whole reply, assembled from the
// stream after its deltas reached the caller.
type Invoker func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)

// Middleware wraps an Invoker: logging, retries, caching, rate limits.
// The order of a call, outermost first: the call's middlewares ([UseMiddleware]),
// then retries (on by default, see [Retry]), then the [Trace] (which so
// sees every attempt, retries included), then the LM's own middlewares
// ([WithMiddleware]), then the LM.
//
// The Invoker a middleware returns serves concurrent calls, so it must be
// safe for concurrent use. Like net/http's RoundTripper, it must not
// modify what it is given in place: req is a copy, but its slices and maps
// (Messages, Tools, …) are the caller's; copy before changing them. It
// returns next's error, wrapped with %w so that errors.Is and errors.As
// still see it, or an error of its own, and returns when ctx is done.
//
// # Streams
//
// A stream's deltas reach the caller while next runs, before next
// returns; what has reached the caller cannot be taken back. So with a
// stream request (req.Stream set) a middleware may:
//
//   - answer without calling next (a cache hit): the pipeline replays its
//     response to the caller as deltas;
//   - call next and return its response, with any field changed except
//     choice 0's content, reasoning and tool calls (the deltas), or return
//     an error instead (the caller has the deltas, then the error);
//   - call next again after an error that does not match [ErrDelivered]:
//     nothing of that attempt reached the caller (a retry).
//
// It must not call next again after next succeeded or failed with an
// error matching ErrDelivered, nor return another reply than next's once
// text reached the caller (a middleware that rewrites replies works for
// [Call] only). The pipeline refuses both rather than let the deltas
// disagree with the result: such a second next fails at once, without a
// request, and a changed reply ends the stream, each with an error
// matching ErrDelivered. The built-in [Retry] honours ErrDelivered.
//
// # Counting
//
// Every request that reaches the LM through next is counted in
// [Result].Requests, however many times a middleware calls next (a
// fallback to another model is next called again with req.Model
// changed; [Fallback] does it with each model's own chain). A middleware given to [WithMiddleware] runs beneath the
// [Trace]: the trace reports one LM call, whose [LMCallDoneInfo].Requests
// counts the requests it sent. One given to [UseMiddleware] runs above the
// trace: each of its calls of next is an LM call the trace reports, with
// its own start and end. A middleware that answers without next (a cache)
// sends no request. A request a middleware sends by other means, through
// a client of its own, is invisible to the pipeline: neither counted nor
// traced, and its tokens are not in Result.Usage. Send it through next.
type Middleware func(next Invoker) Invoker

// WithMiddleware returns an LM whose calls go through mw, the first
// outermost. The pipeline runs the middlewares for [Call] and [Stream]
// alike, so a cached LM streams: a hit is replayed as deltas. Called
// directly, the returned LM's CreateChatCompletion runs them, and its
// CreateChatCompletionStream streams from lm without them, since a
// go-openai stream cannot be made from a cached reply; it fails with an
// error matching errors.ErrUnsupported when lm cannot stream (and so does
// Stream). Declared capabilities and identities are kept: a [Cached]
// middleware among mw keys its entries by lm's identity (see
// [Identifier]).
func WithMiddleware(lm LM, mw ...Middleware) StreamingLM {
	return &middlewareLM{lm: lm, mw: slices.Clone(mw), ident: &lmIdent{lm: lm}}
}

type middlewareLM struct {
	lm    LM
	mw    []Middleware
	ident *lmIdent
}

// CreateChatCompletion calls the LM through the middlewares.
func (m *middlewareLM) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	s := scopeOf(ctx)
	s.ident = m.ident
	ctx = s.on(ctx)
	return wrapInvoker(m.mw, m.lm.CreateChatCompletion)(ctx, req)
}

// CreateChatCompletionStream streams from the wrapped LM directly.
func (m *middlewareLM) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	return streamFrom(ctx, m.lm, req)
}

// streamFrom is the stream of a wrapper's LM: lm's own, or the error for
// an LM that cannot stream.
func streamFrom(ctx context.Context, lm LM, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	s, ok := lm.(StreamingLM)
	if !ok {
		return nil, cannotStream(lm)
	}
	return s.CreateChatCompletionStream(ctx, req)
}

// cannotStream is the error for a stream asked of an LM that cannot
// stream.
func cannotStream(lm LM) error {
	return fmt.Errorf("adapter: %T cannot stream (it has no CreateChatCompletionStream): %w", lm, errors.ErrUnsupported)
}

// Unwrap returns the wrapped LM.
func (m *middlewareLM) Unwrap() LM { return m.lm }

// wrapInvoker wraps bottom in mw, the first outermost.
func wrapInvoker(mw []Middleware, bottom Invoker) Invoker {
	inv := bottom
	for i := len(mw) - 1; i >= 0; i-- {
		inv = mw[i](inv)
	}
	return inv
}

// peel takes the library's own wrappers off lm: [WithMiddleware] layers,
// whose middlewares the pipeline runs itself (for streams too), and
// [WithCapabilities] declarations. It stops at any other type: a user's
// wrapper is called as it is.
func peel(lm LM) (LM, []Middleware) {
	var mws []Middleware
	for {
		switch w := lm.(type) {
		case *middlewareLM:
			mws, lm = append(mws, w.mw...), w.lm
		case declared:
			lm = w.lm
		default:
			return lm, mws
		}
	}
}

// RetryPolicy bounds retries of failed LM calls. Zero fields take the
// defaults: 3 retries, 500 ms first delay doubling to at most 20 s, with
// jitter, 2 minutes in all. A server's Retry-After beyond MaxDelay, beyond
// what is left of MaxElapsed or past the context's deadline is not waited
// for: the call fails at once with an error stating the wait.
type RetryPolicy struct {
	MaxRetries int
	BaseDelay  time.Duration
	MaxDelay   time.Duration
	MaxElapsed time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 3
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 20 * time.Second
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = 2 * time.Minute
	}
	return p
}

// Retry is the retry middleware: on a 429, a 5xx or a transport error it
// waits (exponential backoff with full jitter, or the server's
// Retry-After when the [HTTPDoer] wrapper saw one) and tries again, within
// the policy's bounds. It never retries other 4xx errors, a context-window
// error, a cancelled context or a stream that already delivered text.
// Retries are counted in Result.Retries, and only when they were sent;
// the [Trace] reports each with its number (LMCallStartInfo.Retry).
// Giving up after retries, the error says how many attempts over how long.
//
// Every [Call] and [Stream] already runs this middleware with the call's
// policy ([WithRetry], on by default). A Retry added with [UseMiddleware]
// or [WithMiddleware] runs beside it, and the attempts multiply: to change
// a call's retries use WithRetry, or add Retry together with [NoRetry].
//
// Prefer WithRetry for a call's policy. Retry is for a policy that belongs
// to one LM rather than to the call: a [FallbackLM] target wrapped with
// WithMiddleware(lm, Retry(p)), under calls made with NoRetry, retries
// that target by p and then moves on, however the other targets are
// retried. Beneath the trace (WithMiddleware), its retries are counted in
// Result.Retries and Result.Requests, and the trace reports one LM call
// whose LMCallDoneInfo.Requests counts them.
func Retry(p RetryPolicy) Middleware {
	p = p.withDefaults()
	return func(next Invoker) Invoker { return retrying(p, next) }
}

// retrying is next under Retry's policy p (with its defaults): Retry's
// middleware, and the pipeline's retries, which call it directly.
func retrying(p RetryPolicy, next Invoker) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		start := time.Now()
		delay := p.BaseDelay
		ctx, slot := wire.WithRetrySlot(ctx)
		for attempt := 0; ; attempt++ {
			slot.After.Store(0)
			slot.Retry.Store(int64(attempt))
			resp, err := next(ctx, req)
			if err == nil || !retryable(ctx, err) {
				return resp, err
			}
			if attempt >= p.MaxRetries {
				return resp, gaveUp(err, attempt+1, time.Since(start))
			}
			wait := time.Duration(rand.Int64N(int64(delay) + 1))
			ra := time.Duration(slot.After.Load())
			if ra > 0 {
				wait = ra
			}
			left := p.MaxElapsed - time.Since(start)
			if dl, ok := ctx.Deadline(); ok {
				left = min(left, time.Until(dl))
			}
			switch {
			case ra > p.MaxDelay:
				return resp, fmt.Errorf("%w (the server asks to retry after %s, more than the retry policy's MaxDelay %s)", err, ra, p.MaxDelay)
			case wait >= left && ra > 0:
				return resp, fmt.Errorf("%w (the server asks to retry after %s, more than the %s left for this call)", err, ra, left.Round(time.Millisecond))
			case wait >= left:
				return resp, gaveUp(err, attempt+1, time.Since(start))
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return resp, err
			case <-t.C:
			}
			if s := meterOf(ctx); s != nil {
				s.count(Counts{Retries: 1, RetryWait: wait})
			}
			delay = min(2*delay, p.MaxDelay)
		}
	}
}

// gaveUp annotates the last error of a call that was retried.
func gaveUp(err error, attempts int, d time.Duration) error {
	if attempts < 2 {
		return err
	}
	return fmt.Errorf("%w (gave up after %d attempts over %s)", err, attempts, d.Round(time.Millisecond))
}

// retryOf returns which retry of its request ctx's request is: 0 for the
// first send.
func retryOf(ctx context.Context) int {
	if slot, ok := ctx.Value(wire.RetryKey{}).(*wire.RetrySlot); ok {
		return int(slot.Retry.Load())
	}
	return 0
}

// retryable reports a rate limit, a server error or a transport failure.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || isContextWindow(err) {
		return false
	}
	if errors.Is(err, ErrDelivered) || errors.Is(err, errStopped) {
		return false
	}
	if code := statusOf(err); code != 0 {
		return code == http.StatusTooManyRequests || code >= 500
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return true // no status: the request did not get through
	}
	var ne net.Error
	return errors.As(err, &ne)
}
