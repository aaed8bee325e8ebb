package adapter

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Invoker is one LM call as middleware sees it.
type Invoker func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)

// Middleware wraps an Invoker: logging, retries, caching, rate limits.
// The order of a call, outermost first: the call's middlewares ([Use]),
// then retries (on by default, see [Retry]), then the [Trace] (which so
// sees every attempt, retries included), then the LM's own middlewares
// ([WithMiddleware]), then the LM. Streams bypass middleware.
type Middleware func(next Invoker) Invoker

// Use adds middlewares to this call; the first is outermost.
func Use(mw ...Middleware) CallOption {
	return func(c *callConfig) { c.middleware = append(c.middleware, mw...) }
}

// WithMiddleware returns an LM whose calls go through mw, composed once
// here, the first outermost. A StreamingLM stays one (streams are not
// wrapped); declared capabilities are kept.
func WithMiddleware(lm LM, mw ...Middleware) LM {
	inv := Invoker(lm.CreateChatCompletion)
	for i := len(mw) - 1; i >= 0; i-- {
		inv = mw[i](inv)
	}
	w := &middlewareLM{lm: lm, inv: inv}
	if s, ok := lm.(StreamingLM); ok {
		return &middlewareStreamingLM{middlewareLM: w, stream: s}
	}
	return w
}

type middlewareLM struct {
	lm  LM
	inv Invoker
}

// CreateChatCompletion calls the LM through the middlewares.
func (m *middlewareLM) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	return m.inv(ctx, req)
}

type middlewareStreamingLM struct {
	*middlewareLM
	stream StreamingLM
}

// CreateChatCompletionStream streams from the wrapped LM directly.
func (m *middlewareStreamingLM) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	return m.stream.CreateChatCompletionStream(ctx, req)
}

// invoker builds a call's chain: the call's middlewares, retries, the
// trace (so it sees every attempt), the LM.
func invoker(lm LM, c *callConfig, tr tracer) Invoker {
	inv := Invoker(lm.CreateChatCompletion)
	if tr.t != nil {
		next := inv
		inv = func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			tr.lmStart(req, false)
			start := time.Now()
			resp, err := next(ctx, req)
			tr.lmDone(LMCallDoneInfo{Request: req, Response: resp, Usage: resp.Usage, Duration: time.Since(start), Err: err})
			return resp, err
		}
	}
	if !c.noRetry {
		inv = Retry(c.retry)(inv)
	}
	for i := len(c.middleware) - 1; i >= 0; i-- {
		inv = c.middleware[i](inv)
	}
	return inv
}

// RetryPolicy bounds retries of failed LM calls. Zero fields take the
// defaults: 3 retries, 500 ms first delay doubling to at most 20 s, with
// jitter, 2 minutes in all.
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

// WithRetry sets this call's retry policy. Retries are on by default, as
// in DSPy; MaxRetries < 0 turns them off (so does [NoRetry]).
func WithRetry(p RetryPolicy) CallOption {
	return func(c *callConfig) { c.retry, c.noRetry = p, p.MaxRetries < 0 }
}

// NoRetry turns retries off for this call.
func NoRetry() CallOption {
	return func(c *callConfig) { c.noRetry = true }
}

// Retry is the retry middleware: on a 429, a 5xx or a transport error it
// waits (exponential backoff with full jitter) and tries again, within the
// policy's bounds. It never retries other 4xx errors, a context-window
// error or a cancelled context. Retries are counted in Result.Retries.
func Retry(p RetryPolicy) Middleware {
	p = p.withDefaults()
	return func(next Invoker) Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			start := time.Now()
			delay := p.BaseDelay
			slot := new(atomic.Int64)
			ctx = context.WithValue(ctx, retryAfterKey{}, slot)
			for attempt := 0; ; attempt++ {
				resp, err := next(ctx, req)
				if err == nil || attempt >= p.MaxRetries || !retryable(ctx, err) {
					return resp, err
				}
				wait := time.Duration(rand.Int64N(int64(delay) + 1))
				if ra := slot.Swap(0); ra > 0 {
					wait = min(time.Duration(ra), p.MaxDelay) // the server's Retry-After
				}
				if time.Since(start)+wait > p.MaxElapsed {
					return resp, err
				}
				if s := statsFrom(ctx); s != nil {
					s.retries.Add(1)
					s.waited.Add(int64(wait))
				}
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return resp, err
				case <-t.C:
				}
				delay = min(2*delay, p.MaxDelay)
			}
		}
	}
}

