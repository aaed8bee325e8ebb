package adapter

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/value"
	"github.com/sigwire/adapter/internal/wire"
)

// Sentinels for errors.Is: every one the package exports is here. Their
// texts carry no "adapter: " prefix: the error that reports one (a
// *ParseError, *InputError, *LMError or *RefusalError, or a wrap where it
// is returned) begins with it, as fs.ErrNotExist inside an *fs.PathError.
// Parse errors wrap them inside a *ParseError.
var (
	// ErrMissingField: an output field is absent from the reply and has no
	// default.
	ErrMissingField = errors.New("output field missing")
	// ErrTruncated: the reply was cut off by the token limit (finish_reason
	// "length") or the text ends inside a value. The *ParseError's Field
	// names the output the reply was giving when it was cut ("" when it
	// ended outside any: in reasoning, after the completed marker).
	ErrTruncated = value.ErrTruncated
	// ErrEmptyResponse: the LM returned no text.
	ErrEmptyResponse = errors.New("empty response")
	// ErrAmbiguous: the reply supports more than one value for a field
	// (two different answers, an enum or bool matching several ways).
	ErrAmbiguous = value.ErrAmbiguous
	// ErrNotInSet: an enum or Literal answer matches none of the allowed
	// values.
	ErrNotInSet = value.ErrNoMatch
	// ErrUnknownInput: an input value names no input field. With several,
	// the *InputError names the first in sorted order, and the nearest
	// input's name when one is close.
	ErrUnknownInput = errors.New("unknown input field")
	// ErrMissingInput: a required input field has no value.
	ErrMissingInput = errors.New("missing input field")
	// ErrHistoryTurn: a turn of a Conversation input (types.History) is
	// neither the signature's fields nor one chat message {"role": "user",
	// "content": "…"}, or mixes both. The *InputError names the input, and
	// its text the turn and its keys.
	ErrHistoryTurn = errors.New(`a history turn holds the signature's fields or is one chat message {"role": …, "content": …}`)
	// ErrInputType: an input value does not fit its field's type and
	// cannot be converted to it without loss (a string for list[str], 42
	// for str, 2.5 for int), or holds what no prompt can show (a channel,
	// a function). The *InputError names the field.
	ErrInputType = value.ErrInputType
	// ErrContextWindow: the prompt does not fit the model's context window.
	// It is matched by errors.Is on an *LMError and never triggers a
	// fallback.
	ErrContextWindow = errors.New("context window exceeded")
	// ErrRateLimited: the provider answered 429 Too Many Requests (after
	// the call's retries, when it had any). It is matched by errors.Is on
	// an *LMError; go-openai's *APIError beneath it has the details.
	ErrRateLimited = errors.New("rate limited")
	// ErrParserPanic: the adapter's parser panicked on the reply. That is a
	// bug in the parser; the pipeline reports it inside a *ParseError that
	// keeps the reply, so that one odd reply cannot take down the host.
	ErrParserPanic = errors.New("the parser panicked (a bug: please report it with the reply)")
	// ErrConstraint: a parsed value breaks a field constraint (ge, le, gt,
	// lt, multiple_of, min_length, max_length). The *ParseError names the
	// field and the constraint; for an input, the *InputError does.
	ErrConstraint = errors.New("constraint violated")
	// ErrRefusal matches a *RefusalError: the model refused, or the
	// provider's content filter did.
	ErrRefusal = errors.New("the model refused")
	// ErrReplyTooLarge matches the *LMError for a reply past one of the
	// call's [Limits], or with more choices than [MaxChoices]. Its text
	// names the limit and how to raise it.
	ErrReplyTooLarge = wire.ErrReplyTooLarge
	// ErrDelivered matches the error of a stream request whose text
	// already reached the caller: a stream that failed after its first
	// deltas (it must not be retried: the caller would read both
	// attempts' text), a second call of next after that, or a middleware's
	// reply in place of one the caller has seen (see [Middleware]).
	ErrDelivered = errors.New("the stream's text already reached the caller")
	// ErrUnsupportedPart reports a content part (audio, a file, a
	// document) that the LM's client cannot send: go-openai's message
	// parts carry text and images only. Through an *openai.Client whose
	// HTTP client is wrapped with [HTTPDoer], they are sent.
	ErrUnsupportedPart = errors.New("go-openai cannot send this content part (only text and image_url); wrap the client's HTTP client: cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)")
	// ErrNeedsHTTPDoer reports a call that asks for what only the
	// [HTTPDoer] wrapper puts on the wire (the marks of [WithPromptCache])
	// through an LM that is not an *openai.Client wrapped with it.
	ErrNeedsHTTPDoer = errors.New("go-openai's types cannot express this request; wrap the client's HTTP client: cfg.HTTPClient = adapter.HTTPDoer(cfg.HTTPClient)")
	// ErrNoExtractor is returned by a [TwoStep] without an Extractor.
	ErrNoExtractor = errors.New("no extractor LM: set TwoStep.Extractor")
	// ErrRecursiveBAML is returned by [BAML] for a recursive struct, which
	// its notation cannot show (use JSON or XML).
	ErrRecursiveBAML = errors.New("recursive struct types cannot be rendered; use another adapter")
	// ErrCorruptCacheEntry is returned by [UnmarshalCacheEntry] for bytes
	// that are not an entry for the key asked for: another format version,
	// another key, or not a reply.
	ErrCorruptCacheEntry = errors.New("not a cache entry for this key")
	// ErrBudget matches the error of a request its budget could not hold
	// (a *[BudgetError], see [WithBudget]). Nothing was sent.
	ErrBudget = errors.New("over budget")
)

