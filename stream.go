package adapter

import (
	"context"
	"encoding/json"
	"iter"
	"reflect"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/reply"
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
	// the field's parsed value, with Replace applied.
	Delta string
	// Replace, on a chunk of a Field, says that the field's value is not
	// what its deltas so far join to: discard them, and read Delta (which
	// may be empty) as the start of the field's new value, which later
	// deltas extend. A consumer keeps, per field:
	//
	//	if c.Replace {
	//		text[c.Field] = ""
	//	}
	//	text[c.Field] += c.Delta
	//
	// and ends, for every str output, with exactly the Result's value
	// (for other types, with text that ParseValue reads as the value).
	// An output the provider answers natively, outside the text (a
	// NativeHook's field: types.Reasoning from reasoning_content,
	// types.ToolCalls from tool_calls), has no deltas of its own: it
	// arrives in Reasoning and ToolCalls chunks, and in the Result.
	// The stream sends it when a later part of the reply replaces what it
	// streamed — a second, corrected JSON object, a key or section given
	// again, a fallback's reply — at the latest just before
	// the Done chunk, with the whole final text.
	Replace bool
	// Reasoning is a reasoning delta: reasoning_content, a raw reasoning
	// field, or the text of a leading <think> block.
	Reasoning string
	// ToolCalls holds the tool calls accumulated so far, by index, when
	// this chunk changed them. In the stream of a module that runs tools
	// (predict.ReAct) it holds, once per step, the calls the step chose,
	// complete, when they were chosen.
	ToolCalls []openai.ToolCall
	// Status is a progress message from a module that makes several
	// calls: one that runs tools between them (predict.ReAct's Stream:
	// "Calling tool search...", then "Tool calling finished! ...", as
	// DSPy's streamify status messages; such a chunk may carry Step and
	// Tool beside it, nothing else), or one that makes several attempts
	// (predict.BestOfN's and predict.Refine's: each attempt's start and
	// end, with Attempt). Stream itself never sets it.
	Status string
	// Step numbers, from 1, the step of an agent a chunk belongs to, in
	// the stream of a module that works in steps (predict.ReAct): the
	// step's thought deltas, its chosen tool calls, its tool runs. It is 0
	// on every other chunk: all of a plain Stream's, and a ReAct's final
	// extract call and Done.
	Step int
	// Tool reports a tool run in the stream of a module that runs tools
	// (predict.ReAct): on the chunk that says it starts (Done false) and on
	// the one that says it ended (Done true, with its observation).
	Tool *ToolRun
	// Reask is set on a chunk that starts a re-ask (see [WithReask]): the
	// number of the re-ask in the call, 1 for the first. Such a chunk
	// carries nothing else but Adapter. What was sent before it came from
	// a reply that could not be used: the re-ask's reply replaces every
	// field it gives (its first delta of a field has Replace set, and
	// Done's replacements settle the rest, as after a fallback), and the
	// reasoning and tool calls that follow are the new reply's.
	Reask int
	// Attempt numbers, from 1, the attempt a chunk belongs to in the
	// stream of a module that runs its program several times
	// (predict.BestOfN, predict.Refine; nested, the outermost's number):
	// set on every chunk of the attempt, on the Status chunks that begin
	// and end it, and on the Done chunk, the attempt whose outputs were
	// chosen. It is 0 on every chunk of any other stream.
	Attempt int
	// Adapter names the adapter whose stream this is; after a fallback the
	// fallback's name.
	Adapter string
	// Done is set on the last chunk, which carries Result.
	Done bool
	// Result is what Call returns for the same reply: on the Done chunk,
	// and with an error, as far as the call got.
	Result *Result
}

// ToolRun is a tool run reported in a module's stream (see [Chunk].Tool).
type ToolRun struct {
	// ID is the model's id for the call; "" where calls have none (a
	// ReAct's text mode).
	ID string
	// Name is the tool's name, Args the arguments it runs with, as JSON.
	Name string
	Args json.RawMessage
	// Done is false when the tool starts, true when it has ended.
	Done bool
	// Observation is what the model is shown of the run, once Done: the
	// tool's result or, for a failed run, the error's text (see
	// predict.WithToolErrorText).
	Observation any
	// Err is the run's error once Done, nil when the tool succeeded.
	Err error
}

// StreamParser is implemented by adapters that can route a reply's text to
// its output fields while it streams.
type StreamParser interface {
	NewFieldStream(sig *signature.Signature) FieldStream
}

// FieldStream splits a streamed reply into field deltas. Write consumes the
// next piece of text and appends to dst the deltas it can already decide;
// Close appends what is left. A FieldStream does work linear in the text:
// it holds back only what the text still to come decides (the start of a
// marker or tag, a closing quote or tag Parse may read as part of the
// value) and reads each byte a bounded number of times. A delta it sends
// should be text of the value Parse reads; where a later part of the
// reply replaces a value, it sends the new one with FieldDelta.Replace.
// Stream replaces, before the Done chunk, any field whose deltas do not
// give its parsed value, so a FieldStream that cannot follow a reply is
// never wrong in the end.
type FieldStream interface {
	Write(dst []FieldDelta, text string) []FieldDelta
	Close(dst []FieldDelta) []FieldDelta
}

