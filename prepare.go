package adapter

import (
	"context"
	"errors"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// errPrepared ends a Prepare's run where its first request would be sent.
var errPrepared = errors.New("adapter: the request was prepared, not sent")

// Prepare returns the request [Call] would send first for the same
// arguments, without sending it: the messages the adapter writes, and the
// model, tools, tool_choice, parallel_tool_calls, response_format,
// reasoning_effort and every other option as the request template, the
// outputs' native hooks, the adapter's request shaping and the LM's
// [Capabilities] leave them. It is what DSPy's dspy.inspect_history shows
// of a call, and what adapter.format plus the LM's kwargs would give,
// obtained without calling an LM.
//
// Prepare is Call's pipeline, stopped at the send: the options apply as
// they do for Call (the adapter is [UseAdapter]'s, else [WithAdapter]'s on
// ctx, else a module's default from [Defaults], else [DefaultAdapter]()),
// the inputs are checked and converted, the native hooks plan the request,
// the adapter formats the messages and shapes the request at its
// preferred response-format level. The request is taken where Call hands
// it to the middlewares: no middleware runs (neither the call's
// [UseMiddleware] nor the LM's [WithMiddleware], so no [Cached] cache is
// read or written), nor the retries, and no [Trace] hears of it. A
// middleware that changes requests changes what Call sends after it.
//
// The request is the argument go-openai's CreateChatCompletion gets, and
// go-openai sends it as encoding/json marshals it, byte for byte, except
// where the [HTTPDoer] wrapper rewrites the body: a [ZeroTemperature] is
// sent as 0, and a [RawPart] (audio, a file, a document) as the JSON it
// carries. [Stream] sends the same request with Stream set and, unless the
// template sets them, stream_options asking for usage. For an adapter with
// a fallback (Chat and XML fall back to JSON), the request is the first
// adapter's: the fallback's is sent only after a reply fails to parse. For
// [TwoStep], it is the main LM's: the extractor's request depends on the
// reply. The request's slices may be the template's own (its Tools, its
// Stop): copy them before changing them.
//
// The errors are those Call returns before its first request: for a nil
// context, LM or signature, an *[InputError] for inputs that do not fit
// the signature (or an output the adapter cannot ask for natively),
// Format's errors, [ErrUnsupportedPart] for a part the LM cannot carry,
// and an *[LMError] wrapping the context's error when ctx is done.
func Prepare(ctx context.Context, lm LM, sig *signature.Signature, demos []Values, inputs Values, opts ...CallOption) (openai.ChatCompletionRequest, error) {
	var r run
	ctx, cancel, err := r.prepare(ctx, lm, sig, demos, inputs, opts)
	if err != nil {
		return openai.ChatCompletionRequest{}, err
	}
	defer cancel()
	r.cfg.trace, r.meter.trace = nil, nil // no call is made: no trace event
	var req openai.ChatCompletionRequest
	r.capture = func(_ context.Context, sent openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		req = sent
		return openai.ChatCompletionResponse{}, errPrepared
	}
	if err := r.do(ctx); !errors.Is(err, errPrepared) {
		return openai.ChatCompletionRequest{}, err
	}
	return req, nil
}
