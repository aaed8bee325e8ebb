package adapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// Values maps field names to Go values. Output values have exactly the
// field's Go type (int for int, []string for list[str], *int for
// Optional[int], the struct value for a struct type).
type Values = map[string]any

// LM is the language model the pipeline calls. *openai.Client satisfies it,
// and so does any OpenAI-compatible client wrapped to this one method.
type LM interface {
	CreateChatCompletion(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error)
}

// StreamingLM is an LM that can also stream. *openai.Client satisfies it.
type StreamingLM interface {
	LM
	CreateChatCompletionStream(ctx context.Context, req openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error)
}

// Adapter turns a signature, demos and inputs into chat messages. Format is
// pure: no context, no I/O; it never mutates its arguments.
//
// An adapter usually also implements [Parser]; other capabilities are
// detected by type assertion: [Fallbacker].
type Adapter interface {
	// Name is the adapter's short name: chat, json, xml, twostep.
	Name() string
	Format(sig *signature.Signature, demos []Values, inputs Values) ([]openai.ChatCompletionMessage, error)
}

// Parser is implemented by adapters that read the output fields from the
// completion text alone. Parse is pure. It returns every output field, with
// defaults applied, or an error; on error a *ParseError carries the values
// it could read.
type Parser interface {
	Parse(sig *signature.Signature, completion string) (Values, error)
}

// CallingParser is implemented by adapters whose parse makes LM calls of
// its own, such as TwoStep's extraction. The pipeline calls ParseCall
// instead of Parse, with a context that carries the call's [Trace], and
// adds the calls and usage of the returned Result to its own.
type CallingParser interface {
	ParseCall(ctx context.Context, sig *signature.Signature, completion string) (Values, *Result, error)
}

// RequestShaper is implemented by adapters that set LM options for their
// calls, such as the JSON adapter's response_format. Level 0 is the
// preferred form; when the provider rejects it (HTTP 400 about the
// response format), the pipeline asks for level 1, once. ShapeRequest
// returns the name of the mode it set (reported in [Result].Mode), and ok
// false when there is no such level.
type RequestShaper interface {
	ShapeRequest(sig *signature.Signature, req *openai.ChatCompletionRequest, caps Capabilities, level int) (mode string, ok bool, err error)
}

// Fallbacker is implemented by adapters that retry a call once with another
// adapter when their parse fails (DSPy's ChatAdapter falls back to its
// JSONAdapter). Fallback returns nil when the adapter has none.
type Fallbacker interface {
	Fallback() Adapter
}

// DefaultAdapter is the adapter used when neither the call, the context nor
// the caller's default names one: Chat, with its JSON fallback, as in DSPy.
var DefaultAdapter Adapter = Chat{}

type ctxKey struct{}

// WithAdapter returns a context whose calls use a, unless a call names its
// own adapter with [UseAdapter]. It is how an adapter is swapped per call
// for code that does not expose call options (DSPy's dspy.context(adapter=)).
func WithAdapter(ctx context.Context, a Adapter) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// AdapterFrom returns the adapter set on ctx by [WithAdapter].
func AdapterFrom(ctx context.Context) (Adapter, bool) {
	a, ok := ctx.Value(ctxKey{}).(Adapter)
	return a, ok && a != nil
}

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

// ZeroTemperature is the smallest temperature go-openai will send. Its
// request struct drops a temperature of 0 (omitempty), which makes the
// server use its default (often 1); set Temperature to ZeroTemperature for
// deterministic decoding.
const ZeroTemperature float32 = 1e-45

// Result is what a call produced.
type Result struct {
	// Outputs holds one Values per choice (n > 1 gives several).
	Outputs []Values
	// Adapter names the adapter whose parse produced Outputs; after a
	// fallback it is the fallback's name.
	Adapter string
	// Usage is the token usage summed over every LM call made.
	Usage openai.Usage
	// Calls is the number of LM requests sent, failed ones included (2
	// after a fallback or a rejected response format).
	Calls int
	// Completions holds the raw text of each choice of the last LM call.
	Completions []string
	// Mode is how the adapter asked for its format, for adapters that
	// shape the request: the JSON adapter reports json_schema, json_object
	// or prompt. After a provider rejected a response format it names the
	// lower tier actually used.
	Mode string
	// Retries counts the requests the retry middleware repeated (not
	// included in Calls) and RetryWait the waits it scheduled between them;
	// CacheHits counts the responses a Cached middleware served without a
	// request.
	Retries, CacheHits int
	RetryWait          time.Duration
	// Model and SystemFingerprint are what the last reply said.
	Model, SystemFingerprint string
	// Logprobs holds each choice's log probabilities when the request asked
	// for them (Logprobs: true), else nil.
	Logprobs []*openai.LogProbs
}

