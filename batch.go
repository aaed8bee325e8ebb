package adapter

import (
	"context"
	"fmt"
	"sync"

	"github.com/sigwire/adapter/signature"
)

// BatchResult is the outcome of one input of [Batch].
type BatchResult struct {
	Result *Result
	Err    error
}

// Batch runs Call for each input, at most concurrency at a time (at least
// 1), and returns one BatchResult per input, in input order. Once ctx is
// done, inputs not yet started fail with its error without an LM call.
//
// The calls run on goroutines Batch starts, where no caller could recover
// a panic; so a panic in one call (in the LM, a middleware, a hook) is
// that input's error, a *[PanicError] with the value and the stack, and
// the other inputs go on, as DSPy's batch keeps going past one input's
// exception.
func Batch(ctx context.Context, lm LM, sig *signature.Signature, demos []Values, inputs []Values, concurrency int, opts ...CallOption) []BatchResult {
	out := make([]BatchResult, len(inputs))
	if ctx == nil {
		for i := range out {
			out[i].Err = errNilContext
		}
		return out
	}
	if concurrency < 1 {
		concurrency = 1
	}
	sem := make(chan struct{}, concurrency)
	var wg sync.WaitGroup
	for i, in := range inputs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			for j := i; j < len(inputs); j++ {
				out[j].Err = fmt.Errorf("adapter: batch item %d not started: %w", j, ctx.Err())
			}
			wg.Wait()
			return out
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := recovered(func() (*Result, error) { return Call(ctx, lm, sig, demos, in, opts...) })
			out[i] = BatchResult{res, err}
		}()
	}
	wg.Wait()
	return out
}