// The errors of TwoStep without an Extractor and of BAML for a recursive
// struct, returned as they are.
var (
	errNoExtractor   = fmt.Errorf("adapter: twostep: %w", ErrNoExtractor)
	errRecursiveBAML = fmt.Errorf("adapter: baml: %w", ErrRecursiveBAML)
)

// errNilSignature is returned for a nil signature by Call, Stream and
// every adapter's Format and Parse.
var errNilSignature = errors.New("adapter: nil signature")

// ParseError reports a reply the adapter could not turn into the output
// fields. It keeps the raw completion and the values it did read.
type ParseError struct {
	Adapter    string // chat, json, xml, twostep
	Field      string // the field at fault, "" when not about one field
	Completion string // the raw reply text
	// Partial holds the fields that were read, never a wrong value: one
	// that violates its constraint is left out, and so is a typed value
	// (a number, a bool, a list) that text cut by the token limit might
	// have completed differently; a cut str keeps the text it has.
	Partial Values
	Err     error // the cause; see the Err* sentinels
}

// Error says which adapter and field failed and why, with the start of the reply.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("adapter: ")
	b.WriteString(e.Adapter)
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("cannot parse reply")
	}
	const max = 200
	if c := e.Completion; c != "" {
		if len(c) > max {
			c = c[:max] + "…"
		}
		fmt.Fprintf(&b, " (reply %q)", c)
	}
	return b.String()
}

// Unwrap returns the cause, for errors.Is and errors.As.
func (e *ParseError) Unwrap() error { return e.Err }

// InputError reports an input value that does not fit the signature. It is
// returned before any LM call.
type InputError struct {
	Field string
	Err   error
}

// Error names the input and the problem.
func (e *InputError) Error() string { return fmt.Sprintf("adapter: input %q: %v", e.Field, e.Err) }

// Unwrap returns the cause (ErrUnknownInput, ErrMissingInput, …).
func (e *InputError) Unwrap() error { return e.Err }

// LMError wraps an error from the LM call, including a cancelled or expired
// context (errors.Is(err, context.Canceled) works through it). It is never
// retried by a fallback adapter.
type LMError struct {
	Adapter string
	Err     error
}

