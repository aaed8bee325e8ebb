package adapter

import (
	"context"
	"reflect"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// CallOption configures one [Call] or [Stream]. Given to a module's
// constructor (package predict), the same options configure every call of
// the module, as defaults below the call's own (see [Defaults]).
//
// The options are one vocabulary: Use… chooses a component (UseAdapter,
// UseMiddleware, UseTrace), With… sets a setting (WithRequest, WithRetry,
// WithTimeout), No… turns a default off (NoFallback, NoRetry). The context
// counterparts are [WithAdapter] and [WithTrace].
type CallOption interface {
	applyCall(*callConfig)
}

// EmptyCallOption changes nothing in the pipeline. Embed it in a type of
// your own to define options that code above the pipeline (a module) reads
// back from the option list by type assertion, as package predict does for
// its demos; the pipeline ignores them.
type EmptyCallOption struct{}

func (EmptyCallOption) applyCall(*callConfig) {}

// optionFunc is a CallOption made of a function.
type optionFunc func(*callConfig)

func (f optionFunc) applyCall(c *callConfig) { f(c) }

type callConfig struct {
	req            *openai.ChatCompletionRequest // WithRequest's template, shared: never written through (nil: none)
	adapter        Adapter                       // UseAdapter: beats the context
	defaultAdapter Adapter                       // UseAdapter under Defaults: below the context
	noFallback     bool
	reask          int // WithReask: the re-asks a call may make
	trace          *Trace
	middleware     []Middleware
	retry          RetryPolicy
	noRetry        bool
	timeout        time.Duration
	limits         Limits // WithLimits
	budget         Budget // WithBudget
	promptCache    bool   // WithPromptCache
	promptCacheKey string
	asDefault      bool   // applying Defaults
	id             uint64 // the call's identity in Trace events (callID)
}

// apply applies opts: the [Defaults] first, then the others in order, so
// that a call's options beat its module's whatever their order.
func (c *callConfig) apply(opts []CallOption) {
	for _, o := range opts {
		if d, ok := o.(defaults); ok {
			d.applyCall(c)
		}
	}
	for _, o := range opts {
		if _, ok := o.(defaults); !ok && o != nil {
			o.applyCall(c)
		}
	}
}

type defaults []CallOption

func (d defaults) applyCall(c *callConfig) {
	c.asDefault = true
	for _, o := range d {
		if o != nil {
			o.applyCall(c)
		}
	}
	c.asDefault = false
}

// Defaults applies opts as defaults: they take effect before the call's
// other options, which override them (a request's fields one by one), and
// an adapter they name with [UseAdapter] ranks below the context's
// ([WithAdapter]). Modules pass their configuration this way (DSPy's
// module defaults, which dspy.context overrides).
func Defaults(opts ...CallOption) CallOption { return defaults(opts) }

// WithRequest sets the request template: model, temperature, n, max tokens
// and every other LM option (DSPy's lm_kwargs). Given more than once (a
// module's template, then a call's), the later one's non-zero fields
// override the earlier's: setting only Temperature on a call keeps the
// module's model and max tokens. Messages in it are ignored; the adapter
// writes them. go-openai never sends a zero temperature; use
// [ZeroTemperature] to ask for 0 (sent as 0 through a client wrapped with
// [HTTPDoer], as 1e-45 through any other).
//
// A template without Model sends "model": "", as go-openai does: a server
// that serves one model (lmtest, llama.cpp) answers it, OpenAI refuses it
// with an *LMError ("you must provide a model parameter"), and an LM or a
// middleware of your own may fill it in. The model table behind
// [ModelCapabilities] knows no model "": declare the capabilities of such
// an LM with [WithCapabilities] if it has structured outputs.
func WithRequest(req openai.ChatCompletionRequest) CallOption {
	return optionFunc(func(c *callConfig) {
		if c.req == nil {
			c.req = &req // read only: a call copies the template before shaping it
			return
		}
		merged := *c.req
		mergeRequest(&merged, req)
		c.req = &merged
	})
}

// template returns the request the call's [WithRequest] options make,
// the zero request without them, as a copy the call may shape.
func (c *callConfig) template() openai.ChatCompletionRequest {
	if c.req == nil {
		return openai.ChatCompletionRequest{}
	}
	return *c.req
}

// model is the model the call's [WithRequest] options name, if any.
func (c *callConfig) model() string {
	if c.req == nil {
		return ""
	}
	return c.req.Model
}

// mergeRequest copies the non-zero fields of src into dst.
func mergeRequest(dst *openai.ChatCompletionRequest, src openai.ChatCompletionRequest) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range s.NumField() {
		if f := s.Field(i); !f.IsZero() && d.Field(i).CanSet() {
			d.Field(i).Set(f)
		}
	}
}

