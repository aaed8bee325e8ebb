package rediscache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The options are typed by what they configure, as connect-go's are
// ([connectrpc.com/connect]'s ClientOption, HandlerOption and Option for
// both):
//
//   - [Option] configures a [Cache]: [New] takes it. [WithTTL],
//     [WithMaxEntryBytes], [WithSigningSecret], [WithLogger] and
//     [WithLease] are Options only.
//   - [LimiterOption] configures a [Limiter]: [NewLimiter] takes it.
//     [WithFallback], [WithMaxWait] and [WithBlockWithoutRetryAfter] are
//     LimiterOptions only.
//   - [BudgetOption] configures a [Budget]: [NewBudget] takes it.
//     [WithWindow], [WithMaxHold] and [WithFailOpen] are BudgetOptions
//     only.
//   - [SharedOption] configures how any of the three uses Redis, and is
//     all three: [WithPrefix], [WithTimeout], [WithCooldown] and
//     [WithOnError].
//
// So an option given to a constructor it does not configure, a Cache's
// WithTTL to NewLimiter, say, does not compile. To build one list for
// several constructors, type it []SharedOption and convert it, option by
// option, where it is passed.

// Option configures a [Cache] ([New]): a cache's own option, or a
// [SharedOption].
type Option interface{ applyToCache(*config) }

// LimiterOption configures a [Limiter] ([NewLimiter]): a limiter's own
// option, or a [SharedOption].
type LimiterOption interface{ applyToLimiter(*config) }

// SharedOption configures how a [Cache], a [Limiter] or a [Budget] uses
// Redis: its keys, its commands' timeout, what it does after a failure
// and whom it tells. It is an [Option], a [LimiterOption] and a
// [BudgetOption].
type SharedOption interface {
	Option
	LimiterOption
	BudgetOption
}

// cacheOption is an Option only.
type cacheOption func(*config)

func (f cacheOption) applyToCache(c *config) { f(c) }

// limiterOption is a LimiterOption only.
type limiterOption func(*config)

func (f limiterOption) applyToLimiter(c *config) { f(c) }

// sharedOption is all three.
type sharedOption func(*config)

func (f sharedOption) applyToCache(c *config)   { f(c) }
func (f sharedOption) applyToLimiter(c *config) { f(c) }

// applyToBudget keeps the option for the Budget's store.
func (f sharedOption) applyToBudget(c *budgetConfig) { c.shared = append(c.shared, f) }

type config struct {
	prefix   string
	ttl      time.Duration
	maxEntry int
	timeout  time.Duration
	cooldown time.Duration
	onError  func(context.Context, error)
	logger   *slog.Logger // nil: slog.Default()
	sign     bool         // WithSigningSecret was given: a Cache signs and verifies, whatever the secret
	secret   []byte       // WithSigningSecret's secret
	fallback *RateLimit
	maxWait  time.Duration
	block    time.Duration
	lease    time.Duration
}

// newConfig returns the defaults, then applies each of opts that is not
// nil.
func newConfig[O any](opts []O, apply func(O, *config)) config {
	c := config{
		prefix:   "sigwire:",
		ttl:      24 * time.Hour,
		maxEntry: 1 << 20,
		timeout:  100 * time.Millisecond,
		cooldown: time.Second,
		maxWait:  time.Minute,
		block:    time.Second,
	}
	for _, o := range opts {
		if any(o) != nil {
			apply(o, &c)
		}
	}
	return c
}

// WithPrefix starts every Redis key written ("sigwire:" by default), so
// that several applications, or tests, can share a Redis. Cache, Limiter
// and Budget.
func WithPrefix(p string) SharedOption { return sharedOption(func(c *config) { c.prefix = p }) }

// WithTTL is how long an entry lives (24 hours by default; d ≤ 0 keeps
// entries until Redis evicts them under its maxmemory policy). Cache.
func WithTTL(d time.Duration) Option { return cacheOption(func(c *config) { c.ttl = max(d, 0) }) }

// WithMaxEntryBytes bounds one stored entry (1 MiB by default; n < 1
// keeps the default): a larger reply is not stored, and counted in
// Stats.Oversize. The total is Redis's to bound: set maxmemory with an
// eviction policy (allkeys-lru, or volatile-lru when the Redis holds
// other data without a TTL). Cache.
func WithMaxEntryBytes(n int) Option {
	return cacheOption(func(c *config) {
		if n > 0 {
			c.maxEntry = n
		}
	})
}

