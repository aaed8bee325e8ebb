package rediscache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter"
)

// RateLimit is a provider's limit: requests and tokens per minute. A zero
// field is no limit; with both zero a [Limiter] only shares 429s.
type RateLimit struct {
	RPM int // requests per minute
	TPM int // tokens per minute, prompt and completion
	// Estimate is the tokens a request is charged before it is sent (at
	// most TPM); after the reply, the charge is corrected to the usage it
	// reports, up to what the request could have cost (see [Limiter]), and
	// a request that failed is refunded. Nil estimates a token per four
	// bytes of the messages' text, plus MaxCompletionTokens (or MaxTokens,
	// or 256 when neither is set) for each choice asked for.
	Estimate func(openai.ChatCompletionRequest) int
}

// Limiter is a rate limit that every process using the same Redis, name
// and [WithPrefix] obeys together: requests and tokens per minute, kept by
// an atomic script in Redis (GCRA: each limit admits up to a minute's
// worth at once, then at its rate), per model of the request, since
// providers limit each model on its own. Make one per provider account
// (the name says which) and put its [Limiter.Middleware] on the LM.
//
// The budget is the name's and the model's, not the LM identity's that
// adapter.Cached keys its entries by: a provider limits an account (an
// organisation) across all its API keys and endpoints, so a budget per
// key would let n keys spend n times the limit. Every Limiter with the
// same name, prefix and Redis shares one budget, whatever LM it is on;
// give each account its own name, and two names never share.
//
// A 429 from the provider makes every process wait: for its Retry-After
// when the client was built with adapter.HTTPDoer, otherwise for
// [WithBlockWithoutRetryAfter]. A call that would wait past its context's
// deadline or [WithMaxWait] fails at once with a *[LimitError].
//
// A reply's usage is the endpoint's word, so what one reply is charged is
// bounded by what its request could have cost, and never more than TPM
// (a minute's budget): the request's JSON bytes (a token is at least a
// byte of the text it stands for, and the JSON holds every text of the
// prompt: messages, tool definitions and calls, the response format),
// plus 16 tokens for each message's framing and 512 when the request has
// tools (the tool-use instructions some providers add), plus its
// MaxCompletionTokens (else MaxTokens) for each choice asked for (and a
// Prediction's bytes). A request with neither max set, with a content
// part other than text (an image, audio, a file, whose tokens no byte
// count bounds) or with a hosted tool (a search, a file search) is
// bounded by TPM alone. A reply that reports more is charged the bound,
// counted (LimiterStats.Implausible) and reported to [WithOnError] as an
// *[Error] with Op "settle" matching [ErrImplausibleUsage]: a broken or
// hostile endpoint, a proxy, or a server that reports cumulative counters
// can make the replicas wait at most about a minute more, never lock them
// out.
//
// When Redis is unreachable or slower than [WithTimeout], each process keeps
// the limit on its own ([WithFallback]) until Redis answers again, and
// remembers the 429s it saw itself. A Limiter is safe for concurrent use.
type Limiter struct {
	s     store
	name  string
	limit RateLimit
	local localLimits

	admitted, waits, waited, refused, blocks, fallbacks atomic.Int64
	implausible                                         atomic.Int64
}

// LimiterStats counts what a [Limiter] did since [NewLimiter], in this
// process.
type LimiterStats struct {
	// Admitted counts requests let through.
	Admitted int64
	// Waits counts the waits for the limit or a 429's block, and Waited
	// their total.
	Waits  int64
	Waited time.Duration
	// Refused counts calls that failed with a *LimitError.
	Refused int64
	// Blocks counts the 429s this process saw and shared.
	Blocks int64
	// Fallbacks counts decisions made in the process, Redis being
	// unreachable; Errors and Bypassed are as in [Stats].
	Fallbacks        int64
	Errors, Bypassed int64
	// Implausible counts replies that reported more tokens than their
	// request could have cost: each was charged that bound instead, and
	// reported to [WithOnError] (an *[Error] matching [ErrImplausibleUsage]).
	Implausible int64
}