// Call runs the pipeline once: it checks the inputs, formats the messages
// with the resolved adapter, calls lm with the request template, and parses
// every choice into typed values.
//
// The adapter is, in order: [UseAdapter], [WithAdapter] on ctx, [Default],
// then [DefaultAdapter]. Errors: an *InputError before any LM call; an
// *LMError (wrapping go-openai's error or the context's) for a failed call;
// a *ParseError when the reply cannot be read, including a reply cut off by
// the token limit ([ErrTruncated]) and an empty reply ([ErrEmptyResponse]).
// A parse failure of an adapter with a [Fallbacker] fallback is retried once
// with the fallback adapter (never after truncation or an LM error).
func Call(ctx context.Context, lm LM, sig *signature.Signature, demos []Values, inputs Values, opts ...CallOption) (*Result, error) {
	var c callConfig
	for _, o := range opts {
		o(&c)
	}
	a := c.resolve(ctx)
	if sig == nil {
		return nil, errors.New("adapter: nil signature")
	}
	inputs, inErr := prepareInputs(sig, inputs)
	if inErr != nil {
		return nil, inErr
	}
	c.trace = composeTrace(traceFrom(ctx), c.trace)
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	stats := &callStats{}
	ctx = context.WithValue(ctx, statsKey{}, stats)
	res := &Result{}
	defer func() {
		res.Retries, res.CacheHits = int(stats.retries.Load()), int(stats.cacheHits.Load())
		res.RetryWait = time.Duration(stats.waited.Load())
	}()
	err := attempt(ctx, lm, a, 1, sig, demos, inputs, &c, res)
	var pe *ParseError
	if err == nil || !errors.As(err, &pe) || errors.Is(err, ErrTruncated) || c.noFallback {
		return res, err
	}
	fb, ok := a.(Fallbacker)
	if !ok {
		return res, err
	}
	next := fb.Fallback()
	if next == nil {
		return res, err
	}
	if ferr := attempt(ctx, lm, next, 2, sig, demos, inputs, &c, res); ferr != nil {
		return res, fmt.Errorf("%w (after %s: %v)", ferr, a.Name(), err)
	}
	return res, nil
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
	return DefaultAdapter
}

// attempt makes one LM call with adapter a (the n-th adapter tried) and
// parses its choices into res.
func attempt(ctx context.Context, lm LM, a Adapter, n int, sig *signature.Signature, demos []Values, inputs Values, c *callConfig, res *Result) error {
	tr := tracer{c.trace, a.Name(), n}
	parse, err := parserFor(ctx, a, c, res)
	if err != nil {
		return err
	}
	caps := capabilitiesOf(lm, c.req.Model)
	base := c.req
	fsig, fin, dropped := planNative(a, sig, inputs, caps, &base)
	start := time.Now()
	msgs, err := a.Format(fsig, demos, fin)
	tr.format(msgs, time.Since(start), err)
	if err != nil {
		return err
	}
	shaper, shapes := a.(RequestShaper)
	call := invoker(lm, c, tr)
	var resp openai.ChatCompletionResponse
	var rejected error
	for level := 0; ; level++ {
		req := base
		req.Messages = msgs
		if shapes {
			mode, ok, err := shaper.ShapeRequest(fsig, &req, caps, level)
			if err != nil {
				return err
			}
			if !ok {
				return &LMError{Adapter: a.Name(), Err: rejected}
			}
			res.Mode = mode
		}
		if err := ctx.Err(); err != nil {
			return &LMError{Adapter: a.Name(), Err: err}
		}
		resp, err = call(ctx, req)
		res.Calls++
		if err == nil {
			break
		}
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if shapes && level == 0 && req.ResponseFormat != nil && c.req.ResponseFormat == nil && isFormatRejection(err) {
			// The provider rejected the response format: one tier down, once.
			rejected = err
			continue
		}
		return &LMError{Adapter: a.Name(), Err: err}
	}
	res.Usage = addUsage(res.Usage, resp.Usage)
	res.Adapter = a.Name()
	res.Model, res.SystemFingerprint = resp.Model, resp.SystemFingerprint
	if len(resp.Choices) == 0 {
		return &ParseError{Adapter: a.Name(), Err: ErrEmptyResponse}
	}
	choices := slices.Clone(resp.Choices)
	slices.SortStableFunc(choices, func(x, y openai.ChatCompletionChoice) int { return x.Index - y.Index })
	outs := make([]Values, 0, len(choices))
	res.Completions, res.Logprobs = res.Completions[:0], nil
	for _, ch := range choices {
		res.Completions = append(res.Completions, ch.Message.Content)
		if ch.LogProbs != nil {
			res.Logprobs = make([]*openai.LogProbs, len(choices))
		}
	}
	for i, ch := range choices {
		if res.Logprobs != nil {
			res.Logprobs[i] = ch.LogProbs
		}
		if ch.Message.Refusal != "" || ch.FinishReason == openai.FinishReasonContentFilter {
			return &RefusalError{Adapter: a.Name(), Refusal: ch.Message.Refusal, FinishReason: string(ch.FinishReason), Completion: ch.Message.Content}
		}
	}
	for _, ch := range choices {
		text := ch.Message.Content
		native := len(dropped) > 0 && nativeValues(dropped, ch)
		if strings.TrimSpace(text) == "" && !native {
			return &ParseError{Adapter: a.Name(), Completion: text, Err: ErrEmptyResponse}
		}
		if ch.FinishReason == openai.FinishReasonLength {
			return truncated(a, parse, fsig, text, tr)
		}
		start := time.Now()
		vals, err := parseChoice(parse, fsig, text, native && len(ch.Message.ToolCalls) > 0)
		if err == nil && len(dropped) > 0 {
			fillNative(vals, sig, dropped, ch)
		}
		tr.parse(text, vals, time.Since(start), err)
		if err != nil {
			return err
		}
		if err := checkConstraints(sig, vals); err != nil {
			err.Adapter, err.Completion = a.Name(), text
			return err
		}
		outs = append(outs, vals)
	}
	res.Outputs = outs
	return nil
}

