package adapter

import (
	"context"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Trace observes the pipeline, in the manner of net/http/httptrace: set
// the functions you need, nil ones are skipped. Every attempt is reported,
// the fallback's included (Attempt 2), and every LM call, a retry after a
// rejected response format included. The functions run synchronously on
// the calling goroutine and must not modify what they are given. Requests
// never carry the API key (it lives in the client), so a Trace cannot leak
// it.
type Trace struct {
	FormatDone  func(FormatInfo)
	LMCallStart func(LMCallStartInfo)
	LMCallDone  func(LMCallDoneInfo)
	ParseDone   func(ParseInfo)
}

// FormatInfo reports the messages an adapter produced.
type FormatInfo struct {
	Adapter  string
	Attempt  int // 1, or 2 for the fallback adapter
	Messages []openai.ChatCompletionMessage
	Duration time.Duration
	Err      error
}

// LMCallStartInfo reports a request about to be sent.
type LMCallStartInfo struct {
	Adapter string
	Attempt int
	Request openai.ChatCompletionRequest
	Stream  bool
}

// LMCallDoneInfo reports an LM call's outcome. For a stream, Response is
// empty and Completions holds the text received, Duration spans the whole
// stream.
type LMCallDoneInfo struct {
	Adapter     string
	Attempt     int
	Request     openai.ChatCompletionRequest
	Response    openai.ChatCompletionResponse
	Completions []string
	Usage       openai.Usage
	Stream      bool
	Duration    time.Duration
	Err         error
}

// ParseInfo reports the parse of one choice's completion.
type ParseInfo struct {
	Adapter    string
	Attempt    int
	Completion string
	Outputs    Values
	Duration   time.Duration
	Err        error
}

type traceKey struct{}

// WithTrace returns a context whose calls report to t, after any trace
// already on ctx.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, composeTrace(traceFrom(ctx), t))
}

// Observe reports this call to t, after any trace on the context.
func Observe(t *Trace) CallOption {
	return func(c *callConfig) { c.trace = composeTrace(c.trace, t) }
}

func traceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

func composeTrace(a, b *Trace) *Trace {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &Trace{
		FormatDone:  chain(a.FormatDone, b.FormatDone),
		LMCallStart: chain(a.LMCallStart, b.LMCallStart),
		LMCallDone:  chain(a.LMCallDone, b.LMCallDone),
		ParseDone:   chain(a.ParseDone, b.ParseDone),
	}
}

func chain[T any](f, g func(T)) func(T) {
	switch {
	case f == nil:
		return g
	case g == nil:
		return f
	}
	return func(x T) { f(x); g(x) }
}

// tracer fires a call's trace events; the zero value fires nothing.
type tracer struct {
	t       *Trace
	adapter string
	attempt int
}

func (r tracer) format(msgs []openai.ChatCompletionMessage, d time.Duration, err error) {
	if r.t != nil && r.t.FormatDone != nil {
		r.t.FormatDone(FormatInfo{r.adapter, r.attempt, msgs, d, err})
	}
}

func (r tracer) lmStart(req openai.ChatCompletionRequest, stream bool) {
	if r.t != nil && r.t.LMCallStart != nil {
		r.t.LMCallStart(LMCallStartInfo{r.adapter, r.attempt, req, stream})
	}
}

func (r tracer) lmDone(info LMCallDoneInfo) {
	if r.t != nil && r.t.LMCallDone != nil {
		info.Adapter, info.Attempt = r.adapter, r.attempt
		r.t.LMCallDone(info)
	}
}

func (r tracer) parse(completion string, vals Values, d time.Duration, err error) {
	if r.t != nil && r.t.ParseDone != nil {
		r.t.ParseDone(ParseInfo{r.adapter, r.attempt, completion, vals, d, err})
	}
}
