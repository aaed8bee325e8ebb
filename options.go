package adapter

import (
	"context"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// CallOption configures one [Call] or [Stream].
type CallOption func(*callConfig)

type callConfig struct {
	req        openai.ChatCompletionRequest
	adapter    Adapter // UseAdapter: beats the context
	fallback   Adapter // Default: below the context
	noFallback bool
	trace      *Trace
	middleware []Middleware
	retry      RetryPolicy
	noRetry    bool
	timeout    time.Duration
}

// WithRequest sets the request template: model, temperature, n, max tokens
// and every other LM option (DSPy's lm_kwargs). Messages in it are ignored;
// the adapter writes them. go-openai never sends a zero temperature; use
// [ZeroTemperature] to ask for (effectively) 0.
func WithRequest(req openai.ChatCompletionRequest) CallOption {
	return func(c *callConfig) { c.req = req }
}

// UseAdapter makes the call use a, whatever the context says.
func UseAdapter(a Adapter) CallOption {
	return func(c *callConfig) { c.adapter = a }
}

// Default sets the adapter used when the context names none; modules such
// as predict pass their configured adapter this way, so that
// [WithAdapter] still overrides it.
func Default(a Adapter) CallOption {
	return func(c *callConfig) { c.fallback = a }
}

// Timeout bounds this call or stream, fallback and retries included.
func Timeout(d time.Duration) CallOption {
	return func(c *callConfig) { c.timeout = d }
}

// NoFallback turns off the adapter's fallback (Chat → JSON) for this call.
func NoFallback() CallOption {
	return func(c *callConfig) { c.noFallback = true }
}

func (c *callConfig) resolve(ctx context.Context) Adapter {
	if c.adapter != nil {
		return c.adapter
	}
	if a, ok := AdapterFrom(ctx); ok {
		return a
	}
	if c.fallback != nil {
		return c.fallback
	}
	return DefaultAdapter()
}
