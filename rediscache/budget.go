package rediscache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigwire/adapter"
)

// Budget is an adapter.Budget whose account is in Redis: every process
// that uses the same Redis, [WithPrefix] and tenant spends from one account.
// Give it to a call or a module run with adapter.WithBudget.
//
// Before each request, one script checks that what was spent, what the
// requests in flight hold and what this one can cost at most
// (adapter.MaxSpend, in the limit's unit by adapter.Limit.Amount) stay
// within the limit, and holds it; after the reply another moves the hold
// to what was spent, at what the reply's usage comes to. A request the
// budget cannot hold is not sent: its error is an *adapter.BudgetError
// (matching adapter.ErrBudget) with the account's numbers. Both scripts
// are atomic in Redis, so replicas racing for the last of a budget never
// pass it together.
//
// A hold that is never settled (its process died, Redis was unreachable
// when the reply came) lives at most [WithMaxHold] (or until the call's
// deadline, plus a grace): then the next request to the account counts
// it as spent, at all it held, since the request may have been billed.
// The account lasts its [WithWindow] from its first request (by default until
// [Budget.Reset]); then it starts afresh.
//
// Every process of a tenant must be given the same Limit: each checks the
// account against its own. Amounts are kept as integers: tokens, or
// millionths of the prices' unit for a limit in cost, each request's
// rounded up (so a budget in cost may count up to a millionth more per
// request than adapter.Result.Cost says). A limit must be below 2^53 of
// these units (9·10^15 tokens, 9·10^9 in cost).
//
// When Redis fails or is slower than [WithTimeout], a Budget fails closed:
// the request is not sent (nor retried) and its error is an *[Error] with
// Op "reserve" matching [ErrBudgetUnavailable], not adapter.ErrBudget,
// and naming the Redis failure (which it does not wrap). With
// [WithFailOpen] the request goes, unchecked, and its spend is added to the
// account after the reply if Redis answers then. Either way the failure
// is counted (BudgetStats) and reported to [WithOnError]. A reserve that
// timed out may still run in Redis later: with WithFailOpen the request's
// settle drops its hold; failing closed, the hold is counted as spent
// once past WithMaxHold (the budget errs toward spending less, never more).
// A Budget is safe for concurrent use.
type Budget struct {
	s      store
	tenant string
	limit  adapter.Limit
	max    int64   // the limit in units
	scale  float64 // units per unit of the limit: 1 for tokens, 1e6 for cost
	keys   []string
	cfg    budgetConfig

	reserved, refused, failedOpen, unchecked, expired atomic.Int64
}

// BudgetStats counts what a [Budget] did since [NewBudget], in this
// process.
type BudgetStats struct {
	// Reserved counts the requests the budget held, Refused those it
	// could not hold (not sent).
	Reserved, Refused int64
	// FailedOpen counts the requests let through unchecked ([WithFailOpen]),
	// Unchecked those refused because Redis could not tell (fail closed).
	FailedOpen, Unchecked int64
	// Expired counts the holds past their WithMaxHold that this process's
	// requests found and counted as spent.
	Expired int64
	// Errors and Bypassed are as in [Stats].
	Errors, Bypassed int64
}

// ErrBudgetUnavailable matches the error of a request a [Budget] that
// fails closed did not send because Redis failed or was slower than the
// WithTimeout: the budget could not be checked. It does not match
// adapter.ErrBudget.
var ErrBudgetUnavailable = errors.New("rediscache: the budget could not be checked")

// BudgetOption configures a [Budget] ([NewBudget]): a budget's own
// option ([WithWindow], [WithMaxHold], [WithFailOpen]), or a
// [SharedOption] ([WithPrefix], [WithTimeout], [WithCooldown],
// [WithOnError]).
type BudgetOption interface{ applyToBudget(*budgetConfig) }

type budgetConfig struct {
	shared   []sharedOption
	window   time.Duration
	maxHold  time.Duration
	failOpen bool
}

type budgetOption func(*budgetConfig)

func (f budgetOption) applyToBudget(c *budgetConfig) { f(c) }

