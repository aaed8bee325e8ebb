package rediscache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/predict"
	"github.com/sigwire/adapter/rediscache"
)

// billingServer answers every request with usage (prompt, completion),
// after delay, and counts the tokens it billed.
func billingServer(t testing.TB, prompt, completion int, delay time.Duration) (*lmtest.Server, func() int) {
	srv := lmtest.NewServer()
	t.Cleanup(srv.Close)
	var billed atomic.Int64
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		billed.Add(int64(prompt + completion))
		return lmtest.Text("[[ ## a ## ]]\nok").WithUsage(prompt, completion).Delay(delay)
	})
	return srv, func() int { return int(billed.Load()) }
}

// maxTokens is the request template of the budget tests: a bounded reply.
var maxTokens = adapter.WithRequest(openai.ChatCompletionRequest{Model: "m", MaxTokens: 100})

func newBudget(t testing.TB, rdb redis.UniversalClient, tenant string, l adapter.Limit, opts ...rediscache.BudgetOption) *rediscache.Budget {
	t.Helper()
	b, err := rediscache.NewBudget(rdb, tenant, l, opts...)
	require.NoError(t, err)
	return b
}

// tokens is a Spend of n tokens.
func tokens(n int) adapter.Spend { return adapter.Spend{Model: "m", PromptTokens: n} }

// TestBudgetAtomic: 200 goroutines of two replicas (their own client and
// Budget, one tenant) each hold 100 tokens of a budget of 10 000: exactly
// 100 holds are taken, the others refused with the account's numbers;
// settled at 50 each, the account has 5 000 spent and nothing held.
func TestBudgetAtomic(t *testing.T) {
	p := rediscache.WithPrefix(prefix(t))
	l := adapter.Limit{Tokens: 10_000}
	replicas := []*rediscache.Budget{newBudget(t, client(t), "acme", l, p, slack), newBudget(t, client(t), "acme", l, p, slack)}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		settles []func(adapter.Spend)
		refused []*adapter.BudgetError
	)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			settle, err := replicas[i%2].Reserve(t.Context(), tokens(100))
			mu.Lock()
			defer mu.Unlock()
			var be *adapter.BudgetError
			switch {
			case err == nil:
				settles = append(settles, settle)
			case errors.As(err, &be):
				refused = append(refused, be)
			default:
				t.Errorf("reserve: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Len(t, settles, 100)
	require.Len(t, refused, 100)
	for _, be := range refused {
		assert.ErrorIs(t, be, adapter.ErrBudget)
		assert.Equal(t, adapter.BudgetError{Unit: "tokens", Limit: 10_000, Spent: 0, Reserved: 10_000, Need: 100, Model: "m"}, *be)
	}
	rem, err := replicas[0].Remaining(t.Context())
	require.NoError(t, err)
	assert.Zero(t, rem)
	for _, s := range settles {
		s(tokens(50))
		s(tokens(50)) // a second settle is ignored
	}
	for _, b := range replicas {
		spent, err := b.Spent(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 5_000.0, spent)
		rem, err := b.Remaining(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 5_000.0, rem, "nothing held once every hold is settled")
	}
	st := replicas[0].Stats()
	st1 := replicas[1].Stats()
	assert.Equal(t, int64(100), st.Reserved+st1.Reserved)
	assert.Equal(t, int64(100), st.Refused+st1.Refused)
	assert.Zero(t, st.Errors+st1.Errors)
}

// TestBudgetCalls: calls of two replicas through adapter.Call share one
// account: they run until the next request could pass the limit; that
// request is not sent, its error matches ErrBudget and carries the shared
// numbers; what the LM billed never passes the limit and is what Redis
// counts as spent.
func TestBudgetCalls(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv, billed := billingServer(t, 300, 50, 0)
	p := rediscache.WithPrefix(prefix(t))
	l := adapter.Limit{Tokens: 8000}
	a, b := newBudget(t, client(t), "acme", l, p, slack), newBudget(t, client(t), "acme", l, p, slack)
	ok := 0
	var last error
	for i := range 100 {
		_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget([]*rediscache.Budget{a, b}[i%2]))
		if err != nil {
			last = err
			break
		}
		ok++
	}
	require.ErrorIs(t, last, adapter.ErrBudget)
	var be *adapter.BudgetError
	require.ErrorAs(t, last, &be)
	assert.Equal(t, float64(350*ok), be.Spent, "both replicas' spend")
	assert.Zero(t, be.Reserved)
	assert.Greater(t, be.Spent+be.Need, be.Limit)
	assert.Len(t, srv.Requests(), ok, "the refused request was not sent")
	assert.LessOrEqual(t, billed(), 8000)
	assert.Greater(t, ok, 10)
	spent, err := a.Spent(t.Context())
	require.NoError(t, err)
	assert.Equal(t, float64(billed()), spent)
}