// FieldDelta is a piece of a field's text, as a [FieldStream] reads it
// from a streaming reply. It is a struct of four fields (an alias of the
// delta type of the internal reply reader, beside which the built-in
// adapters' field streams live):
//
//	Field     string // the output field Text belongs to; "" outside any field
//	Text      string // new text of Field, or of the reasoning
//	Reasoning bool   // Text is reasoning (a leading <think> block), no field's
//	Replace   bool   // Text starts Field's value anew
//
// Replace says that what the field received before is discarded (a later
// part of the reply, such as a second, corrected JSON object, gives it
// again); Stream sends it as a Chunk with Replace set.
type FieldDelta = reply.Delta

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
// server's message. The chunk that carries an error carries the Result as
// far as it got (calls, usage, raw completions), as Call returns it with
// its error. After a parse failure the adapter's
// fallback runs as a second stream, reported with the fallback's name.
// With [WithReask], a re-ask runs as another stream, announced by a chunk
// with Reask set.
// Middlewares, retries and caches apply as for Call: a stream is retried
// while nothing of it has reached the caller, and a reply served by a
// middleware (a cache hit) is replayed as deltas. An output that Parse read
// without its text having been streamed (an answer given as JSON instead
// of markers, say) arrives as one delta before the Done chunk.
//
// A field's deltas are its value: a consumer that joins them, starting
// anew at a chunk with Replace set, ends with each str output's value in
// the Result. Replace is sent where a later part of the reply replaces
// what was streamed (a corrected JSON object, a fallback's reply), and,
// at the latest, just before the Done chunk with the field's whole text,
// where Parse read the value otherwise than the stream could (a lenient
// reading recovered from the whole reply).
func Stream(ctx context.Context, lm StreamingLM, sig *signature.Signature, demos []Values, inputs Values, opts ...CallOption) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		var llm LM
		if lm != nil {
			llm = lm
		}
		var r run
		ctx, cancel, err := r.prepare(ctx, llm, sig, demos, inputs, opts)
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
			yield(Chunk{Adapter: r.res.Adapter, Result: &r.res}, err)
		default:
			yield(Chunk{Adapter: r.res.Adapter, Done: true, Result: &r.res}, nil)
		}
	}
}

// heldTexts is what a consumer of a Stream holds of each output field:
// the deltas sent since the field's last replacement, and which reply
// (the field stream of one LM call) sent them. It spans the attempts of
// one Stream: a later reply (a fallback's) replaces the text an
// earlier reply gave a field.
type heldTexts struct {
	reply int // the reply being streamed (next counts them)
	texts map[string]*heldText
}

type heldText struct {
	b     strings.Builder
	reply int
}

// next starts the deltas of another reply.
func (h *heldTexts) next() { h.reply++ }

// add records a delta of field and returns the chunk's Delta and Replace:
// the delta replaces what the consumer holds when it says so (replace),
// or when it is the first of this reply for a field that holds text of
// an earlier one. A replacement of nothing is a plain delta, and so is a
// replacement that extends what the consumer holds (its suffix is sent).
func (h *heldTexts) add(field, text string, replace bool) (string, bool) {
	t := h.texts[field]
	if t == nil {
		if h.texts == nil {
			h.texts = map[string]*heldText{}
		}
		t = &heldText{reply: h.reply}
		h.texts[field] = t
	}
	replace = (replace || t.reply != h.reply) && t.b.Len() > 0
	t.reply = h.reply
	if replace {
		if held := t.b.String(); strings.HasPrefix(text, held) {
			text, replace = text[len(held):], false
		} else {
			t.b.Reset()
		}
	}
	t.b.WriteString(text)
	return text, replace
}

// text returns what the consumer holds of field.
func (h *heldTexts) text(field string) string {
	if t := h.texts[field]; t != nil {
		return t.b.String()
	}
	return ""
}

// complete brings every output of choice 0, as the consumer holds it, to
// the value Parse read: an output whose text never reached the caller
// (read leniently: JSON instead of markers, labels, renamed keys, a
// default) arrives as one delta, so that a caller never sees nothing and
// then a value; an output whose deltas do not give its value (a later
// object or element replaced it, the reply's text was recovered only as
// a whole) is replaced by its whole text. It runs before the Done chunk.
func (s *streamSink) complete(vals Values) {
	for i := range s.fsig.NumOutputs() {
		if s.stopped {
			return
		}
		f := s.fsig.Output(i)
		v, ok := vals[f.Name]
		if !ok {
			continue
		}
		held := s.texts.text(f.Name)
		if holdsValue(held, v, f) {
			continue
		}
		var want string
		switch x := v.(type) {
		case string:
			want = x
		default:
			if isNil(v) {
				break
			}
			text, err := FormatValue(v, f)
			if err != nil {
				continue
			}
			want = text
		}
		if held == "" && want == "" {
			continue
		}
		delta, replace := s.texts.add(f.Name, want, true)
		s.emit(Chunk{Field: f.Name, Delta: delta, Replace: replace})
	}
}

// holdsValue reports whether text, a field's joined deltas, gives v: the
// same string for a str value, else text that ParseValue reads as v
// (nothing, for no value).
func holdsValue(text string, v any, f signature.Field) bool {
	if s, ok := v.(string); ok {
		return text == s
	}
	if text == "" {
		return isNil(v)
	}
	got, err := ParseValue(text, f)
	return err == nil && reflect.DeepEqual(got, v)
}
