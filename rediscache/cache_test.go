package rediscache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
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
	"github.com/sigwire/adapter/rediscache"
	"github.com/sigwire/adapter/signature"
)

func mustParse(t testing.TB, spec string) *signature.Signature {
	t.Helper()
	sig, err := signature.Parse(spec)
	require.NoError(t, err)
	return sig
}

// echoServer answers every question q with "answer to q", so that any
// reply can be checked against the question asked.
func echoServer(t testing.TB) *lmtest.Server {
	srv := lmtest.NewServer()
	t.Cleanup(srv.Close)
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		msgs := r.Chat.Messages
		q := msgs[len(msgs)-1].Content
		q = q[strings.Index(q, "[[ ## q ## ]]\n")+len("[[ ## q ## ]]\n"):]
		q = q[:strings.IndexByte(q, '\n')]
		return lmtest.Text("[[ ## a ## ]]\nanswer to " + q)
	})
	return srv
}

// errorLog collects what WithOnError reports.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) add(_ context.Context, err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.mu.Unlock()
}

func (l *errorLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// TestSharedAcrossReplicas: a reply one replica (its own client and
// Cache) paid for is served to another from Redis, through Call and
// Stream, with no LM call and no usage.
func TestSharedAcrossReplicas(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	p := prefix(t)
	replica := func() adapter.LM {
		return adapter.WithMiddleware(srv.Client(), adapter.Cached(rediscache.New(client(t), rediscache.WithPrefix(p), slack)))
	}
	one, two := replica(), replica()
	res, err := adapter.Call(t.Context(), one, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Zero(t, res.CacheHits)

	res, err = adapter.Call(t.Context(), two, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, 1, res.CacheHits)
	assert.Equal(t, "answer to x", res.Outputs[0]["a"])
	assert.Zero(t, res.Usage.TotalTokens)

	var final *adapter.Result
	for ch, err := range adapter.Stream(t.Context(), two.(adapter.StreamingLM), sig, nil, adapter.Values{"q": "x"}) {
		require.NoError(t, err)
		if ch.Result != nil {
			final = ch.Result
		}
	}
	require.NotNil(t, final)
	assert.Equal(t, 1, final.CacheHits)
	assert.Equal(t, "answer to x", final.Outputs[0]["a"])
	assert.Len(t, srv.Requests(), 1)
}

// TestNeverCrossesLMs: two tenants (their own endpoint and key) sharing one
// Redis and prefix never get each other's replies.
func TestNeverCrossesLMs(t *testing.T) {
	sig := mustParse(t, "q -> a")
	a := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\ntenant A's answer"))
	defer a.Close()
	b := lmtest.NewServer(lmtest.Text("[[ ## a ## ]]\ntenant B's answer"))
	defer b.Close()
	p := prefix(t)
	lm := func(srv *lmtest.Server, key string) adapter.LM {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = srv.URL()
		return adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(rediscache.New(client(t), rediscache.WithPrefix(p), slack)))
	}
	ra, err := adapter.Call(t.Context(), lm(a, "sk-A"), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	rb, err := adapter.Call(t.Context(), lm(b, "sk-B"), sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	assert.Equal(t, "tenant A's answer", ra.Outputs[0]["a"])
	assert.Equal(t, "tenant B's answer", rb.Outputs[0]["a"])
	assert.Zero(t, rb.CacheHits)
}

// cacheKeys lists the cache's keys under p.
func cacheKeys(t *testing.T, rdb redis.UniversalClient, p string) []string {
	keys, err := rdb.Keys(t.Context(), p+"*").Result()
	require.NoError(t, err)
	return keys
}

// TestEntriesExpire: an entry is stored with the TTL, and once it has
// passed the call goes to the LM again.
func TestEntriesExpire(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	rdb := client(t)
	p := prefix(t)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(rediscache.New(rdb, rediscache.WithPrefix(p), slack)))
	_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
	require.NoError(t, err)
	keys := cacheKeys(t, rdb, p)
	require.Len(t, keys, 1)
	assert.True(t, strings.HasPrefix(keys[0], p+"cache:v1:"), "the key names the format version: %s", keys[0])
	ttl, err := rdb.PTTL(t.Context(), keys[0]).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 23*time.Hour, "24 hours by default")
	assert.LessOrEqual(t, ttl, 24*time.Hour)

	short := adapter.WithMiddleware(srv.Client(), adapter.Cached(rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithTTL(time.Millisecond))))
	_, err = adapter.Call(t.Context(), short, sig, nil, adapter.Values{"q": "y"})
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond) // past the TTL: Redis no longer has the entry
	res, err := adapter.Call(t.Context(), short, sig, nil, adapter.Values{"q": "y"})
	require.NoError(t, err)
	assert.Zero(t, res.CacheHits)
	assert.Equal(t, "answer to y", res.Outputs[0]["a"])
	assert.Len(t, srv.Requests(), 3)
}