// WithSigningSecret makes entries tamper-evident: each value carries an
// HMAC-SHA256 of its Redis key and contents under secret, and a value
// without a valid one is ignored as corrupt. Without it, whoever can write
// to the Redis can forge replies for the keys they see there; with it,
// only holders of the secret can. Give every replica the same secret;
// changing it makes the entries written before misses. Cache.
//
// The secret must be at least [MinSecretBytes] (16) bytes: random bytes,
// 32 of them for HMAC-SHA256's full strength. [New] panics, with an error
// matching [ErrShortSecret] that names the length, when it is shorter, an
// empty one included: a Cache given WithSigningSecret never stores or
// accepts an unsigned value, and an empty secret is most often an
// environment variable that was not set
// (WithSigningSecret([]byte(os.Getenv("CACHE_HMAC_SECRET")))) rather than
// a choice. Check a secret read from outside before New when a panic is
// not the way to report it.
func WithSigningSecret(secret []byte) Option {
	return cacheOption(func(c *config) { c.sign, c.secret = true, append([]byte(nil), secret...) })
}

// WithTimeout bounds each Redis command (100 ms by default; d ≤ 0 keeps
// the default), whatever the client's own timeouts: past it, a lookup is
// a miss, a store is dropped and a limiter decides in the process. A
// client made with ContextTimeoutEnabled runs each command on the calling
// goroutine; any other client's commands run on a goroutine of their own,
// so that the call need not wait for the client's ReadTimeout. Cache,
// Limiter and Budget (past it, a Budget fails closed or open).
func WithTimeout(d time.Duration) SharedOption {
	return sharedOption(func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	})
}

// WithCooldown is how long Redis is left alone after a command failed or
// timed out (1 s by default; d ≤ 0 keeps the default): meanwhile lookups
// are misses, stores are dropped, limiters decide in the process and
// budgets fail closed or open, all counted as Bypassed. Cache, Limiter
// and Budget.
func WithCooldown(d time.Duration) SharedOption {
	return sharedOption(func(c *config) {
		if d > 0 {
			c.cooldown = d
		}
	})
}

// WithOnError reports each failure as it happens, with the context of the
// call it happened in (for a log line or a span event): an *[Error] whose
// Err is the Redis error, context.DeadlineExceeded for a timeout, one
// matching adapter.ErrCorruptCacheEntry for an entry that was ignored, or
// one matching [ErrImplausibleUsage] for a reply whose usage a Limiter
// did not believe. f runs on the calling goroutine and must be safe for
// concurrent use. Cache, Limiter and Budget.
func WithOnError(f func(ctx context.Context, err error)) SharedOption {
	return sharedOption(func(c *config) { c.onError = f })
}

// WithLogger is the logger a Cache warns on, once, when it first stores
// an entry no other process will read: one keyed by an LM identified per
// process (see adapter.LocalCacheKey and Stats.Local). slog.Default()
// when unset or nil. Cache.
func WithLogger(l *slog.Logger) Option { return cacheOption(func(c *config) { c.logger = l }) }

// WithFallback is the limit each process keeps on its own while Redis is
// unreachable (by default the shared limit itself: with n replicas cut
// off from Redis at once, up to n times the limit goes out; give
// the limit divided by n to stay within it). Limiter.
func WithFallback(l RateLimit) LimiterOption {
	return limiterOption(func(c *config) { c.fallback = &l })
}

// WithMaxWait bounds how long a call waits for the limit (1 minute by
// default; d ≤ 0 keeps the default), as does the call's context deadline:
// a call that would wait longer fails at once with a *[LimitError].
// Limiter.
func WithMaxWait(d time.Duration) LimiterOption {
	return limiterOption(func(c *config) {
		if d > 0 {
			c.maxWait = d
		}
	})
}

// WithBlockWithoutRetryAfter is how long a 429 that names no Retry-After
// makes every replica wait (1 s by default; d ≤ 0 keeps the default). The
// Retry-After header is seen only through a client built with
// adapter.HTTPDoer. Limiter.
func WithBlockWithoutRetryAfter(d time.Duration) LimiterOption {
	return limiterOption(func(c *config) {
		if d > 0 {
			c.block = d
		}
	})
}

// WithLease shares the calls in flight across replicas (0 by default: off).
// On a miss, a Cache takes a lease on the key in Redis before its caller
// calls the LM, for at most d; a Cache of another replica (or another
// Cache value in the process) that misses the same key while the lease
// is held waits for the entry, up to d and the call's context, then
// serves it as a hit. So replicas asking the same new prompt at once pay
// for it once, as adapter.Cached's coalescing makes the callers within a
// process do.
//
// It fails open: a wait that runs out is a miss (counted in
// Stats.WaitTimeouts, not an error) and the caller calls the LM itself;
// a Redis failure during the wait is a miss with an error, counted and
// reported as any other. Storing the entry releases the lease. A lease
// holder whose call fails, or whose reply the pipeline refuses, stores
// nothing and releases the lease at once (adapter.Cached calls
// [Cache.Release]): the next waiter to look takes it over and calls the
// LM, and the holder's own retry, if it makes one, waits for that entry
// as the others do. A holder that cannot release it (its process died,
// Redis was unreachable) keeps it until d has passed. Set d a little
// above the LM's slowest usual reply (its p99): a wait costs a waiting
// call up to d, a lease lost to a call slower than d costs a second LM
// call.
func WithLease(d time.Duration) Option { return cacheOption(func(c *config) { c.lease = max(d, 0) }) }