// TestBudgetCost: a budget in cost holds and settles in millionths of the
// prices' unit, rounded up: it agrees with Result.Cost within a millionth
// a request; a model without a price is an error, not a refusal.
func TestBudgetCost(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv, _ := billingServer(t, 1000, 100, 0)
	prices := adapter.Prices{"m": {Input: 0.15, Output: 0.6}}
	b := newBudget(t, client(t), "acme", adapter.Limit{Cost: 0.01, Prices: prices}, rediscache.WithPrefix(prefix(t)), slack)
	var total float64
	for range 3 {
		res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget(b))
		require.NoError(t, err)
		cost, err := res.Cost(prices)
		require.NoError(t, err)
		total += cost
	}
	assert.InDelta(t, 3*0.00021, total, 1e-12)
	spent, err := b.Spent(t.Context())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, spent, total-1e-12)
	assert.LessOrEqual(t, spent, total+3e-6)

	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"},
		adapter.WithRequest(openai.ChatCompletionRequest{Model: "unpriced", MaxTokens: 100}), adapter.WithBudget(b))
	require.Error(t, err)
	assert.NotErrorIs(t, err, adapter.ErrBudget)
	assert.Contains(t, err.Error(), `no price for model "unpriced"`)
	assert.Len(t, srv.Requests(), 3)

	_, err = rediscache.NewBudget(client(t), "acme", adapter.Limit{Cost: 1e10, Prices: prices})
	assert.ErrorContains(t, err, "too large")
	_, err = rediscache.NewBudget(client(t), "acme", adapter.Limit{})
	assert.Error(t, err, "a limit of nothing")
}

// TestBudgetFree: a model priced at nothing holds and spends nothing of a
// budget in cost, without an error, and so does its hold that expires.
func TestBudgetFree(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv, _ := billingServer(t, 300, 50, 0)
	var log errorLog
	l := adapter.Limit{Cost: 0.001, Prices: adapter.Prices{"free": {}}}
	b := newBudget(t, client(t), "acme", l, rediscache.WithPrefix(prefix(t)), slack, rediscache.WithOnError(log.add), rediscache.WithMaxHold(50*time.Millisecond))
	for range 3 {
		_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"},
			adapter.WithRequest(openai.ChatCompletionRequest{Model: "free"}), adapter.WithBudget(b))
		require.NoError(t, err)
	}
	_, err := b.Reserve(t.Context(), adapter.Spend{Model: "free", PromptTokens: 10})
	require.NoError(t, err) // never settled
	time.Sleep(100 * time.Millisecond)
	rem, err := b.Remaining(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 0.001, rem)
	assert.Equal(t, int64(1), b.Stats().Expired)
	assert.Empty(t, log.all())
}

// TestBudgetHoldExpires: a hold never settled (its process died) lasts
// WithMaxHold; the next request then counts it as spent, at all it held, and
// its late settle changes nothing.
func TestBudgetHoldExpires(t *testing.T) {
	p := rediscache.WithPrefix(prefix(t))
	l := adapter.Limit{Tokens: 1000}
	dead := newBudget(t, client(t), "acme", l, p, slack, rediscache.WithMaxHold(300*time.Millisecond))
	live := newBudget(t, client(t), "acme", l, p, slack)
	late, err := dead.Reserve(t.Context(), tokens(600))
	require.NoError(t, err)
	_, err = live.Reserve(t.Context(), tokens(600))
	require.ErrorIs(t, err, adapter.ErrBudget, "held")
	time.Sleep(400 * time.Millisecond)
	settle, err := live.Reserve(t.Context(), tokens(300))
	require.NoError(t, err, "the dead hold is gone")
	assert.Equal(t, int64(1), live.Stats().Expired)
	settle(tokens(300))
	late(tokens(10)) // its hold was already counted
	spent, err := live.Spent(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 900.0, spent, "the dead hold at all it held, and the live request")
	rem, err := live.Remaining(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 100.0, rem)
}