// TestCorruptEntryIgnored: a value of another format version, stored
// under another key, cut short, or not a reply is a miss, counted and
// reported; the call goes to the LM, whose reply replaces the value.
func TestCorruptEntryIgnored(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	rdb := client(t)
	p := prefix(t)
	var log errorLog
	cache := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithOnError(log.add))
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
	ask := func(q string) *adapter.Result {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": q})
		require.NoError(t, err)
		assert.Equal(t, "answer to "+q, res.Outputs[0]["a"])
		return res
	}
	ask("x")
	ask("y")
	keys := cacheKeys(t, rdb, p)
	require.Len(t, keys, 2)
	good, err := rdb.Get(t.Context(), keys[0]).Bytes()
	require.NoError(t, err)
	other, err := rdb.Get(t.Context(), keys[1]).Bytes()
	require.NoError(t, err)
	js := good[strings.IndexByte(string(good), '{'):]
	head := good[:len(good)-len(js)]

	for name, value := range map[string][]byte{
		"another key's entry": other,
		"old version":         []byte(strings.Replace(string(good), "sigwire-cache v1", "sigwire-cache v0", 1)),
		"cut":                 good[:len(good)-5],
		"garbage":             []byte("\x00\xff"),
		"not a reply":         append(append([]byte{}, head...), `{"response":{"choices":[]}}`...),
		"bad json":            append(append([]byte{}, head...), `{"response": 1}`...),
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, rdb.Set(t.Context(), keys[0], value, time.Minute).Err())
			before, calls := cache.Stats(), len(srv.Requests())
			q := "x"
			if strings.Contains(string(good), "answer to y") {
				q = "y"
			}
			res := ask(q)
			assert.Zero(t, res.CacheHits)
			assert.Len(t, srv.Requests(), calls+1, "the call went to the LM")
			assert.Equal(t, before.Corrupt+1, cache.Stats().Corrupt)
			errs := log.all()
			require.NotEmpty(t, errs)
			assert.ErrorIs(t, errs[len(errs)-1], adapter.ErrCorruptCacheEntry)
			res = ask(q)
			assert.Equal(t, 1, res.CacheHits, "the LM's reply replaced the value")
		})
	}
}

// TestCorruptKeyLength: an unsigned value whose header names a key length
// of 2^63-1 (security review 4, P1) is a miss like any corrupt entry, with
// or without a WithLease (whose lookup decodes the value too): the call does
// not panic, goes to the LM and is answered; the entry is counted Corrupt,
// reported, and is the call's one CacheError.
func TestCorruptKeyLength(t *testing.T) {
	for name, opts := range map[string][]rediscache.Option{
		"lookup": nil,
		"lease":  {rediscache.WithLease(30 * time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			sig := mustParse(t, "q -> a")
			srv := echoServer(t)
			rdb := client(t)
			p := prefix(t)
			var log errorLog
			cache := rediscache.New(rdb, append([]rediscache.Option{rediscache.WithPrefix(p), slack, rediscache.WithOnError(log.add)}, opts...)...)
			lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
			_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
			require.NoError(t, err)
			keys := cacheKeys(t, rdb, p+"cache:")
			require.Len(t, keys, 1, "the entry stored")
			require.NoError(t, rdb.Set(t.Context(), keys[0], "sigwire-cache v1 9223372036854775807\nx", time.Minute).Err())

			var res *adapter.Result
			require.NotPanics(t, func() {
				res, err = adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
			})
			require.NoError(t, err)
			assert.Equal(t, "answer to x", res.Outputs[0]["a"])
			assert.Zero(t, res.CacheHits)
			assert.Equal(t, 1, res.CacheErrors, "the corrupt entry, counted in the call")
			assert.Len(t, srv.Requests(), 2, "the second call went to the LM")
			st := cache.Stats()
			assert.Equal(t, int64(1), st.Corrupt)
			assert.Zero(t, st.Hits)
			errs := log.all()
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0], adapter.ErrCorruptCacheEntry)
			var re *rediscache.Error
			require.ErrorAs(t, errs[0], &re)
			assert.Equal(t, "get", re.Op)
		})
	}
}