// ErrImplausibleUsage is a reply whose usage is more tokens than its
// request could have cost (see [Limiter]): the limiter charges the bound
// and reports an *[Error] with Op "settle" that wraps this.
var ErrImplausibleUsage = errors.New("rediscache: implausible usage")

// NewLimiter returns a Limiter on rdb for the account name. The options:
// [WithFallback], [WithMaxWait], [WithBlockWithoutRetryAfter], and the
// [SharedOption]s [WithPrefix], [WithTimeout], [WithCooldown],
// [WithOnError].
func NewLimiter(rdb redis.UniversalClient, name string, limit RateLimit, opts ...LimiterOption) *Limiter {
	l := &Limiter{s: newStore(rdb, newConfig(opts, LimiterOption.applyToLimiter)), name: name, limit: limit}
	l.local.limit = limit
	if f := l.s.cfg.fallback; f != nil {
		l.local.limit = *f
	}
	return l
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() LimiterStats {
	return LimiterStats{
		Admitted: l.admitted.Load(), Waits: l.waits.Load(), Waited: time.Duration(l.waited.Load()),
		Refused: l.refused.Load(), Blocks: l.blocks.Load(), Fallbacks: l.fallbacks.Load(),
		Errors: l.s.errors.Load(), Bypassed: l.s.bypassed.Load(),
		Implausible: l.implausible.Load(),
	}
}

// LimitError is a call refused by a [Limiter] because the wait for the
// limit would pass its context's deadline or WithMaxWait. errors.Is(err,
// adapter.ErrRateLimited) matches it.
type LimitError struct {
	Name, Model string
	// Wait is how long the call would have had to wait.
	Wait time.Duration
	// Blocked reports a wait for a provider's 429 (its Retry-After), not
	// for the limit's own rate.
	Blocked bool
}

// Error names the limit and the wait.
func (e *LimitError) Error() string {
	why := "its rate"
	if e.Blocked {
		why = "a 429 from the provider"
	}
	return fmt.Sprintf("rediscache: rate limit %q, model %q: the next request may go in %s (for %s), more than the call may wait (its context's deadline, or the limiter's WithMaxWait)",
		e.Name, e.Model, e.Wait.Round(time.Millisecond), why)
}

// Is matches adapter.ErrRateLimited.
func (e *LimitError) Is(target error) bool { return target == adapter.ErrRateLimited }

// Middleware returns the limiter as an adapter.Middleware. Put it on the
// LM (adapter.WithMiddleware), inside the retries, so that every attempt
// is admitted and a 429's Retry-After is seen; after adapter.Cached, so
// that cache hits spend no rate.
func (l *Limiter) Middleware() adapter.Middleware {
	return func(next adapter.Invoker) adapter.Invoker {
		return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			b := l.bucket(req.Model)
			cost := l.estimate(req)
			viaRedis, err := l.admit(ctx, b, cost)
			if err != nil {
				return openai.ChatCompletionResponse{}, err
			}
			ctx, retryAfter := adapter.WatchRetryAfter(ctx)
			resp, err := next(ctx, req)
			// The accounts are kept even when the caller has gone.
			after := context.WithoutCancel(ctx)
			switch {
			case err != nil:
				if rateLimited(err) {
					l.block(after, b, retryAfter())
				}
				l.settle(after, b, viaRedis, -cost)
			case resp.Usage.TotalTokens > 0:
				l.settle(after, b, viaRedis, l.charge(after, b, req, resp.Usage.TotalTokens)-cost)
			}
			return resp, err
		}
	}
}

// rateLimited reports a 429 from go-openai.
func rateLimited(err error) bool {
	var api *openai.APIError
	var re *openai.RequestError
	switch {
	case errors.As(err, &api):
		return api.HTTPStatusCode == http.StatusTooManyRequests
	case errors.As(err, &re):
		return re.HTTPStatusCode == http.StatusTooManyRequests
	}
	return false
}

