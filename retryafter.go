package adapter

import (
	"context"
	"time"

	"github.com/sigwire/adapter/internal/wire"
)

// WatchRetryAfter lets a middleware learn the server's Retry-After: it
// returns the context to pass on to next and a function that reports the
// wait the server asked for (its Retry-After header, as the [HTTPDoer]
// wrapper saw it on a 429 or 503) in answer to the latest request made
// with that context; 0 when it asked for none or the client has no
// HTTPDoer. A middleware of the LM ([WithMiddleware]) runs inside the
// retries and shares what [Retry] reads, so it sees each attempt's; one
// that runs outside them ([UseMiddleware]) sees nothing while retries are
// on. A rate limiter shared by several processes reads it to make them
// all wait.
func WatchRetryAfter(ctx context.Context) (context.Context, func() time.Duration) {
	slot, ok := ctx.Value(wire.RetryKey{}).(*wire.RetrySlot)
	if !ok {
		ctx, slot = wire.WithRetrySlot(ctx)
	}
	return ctx, func() time.Duration { return time.Duration(slot.After.Load()) }
}
