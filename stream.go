package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/signature"
)

// Chunk is one event of a [Stream].
type Chunk struct {
	// Field is the output field Delta belongs to ("" outside any field:
	// a preamble, an echoed input, chatter).
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
// that Call would return for the same reply. An error ends the sequence;
// breaking out of the loop cancels the request and releases everything.
// A stream that ends without a finish reason was cut off: its error is a
// *ParseError matching [ErrTruncated]. After a parse failure the adapter's
// fallback runs as a second stream, reported with the fallback's name.
func Stream(ctx context.Context, lm StreamingLM, sig *signature.Signature, demos []Values, inputs Values, opts ...CallOption) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		var c callConfig
		for _, o := range opts {
			o(&c)
		}
		if sig == nil {
			yield(Chunk{}, errors.New("adapter: nil signature"))
			return
		}
		inputs, inErr := prepareInputs(sig, inputs)
		if inErr != nil {
			yield(Chunk{}, inErr)
			return
		}
		a := c.resolve(ctx)
		c.trace = composeTrace(traceFrom(ctx), c.trace)
		if c.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.timeout)
			defer cancel()
		}
		res := &Result{}
		err, stopped := streamAttempt(ctx, lm, a, 1, sig, demos, inputs, &c, res, yield)
		if stopped {
			return
		}
		var pe *ParseError
		if err != nil && errors.As(err, &pe) && !errors.Is(err, ErrTruncated) && !c.noFallback {
			if fb, ok := a.(Fallbacker); ok {
				if next := fb.Fallback(); next != nil {
					first := err
					err, stopped = streamAttempt(ctx, lm, next, 2, sig, demos, inputs, &c, res, yield)
					if stopped {
						return
					}
					if err != nil {
						err = errors.Join(err, first)
					}
				}
			}
		}
		if err != nil {
			yield(Chunk{Adapter: res.Adapter}, err)
			return
		}
		yield(Chunk{Adapter: res.Adapter, Done: true, Result: res}, nil)
	}
}

