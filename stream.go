package adapter

import (
	"context"
	"iter"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// Chunk is one event of a [Stream].
type Chunk struct {
	// Field is the output field Delta belongs to ("" outside any field:
	// a preamble, an echoed input, chatter, or a reply in another shape
	// than the adapter's, such as JSON for Chat, whose fields the reader
	// finds later and then sends as deltas of their own, before Done).
	Field string
	// Delta is new text of Field. Concatenating a str field's deltas gives
	// the field's parsed value.
	Delta string
	// Reasoning is a reasoning delta: reasoning_content, a raw reasoning
	// field, or the text of a leading <think> block.
	Reasoning string
	// ToolCalls holds the tool calls accumulated so far, by index, when
	// this chunk changed them.
	ToolCalls []openai.ToolCall
	// Status is a progress message from a module that makes several calls
	// and runs tools between them (predict.ReAct's Stream: "Calling tool
	// search...", then "Tool calling finished! ..."), as DSPy's streamify
	// status messages; such a chunk carries nothing else. Stream itself
	// never sets it.
	Status string
	// Adapter names the adapter whose stream this is; after a fallback the
	// fallback's name.
	Adapter string
	// Done is set on the last chunk, which carries Result.
	Done bool
	// Result is what Call returns for the same reply (on the Done chunk).
	Result *Result
}

// StreamParser is implemented by adapters that can route a reply's text to
// its output fields while it streams.
type StreamParser interface {
	NewFieldStream(sig *signature.Signature) FieldStream
}

// FieldStream splits a streamed reply into field deltas. Write consumes the
// next piece of text and appends to dst the deltas it can already decide;
// Close appends what is left. A FieldStream does work linear in the text:
// it never re-reads more than a marker's length of it.
type FieldStream interface {
	Write(dst []FieldDelta, text string) []FieldDelta
	Close(dst []FieldDelta) []FieldDelta
}

// FieldDelta is a piece of a field's text ("" Field: outside any field).
type FieldDelta struct {
	Field     string
	Text      string
	Reasoning bool
}

// Stream runs the pipeline like [Call] with a streaming request, yielding
// field deltas as they arrive and, last, a Done chunk carrying the Result
// that Call returns for the same reply: the stages after the LM call are
// the same ones. An error ends the sequence; breaking out of the loop
// cancels the request and releases everything.
//
// A stream that ended with "data: [DONE]" is finished, even where the
// server sent no finish reason (Snowflake Cortex; a LiteLLM proxy finishes
// only choice 0 of n=2), as is a blocking body; a stream cut off before
// [DONE] while a choice had no finish reason, or a choice that ended with
// "length", is truncated: the error is a *ParseError matching
// [ErrTruncated]. An error event inside the stream is an *LMError with the
// server's message. After a parse failure the adapter's
// fallback runs as a second stream, reported with the fallback's name.
// Middlewares, retries and caches apply as for Call: a stream is retried
// while nothing of it has reached the caller, and a reply served by a
// middleware (a cache hit) is replayed as deltas. An output that Parse read
// without its text having been streamed (an answer given as JSON instead
// of markers, say) arrives as one delta before the Done chunk.
func Stream(ctx context.Context, lm StreamingLM, sig *signature.Signature, demos []Values, inputs Values, opts ...CallOption) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		var llm LM
		if lm != nil {
			llm = lm
		}
		r, ctx, cancel, err := prepare(ctx, llm, sig, demos, inputs, opts)
		if err != nil {
			yield(Chunk{}, err)
			return
		}
		defer cancel()
		s, ok := r.lm.(StreamingLM)
		if !ok {
			yield(Chunk{}, cannotStream(r.lm))
			return
		}
		r.stream = s
		r.sink = &streamSink{yield: yield}
		err = r.do(ctx)
		switch {
		case r.sink.stopped:
		case err != nil:
			yield(Chunk{Adapter: r.res.Adapter}, err)
		default:
			yield(Chunk{Adapter: r.res.Adapter, Done: true, Result: &r.res}, nil)
		}
	}
}

// streamed records the outputs a field stream has sent. A field given
// again is not streamed again: Parse keeps its first value, or reports two
// different ones. The first 64 outputs cost no allocation.
type streamed struct {
	low  uint64
	high map[int]bool
}

// again reports whether output i was already sent.
func (s *streamed) again(i int) bool {
	switch {
	case i < 0:
		return false
	case i < 64:
		return s.low&(1<<i) != 0
	}
	return s.high[i]
}

// mark records that output i was sent.
func (s *streamed) mark(i int) {
	switch {
	case i < 0:
	case i < 64:
		s.low |= 1 << i
	default:
		if s.high == nil {
			s.high = map[int]bool{}
		}
		s.high[i] = true
	}
}