// charge is what a reply to req that reports used tokens is charged:
// used, or the most the request could have cost when used is more (counted
// and reported).
func (l *Limiter) charge(ctx context.Context, b bucket, req openai.ChatCompletionRequest, used int) int {
	if l.limit.TPM <= 0 {
		return used // no tokens are counted
	}
	bound := replyBound(req, l.limit.TPM)
	if used <= bound {
		return used
	}
	l.implausible.Add(1)
	l.s.report(ctx, &Error{Op: "settle", Key: b.keys[1], Err: fmt.Errorf(
		"%w: the reply reports %d tokens, more than its request could cost (at most %d); charged %d",
		ErrImplausibleUsage, used, bound, bound)})
	return bound
}

// Framing the bound allows beyond the request's bytes: for each message
// (roles, separators), and once for a request with tools (the tool-use
// instructions some providers put in the prompt).
const (
	messageOverhead = 16
	toolsOverhead   = 512
)

// replyBound is the most one reply to req may be charged, at most tpm
// (see [Limiter]).
func replyBound(req openai.ChatCompletionRequest, tpm int) int {
	out := req.MaxCompletionTokens
	if out <= 0 {
		out = req.MaxTokens
	}
	if out <= 0 {
		return tpm // the completion is unbounded
	}
	for _, m := range req.Messages {
		for _, p := range m.MultiContent {
			if p.Type != openai.ChatMessagePartTypeText || p.ImageURL != nil {
				return tpm // an image, audio, a file: no byte count bounds its tokens
			}
		}
	}
	for _, t := range req.Tools {
		if t.Type != "" && t.Type != openai.ToolTypeFunction {
			return tpm // a hosted tool (a search, a file search) adds what it finds
		}
	}
	js, err := json.Marshal(req) // every text of the prompt, and its structure
	if err != nil {
		return tpm
	}
	n := max(req.N, 1)
	bound := satAdd(len(js), satMul(messageOverhead, len(req.Messages)))
	if len(req.Tools) > 0 || len(req.Functions) > 0 {
		bound = satAdd(bound, toolsOverhead)
	}
	bound = satAdd(bound, satMul(out, n))
	if req.Prediction != nil {
		bound = satAdd(bound, satMul(len(req.Prediction.Content), n))
	}
	return min(bound, tpm)
}

// satAdd is a+b for a, b ≥ 0, math.MaxInt past it.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// satMul is a×b for a, b ≥ 0, math.MaxInt past it.
func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// bucket is the state of one limiter name and model.
type bucket struct {
	model string
	keys  []string // requests' TAT, tokens' TAT, blocked-until
}

func (l *Limiter) bucket(model string) bucket {
	sum := sha256.Sum256([]byte(l.name + "\x00" + model))
	base := l.s.cfg.prefix + "limit:" + formatVersion + ":{" + hex.EncodeToString(sum[:12]) + "}:"
	return bucket{model: model, keys: []string{base + "r", base + "t", base + "b"}}
}

// estimate is the tokens charged before the call, at most a minute's
// worth (a larger request waits for a full minute's budget, no more).
func (l *Limiter) estimate(req openai.ChatCompletionRequest) int {
	if l.limit.TPM <= 0 {
		return 0
	}
	var n int
	if l.limit.Estimate != nil {
		n = l.limit.Estimate(req)
	} else {
		n = defaultEstimate(req)
	}
	return min(max(n, 0), l.limit.TPM)
}

func defaultEstimate(req openai.ChatCompletionRequest) int {
	var text int
	for _, m := range req.Messages {
		text = satAdd(text, satAdd(len(m.Content), len(m.ReasoningContent)))
		for _, p := range m.MultiContent {
			text = satAdd(text, len(p.Text))
		}
		for _, tc := range m.ToolCalls {
			text = satAdd(text, len(tc.Function.Arguments))
		}
	}
	out := req.MaxCompletionTokens
	if out <= 0 {
		out = req.MaxTokens
	}
	if out <= 0 {
		out = 256
	}
	// Saturating: a huge max_tokens times n is the whole minute's budget
	// (estimate clamps it to TPM), not a wrapped negative charge.
	return satAdd(satAdd(text/4, satMul(4, len(req.Messages))), satMul(out, max(req.N, 1)))
}