// WithWindow is how long an account lasts from its first request: a daily
// budget is WithWindow(24*time.Hour), starting at the first request of the
// day, not at midnight. Then the account (what was spent and held) is
// dropped and the next request starts a new one; a request in flight at
// that moment is not counted in the new one. 0, the default, keeps the
// account until [Budget.Reset].
func WithWindow(d time.Duration) BudgetOption {
	return budgetOption(func(c *budgetConfig) { c.window = max(d, 0) })
}

// WithMaxHold is the longest a request's hold lasts unsettled (10 minutes by
// default; d ≤ 0 keeps the default), and at most the call's deadline
// plus 30 seconds: past it, the hold counts as spent, at all it held.
// Set it above the slowest reply a request may take.
func WithMaxHold(d time.Duration) BudgetOption {
	return budgetOption(func(c *budgetConfig) {
		if d > 0 {
			c.maxHold = d
		}
	})
}

// holdGrace is what a hold outlives its call's deadline by: the time to
// settle it.
const holdGrace = 30 * time.Second

// WithFailOpen lets requests through, unchecked, when Redis fails or is
// slower than the WithTimeout (a Budget fails closed by default). Each is
// counted (BudgetStats.FailedOpen) and added to the account after its
// reply if Redis answers then (it is not asked during the [WithCooldown]);
// while Redis is down, the replicas may together spend past the limit.
func WithFailOpen() BudgetOption { return budgetOption(func(c *budgetConfig) { c.failOpen = true }) }

// maxUnits is the largest amount the scripts keep exactly (Lua numbers
// are doubles).
const maxUnits = 1 << 53

// maxSweep bounds the expired holds one script counts as spent.
const maxSweep = 100

// NewBudget returns the Budget of tenant on rdb, of limit l (in tokens,
// or in cost at its Prices, as adapter.Limit says). It is an error when l
// counts nothing, is negative, counts cost without prices, or is too
// large to keep (see [Budget]). The options: [WithWindow], [WithMaxHold],
// [WithFailOpen], and the [SharedOption]s [WithPrefix], [WithTimeout],
// [WithCooldown], [WithOnError].
func NewBudget(rdb redis.UniversalClient, tenant string, l adapter.Limit, opts ...BudgetOption) (*Budget, error) {
	if _, err := adapter.NewBudget(l); err != nil { // the root's check of a limit
		return nil, err
	}
	cfg := budgetConfig{maxHold: 10 * time.Minute}
	for _, o := range opts {
		if o != nil {
			o.applyToBudget(&cfg)
		}
	}
	b := &Budget{s: newStore(rdb, newConfig(cfg.shared, func(o sharedOption, c *config) { o(c) })), tenant: tenant, limit: l, scale: 1, cfg: cfg}
	if l.Unit() == "cost" {
		b.scale = 1e6
	}
	m := math.Floor(l.Max()*b.scale + 1e-6)
	if m >= maxUnits {
		return nil, fmt.Errorf("rediscache: budget limit %v %s: too large to keep (at most %d units)", l.Max(), l.Unit(), int64(maxUnits-1))
	}
	b.max = int64(m)
	sum := sha256.Sum256([]byte(tenant))
	base := b.s.cfg.prefix + "budget:" + formatVersion + ":{" + hex.EncodeToString(sum[:12]) + "}:"
	b.keys = []string{base + "a", base + "h"} // the account, the holds' deadlines
	return b, nil
}

// units is x in the account's integer units, rounded up (a float product
// just above an integer is that integer), at most maxUnits.
func (b *Budget) units(x float64) int64 {
	u := math.Ceil(x*b.scale - 1e-6)
	if !(u < maxUnits) { // NaN too
		return maxUnits
	}
	return max(int64(u), 0)
}

func (b *Budget) amount(units int64) float64 { return float64(units) / b.scale }