// TestBudgetWindow: the account lasts its WithWindow from its first request,
// then starts afresh; without a WithWindow it lasts until Reset.
func TestBudgetWindow(t *testing.T) {
	pfx := prefix(t)
	rdb := client(t)
	l := adapter.Limit{Tokens: 1000}
	b := newBudget(t, rdb, "acme", l, rediscache.WithPrefix(pfx), slack, rediscache.WithWindow(time.Second))
	settle, err := b.Reserve(t.Context(), tokens(700))
	require.NoError(t, err)
	settle(tokens(700))
	_, err = b.Reserve(t.Context(), tokens(700))
	require.ErrorIs(t, err, adapter.ErrBudget)
	keys, err := rdb.Keys(t.Context(), pfx+"budget:*").Result()
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		ttl, err := rdb.PTTL(t.Context(), k).Result()
		require.NoError(t, err)
		assert.True(t, ttl > 0 && ttl <= time.Second, "%s lives %v", k, ttl)
	}
	time.Sleep(1100 * time.Millisecond)
	rem, err := b.Remaining(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1000.0, rem, "a new window")
	settle, err = b.Reserve(t.Context(), tokens(700))
	require.NoError(t, err)
	settle(tokens(700))

	forever := newBudget(t, rdb, "forever", l, rediscache.WithPrefix(pfx), slack)
	settle, err = forever.Reserve(t.Context(), tokens(700))
	require.NoError(t, err)
	settle(tokens(700))
	require.NoError(t, forever.Reset(t.Context()))
	rem, err = forever.Remaining(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1000.0, rem, "reset")
}

// TestBudgetTenants: tenants never share an account, and neither do
// prefixes.
func TestBudgetTenants(t *testing.T) {
	rdb := client(t)
	p := rediscache.WithPrefix(prefix(t))
	l := adapter.Limit{Tokens: 1000}
	a := newBudget(t, rdb, "acme", l, p, slack)
	settle, err := a.Reserve(t.Context(), tokens(1000))
	require.NoError(t, err)
	settle(tokens(1000))
	_, err = a.Reserve(t.Context(), tokens(1))
	require.ErrorIs(t, err, adapter.ErrBudget)
	for name, b := range map[string]*rediscache.Budget{
		"another tenant": newBudget(t, rdb, "globex", l, p, slack),
		"another prefix": newBudget(t, rdb, "acme", l, rediscache.WithPrefix(prefix(t)), slack),
	} {
		_, err := b.Reserve(t.Context(), tokens(1000))
		assert.NoError(t, err, name)
	}
}

// TestBudgetRedisDown: with Redis unreachable or slower than the
// WithTimeout, a Budget fails closed by default: the request is not sent,
// and the error says the budget could not be checked (not ErrBudget).
// With WithFailOpen it goes, counted. Both report the failure to WithOnError.
func TestBudgetRedisDown(t *testing.T) {
	sig := mustParse(t, "q -> a")
	l := adapter.Limit{Tokens: 100_000}
	paused := func(t testing.TB) *redis.Client {
		srv := privateRedis(t)
		require.NoError(t, dial(t, srv.addr).Do(t.Context(), "CLIENT", "PAUSE", "10000", "ALL").Err()) // until the server is killed
		rdb := redis.NewClient(&redis.Options{Addr: srv.addr, ReadTimeout: 30 * time.Second})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	for name, rdb := range map[string]func(testing.TB) *redis.Client{"unreachable": unreachable, "slow": paused} {
		t.Run(name, func(t *testing.T) {
			t.Run("closed", func(t *testing.T) {
				srv, _ := billingServer(t, 300, 50, 0)
				var log errorLog
				b := newBudget(t, rdb(t), "acme", l, rediscache.WithTimeout(50*time.Millisecond), rediscache.WithOnError(log.add))
				start := time.Now()
				_, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget(b))
				require.ErrorIs(t, err, rediscache.ErrBudgetUnavailable)
				assert.NotErrorIs(t, err, adapter.ErrBudget)
				var re *rediscache.Error
				require.ErrorAs(t, err, &re)
				assert.Equal(t, "reserve", re.Op)
				assert.Less(t, time.Since(start), 5*time.Second)
				assert.Empty(t, srv.Requests(), "nothing sent")
				assert.Equal(t, int64(1), b.Stats().Unchecked, "not retried")
				assert.NotErrorIs(t, err, context.DeadlineExceeded, "Redis's timeout is not the call's")
				errs := log.all()
				require.NotEmpty(t, errs)
				assert.ErrorAs(t, errs[0], &re)
				assert.Equal(t, "reserve", re.Op)
			})
			t.Run("open", func(t *testing.T) {
				srv, _ := billingServer(t, 300, 50, 0)
				var log errorLog
				b := newBudget(t, rdb(t), "acme", l, rediscache.WithTimeout(50*time.Millisecond), rediscache.WithOnError(log.add), rediscache.WithFailOpen())
				for range 3 {
					res, err := adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget(b))
					require.NoError(t, err)
					assert.Equal(t, 1, res.Requests)
				}
				st := b.Stats()
				assert.Equal(t, int64(3), st.FailedOpen)
				assert.Equal(t, int64(1), st.Errors, "one failure, then the cooldown")
				assert.Positive(t, st.Bypassed)
				require.Len(t, log.all(), 1)
			})
		})
	}
}

