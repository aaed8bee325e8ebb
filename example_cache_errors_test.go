package adapter_test

import (
	"context"
	"errors"
	"fmt"

	adapter "github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
	"github.com/sigwire/adapter/signature"
)

// unreachableStore is a cache whose store cannot be reached, as a Redis
// that is down: it implements FallibleCache to say why each operation
// failed.
type unreachableStore struct{}

var errStoreDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (unreachableStore) Get(context.Context, string) (adapter.CacheEntry, bool) {
	return adapter.CacheEntry{}, false
}
func (unreachableStore) Put(context.Context, string, adapter.CacheEntry) {}
func (unreachableStore) Lookup(context.Context, string) (adapter.CacheEntry, bool, error) {
	return adapter.CacheEntry{}, false, errStoreDown
}
func (unreachableStore) Store(context.Context, string, adapter.CacheEntry) error {
	return errStoreDown
}

// A cache that can fail fails open: the call goes to the LM, and each
// failure is counted in the Result and reported to the trace.
func ExampleFallibleCache() {
	srv := lmtest.NewServer(lmtest.Text("[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"))
	defer srv.Close()
	lm := adapter.WithMiddleware(srv.Client(), adapter.Cached(unreachableStore{}))

	sig, err := signature.Parse("question -> answer")
	if err != nil {
		panic(err)
	}
	trace := &adapter.Trace{CacheError: func(i adapter.CacheErrorInfo) {
		fmt.Printf("cache %s failed: %v\n", i.Op, i.Err)
	}}
	res, err := adapter.Call(context.Background(), lm, sig, nil,
		adapter.Values{"question": "What is the capital of France?"}, adapter.UseTrace(trace))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs[0]["answer"], res.CacheErrors)
	// Output:
	// cache lookup failed: dial tcp 127.0.0.1:6379: connection refused
	// cache store failed: dial tcp 127.0.0.1:6379: connection refused
	// Paris 2
}