type retryAfterKey struct{}

// HTTPDoer wraps the HTTP client of a go-openai configuration so that the
// library sees what go-openai's errors leave out: a 429 or 503 response's
// Retry-After header, which the retry middleware then waits for (capped by
// the policy's MaxDelay) instead of its own backoff.
//
//	cfg := openai.DefaultConfig(key)
//	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)
func HTTPDoer(next openai.HTTPDoer) openai.HTTPDoer {
	if next == nil {
		next = http.DefaultClient
	}
	return retryAfterDoer{next}
}

type retryAfterDoer struct{ next openai.HTTPDoer }

func (d retryAfterDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.next.Do(req)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		if slot, ok := req.Context().Value(retryAfterKey{}).(*atomic.Int64); ok {
			if d := parseRetryAfter(resp.Header.Get("Retry-After")); d > 0 {
				slot.Store(int64(d))
			}
		}
	}
	return resp, err
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// retryable reports a rate limit, a server error or a transport failure.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || isContextWindow(err) {
		return false
	}
	var api *openai.APIError
	if errors.As(err, &api) {
		return api.HTTPStatusCode == http.StatusTooManyRequests || api.HTTPStatusCode >= 500
	}
	var re *openai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode == http.StatusTooManyRequests || re.HTTPStatusCode >= 500 || re.HTTPStatusCode == 0
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// Cache stores LM responses by request key. Implementations must be safe
// for concurrent use; plug in a disk or Redis store behind this interface.
type Cache interface {
	Get(ctx context.Context, key string) (openai.ChatCompletionResponse, bool)
	Put(ctx context.Context, key string, resp openai.ChatCompletionResponse)
}

// Cached is the cache middleware: a request identical to an earlier one
// (model, messages, every option) is answered from c without an LM call;
// hits are counted in Result.CacheHits. Only successful responses are
// stored.
func Cached(c Cache) Middleware {
	return func(next Invoker) Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			key, err := CacheKey(req)
			if err != nil {
				return next(ctx, req)
			}
			if resp, ok := c.Get(ctx, key); ok {
				if s := statsFrom(ctx); s != nil {
					s.cacheHits.Add(1)
				}
				return resp, nil
			}
			resp, err := next(ctx, req)
			if err == nil {
				c.Put(ctx, key, resp)
			}
			return resp, err
		}
	}
}

// CacheKey is the SHA-256 of the request's JSON: the whole request counts.
func CacheKey(req openai.ChatCompletionRequest) (string, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// LRU is an in-memory least-recently-used Cache.
type LRU struct {
	mu    sync.Mutex
	max   int
	order *list.List // front: most recent
	items map[string]*list.Element
}

type lruEntry struct {
	key  string
	resp openai.ChatCompletionResponse
}

// NewLRU returns an LRU holding at most n responses (n < 1 means 1000).
func NewLRU(n int) *LRU {
	if n < 1 {
		n = 1000
	}
	return &LRU{max: n, order: list.New(), items: map[string]*list.Element{}}
}

// Get returns a stored response.
func (l *LRU) Get(_ context.Context, key string) (openai.ChatCompletionResponse, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.items[key]
	if !ok {
		return openai.ChatCompletionResponse{}, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry).resp, true
}

// Put stores a response, evicting the least recently used beyond the size.
func (l *LRU) Put(_ context.Context, key string, resp openai.ChatCompletionResponse) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.items[key]; ok {
		e.Value.(*lruEntry).resp = resp
		l.order.MoveToFront(e)
		return
	}
	l.items[key] = l.order.PushFront(&lruEntry{key, resp})
	for l.order.Len() > l.max {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(*lruEntry).key)
	}
}

// callStats counts what middleware did during one call.
type callStats struct {
	retries   atomic.Int64
	waited    atomic.Int64 // nanoseconds the retries were scheduled to wait
	cacheHits atomic.Int64
}

type statsKey struct{}

func statsFrom(ctx context.Context) *callStats {
	s, _ := ctx.Value(statsKey{}).(*callStats)
	return s
}
