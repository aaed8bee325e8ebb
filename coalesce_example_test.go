package adapter_test

import (
	"context"
	"fmt"
	"sync"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// Ten goroutines ask one question at once: the cache makes one LM call.
// The others share its reply while it is in flight (Result.Coalesced), or
// read it from the cache once stored (Result.CacheHits); neither spends
// tokens.
func ExampleCached_coalesced() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis")) // one reply: a second request would fail
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(adapter.NewLRU(1000)))
	sig, _ := signature.Parse("question -> answer")

	var mu sync.Mutex
	answers, shared := map[string]int{}, 0
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"})
			if err != nil {
				panic(err)
			}
			mu.Lock()
			defer mu.Unlock()
			answers[res.Outputs[0]["answer"].(string)]++
			shared += res.Coalesced + res.CacheHits
		})
	}
	wg.Wait()
	fmt.Println(answers, "shared:", shared, "LM requests:", len(srv.Requests()))
	// Output: map[Paris:10] shared: 9 LM requests: 1
}

// Coalesced shares calls in flight without keeping replies: identical
// requests at once make one LM call, and a request after it asks the LM
// again.
func ExampleCoalesced() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis"), lmtest.Text("[[ ## answer ## ]]\nParis, still"))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Coalesced()) // once, with the LM
	sig, _ := signature.Parse("question -> answer")

	for range 2 {
		res, err := adapter.Call(context.Background(), lm, sig, nil, adapter.Values{"question": "Capital of France?"})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Outputs[0]["answer"], res.CacheHits)
	}
	fmt.Println("LM requests:", len(srv.Requests()))
	// Output:
	// Paris 0
	// Paris, still 0
	// LM requests: 2
}