// The scripts keep times in microseconds of Redis's clock (TIME), so that
// every process agrees whatever its own clock says. A limit of n per
// minute is a GCRA with an emission interval of a minute/n and a burst of
// a minute's worth. The tokens a script is given (a cost, a settle's
// delta) are within ±TPM, so that one request moves the tokens' TAT by a
// minute at most either way.
var (
	admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local period = 60000000
local maxwait = 1e12 -- about 11 days: a forged TAT makes an integer reply, never a wrapped one
local rpm, tpm, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local wait, blocked = 0, 0
local b = tonumber(redis.call('GET', KEYS[3]) or '0')
if b > now then wait, blocked = b - now, 1 end
local newr, newt
if rpm > 0 then
  local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now)
  newr = tat + period / rpm
  if newr - period - now > wait then wait, blocked = newr - period - now, 0 end
end
if tpm > 0 and cost > 0 then
  local tat = math.max(tonumber(redis.call('GET', KEYS[2]) or '0'), now)
  newt = tat + cost * period / tpm
  if newt - period - now > wait then wait, blocked = newt - period - now, 0 end
end
if wait > 0 then return {math.ceil(math.min(wait, maxwait)), blocked} end
if newr then redis.call('SET', KEYS[1], string.format('%.0f', newr), 'PX', math.ceil((newr - now) / 1000) + 1) end
if newt then redis.call('SET', KEYS[2], string.format('%.0f', newt), 'PX', math.ceil((newt - now) / 1000) + 1) end
return {0, 0}
`)
	settleScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tpm, delta = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now) + delta * 60000000 / tpm
if tat <= now then redis.call('DEL', KEYS[1]) return 0 end
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
return 0
`)
	blockScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local d = tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if now + d > cur then redis.call('SET', KEYS[1], string.format('%.0f', now + d), 'PX', math.ceil(d / 1000) + 1) end
