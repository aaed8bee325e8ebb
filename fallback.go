package adapter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Model fallback moves a call to another model when the one it asked
// fails: an outage, a rate limit the retries could not wait out, a prompt
// too long for its context window, a refusal. It is not the adapter's
// fallback ([Fallbacker], [NoFallback]), which asks again in another
// format after a reply that could not be parsed: a parse error never
// moves a call to another model.

// Target is one model a [FallbackLM] may send a call to.
type Target struct {
	// LM is the client that sends the request: an *openai.Client, an LM
	// with middlewares ([WithMiddleware]) or declared capabilities
	// ([WithCapabilities]), any [LM].
	LM LM
	// Model is the model the request asks for; "" keeps the call's (the
	// request template's, see [WithRequest]).
	Model string
}

// name is how notes and errors name t: its model, else its LM's type.
func (t Target) name(call string) string {
	switch {
	case t.Model != "":
		return t.Model
	case call != "":
		return call
	}
	return fmt.Sprintf("%T", t.LM)
}

// FallbackOn names the failures on which a [FallbackLM] moves a call to
// its next target. They combine with |.
type FallbackOn uint8

const (
	// OnOutage: the server failed (HTTP 5xx) or could not be reached (a
	// transport failure, no status), after the call's retries.
	OnOutage FallbackOn = 1 << iota
	// OnRateLimit: HTTP 429 after the call's retries, or at once when the
	// server asks to wait longer than the retry policy allows.
	OnRateLimit
	// OnContextWindow: the prompt is longer than the model's context
	// window; list the targets by growing context. Never retried on the
	// same model.
	OnContextWindow
	// OnRefusal: the provider's content filter refused the prompt (a
	// *RefusalError's cause), or the reply is a refusal (finish reason
	// content_filter, or a refusal message) and nothing of it reached a
	// stream's caller.
	OnRefusal

	// DefaultFallbackOn is what a FallbackLM moves on when given 0:
	// outages and rate limits.
	DefaultFallbackOn = OnOutage | OnRateLimit
)

// String lists the classes ("outage|rate limit").
func (on FallbackOn) String() string {
	var s []string
	for _, c := range []struct {
		on   FallbackOn
		name string
	}{{OnOutage, "outage"}, {OnRateLimit, "rate limit"}, {OnContextWindow, "context window"}, {OnRefusal, "refusal"}} {
		if on&c.on != 0 {
			s = append(s, c.name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "|")
}

// FallbackLM is an LM that sends a call to its first target and, when
// that fails in a way its FallbackOn names, to the next, in order. Build
// one with [Fallback]; it is safe for concurrent use.
//
// Given to [Call], [Stream] or a module (package predict), each target
// gets the whole chain a single LM gets — the call's middlewares
// ([UseMiddleware]), the retries, the [Trace], the middlewares of the
// FallbackLM (when it is wrapped with [WithMiddleware]) and the target's
// own — so that:
//
//   - every request is counted in Result.Requests and traced (an
//     LMCallStart and LMCallDone per target, whose Request names the
//     target's model), and its tokens are in Result.Usage and
//     UsageByModel under the model that answered;
//   - the retries run on a target before the call moves on;
//   - a [Cached] middleware anywhere in that chain keys its entries on the
//     target's LM and model: a reply is stored under, and found for, the
//     model that gave it;
//   - Result.Model is the model that answered; each move is counted in
//     Result.ModelFallbacks and told in Result.Notes (which target
//     failed, how, and which answered).
//
// A stream moves on only while nothing of the failed request reached the
// caller: an error after the first delta (matching [ErrDelivered]) ends
// the stream as it would without a fallback. A parse error never moves
// on (that is the adapter fallback's job), nor does the caller's context
// ending. When every target failed, the error is the last target's; the
// others are in the notes and the trace.
//
// The request is shaped once, for what every target supports: the
// capabilities of a FallbackLM are those all its targets have (declared
// with [WithCapabilities] on a target, guessed from its model
// otherwise), unless the FallbackLM itself is wrapped with
// WithCapabilities.
type FallbackLM struct {
	targets []Target
	on      FallbackOn
}

// Fallback returns an LM that tries targets in order, moving on after a
// failure on (0 is [DefaultFallbackOn]). A target with a nil LM takes the
// previous target's (so that models of one client are listed by name
// alone); the first target must have one. It panics when given no
// target, as regexp.MustCompile does for a bad pattern: that is a
// program's mistake, not a call's.
func Fallback(on FallbackOn, targets ...Target) *FallbackLM {
	if len(targets) == 0 || isNilLM(targets[0].LM) {
		panic("adapter: Fallback needs targets, the first with an LM")
	}
	if on == 0 {
		on = DefaultFallbackOn
	}
	ts := slices.Clone(targets)
	for i := 1; i < len(ts); i++ {
		if isNilLM(ts[i].LM) {
			ts[i].LM = ts[i-1].LM
		}
	}
	return &FallbackLM{targets: ts, on: on}
}

// Targets returns a copy of f's targets, in order.
func (f *FallbackLM) Targets() []Target { return slices.Clone(f.targets) }

// On returns the failures f moves on.
func (f *FallbackLM) On() FallbackOn { return f.on }

// CreateChatCompletion sends req to each target in turn until one
// answers or fails in a way f does not move on. Called directly (not
// through [Call]), it has no retries, trace or counting of its own: those
// are the pipeline's.
func (f *FallbackLM) CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	var resp openai.ChatCompletionResponse
	var err error
	for i, t := range f.targets {
		r := req
		if t.Model != "" {
			r.Model = t.Model
		}
		resp, err = t.LM.CreateChatCompletion(ctx, r)
		if i == len(f.targets)-1 || !f.movesOn(ctx, resp, err) {
			break
		}
	}
	return resp, err
}

// CreateChatCompletionStream opens a stream on the first target that
// opens one, moving on when opening fails in a way f moves on; once open,
// the stream is that target's. A target that cannot stream fails with an
// error matching errors.ErrUnsupported.
func (f *FallbackLM) CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	var stream *openai.ChatCompletionStream
	var err error
	for i, t := range f.targets {
		r := req
		if t.Model != "" {
			r.Model = t.Model
		}
		stream, err = streamFrom(ctx, t.LM, r)
		if i == len(f.targets)-1 || !f.movesOn(ctx, openai.ChatCompletionResponse{}, err) {
			break
		}
	}
	return stream, err
}

