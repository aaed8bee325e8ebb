package rediscache_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/rediscache"
)

// percentiles reports the p50 and p99 of the iterations' durations.
func percentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	if len(d) == 0 {
		return
	}
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1000, "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds())/1000, "p99-µs")
}

// caches are the stores compared: a process's LRU, Redis on loopback
// (through go-redis's default client, and one with ContextTimeoutEnabled),
// and a disk cache.
func caches(b *testing.B) map[string]adapter.Cache {
	disk, err := adapter.OpenDiskCache(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return map[string]adapter.Cache{
		"lru":   adapter.NewLRU(10_000),
		"redis": rediscache.New(client(b), rediscache.WithPrefix(prefix(b)), slack),
		// A client that bounds commands by their context: no goroutine per command.
		"redis-ctx": rediscache.New(redis.NewClient(&redis.Options{Addr: sharedAddr(b), ContextTimeoutEnabled: true}),
			rediscache.WithPrefix(prefix(b)), slack),
		"disk": disk,
	}
}

// BenchmarkCall is a whole Call ("q -> a", one short question) answered
// by each cache, and by the LM (an lmtest server on loopback, no cache):
// what a hit costs against the round trip it saves. p50 and p99 per call.
func BenchmarkCall(b *testing.B) {
	sig := mustParse(b, "q -> a")
	srv := lmtest.NewServer()
	defer srv.Close()
	srv.Handle(func(lmtest.Request) lmtest.Reply { return lmtest.Text("[[ ## a ## ]]\nan answer of a few words") })
	in := adapter.Values{"q": "a question of a few words"}
	run := func(b *testing.B, lm adapter.LM) {
		if _, err := adapter.Call(context.Background(), lm, sig, nil, in); err != nil { // warm: the hit's entry
			b.Fatal(err)
		}
		var d []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			start := time.Now()
			if _, err := adapter.Call(context.Background(), lm, sig, nil, in); err != nil {
				b.Fatal(err)
			}
			d = append(d, time.Since(start))
		}
		percentiles(b, d)
	}
	b.Run("lm", func(b *testing.B) { run(b, srv.Client()) })
	for name, c := range caches(b) {
		b.Run(name+"-hit", func(b *testing.B) { run(b, adapter.WithMiddleware(srv.Client(), adapter.Cached(c))) })
	}
}

// BenchmarkGet is a cache hit alone (Cache.Get of a 10 000-entry cache),
// without the call around it.
func BenchmarkGet(b *testing.B) {
	e := adapter.CacheEntry{Response: openai.ChatCompletionResponse{ID: "x", Model: "m",
		Choices: []openai.ChatCompletionChoice{{FinishReason: openai.FinishReasonStop,
			Message: openai.ChatCompletionMessage{Role: "assistant", Content: "[[ ## a ## ]]\nan answer of a few words"}}},
		Usage: openai.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}}
	ctx := context.Background()
	for name, c := range caches(b) {
		b.Run(name, func(b *testing.B) {
			const n = 10_000
			for i := range n {
				c.Put(ctx, strconv.Itoa(i), e)
			}
			var d []time.Duration
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if _, ok := c.Get(ctx, strconv.Itoa(i%n)); !ok {
					b.Fatal("miss")
				}
				d = append(d, time.Since(start))
				i += 7919 // a prime: every key in turn, not in order
			}
			percentiles(b, d)
		})
	}
}
