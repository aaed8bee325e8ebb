package adapter_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sigwire/adapter"
	"github.com/sigwire/adapter/lmtest"
)

// TestWatchRetryAfter: a middleware of the LM learns the Retry-After of a
// 429, with retries on (sharing Retry's view) or off.
func TestWatchRetryAfter(t *testing.T) {
	sig := mustParse(t, "q -> a")
	for name, opt := range map[string]adapter.CallOption{
		"retries on":  adapter.WithRetry(adapter.RetryPolicy{MaxDelay: time.Second}), // 7 s is more: give up at once
		"retries off": adapter.NoRetry(),
	} {
		t.Run(name, func(t *testing.T) {
			srv := lmtest.NewServer(lmtest.Error(http.StatusTooManyRequests, `{"error":{"message":"slow down"}}`).WithHeader("Retry-After", "7"))
			defer srv.Close()
			cfg := srv.Config()
			cfg.HTTPClient = adapter.HTTPDoer(nil)
			var seen []time.Duration
			watch := func(next adapter.Invoker) adapter.Invoker {
				return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
					ctx, retryAfter := adapter.WatchRetryAfter(ctx)
					resp, err := next(ctx, req)
					seen = append(seen, retryAfter())
					return resp, err
				}
			}
			lm := adapter.WithMiddleware(openai.NewClientWithConfig(cfg), watch)
			_, err := adapter.Call(t.Context(), lm, sig, nil, adapter.Values{"q": "x"}, opt)
			require.ErrorIs(t, err, adapter.ErrRateLimited)
			assert.Equal(t, []time.Duration{7 * time.Second}, seen)
		})
	}
}