// TestOversizeNotStored: a reply past WithMaxEntryBytes is served but not
// stored, and counted.
func TestOversizeNotStored(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply {
		return lmtest.Text("[[ ## a ## ]]\n" + strings.Repeat("long ", 500))
	})
	rdb := client(t)
	p := prefix(t)
	cache := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithMaxEntryBytes(1000))
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
	for range 2 {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		assert.Zero(t, res.CacheHits)
	}
	assert.Empty(t, cacheKeys(t, rdb, p))
	assert.Equal(t, int64(2), cache.Stats().Oversize)
}

// TestRedisKilledMidRun: Redis dies in the middle of a run of calls; every
// call still gets the right reply, from the LM, and the failures are
// counted and reported. Once Redis is back, the cache serves again.
func TestRedisKilledMidRun(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	redisSrv := privateRedis(t)
	var log errorLog
	cache := rediscache.New(dial(t, redisSrv.addr), slack,
		rediscache.WithCooldown(20*time.Millisecond), rediscache.WithOnError(log.add))
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
	var traced atomic.Int64
	trace := adapter.UseTrace(&adapter.Trace{CacheError: func(i adapter.CacheErrorInfo) {
		var re *rediscache.Error
		if assert.ErrorAs(t, i.Err, &re) && assert.NotZero(t, i.CallID) {
			traced.Add(1)
		}
	}})
	const n = 200
	wrong, hits, cacheErrors := 0, 0, 0
	for i := range n {
		if i == n/2 {
			redisSrv.stop()
		}
		q := fmt.Sprint(i % 50) // the second 50 are hits while Redis lives
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": q}, trace)
		require.NoError(t, err, "call %d", i)
		if res.Outputs[0]["a"] != "answer to "+q {
			wrong++
		}
		hits += res.CacheHits
		cacheErrors += res.CacheErrors
		if i < n/2 {
			assert.Zero(t, res.CacheErrors, "call %d: Redis lives", i)
		} else {
			assert.Equal(t, 2, res.CacheErrors, "call %d: its lookup and its store failed (or were skipped in the cooldown), counted in the call", i)
		}
	}
	assert.Equal(t, int64(cacheErrors), traced.Load(), "each counted failure was traced")
	st := cache.Stats()
	t.Logf("%d calls, Redis killed before call %d: %d wrong replies, %d cache hits, %d LM calls; stats %+v",
		n, n/2, wrong, hits, len(srv.Requests()), st)
	assert.Zero(t, wrong)
	assert.Equal(t, 50, hits, "hits while Redis lived, none after")
	assert.Equal(t, n-50, len(srv.Requests()))
	assert.Positive(t, st.Errors)
	errs := log.all()
	require.NotEmpty(t, errs)
	var re *rediscache.Error
	require.ErrorAs(t, errs[0], &re)
	assert.Equal(t, "get", re.Op)

	require.NoError(t, redisSrv.start()) // back, empty
	for i := 0; ; i++ {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "again"})
		require.NoError(t, err)
		if res.CacheHits == 1 {
			break
		}
		require.Less(t, i, 100, "the cache never served again after Redis came back")
		time.Sleep(20 * time.Millisecond) // the cooldown
	}
}

