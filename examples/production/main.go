// Command production shows the LM boundary a service needs, offline: an
// lmtest server that answers some requests with 429 and Retry-After, the
// default retries (with the HTTPDoer wrapper so Retry-After is honoured),
// a response cache, a per-call timeout, a batch with bounded concurrency,
// and what the calls cost at a price table of your own (a cache hit
// spends no tokens and costs nothing).
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

func main() {
	srv := lmtest.NewServer()
	defer srv.Close()
	var n atomic.Int64
	srv.Handle(func(r lmtest.Request) lmtest.Reply {
		if n.Add(1)%3 == 1 { // every third request is rate limited
			return lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"rate limited","type":"requests"}}`).WithHeader("Retry-After", "0")
		}
		last := r.Chat.Messages[len(r.Chat.Messages)-1].Content
		city := strings.Fields(strings.SplitN(last, "\n", 3)[1])[0]
		return lmtest.Text("[[ ## country ## ]]\n" + map[string]string{"Paris": "France", "Lima": "Peru", "Oslo": "Norway", "Quito": "Ecuador"}[city])
	})
	cfg := srv.Config()
	cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient) // honour Retry-After
	lm := adapter.WithMiddleware(openai.NewClientWithConfig(cfg), adapter.Cached(adapter.NewLRU(100)))

	sig, err := signature.Parse("city -> country")
	if err != nil {
		log.Fatal(err)
	}
	// Prices per million tokens, for the model the replies name.
	prices := adapter.Prices{"gpt-4o-mini": {Input: 0.15, CachedInput: 0.075, Output: 0.60}}
	model := adapter.WithRequest(openai.ChatCompletionRequest{Model: "gpt-4o-mini"})
	opts := []adapter.CallOption{
		model,
		adapter.WithTimeout(10 * time.Second),
		adapter.WithRetry(adapter.RetryPolicy{MaxRetries: 3, BaseDelay: 10 * time.Millisecond}),
	}
	inputs := []adapter.Values{{"city": "Paris"}, {"city": "Lima"}, {"city": "Oslo"}, {"city": "Quito"}}
	var total float64
	for _, r := range adapter.Batch(context.Background(), lm, sig, nil, inputs, 2, opts...) {
		if r.Err != nil {
			log.Fatal(r.Err)
		}
		cost, err := r.Result.Cost(prices)
		if err != nil {
			log.Fatal(err)
		}
		total += cost
		fmt.Printf("%-8s retries %d  cache hits %d  tokens %d  $%.6f\n", r.Result.Outputs[0]["country"], r.Result.Retries, r.Result.CacheHits, r.Result.Usage.TotalTokens, cost)
	}
	fmt.Printf("batch: $%.6f\n", total)
	// The same question again is served from the cache: no HTTP request,
	// no tokens.
	before := len(srv.Requests())
	res, err := adapter.Call(context.Background(), lm, sig, nil, inputs[0], opts...)
	if err != nil {
		log.Fatal(err)
	}
	cost, err := res.Cost(prices)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("again: %s from the cache (hits %d, new HTTP requests %d, tokens %d, $%.6f)\n", res.Outputs[0]["country"], res.CacheHits,
		len(srv.Requests())-before, res.Usage.TotalTokens, cost)
}