// streamAttempt streams one LM call with adapter a. stopped reports that
// the consumer broke out of the loop.
func streamAttempt(ctx context.Context, lm StreamingLM, a Adapter, n int, sig *signature.Signature, demos []Values, inputs Values, c *callConfig, res *Result, yield func(Chunk, error) bool) (err error, stopped bool) {
	tr := tracer{c.trace, a.Name(), n}
	parse, err := parserFor(ctx, a, c, res)
	if err != nil {
		return err, false
	}
	start := time.Now()
	caps := capabilitiesOf(lm, c.req.Model)
	req := c.req
	fsig, fin, dropped := planNative(a, sig, inputs, caps, &req)
	msgs, err := a.Format(fsig, demos, fin)
	tr.format(msgs, time.Since(start), err)
	if err != nil {
		return err, false
	}
	req.Messages = msgs
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	if s, ok := a.(RequestShaper); ok {
		mode, ok, err := s.ShapeRequest(fsig, &req, caps, 0)
		if err != nil {
			return err, false
		}
		if ok {
			res.Mode = mode
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tr.lmStart(req, true)
	lmStart := time.Now()
	stream, err := lm.CreateChatCompletionStream(ctx, req)
	res.Calls++
	if err != nil {
		tr.lmDone(LMCallDoneInfo{Request: req, Stream: true, Duration: time.Since(lmStart), Err: err})
		return &LMError{Adapter: a.Name(), Err: err}, false
	}
	defer stream.Close()
	res.Adapter = a.Name()

	var fs FieldStream
	if sp, ok := a.(StreamParser); ok {
		fs = sp.NewFieldStream(fsig)
	}
	var texts []strings.Builder
	var reasoning, refusal strings.Builder
	var finish []openai.FinishReason
	var tools []openai.ToolCall
	var deltas []FieldDelta
	emit := func(ds []FieldDelta) bool {
		for _, d := range ds {
			ch := Chunk{Field: d.Field, Delta: d.Text, Adapter: a.Name()}
			if d.Reasoning {
				ch = Chunk{Reasoning: d.Text, Adapter: a.Name()}
			}
			if !yield(ch, nil) {
				return false
			}
		}
		return true
	}
	for {
		resp, rerr := recvChunk(stream)
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(rerr, cerr) {
				rerr = errors.Join(cerr, rerr)
			}
			tr.lmDone(LMCallDoneInfo{Request: req, Stream: true, Usage: res.Usage, Duration: time.Since(lmStart), Err: rerr})
			return &LMError{Adapter: a.Name(), Err: rerr}, false
		}
		if resp.Usage != nil {
			res.Usage = addUsage(res.Usage, *resp.Usage)
		}
		for _, ch := range resp.Choices {
			if ch.Index < 0 || ch.Index >= maxStreamIndex {
				rerr := fmt.Errorf("adapter: stream chunk for choice index %d, outside [0, %d)", ch.Index, maxStreamIndex)
				tr.lmDone(LMCallDoneInfo{Request: req, Stream: true, Usage: res.Usage, Duration: time.Since(lmStart), Err: rerr})
				return &LMError{Adapter: a.Name(), Err: rerr}, false
			}
			for len(texts) <= ch.Index {
				texts = append(texts, strings.Builder{})
				finish = append(finish, "")
			}
			if ch.FinishReason != "" {
				finish[ch.Index] = ch.FinishReason
			}
			if ch.Index != 0 {
				texts[ch.Index].WriteString(ch.Delta.Content)
				continue
			}
			refusal.WriteString(ch.Delta.Refusal)
			if r := ch.Delta.ReasoningContent; r != "" {
				reasoning.WriteString(r)
				if !yield(Chunk{Reasoning: r, Adapter: a.Name()}, nil) {
					return nil, true
				}
			}
			if len(ch.Delta.ToolCalls) > 0 {
				var terr error
				if tools, terr = mergeToolCalls(tools, ch.Delta.ToolCalls); terr != nil {
					tr.lmDone(LMCallDoneInfo{Request: req, Stream: true, Usage: res.Usage, Duration: time.Since(lmStart), Err: terr})
					return &LMError{Adapter: a.Name(), Err: terr}, false
				}
				if !yield(Chunk{ToolCalls: slices.Clone(tools), Adapter: a.Name()}, nil) {
					return nil, true
				}
			}
			if ch.Delta.Content == "" {
				continue
			}
			texts[0].WriteString(ch.Delta.Content)
			if fs != nil {
				deltas = fs.Write(deltas[:0], ch.Delta.Content)
				if !emit(deltas) {
					return nil, true
				}
			}
		}
	}
	if fs != nil && !emit(fs.Close(deltas[:0])) {
		return nil, true
	}
	if len(texts) == 0 {
		return &ParseError{Adapter: a.Name(), Err: ErrEmptyResponse}, false
	}
	res.Completions = res.Completions[:0]
	for i := range texts {
		res.Completions = append(res.Completions, texts[i].String())
	}
	tr.lmDone(LMCallDoneInfo{Request: req, Stream: true, Completions: res.Completions, Usage: res.Usage, Duration: time.Since(lmStart)})
	for i := range texts {
		if (i == 0 && refusal.Len() > 0) || finish[i] == openai.FinishReasonContentFilter {
			return &RefusalError{Adapter: a.Name(), Refusal: refusal.String(), FinishReason: string(finish[i]), Completion: res.Completions[i]}, false
		}
	}
	outs := make([]Values, 0, len(texts))
	for i, text := range res.Completions {
		if finish[i] == "" || finish[i] == openai.FinishReasonLength {
			return truncated(a, parse, fsig, text, tr), false
		}
		var ch openai.ChatCompletionChoice // what the stream said natively
		if i == 0 {
			ch.Message.ReasoningContent, ch.Message.ToolCalls = reasoning.String(), tools
		}
		native := len(dropped) > 0 && nativeValues(dropped, ch)
		if strings.TrimSpace(text) == "" && !native {
			return &ParseError{Adapter: a.Name(), Completion: text, Err: ErrEmptyResponse}, false
		}
		pstart := time.Now()
		vals, perr := parseChoice(parse, fsig, text, native && len(ch.Message.ToolCalls) > 0)
		if perr == nil && len(dropped) > 0 {
			fillNative(vals, sig, dropped, ch)
		}
		tr.parse(text, vals, time.Since(pstart), perr)
		if perr != nil {
			return perr, false
		}
		outs = append(outs, vals)
	}
	res.Outputs = outs
	return nil, false
}

// recvChunk reads the next chunk from its raw line, so that the
// "reasoning" delta some providers send (vLLM, OpenRouter), which
// go-openai's types drop, is kept: it is moved into ReasoningContent.
func recvChunk(stream *openai.ChatCompletionStream) (openai.ChatCompletionStreamResponse, error) {
	var resp openai.ChatCompletionStreamResponse
	raw, err := stream.RecvRaw()
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return resp, err
	}
	if bytes.Contains(raw, []byte(`"reasoning"`)) {
		var extra struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Reasoning string `json:"reasoning"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal(raw, &extra) == nil {
			for i, c := range extra.Choices {
				if i < len(resp.Choices) && c.Delta.Reasoning != "" && resp.Choices[i].Delta.ReasoningContent == "" {
					resp.Choices[i].Delta.ReasoningContent = c.Delta.Reasoning
				}
			}
		}
	}
	return resp, nil
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

// maxStreamIndex bounds the choice and tool-call indices a stream may
// use (OpenAI allows n ≤ 128): a larger or negative index is a malformed
// stream, not a reason to allocate.
const maxStreamIndex = 128

// mergeToolCalls accumulates streamed tool-call deltas by index.
func mergeToolCalls(acc []openai.ToolCall, deltas []openai.ToolCall) ([]openai.ToolCall, error) {
	for _, d := range deltas {
		i := len(acc)
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= maxStreamIndex {
			return acc, fmt.Errorf("adapter: stream chunk for tool call index %d, outside [0, %d)", i, maxStreamIndex)
		}
		for len(acc) <= i {
			idx := len(acc)
			acc = append(acc, openai.ToolCall{Index: &idx, Type: openai.ToolTypeFunction})
		}
		t := &acc[i]
		if d.ID != "" {
			t.ID = d.ID
		}
		if d.Type != "" {
			t.Type = d.Type
		}
		t.Function.Name += d.Function.Name
		t.Function.Arguments += d.Function.Arguments
	}
	return acc, nil
}