// The scripts keep the account in a hash (spent, held, and r:<id> the
// units each hold holds) and the holds' deadlines in a sorted set, in
// milliseconds of Redis's clock (TIME), so that every process agrees
// whatever its own clock says. Integers go to Redis as %.0f: Lua writes
// a large number as 1e+15 otherwise.
var sweepLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ` + strconv.Itoa(maxSweep) + `)
for _, id in ipairs(gone) do
  local amt = redis.call('HGET', KEYS[1], 'r:' .. id)
  if amt then
    redis.call('HDEL', KEYS[1], 'r:' .. id)
    if amt ~= '0' then -- Redis takes no "-0"
      redis.call('HINCRBY', KEYS[1], 'held', '-' .. amt)
      redis.call('HINCRBY', KEYS[1], 'spent', amt)
    end
  end
  redis.call('ZREM', KEYS[2], id)
end
local spent = tonumber(redis.call('HGET', KEYS[1], 'spent') or '0')
local held = tonumber(redis.call('HGET', KEYS[1], 'held') or '0')
`

// window gives the account its WithWindow if it has none yet (a new
// account), and the holds the account's expiry.
const windowLua = `
local function window(ms)
  if ms <= 0 then return end
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl == -1 then redis.call('PEXPIRE', KEYS[1], ms) ttl = ms end
  if ttl > 0 and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ttl) end
end
`

var (
	// budgetReserveScript holds ARGV[2] units for hold ARGV[3] until ARGV[4]
	// ms from now if the account, under the limit ARGV[1], can; ARGV[5]
	// is the WithWindow in ms. It returns {1 held or 0 refused, spent, held
	// (before this hold), holds swept}.
	budgetReserveScript = redis.NewScript(windowLua + sweepLua + `