// TestBudgetFailOpenSettles: a request let through while Redis was
// paused is added to the account when Redis answers its settle, once,
// whether its reserve ran late in Redis (its hold goes) or not.
func TestBudgetFailOpenSettles(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		return lmtest.Text("[[ ## a ## ]]\nok").WithUsage(300, 50).Delay(1500 * time.Millisecond) // past the pause
	})
	redisSrv := privateRedis(t)
	rdb := dial(t, redisSrv.addr)
	// A timeout well inside the pause, with room for a loaded machine
	// (the race detector, CI) once Redis answers again.
	b := newBudget(t, rdb, "acme", adapter.Limit{Tokens: 10_000}, rediscache.WithFailOpen(),
		rediscache.WithTimeout(200*time.Millisecond), rediscache.WithCooldown(time.Millisecond))
	settle, err := b.Reserve(t.Context(), tokens(0)) // Redis has the scripts: the paused reserve is an EVALSHA that runs late
	require.NoError(t, err)
	settle(tokens(0))
	require.NoError(t, dial(t, redisSrv.addr).Do(t.Context(), "CLIENT", "PAUSE", "800", "ALL").Err())
	_, err = adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget(b))
	require.NoError(t, err)
	assert.Equal(t, int64(1), b.Stats().FailedOpen)
	spent, err := b.Spent(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 350.0, spent)
	rem, err := b.Remaining(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 10_000-350.0, rem, "no hold left behind")
}

// TestBudgetHoldDeadline: a hold lasts until the call's deadline plus
// 30 s when that is sooner than WithMaxHold.
func TestBudgetHoldDeadline(t *testing.T) {
	pfx := prefix(t)
	rdb := client(t)
	b := newBudget(t, rdb, "acme", adapter.Limit{Tokens: 1000}, rediscache.WithPrefix(pfx), slack)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := b.Reserve(ctx, tokens(10))
	require.NoError(t, err)
	keys, err := rdb.Keys(t.Context(), pfx+"budget:*:h").Result()
	require.NoError(t, err)
	require.Len(t, keys, 1)
	holds, err := rdb.ZRangeWithScores(t.Context(), keys[0], 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, holds, 1)
	now, err := rdb.Time(t.Context()).Result()
	require.NoError(t, err)
	left := time.UnixMilli(int64(holds[0].Score)).Sub(now)
	assert.InDelta(t, 35*time.Second, left, float64(2*time.Second), "%v", left)
}

// budgetChild is what a process of TestBudgetProcesses or
// TestBudgetBestOfNReplicas reports.
type budgetChild struct {
	Billed, Requests, OK, Refused int
	Other                         []string // errors other than ErrBudget
}

// runChildren runs n processes of this test binary as TestBudgetProcess,
// in mode, on the shared Redis under prefix p, and returns their reports.
// They start their workloads together, two seconds from now.
func runChildren(t *testing.T, n int, mode, p string) []budgetChild {
	t.Helper()
	dir := t.TempDir()
	start := time.Now().Add(2 * time.Second).UnixNano()
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBudgetProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "SIGWIRE_BUDGET_CHILD="+mode, "SIGWIRE_BUDGET_REDIS="+sharedAddr(t),
			"SIGWIRE_BUDGET_PREFIX="+p, "SIGWIRE_BUDGET_OUT="+filepath.Join(dir, strconv.Itoa(i)),
			"SIGWIRE_BUDGET_START="+strconv.FormatInt(start, 10))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	out := make([]budgetChild, n)
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "process %d:\n%s", i, outs[i].String())
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &out[i]))
		t.Logf("process %d: %+v", i, out[i])
	}
	return out
}

// The budgets of the processes: 4 processes × 40 calls (4 at a time) of
// 350 tokens each, 56 000 tokens asked of 20 000; 2 replicas' BestOfN of
// 30 attempts each, 21 000 tokens asked of 6 000.
const (
	procs, procCalls, procLimit = 4, 40, 20_000
	bestN, bestLimit            = 30, 6000
)