// Error is a Redis failure, a corrupt entry, or a reply's implausible
// usage, as [WithOnError] reports it.
type Error struct {
	// Op is what failed: "get", "put", "release" (Cache), "admit",
	// "settle", "block" (Limiter), "reserve", "settle", "read", "reset"
	// (Budget).
	Op string
	// Key is the Redis key.
	Key string
	Err error
}

// Error names the operation, the key and the cause.
func (e *Error) Error() string { return fmt.Sprintf("rediscache: %s %q: %v", e.Op, e.Key, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// store runs commands on Redis within the timeout, and leaves Redis alone
// for the cooldown after a failure.
type store struct {
	rdb      redis.UniversalClient
	cfg      config
	inline   bool         // the client bounds commands by their context
	downTill atomic.Int64 // unix nanoseconds
	errors   atomic.Int64
	bypassed atomic.Int64
}

// errBypassed: Redis is being left alone after a failure.
var errBypassed = errors.New("rediscache: Redis is left alone after a failure")

func newStore(rdb redis.UniversalClient, cfg config) store {
	return store{rdb: rdb, cfg: cfg, inline: honoursDeadlines(rdb)}
}

// honoursDeadlines reports a client that bounds its commands by their
// context's deadline (ContextTimeoutEnabled); go-redis's default client
// does not, and waits for its own ReadTimeout (3 s by default).
func honoursDeadlines(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// run calls f on Redis within the timeout. A failure other than redis.Nil
// and the caller's own cancellation is counted, reported and starts the
// cooldown; while it lasts, run returns errBypassed without calling f.
// For a client that ignores context deadlines (go-redis's default), f
// runs on a goroutine of its own, which the call stops waiting for at the
// timeout; a client with ContextTimeoutEnabled saves that goroutine and
// its hand-off (tens of microseconds a command on a busy machine).
func run[T any](ctx context.Context, s *store, op, key string, f func(context.Context) (T, error)) (T, error) {
	var zero T
	if time.Now().UnixNano() < s.downTill.Load() {
		s.bypassed.Add(1)
		return zero, errBypassed
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	var r result
	if s.inline {
		r.v, r.err = f(ctx)
	} else {
		done := make(chan result, 1)
		go func() {
			v, err := f(ctx)
			done <- result{v, err}
		}()
		select {
		case r = <-done:
		case <-ctx.Done():
			r.err = ctx.Err()
		}
	}
	if r.err == nil || errors.Is(r.err, redis.Nil) {
		return r.v, r.err
	}
	if parent.Err() != nil {
		return zero, r.err // the caller gave up: not Redis's failure
	}
	s.fail(parent, op, key, r.err)
	return zero, r.err
}

// fail counts and reports a Redis failure and starts the cooldown.
func (s *store) fail(ctx context.Context, op, key string, err error) {
	s.errors.Add(1)
	s.downTill.Store(time.Now().Add(s.cfg.cooldown).UnixNano())
	s.report(ctx, &Error{Op: op, Key: key, Err: err})
}

func (s *store) report(ctx context.Context, err error) {
	if s.cfg.onError != nil {
		s.cfg.onError(ctx, err)
	}
}

// MinSecretBytes is the shortest secret [WithSigningSecret] takes: 16
// bytes (128 bits).
const MinSecretBytes = 16

// ErrShortSecret is what [New] panics with, wrapped, when
// [WithSigningSecret] was given a secret shorter than [MinSecretBytes].
var ErrShortSecret = errors.New("rediscache: WithSigningSecret's secret is too short")

// checkSecret refuses a Cache's configuration whose signing secret is too
// short to sign with.
func (c *config) checkSecret() error {
	if !c.sign || len(c.secret) >= MinSecretBytes {
		return nil
	}
	return fmt.Errorf("%w: rediscache.New was given WithSigningSecret with a secret of %d bytes, fewer than the minimum of %d "+
		"(an empty secret is most often an environment variable that is not set)", ErrShortSecret, len(c.secret), MinSecretBytes)
}