return 0
`)
)

// admit waits until the bucket lets a request of cost tokens in, and
// reports whether Redis decided (rather than the process's fallback).
func (l *Limiter) admit(ctx context.Context, b bucket, cost int) (bool, error) {
	for {
		wait, blocked, viaRedis := l.try(ctx, b, cost)
		if wait <= 0 {
			l.admitted.Add(1)
			return viaRedis, nil
		}
		if wait > l.s.cfg.maxWait {
			l.refused.Add(1)
			return false, &LimitError{Name: l.name, Model: b.model, Wait: wait, Blocked: blocked}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			l.refused.Add(1)
			return false, &LimitError{Name: l.name, Model: b.model, Wait: wait, Blocked: blocked}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		l.waits.Add(1)
		l.waited.Add(int64(wait))
	}
}

// try asks Redis, or the fallback, whether a request may go now; if not,
// how long to wait and whether for a 429's block.
func (l *Limiter) try(ctx context.Context, b bucket, cost int) (time.Duration, bool, bool) {
	r, err := run(ctx, &l.s, "admit", b.keys[0], func(ctx context.Context) ([]int64, error) {
		return admitScript.Run(ctx, l.s.rdb, b.keys, l.limit.RPM, l.limit.TPM, cost).Int64Slice()
	})
	if err == nil && len(r) == 2 {
		return time.Duration(min(r[0], math.MaxInt64/int64(time.Microsecond))) * time.Microsecond, r[1] == 1, true
	}
	l.fallbacks.Add(1)
	wait, blocked := l.local.admit(b.model, cost, time.Now())
	return wait, blocked, false
}

// settle corrects the tokens charged to a request by delta, where it was
// charged. The Middleware keeps delta within [-cost, bound-cost]; settle
// keeps it within ±TPM whatever it is given, so that one correction
// moves the tokens' TAT by a minute at most.
func (l *Limiter) settle(ctx context.Context, b bucket, viaRedis bool, delta int) {
	if l.limit.TPM <= 0 || delta == 0 {
		return
	}
	delta = min(max(delta, -l.limit.TPM), l.limit.TPM)
	if !viaRedis {
		l.local.settle(b.model, delta, time.Now())
		return
	}
	_, _ = run(ctx, &l.s, "settle", b.keys[1], func(ctx context.Context) (any, error) {
		return settleScript.Run(ctx, l.s.rdb, b.keys[1:2], l.limit.TPM, delta).Result()
	})
}

// maxBlock bounds how long one 429 blocks the limiter, whatever its
// Retry-After says.
const maxBlock = time.Hour

// block makes every process wait d (or the default) before their next
// request to the bucket: in Redis, and in this process should Redis be
// unreachable.
func (l *Limiter) block(ctx context.Context, b bucket, d time.Duration) {
	if d <= 0 {
		d = l.s.cfg.block
	}
	d = min(d, maxBlock)
	l.blocks.Add(1)
	l.local.block(b.model, time.Now().Add(d))
	_, _ = run(ctx, &l.s, "block", b.keys[2], func(ctx context.Context) (any, error) {
		return blockScript.Run(ctx, l.s.rdb, b.keys[2:3], d.Microseconds()).Result()
	})
}

// localLimits is the fallback: the same GCRA per model, in the process.
type localLimits struct {
	limit RateLimit
	mu    sync.Mutex
	state map[string]*localBucket
}

type localBucket struct{ reqTAT, tokTAT, blocked time.Time }

func (ll *localLimits) get(model string) *localBucket {
	if ll.state == nil {
		ll.state = map[string]*localBucket{}
	}
	b := ll.state[model]
	if b == nil {
		b = &localBucket{}
		ll.state[model] = b
	}
	return b
}

func (ll *localLimits) admit(model string, cost int, now time.Time) (time.Duration, bool) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	b := ll.get(model)
	var wait time.Duration
	blocked := false
	if b.blocked.After(now) {
		wait, blocked = b.blocked.Sub(now), true
	}
	var newR, newT time.Time
	if ll.limit.RPM > 0 {
		newR = later(b.reqTAT, now).Add(time.Minute / time.Duration(ll.limit.RPM))
		if w := newR.Add(-time.Minute).Sub(now); w > wait {
			wait, blocked = w, false
		}
	}
	if ll.limit.TPM > 0 && cost > 0 {
		newT = later(b.tokTAT, now).Add(atRate(cost, ll.limit.TPM))
		if w := newT.Add(-time.Minute).Sub(now); w > wait {
			wait, blocked = w, false
		}
	}
	if wait > 0 {
		return wait, blocked
	}
	if !newR.IsZero() {
		b.reqTAT = newR
	}
	if !newT.IsZero() {
		b.tokTAT = newT
	}
	return 0, false
}

func (ll *localLimits) settle(model string, delta int, now time.Time) {
	if ll.limit.TPM <= 0 {
		return
	}
	ll.mu.Lock()
	defer ll.mu.Unlock()
	b := ll.get(model)
	b.tokTAT = later(b.tokTAT, now).Add(atRate(delta, ll.limit.TPM))
}

func (ll *localLimits) block(model string, until time.Time) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	if b := ll.get(model); until.After(b.blocked) {
		b.blocked = until
	}
}

// atRate is the time tokens take at tpm (> 0) a minute, tokens clamped to
// ±tpm: a minute at most either way. It is computed in 128 bits, so that
// no TPM and no count of tokens overflows it (time.Duration(tokens) *
// time.Minute does past 153 million tokens).
func atRate(tokens, tpm int) time.Duration {
	abs := uint64(tokens)
	if tokens < 0 {
		abs = -abs // math.MinInt too: its two's complement is its magnitude
	}
	abs = min(abs, uint64(tpm))
	hi, lo := bits.Mul64(abs, uint64(time.Minute))
	q, _ := bits.Div64(hi, lo, uint64(tpm)) // hi < tpm, since abs ≤ tpm: no overflow
	if tokens < 0 {
		return -time.Duration(q)
	}
	return time.Duration(q)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