// truncated is the error for a reply cut by the token limit, with what
// Parse reads from it as Partial; an adapter whose parsing calls an LM
// (TwoStep) is not asked: a cut text is never sent to be extracted.
func truncated(a Adapter, parse func(*signature.Signature, string) (Values, error), sig *signature.Signature, text string, tr tracer) *ParseError {
	pe := &ParseError{Adapter: a.Name(), Completion: text, Err: ErrTruncated}
	if _, calls := a.(CallingParser); calls {
		return pe
	}
	start := time.Now()
	vals, err := parse(sig, text)
	tr.parse(text, vals, time.Since(start), err)
	pe.Partial = vals
	var inner *ParseError
	if errors.As(err, &inner) {
		pe.Partial = inner.Partial
	}
	return pe
}

// parserFor returns how a's completions are parsed: Parse, or ParseCall
// with the call's trace on the context and its LM calls counted in res.
func parserFor(ctx context.Context, a Adapter, c *callConfig, res *Result) (func(*signature.Signature, string) (Values, error), error) {
	if cp, ok := a.(CallingParser); ok {
		ctx = context.WithValue(ctx, traceKey{}, c.trace)
		return guardParse(a, func(sig *signature.Signature, text string) (Values, error) {
			vals, r, err := cp.ParseCall(ctx, sig, text)
			if r != nil {
				res.Calls += r.Calls
				res.Usage = addUsage(res.Usage, r.Usage)
			}
			return vals, err
		}), nil
	}
	if p, ok := a.(Parser); ok {
		return guardParse(a, p.Parse), nil
	}
	return nil, fmt.Errorf("adapter: %s cannot parse completions", a.Name())
}

// guardParse turns a panic in parse into a *ParseError carrying the reply.
func guardParse(a Adapter, parse func(*signature.Signature, string) (Values, error)) func(*signature.Signature, string) (Values, error) {
	return func(sig *signature.Signature, text string) (vals Values, err error) {
		defer func() {
			if r := recover(); r != nil {
				vals, err = nil, &ParseError{Adapter: a.Name(), Completion: text, Err: fmt.Errorf("%w: %v", ErrParserPanic, r)}
			}
		}()
		return parse(sig, text)
	}
}

// parseChoice parses a choice's text. With native tool calls, DSPy reads
// the text only if there is some, and a text it cannot read leaves the
// other outputs empty rather than failing the calls.
func parseChoice(parse func(*signature.Signature, string) (Values, error), sig *signature.Signature, text string, toolCalls bool) (Values, error) {
	if !toolCalls {
		return parse(sig, text)
	}
	if strings.TrimSpace(text) == "" || sig.NumOutputs() == 0 {
		return Values{}, nil
	}
	vals, err := parse(sig, text)
	if err != nil {
		return Values{}, nil
	}
	return vals, nil
}

func addUsage(a, b openai.Usage) openai.Usage {
	a.PromptTokens += b.PromptTokens
	a.CompletionTokens += b.CompletionTokens
	a.TotalTokens += b.TotalTokens
	return a
}