local limit, need, id, life = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
if spent + held + need > limit then return {0, spent, held, #gone} end
redis.call('HINCRBY', KEYS[1], 'held', ARGV[2])
redis.call('HSET', KEYS[1], 'r:' .. id, ARGV[2])
redis.call('ZADD', KEYS[2], string.format('%.0f', now + life), id)
window(tonumber(ARGV[5]))
return {1, spent, held, #gone}
`)
	// budgetSettleScript moves hold ARGV[1] to spent, at ARGV[2] units;
	// ARGV[3] is the WithWindow in ms. A hold that is gone (counted as spent
	// past its WithMaxHold, or dropped with its account) is left alone, unless
	// ARGV[4] is '1': the request went unchecked (WithFailOpen), and its spend
	// is added (its hold may also be there, a reserve that timed out but
	// ran: it goes).
	budgetSettleScript = redis.NewScript(windowLua + `
local amt = redis.call('HGET', KEYS[1], 'r:' .. ARGV[1])
if amt then
  redis.call('HDEL', KEYS[1], 'r:' .. ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  if amt ~= '0' then redis.call('HINCRBY', KEYS[1], 'held', '-' .. amt) end
elseif ARGV[4] ~= '1' then
  return 0
end
redis.call('HINCRBY', KEYS[1], 'spent', ARGV[2])
window(tonumber(ARGV[3]))
return 1
`)
	// budgetStateScript returns {spent, held, holds swept}.
	budgetStateScript = redis.NewScript(sweepLua + `
return {spent, held, #gone}
`)
)

// Reserve implements adapter.Budget: it holds what a request can spend at
// most, or refuses it with an *adapter.BudgetError. When Redis fails it
// returns an error matching [ErrBudgetUnavailable], or with [WithFailOpen]
// lets the request through unchecked.
func (b *Budget) Reserve(ctx context.Context, most adapter.Spend) (func(adapter.Spend), error) {
	need, err := b.limit.Amount(most)
	if err != nil {
		return nil, err
	}
	n := b.units(need)
	id := newToken()
	r, err := run(ctx, &b.s, "reserve", b.keys[0], func(ctx context.Context) ([]int64, error) {
		return budgetReserveScript.Run(ctx, b.s.rdb, b.keys, b.max, n, id, b.hold(ctx).Milliseconds(), b.cfg.window.Milliseconds()).Int64Slice()
	})
	if err == nil && len(r) != 4 {
		err = fmt.Errorf("the reserve script answered %v", r)
		b.s.fail(ctx, "reserve", b.keys[0], err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !b.cfg.failOpen {
			b.unchecked.Add(1)
			// The cause as text: a Redis timeout is not the call's
			// deadline, nor a refused dial the LM's transport (retried).
			return nil, &Error{Op: "reserve", Key: b.keys[0], Err: fmt.Errorf("%w: %v", ErrBudgetUnavailable, err)}
		}
		b.failedOpen.Add(1)
		return b.settler(ctx, id, need, true), nil
	}
	b.expired.Add(r[3])
	if r[0] != 1 {
		b.refused.Add(1)
		return nil, &adapter.BudgetError{Unit: b.limit.Unit(), Limit: b.limit.Max(), Spent: b.amount(r[1]), Reserved: b.amount(r[2]), Need: need, Model: most.Model}
	}
	b.reserved.Add(1)
	return b.settler(ctx, id, need, false), nil
}

// hold is how long a hold made in ctx lasts unsettled.
func (b *Budget) hold(ctx context.Context) time.Duration {
	d := b.cfg.maxHold
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl)+holdGrace)
	}
	return max(d, time.Millisecond)
}

// settler returns the settle of hold id, which held need (or, unchecked,
// was let through without it): called once, with what the request spent
// (what it held, when its model has no price: as adapter.LocalBudget
// does).
func (b *Budget) settler(ctx context.Context, id string, need float64, unchecked bool) func(adapter.Spend) {
	ctx = context.WithoutCancel(ctx) // the account is kept even when the caller has gone
	var once sync.Once
	return func(spent adapter.Spend) {
		once.Do(func() {
			got, err := b.limit.Amount(spent)
			if err != nil {
				got = need
			}
			_, _ = run(ctx, &b.s, "settle", b.keys[0], func(ctx context.Context) (any, error) {
				return budgetSettleScript.Run(ctx, b.s.rdb, b.keys, id, b.units(got), b.cfg.window.Milliseconds(), unchecked).Result()
			})
		})
	}
}

// state reads the account, counting the holds past their WithMaxHold as
// spent first.
func (b *Budget) state(ctx context.Context) (spent, held int64, err error) {
	r, err := run(ctx, &b.s, "read", b.keys[0], func(ctx context.Context) ([]int64, error) {
		return budgetStateScript.Run(ctx, b.s.rdb, b.keys).Int64Slice()
	})
	if err != nil {
		return 0, 0, &Error{Op: "read", Key: b.keys[0], Err: err}
	}
	if len(r) != 3 {
		return 0, 0, &Error{Op: "read", Key: b.keys[0], Err: fmt.Errorf("the read script answered %v", r)}
	}
	b.expired.Add(r[2])
	return r[0], r[1], nil
}

// Spent returns what the tenant's requests settled so far spent, in the
// limit's unit, holds past their WithMaxHold included.
func (b *Budget) Spent(ctx context.Context) (float64, error) {
	spent, _, err := b.state(ctx)
	return b.amount(spent), err
}

// Remaining returns what is left of the tenant's budget: the limit less
// what was spent and what requests in flight hold.
func (b *Budget) Remaining(ctx context.Context) (float64, error) {
	spent, held, err := b.state(ctx)
	if err != nil {
		return 0, err
	}
	return b.amount(max(b.max-spent-held, 0)), nil
}

// Reset drops the tenant's account: the next request starts a new one.
// The requests in flight are not counted in it.
func (b *Budget) Reset(ctx context.Context) error {
	_, err := run(ctx, &b.s, "reset", b.keys[0], func(ctx context.Context) (int64, error) {
		return b.s.rdb.Del(ctx, b.keys...).Result()
	})
	if err != nil {
		return &Error{Op: "reset", Key: b.keys[0], Err: err}
	}
	return nil
}

// Tenant returns the tenant the budget is of.
func (b *Budget) Tenant() string { return b.tenant }

// Limit returns the budget's limit.
func (b *Budget) Limit() adapter.Limit { return b.limit }

// Stats returns the budget's counters.
func (b *Budget) Stats() BudgetStats {
	return BudgetStats{
		Reserved: b.reserved.Load(), Refused: b.refused.Load(),
		FailedOpen: b.failedOpen.Load(), Unchecked: b.unchecked.Load(), Expired: b.expired.Load(),
		Errors: b.s.errors.Load(), Bypassed: b.s.bypassed.Load(),
	}
}
