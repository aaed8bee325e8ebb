// Package adapter turns a [signature.Signature] into chat messages for a
// language model and the model's reply into typed Go values, as DSPy's
// adapter layer does in Python, with byte-identical prompts.
//
// # The pipeline
//
// [Call] checks the inputs against the signature, formats the messages
// with an [Adapter], calls the [LM] (any *openai.Client) with the request
// template given by [WithRequest], and parses every choice into [Values]
// whose Go types are exactly the fields' types. The adapter is chosen per
// call: [UseAdapter] beats [WithAdapter] on the context, which beats a
// module's default ([Defaults]), which beats the process-wide [DefaultAdapter] (Chat,
// unless [SetDefaultAdapter] changed it). [Prepare] runs the same stages
// and returns the request Call would send first, without sending it.
//
// # Adapters
//
// [Chat] writes DSPy's [[ ## field ## ]] format; [JSON] asks for a JSON
// object, with OpenAI structured outputs where the LM supports them (see
// [Capabilities]). Format and Parse are pure functions of their arguments;
// adapters are immutable values, safe for concurrent use. Chat, JSON, XML
// and BAML keep, with each signature (see [signature.Signature.Memo]),
// what they built from it alone (the system message, the output
// requirements) and the messages of the demos they rendered last, reused
// while a later Format's demos hold the same texts (demos of strings only;
// others are rendered every time): the messages are the same as without,
// and a signature holds on to its latest demos' texts. Optional
// capabilities are separate interfaces detected by type assertion, as
// database/sql does: [Parser] (reads a reply from its text),
// [RequestShaper] (sets request options such as response_format, with a
// lower tier when the provider rejects them), [Fallbacker] (retries once
// with another adapter after a parse failure), [NativeToolAdapter] (asks
// for tool calls through the provider's function calling) and
// [StreamParser] (routes streamed text to fields, for [Stream]). Chat,
// JSON, XML and BAML share their settings, [Options]: the fallback, native
// tool calling, parallel_tool_calls, and a [Prompt] that changes a piece of
// the prompt (the field description, the field structure, the task
// description, the output requirements) and keeps the rest as DSPy writes
// it.
//
// # Streaming and observing
//
// [Stream] is [Call] as an iter.Seq2 of [Chunk]s: field deltas, reasoning
// deltas, tool calls, and a last chunk carrying the [Result]. Call and
// Stream run the same stages (plan, format, send, check, parse, fill,
// validate); only the sender differs, so a reply gives the same Result
// either way. Middlewares ([UseMiddleware], [WithMiddleware]), retries ([Retry]) and
// caches ([Cached]) see stream requests too. A [Trace] (on the context
// with [WithTrace], or for one call with [UseTrace]) sees every format, LM
// call and parse, fallbacks included.
//
// go-openai decodes replies into its own types, which drop what some
// servers send; the pipeline reads it from the wire: streams from their
// raw lines, blocking replies from their raw body when the client's HTTP
// client is wrapped with [HTTPDoer].
//
// # Custom types
//
// Field types plug in through interfaces, detected on the type (package
// types has DSPy's: Image, Audio, File, Document, Code, Reasoning,
// History, Tool, ToolCalls, Citations). In formatting, a [Formatter] value
// becomes content parts of the user message ([RawPart] for parts go-openai
// cannot express, sent through [HTTPDoer]); otherwise json.Marshaler, then
// encoding.TextMarshaler, then the rules for the kind render it. An input
// of a [Conversation] type expands into earlier turns. An output of a
// [NativeHook] type may be answered natively (reasoning_content, native
// tool calls) when the LM's [Capabilities] allow; one of a [WireReader]
// type reads what the reply carried beyond go-openai's types (provider
// citations). In parsing, a type with ParseField ([FieldParser])
// beats encoding.TextUnmarshaler (and, for decoded JSON, json.Unmarshaler),
// which beats the kind rules. signature.TypeNamer, TypeDescriber and
// PromptSchemer choose what the model is told about a type.
//
// # Values
//
// [ParseValue] is the one routine that turns a field's text into a Go
// value; [FormatValue] renders a value as DSPy does. Types that parse
// themselves implement [FieldParser] (on the pointer), which beats
// encoding.TextUnmarshaler, which beats the rules for the field's kind.
//
// # Errors
//
// Parse failures are *[ParseError] (adapter, field, raw completion, the
// values read), matching [ErrMissingField], [ErrTruncated],
// [ErrEmptyResponse], [ErrAmbiguous] or [ErrNotInSet] with errors.Is. LM
// failures are *[LMError], which wraps go-openai's error and the context's
// (errors.Is(err, context.Canceled) works) and matches [ErrContextWindow]
// when the prompt is too long and [ErrRateLimited] on a 429. Bad inputs are *[InputError], returned before
// any LM call. Nothing panics on model output. After a fallback that failed
// too, the error is a *[FallbackError] of the fallback's class alone (an
// LM failure is never also a *ParseError); the first adapter's
// *ParseError is data in it.
package adapter