// TestRedisSlow: a Redis that does not answer in time (paused) costs a
// call the timeout, not Redis's delay: the call goes to the LM, the
// timeout is counted and reported, and Redis is left alone for the
// cooldown.
func TestRedisSlow(t *testing.T) {
	for name, honours := range map[string]bool{"client ignores deadlines": false, "ContextTimeoutEnabled": true} {
		t.Run(name, func(t *testing.T) {
			sig := mustParse(t, "q -> a")
			srv := echoServer(t)
			redisSrv := privateRedis(t)
			// A client that would wait 30 s for a reply: the cache's
			// WithTimeout must bound it, whether the client honours context
			// deadlines or not (go-redis's default).
			rdb := redis.NewClient(&redis.Options{Addr: redisSrv.addr, ReadTimeout: 30 * time.Second, ContextTimeoutEnabled: honours})
			defer rdb.Close()
			var log errorLog
			cache := rediscache.New(rdb, rediscache.WithTimeout(50*time.Millisecond), rediscache.WithCooldown(time.Hour), rediscache.WithOnError(log.add))
			lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(cache))
			admin := dial(t, redisSrv.addr)
			require.NoError(t, admin.Do(t.Context(), "CLIENT", "PAUSE", "10000", "ALL").Err()) // until the server is killed
			for _, q := range []string{"x", "y", "z"} {
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // far less than the pause and the client's timeout
				res, err := adapter.Call(ctx, lm, sig, nil, adapter.Values{"q": q})
				cancel()
				require.NoError(t, err)
				assert.Equal(t, "answer to "+q, res.Outputs[0]["a"])
				assert.Zero(t, res.CacheHits)
				assert.Equal(t, 2, res.CacheErrors, "%s: the lookup timed out or was skipped, and so was the store", q)
			}
			st := cache.Stats()
			assert.Equal(t, int64(1), st.Errors, "one timeout, then the cooldown")
			assert.Equal(t, int64(5), st.Bypassed, "x's store, y's and z's lookups and stores")
			assert.Len(t, srv.Requests(), 3)
			errs := log.all()
			require.Len(t, errs, 1)
			assert.True(t, errors.Is(errs[0], context.DeadlineExceeded), "%v", errs[0])
		})
	}
}

// TestSignedEntries: with WithSigningSecret, replicas sharing the secret share entries;
// a value forged by someone who can write to Redis but lacks the secret
// (a well-formed entry for the key, unsigned or with a copied signature)
// is ignored, and so are entries signed with another secret.
func TestSignedEntries(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	rdb := client(t)
	p := prefix(t)
	var log errorLog
	signed := func(secret string) (adapter.LM, *rediscache.Cache) {
		c := rediscache.New(rdb, rediscache.WithPrefix(p), slack, rediscache.WithSigningSecret([]byte(secret)), rediscache.WithOnError(log.add))
		return adapter.WithMiddleware(srv.Client(), adapter.Cached(c)), c
	}
	one, _ := signed("s3cret, sixteen bytes or more")
	two, cache := signed("s3cret, sixteen bytes or more")
	ask := func(lm adapter.LM) *adapter.Result {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		assert.Equal(t, "answer to x", res.Outputs[0]["a"])
		return res
	}
	ask(one)
	assert.Equal(t, 1, ask(two).CacheHits)

	keys := cacheKeys(t, rdb, p)
	require.Len(t, keys, 1)
	good, err := rdb.Get(t.Context(), keys[0]).Bytes()
	require.NoError(t, err)
	body, mac := good[:len(good)-32], good[len(good)-32:]
	forged := []byte(strings.Replace(string(body), "answer to x", "forged!!!!!", 1))

	for name, value := range map[string][]byte{
		"unsigned":         forged,
		"copied signature": append(append([]byte{}, forged...), mac...),
		"garbage":          []byte("x"),
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, rdb.Set(t.Context(), keys[0], value, time.Minute).Err())
			before := cache.Stats().Corrupt
			assert.Zero(t, ask(two).CacheHits)
			assert.Equal(t, before+1, cache.Stats().Corrupt)
			assert.ErrorIs(t, log.all()[len(log.all())-1], adapter.ErrCorruptCacheEntry)
		})
	}
	other, _ := signed("another secret, as long")
	assert.Zero(t, ask(other).CacheHits, "entries signed with another secret are not served")
}