// movesOn reports whether a target's outcome moves the call to the next.
func (f *FallbackLM) movesOn(ctx context.Context, resp openai.ChatCompletionResponse, err error) bool {
	return f.class(ctx, resp, err) != 0
}

// class is the FallbackOn class of a target's outcome that f moves on,
// 0 when it does not move on.
func (f *FallbackLM) class(ctx context.Context, resp openai.ChatCompletionResponse, err error) FallbackOn {
	if ctx.Err() != nil {
		return 0
	}
	var c FallbackOn
	switch {
	case err == nil:
		if ch, ok := choiceAt(resp, 0); ok && (ch.FinishReason == openai.FinishReasonContentFilter || ch.Message.Refusal != "") {
			c = OnRefusal
		}
	case errors.Is(err, ErrDelivered), errors.Is(err, errStopped), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
	case isContextWindow(err):
		c = OnContextWindow
	case isPromptFilter(err):
		c = OnRefusal
	default:
		switch code := statusOf(err); {
		case code == http.StatusTooManyRequests:
			c = OnRateLimit
		case code >= 500:
			c = OnOutage
		case code == 0:
			var re *openai.RequestError
			var ne net.Error
			if errors.As(err, &re) || errors.As(err, &ne) {
				c = OnOutage
			}
		}
	}
	return c & f.on
}

// capabilities are what every target supports, for a call asking for
// model (see FallbackLM), and whether any of them was guessed.
func (f *FallbackLM) capabilities(model string) (caps Capabilities, guessed bool) {
	for i, t := range f.targets {
		m := model
		if t.Model != "" {
			m = t.Model
		}
		c, g := capabilitiesOf(t.LM, m)
		guessed = guessed || g
		if i == 0 {
			caps = c
			continue
		}
		caps.StructuredOutputs = caps.StructuredOutputs && c.StructuredOutputs
		caps.JSONMode = caps.JSONMode && c.JSONMode
		caps.Tools = caps.Tools && c.Tools
		caps.Reasoning = caps.Reasoning && c.Reasoning
	}
	return caps, guessed
}

// fallbackInvoker is the chain of a call whose LM is f: each target's
// own chain (see FallbackLM), tried in order. mw are the middlewares of
// the wrappers around f; bottom builds a target's sender.
func (r *run) fallbackInvoker(f *FallbackLM, mw []Middleware, bottom func(LM) Invoker, tr tracer) Invoker {
	chains := make([]Invoker, len(f.targets))
	for i, t := range f.targets {
		lm, own := peel(t.LM)
		chain := r.invoker(wrapInvoker(append(slices.Clip(mw), own...), bottom(lm)), tr)
		ident := &lmIdent{lm: lm}
		chains[i] = func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
			s := scopeOf(ctx)
			s.ident = ident // a cache anywhere in the chain keys on the target
			return chain(s.on(ctx), req)
		}
	}
	// Not r: the run stays on the stack (see run.invoker).
	call, sink, sh := r.cfg.model(), r.sink, r.runHeap
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		var resp openai.ChatCompletionResponse
		var err error
		for i, t := range f.targets {
			tr := req
			if t.Model != "" {
				tr.Model = t.Model
			}
			resp, err = chains[i](ctx, tr)
			if i == len(f.targets)-1 {
				break
			}
			class := f.class(ctx, resp, err)
			if class == OnRefusal && err == nil && sink != nil && sink.delivered {
				class = 0 // the refusal's text reached the caller
			}
			if class == 0 {
				break
			}
			what := "refused"
			if err != nil {
				what = firstLine(err.Error())
			}
			sh.meter.count(Counts{ModelFallbacks: 1})
			n := fmt.Sprintf("model fallback: %s failed (%s: %s); the call moved to %s", t.name(call), class, what, f.targets[i+1].name(call))
			if !slices.Contains(sh.res.Notes, n) {
				sh.res.Notes = append(sh.res.Notes, n)
			}
		}
		return resp, err
	}
}

// firstLine is s up to its first line break, at most 200 bytes.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