// TestBudgetProcesses: several processes, each with its own LM server,
// share one tenant's budget: together the servers never bill past it,
// and what they billed is what Redis counts as spent.
func TestBudgetProcesses(t *testing.T) {
	p := prefix(t)
	kids := runChildren(t, procs, "calls", p)
	billed, ok, refused := 0, 0, 0
	for _, k := range kids {
		assert.Empty(t, k.Other)
		assert.Equal(t, k.OK, k.Requests, "a refused request is not sent")
		billed += k.Billed
		ok += k.OK
		refused += k.Refused
	}
	t.Logf("%d processes × %d calls: %d answered, %d refused, %d tokens billed of %d", procs, procCalls, ok, refused, billed, procLimit)
	assert.LessOrEqual(t, billed, procLimit)
	assert.Greater(t, billed, procLimit/2, "holds are released as calls settle")
	assert.Equal(t, procs*procCalls, ok+refused)
	b := newBudget(t, client(t), "acme", adapter.Limit{Tokens: procLimit}, rediscache.WithPrefix(p), slack)
	spent, err := b.Spent(t.Context())
	require.NoError(t, err)
	assert.Equal(t, float64(billed), spent)
}

// TestBudgetBestOfNReplicas: a BestOfN that would make 30 attempts runs
// in two replicas sharing one budget; each stops when the budget refuses
// an attempt, with an error matching ErrBudget, and together their
// attempts never spend past the budget.
func TestBudgetBestOfNReplicas(t *testing.T) {
	p := prefix(t)
	kids := runChildren(t, 2, "bestofn", p)
	billed := 0
	for _, k := range kids {
		assert.Empty(t, k.Other)
		assert.Equal(t, 1, k.Refused, "the run ended with ErrBudget")
		assert.Less(t, k.Requests, bestN, "stopped by its budget")
		assert.Positive(t, k.Requests, "both replicas spent from the budget")
		billed += k.Billed
	}
	t.Logf("2 replicas × BestOfN(%d): %d and %d attempts sent, %d tokens billed of %d", bestN, kids[0].Requests, kids[1].Requests, billed, bestLimit)
	assert.LessOrEqual(t, billed, bestLimit)
	assert.Greater(t, billed, bestLimit/2)
}

// TestBudgetProcess is the process TestBudgetProcesses and
// TestBudgetBestOfNReplicas run: with SIGWIRE_BUDGET_CHILD set, it runs
// their workload and writes its report to SIGWIRE_BUDGET_OUT.
func TestBudgetProcess(t *testing.T) {
	mode := os.Getenv("SIGWIRE_BUDGET_CHILD")
	if mode == "" {
		t.Skip("run by TestBudgetProcesses and TestBudgetBestOfNReplicas")
	}
	rdb := dial(t, os.Getenv("SIGWIRE_BUDGET_REDIS"))
	p := rediscache.WithPrefix(os.Getenv("SIGWIRE_BUDGET_PREFIX"))
	srv, billed := billingServer(t, 300, 50, 20*time.Millisecond)
	sig := mustParse(t, "q -> a")
	start, err := strconv.ParseInt(os.Getenv("SIGWIRE_BUDGET_START"), 10, 64)
	require.NoError(t, err)
	time.Sleep(time.Until(time.Unix(0, start)))
	var r budgetChild
	var mu sync.Mutex
	count := func(res *adapter.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			r.OK++
		case errors.Is(err, adapter.ErrBudget):
			r.Refused++
		default:
			r.Other = append(r.Other, err.Error())
		}
	}
	switch mode {
	case "calls":
		b := newBudget(t, rdb, "acme", adapter.Limit{Tokens: procLimit}, p, slack)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range procCalls / 4 {
					count(adapter.Call(t.Context(), srv.Client(), sig, nil, adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget(b)))
				}
			})
		}
		wg.Wait()
	case "bestofn":
		b := newBudget(t, rdb, "acme", adapter.Limit{Tokens: bestLimit}, p, slack)
		zero := func(context.Context, adapter.Values, adapter.Values) (float64, error) { return 0, nil }
		// The first refusal ends the run with the budget's error and the
		// best attempt so far; threshold +Inf: no attempt ends it early.
		best, err := predict.NewBestOfN(predict.NewModule(sig), bestN, zero, math.Inf(1))
		require.NoError(t, err)
		out, res, err := best.Call(t.Context(), srv.Client(), adapter.Values{"q": "x"}, maxTokens, adapter.WithBudget(b))
		switch {
		case err == nil:
			err = fmt.Errorf("BestOfN ran all %d attempts", res.Requests)
		case res == nil || res.Requests > 0 && out == nil:
			err = fmt.Errorf("BestOfN stopped by its budget returned no best attempt: %w", err)
		}
		count(nil, err)
	default:
		t.Fatalf("SIGWIRE_BUDGET_CHILD=%q", mode)
	}
	r.Billed, r.Requests = billed(), len(srv.Requests())
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(os.Getenv("SIGWIRE_BUDGET_OUT"), b, 0o600))
}