// TestTwoTiers: an LRU in front of the Redis cache answers hot prompts in
// the process and fills itself from Redis hits, so that a replica asks
// Redis once per prompt.
func TestTwoTiers(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	p := prefix(t)
	other := adapter.WithMiddleware(srv.Client(), adapter.Cached(rediscache.New(client(t), rediscache.WithPrefix(p), slack)))
	_, err := adapter.Call(t.Context(), other, sig, nil, adapter.Values{"q": "x"}) // another replica paid for it
	require.NoError(t, err)

	shared := rediscache.New(client(t), rediscache.WithPrefix(p), slack)
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(100)), adapter.Cached(shared))
	for range 3 {
		res, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"})
		require.NoError(t, err)
		assert.Equal(t, "answer to x", res.Outputs[0]["a"])
		assert.Equal(t, 1, res.CacheHits)
	}
	assert.Equal(t, int64(1), shared.Stats().Hits, "Redis asked once, the LRU after")
	assert.Len(t, srv.Requests(), 1)
}

// TestCustomTransportReplicas: replicas whose go-openai clients have an
// HTTP transport of their own are identified per process, so each pays
// for every prompt; the Cache says so (Stats.Local, and one Warn line
// on its WithLogger however many such entries it stores). One call,
// adapter.WithIdentity, makes them share again, without mixing tenants
// (newcomer review 4, item 1: 10 entries in Redis that no other process
// would read, and no signal).
func TestCustomTransportReplicas(t *testing.T) {
	sig := mustParse(t, "q -> a")
	srv := echoServer(t)
	custom := func(key string) *openai.Client {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = srv.URL()
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
		return openai.NewClientWithConfig(cfg)
	}
	p := prefix(t)
	type replica struct {
		lm    adapter.LM
		cache *rediscache.Cache
		logs  *bytes.Buffer
	}
	newReplica := func(declare func(adapter.LM) adapter.LM, key string) replica {
		logs := new(bytes.Buffer)
		c := rediscache.New(client(t), rediscache.WithPrefix(p), slack, rediscache.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
		return replica{adapter.WithMiddleware(declare(custom(key)), adapter.Cached(c)), c, logs}
	}
	ask := func(r replica, qs ...string) {
		for _, q := range qs {
			res, err := adapter.Call(t.Context(), r.lm, sig, nil, adapter.Values{"q": q})
			require.NoError(t, err)
			assert.Equal(t, "answer to "+q, res.Outputs[0]["a"])
		}
	}
	asIs := func(lm adapter.LM) adapter.LM { return lm }
	one, two := newReplica(asIs, "sk-A"), newReplica(asIs, "sk-A")
	ask(one, "x", "y", "z")
	ask(two, "x", "y", "z")
	assert.Len(t, srv.Requests(), 6, "per-process identities: each replica paid for every prompt")
	for _, r := range []replica{one, two} {
		assert.Equal(t, int64(3), r.cache.Stats().Local)
		assert.Equal(t, 1, strings.Count(r.logs.String(), "level=WARN"), "one line, however many entries")
		assert.Contains(t, r.logs.String(), "adapter.WithIdentity")
	}

	declared := func(lm adapter.LM) adapter.LM { return adapter.WithIdentity(lm, "prod") }
	three, four := newReplica(declared, "sk-A"), newReplica(declared, "sk-A")
	ask(three, "x", "y", "z")
	ask(four, "x", "y", "z")
	assert.Len(t, srv.Requests(), 9, "declared: the second replica's prompts were the first's")
	assert.Zero(t, three.cache.Stats().Local)
	assert.Equal(t, int64(3), four.cache.Stats().Hits)
	assert.Empty(t, three.logs.String())

	other := newReplica(declared, "sk-B") // another tenant, the same declared identity
	ask(other, "x")
	assert.Len(t, srv.Requests(), 10, "another API key under the same id is another identity")
}