// UseAdapter makes the call use a, whatever the context says; under
// [Defaults], a is used when the context names none.
func UseAdapter(a Adapter) CallOption {
	return optionFunc(func(c *callConfig) {
		if c.asDefault {
			c.defaultAdapter = a
		} else {
			c.adapter = a
		}
	})
}

// UseMiddleware adds middlewares to this call; the first is outermost.
func UseMiddleware(mw ...Middleware) CallOption {
	return optionFunc(func(c *callConfig) { c.middleware = append(c.middleware, mw...) })
}

// UseTrace reports this call to t, after any trace on the context.
func UseTrace(t *Trace) CallOption { return traceOption{t} }

// traceOption is UseTrace's option, of its own type so that [CallTrace]
// finds the traces without applying the other options.
type traceOption struct{ t *Trace }

func (o traceOption) applyCall(c *callConfig) { c.trace = composeTrace(c.trace, o.t) }

// traces composes the traces of the UseTrace options among d onto t, in
// the order d applies them.
func (d defaults) traces(t *Trace) *Trace {
	for _, o := range d {
		switch o := o.(type) {
		case traceOption:
			t = composeTrace(t, o.t)
		case defaults:
			t = o.traces(t)
		}
	}
	return t
}

// WithRetry sets this call's retry policy. Retries are on by default, as
// in DSPy; MaxRetries < 0 turns them off (so does [NoRetry]). A [Retry]
// middleware added beside them multiplies the attempts: set the policy
// here instead.
func WithRetry(p RetryPolicy) CallOption {
	return optionFunc(func(c *callConfig) { c.retry, c.noRetry = p, p.MaxRetries < 0 })
}

// WithTimeout bounds this call or stream, fallback and retries included.
func WithTimeout(d time.Duration) CallOption {
	return optionFunc(func(c *callConfig) { c.timeout = d })
}

// NoFallback turns off the adapter's fallback (Chat → JSON) for this call.
func NoFallback() CallOption {
	return optionFunc(func(c *callConfig) { c.noFallback = true })
}

// WithReask asks the model again, at most n times in the call, when its
// reply cannot be read or breaks a constraint: the re-ask sends the
// request's messages as the adapter wrote them, then the reply as an
// assistant turn, then a user turn that names the field and what was
// wrong with it and repeats the adapter's output requirements (the
// reminder that ends its request, [Prompt].OutputRequirements applied;
// an adapter without one, such as TwoStep, is only asked to answer
// again). Only the built-in adapters repeat their requirements: an
// adapter written outside this package is asked to answer again, with the
// error, and nothing more. Each re-ask carries only the latest reply and its error, so
// the request does not grow with every re-ask. With several choices (a
// request's N), the reply sent back is the first choice that failed, and
// the re-ask asks for as many choices again. It is off by
// default; n <= 0 turns it off (for one call of a module that re-asks).
//
// A re-ask runs for a *[ParseError] the model can correct: a value that
// does not read as its type, a missing field, an ambiguous answer, a
// value outside its set, a constraint violation ([ErrConstraint]). It
// never runs for a reply cut by the token limit or ending inside a value
// ([ErrTruncated]: the same request would be cut again; raise the max
// tokens), an empty reply ([ErrEmptyResponse]: there is nothing to send
// back), a parser panic ([ErrParserPanic]: a bug of the parser, not the
// model's), a refusal or a content filter (*[RefusalError]), a failed LM
// request (*[LMError]), a cancelled or expired context, or a stream whose
// consumer stopped; nor for a format slip the parser recovers, since
// that reply is read without one.
//
// Re-asks come first, with the same adapter (the model sees its own
// format and what was wrong with it); if the replies still fail, the
// adapter's fallback (Chat → JSON) runs and may re-ask with what is left
// of the n. The call's error is then the last reply's, unchanged.
//
// Each re-ask is an LM request, counted in [Result].Calls and in
// [Result].Reasks, with why the latest ran in [Result].ReaskCause; the
// trace reports it (FormatStartInfo.Reask and ReaskCause; every event of
// the re-ask carries its number), and in a [Stream] a chunk with Reask
// set comes before the re-ask's deltas. A cache ([Cached]) never serves a
// re-ask the reply it corrects (the request differs) and never stores a
// reply the pipeline did not accept.
func WithReask(n int) CallOption {
	return optionFunc(func(c *callConfig) { c.reask = max(n, 0) })
}

// NoRetry turns retries off for this call.
func NoRetry() CallOption {
	return optionFunc(func(c *callConfig) { c.noRetry = true })
}

func (c *callConfig) resolve(ctx context.Context) Adapter {
	if c.adapter != nil {
		return c.adapter
	}
	if a, ok := AdapterFrom(ctx); ok {
		return a
	}
	if c.defaultAdapter != nil {
		return c.defaultAdapter
	}
	return DefaultAdapter()
}