// Error names the adapter and the LM failure.
func (e *LMError) Error() string { return "adapter: " + e.Adapter + ": LM call: " + e.Err.Error() }

// Unwrap returns go-openai's error or the context's.
func (e *LMError) Unwrap() error { return e.Err }

// Is reports ErrContextWindow for the ways providers say the prompt is too
// long (OpenAI's code context_length_exceeded, and the message texts of
// vLLM, llama.cpp and others in an error body), and ErrRateLimited for an
// HTTP 429.
func (e *LMError) Is(target error) bool {
	switch target {
	case ErrContextWindow:
		return isContextWindow(e.Err)
	case ErrRateLimited:
		return statusOf(e.Err) == http.StatusTooManyRequests
	}
	return false
}

// statusOf returns the HTTP status of go-openai's error, 0 for none.
func statusOf(err error) int {
	var api *openai.APIError
	var req *openai.RequestError
	switch {
	case errors.As(err, &api):
		return api.HTTPStatusCode
	case errors.As(err, &req):
		return req.HTTPStatusCode
	}
	return 0
}

func isContextWindow(err error) bool {
	var text string
	var api *openai.APIError
	var req *openai.RequestError
	switch {
	case errors.As(err, &api):
		if c, ok := api.Code.(string); ok && c == "context_length_exceeded" {
			return true
		}
		text = api.Message
	case errors.As(err, &req):
		text = string(req.Body)
		if req.Err != nil {
			text += " " + req.Err.Error()
		}
	default:
		return false
	}
	text = strings.ToLower(text)
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context length", "context window", "too many tokens", "prompt is too long"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// isFormatRejection reports a provider refusing the request's
// response_format (an unsupported or invalid schema): HTTP 400 naming the
// response format, and not about the context window.
func isFormatRejection(err error) bool {
	var api *openai.APIError
	if !errors.As(err, &api) || api.HTTPStatusCode != 400 || isContextWindow(err) {
		return false
	}
	if api.Param != nil && strings.Contains(*api.Param, "response_format") {
		return true
	}
	msg := strings.ToLower(api.Message)
	return strings.Contains(msg, "response_format") || strings.Contains(msg, "json_schema") || strings.Contains(msg, "schema")
}

// FallbackError is a call's error when its adapter could not read the
// reply and the fallback adapter ([Fallbacker]: Chat and XML fall back to
// JSON) then failed too. It tells what ended the call, and only that: it
// unwraps to the fallback's error alone, so that errors.As and errors.Is
// see one class of failure —
//
//   - a failed LM request, or a cancelled or expired context: an
//     *[LMError], never a *[ParseError];
//   - a second reply that could not be read: the fallback's *ParseError
//     (the last one; truncated, it matches [ErrTruncated]);
//   - a refusal: a *[RefusalError].
//
// The first adapter's error, why the fallback ran, is kept as data in
// First (a *ParseError, or an error wrapping one; with [WithReask], the
// error of its last re-ask's reply) and is not in the chain:
// errors.Is(err, ErrMissingField) does not match the first adapter's
// missing field. A call whose fallback succeeds returns no
// error and reports the same cause in [Result].FallbackCause.
type FallbackError struct {
	// First is the first adapter's error (its last reply's, after
	// re-asks): why the fallback ran.
	First error
	// Err is the fallback adapter's error: what ended the call.
	Err error
}

// Error gives the fallback's error, then the first adapter's.
func (e *FallbackError) Error() string {
	name := "the first adapter"
	var pe *ParseError
	if errors.As(e.First, &pe) && pe.Adapter != "" {
		name = pe.Adapter
	}
	return fmt.Sprintf("%v (after %s: %v)", e.Err, name, e.First)
}

// Unwrap returns the fallback's error only; First is not in the chain.
func (e *FallbackError) Unwrap() error { return e.Err }

// RefusalError reports a reply the model or the provider refused to give:
// a refusal message (structured outputs produce them) or a finish reason
// content_filter. It carries the model's text, is never a *ParseError and
// never triggers a fallback.
//
// A provider that refuses the prompt itself (Azure's prompt filter: HTTP
// 400 with error code content_filter) is a RefusalError too, with the
// provider's error as Err.
type RefusalError struct {
	Adapter      string
	Refusal      string // the model's refusal text
	FinishReason string // "content_filter", or the reply's finish reason
	Completion   string // any content the reply had
	Err          error  // the provider's error, for a refused prompt
}

// Error quotes the refusal.
func (e *RefusalError) Error() string {
	switch {
	case e.Refusal != "":
		return fmt.Sprintf("adapter: %s: the model refused: %q", e.Adapter, e.Refusal)
	case e.Err != nil:
		return fmt.Sprintf("adapter: %s: the provider's content filter refused the prompt: %v", e.Adapter, e.Err)
	}
	return fmt.Sprintf("adapter: %s: the reply was stopped by the content filter", e.Adapter)
}

// Is matches ErrRefusal.
func (e *RefusalError) Is(target error) bool { return target == ErrRefusal }

// Unwrap returns the provider's error, if any.
func (e *RefusalError) Unwrap() error { return e.Err }

// CapabilityGuessError reports a call that failed while it relied on
// capabilities the library guessed from the model's name ([ModelCapabilities])
// because the LM declares none: the guess may be why. Two ways a guess
// fails: it denied a native feature the call wanted (tool calls asked for
// in the text of a model that does not follow the format; the Result's
// Notes say so), and the reply could not be read; or it granted one (tools,
// native reasoning) that the provider rejected with a 400 or 422.
// [WithCapabilities] is the one place that overrides the guess. Err, the
// call's error, is in the chain: errors.As still finds the *ParseError or
// *LMError beneath.
type CapabilityGuessError struct {
	// Model is the model name the guess was made from.
	Model string
	// Guess is what was guessed.
	Guess Capabilities
	Err   error
}

// Error gives the call's error, then the guess and how to override it.
func (e *CapabilityGuessError) Error() string {
	return fmt.Sprintf("%v (the capabilities of model %q were guessed from its name: %s; declare what the LM supports with adapter.WithCapabilities)",
		e.Err, e.Model, e.Guess)
}

// Unwrap returns the call's error.
func (e *CapabilityGuessError) Unwrap() error { return e.Err }

// PanicError is a panic the library recovered in code it runs for a
// call on the caller's behalf: a tool run for the model ([Trace.RunTool],
// so ReAct's steps, native or not, and ToolCalls.Execute), a
// Refine/BestOfN reward, or one input's call in [Batch]. Such code often
// runs on goroutines the library
// starts, where no caller could recover the panic, so one bad tool input
// would take the whole process down; instead it is that tool's (or that
// reward's) error, as net/http keeps serving after a handler panics and as
// DSPy turns a tool's exception into an observation. A caller who wants
// the crash re-panics from a hook (Trace.ToolDone: panic(pe.Value)); a
// panic in a hook is not recovered.
type PanicError struct {
	// Value is what the code passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// writes it.
	Stack []byte
}

// Error is "panic: " and the value, as the runtime prints it (the stack
// is left out: the text may reach the model).
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the value when it is an error (panic(err)), so that
// errors.Is and errors.As see it.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered runs f and turns its panic into a *PanicError.
func recovered[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return f()
}

// isPromptFilter reports a provider refusing the prompt itself through its
// content filter (Azure: HTTP 400 with error code content_filter).
func isPromptFilter(err error) bool {
	var api *openai.APIError
	if !errors.As(err, &api) {
		return false
	}
	if c, ok := api.Code.(string); ok && c == "content_filter" {
		return true
	}
	return api.InnerError != nil && api.InnerError.Code == "ResponsibleAIPolicyViolation"
}
