// Package wire is the library's one home for what goes over the wire to an
// OpenAI-compatible server beyond go-openai's types. It reads what
// go-openai drops: a "reasoning" field (vLLM, OpenRouter, Groq, Cerebras),
// content sent as an array of parts (Mistral's magistral models:
// "thinking" and "text" parts), usage sent only inside "x_groq", an
// "error" object inside a stream chunk (OpenRouter), and what a reply
// carries for output types that read the wire (annotations, provider
// citations: [ChoiceExtras]). Streams are always read from their raw lines
// ([ReadStream]); a blocking response's raw body is seen only through the
// HTTP wrapper ([Complete]). Reading is linear in the bytes read, and
// bounded by the byte and item limits the caller passes and by
// [MaxChoices]. It also holds the one read of what go-openai keeps
// private that the library depends on: a client's configuration
// ([ClientConfig]), by which a cache identifies the endpoint and key.
//
// The root package keeps the exported surface (HTTPDoer, RawPart, Limits,
// ChoiceExtras, ErrReplyTooLarge, …) and calls this package; this package
// imports go-openai, internal/jsonx and the standard library, never the
// root.
package wire
