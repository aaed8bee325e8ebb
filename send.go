package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/reply"
	"github.com/sigwire/adapter/signature"
)

// The send stage's two senders sit at the bottom of the invoker chain
// (below the middlewares, retries and trace) and return the same thing:
// the whole reply as an openai.ChatCompletionResponse. The blocking sender
// calls CreateChatCompletion; the streaming sender reads the SSE stream,
// routes choice 0's text through the adapter's FieldStream to the caller
// as it arrives, and assembles the reply.

// bodyKey carries a bodySlot to the HTTPDoer wrapper, which fills it with
// the raw reply body of a blocking call.
type bodyKey struct{}

type bodySlot struct {
	buf      bytes.Buffer
	overflow bool
}

// teeBody copies what go-openai reads of a reply body into the slot.
type teeBody struct {
	io.ReadCloser
	slot *bodySlot
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if s := t.slot; !s.overflow {
		if s.buf.Len()+n > maxCapturedBody {
			s.overflow = true
			s.buf.Reset()
		} else {
			s.buf.Write(p[:n])
		}
	}
	return n, err
}

// blockingSender is the bottom of a Call's chain.
func blockingSender(lm LM) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		slot := &bodySlot{}
		resp, err := lm.CreateChatCompletion(context.WithValue(ctx, bodyKey{}, slot), req)
		if err != nil {
			return resp, err
		}
		var extras WireExtras
		if !slot.overflow {
			extras = normalize(&resp, slot.buf.Bytes())
		} else {
			normalize(&resp, nil)
		}
		if s := stateFrom(ctx); s != nil {
			s.addUsage(modelOf(resp, req), resp.Usage)
			s.setExtras(extras)
		}
		return resp, nil
	}
}

// thinkStream routes a leading reasoning block (<think>…</think>, also
// <thinking> and <reasoning>, unless an output has that name) to reasoning
// deltas and the rest of the reply to the adapter's FieldStream, so that
// every adapter streams reasoning as Parse strips it. It is the one place
// a stream reads that block: the built-in adapters' NewFieldStream return
// their streams inside one, and Stream puts any other adapter's in one.
type thinkStream struct {
	sig     *signature.Signature
	inner   FieldStream
	state   int    // 0 undecided, 1 inside the block, 2 past it or none
	held    string // text not yet decided
	closing string
}

// withThink puts fs inside a thinkStream, unless it is one already.
func withThink(sig *signature.Signature, fs FieldStream) FieldStream {
	if _, ok := fs.(*thinkStream); ok {
		return fs
	}
	return &thinkStream{sig: sig, inner: fs}
}

func (s *thinkStream) Write(dst []FieldDelta, text string) []FieldDelta {
	switch s.state {
	case 2:
		return s.inner.Write(dst, text)
	case 1:
		return s.inside(dst, text, false)
	}
	s.held += text
	t := strings.TrimLeft(s.held, " \t\r\n")
	for _, tag := range reply.ThinkTags {
		if reply.OutputIndex(s.sig, tag) >= 0 {
			continue
		}
		open := "<" + tag + ">"
		switch {
		case len(t) >= len(open) && strings.EqualFold(t[:len(open)], open):
			s.state, s.closing, s.held = 1, "</"+tag+">", ""
			return s.inside(dst, t[len(open):], false)
		case len(t) < len(open) && strings.HasPrefix(open, strings.ToLower(t)):
			return dst // could still become a think block
		}
	}
	s.state, text, s.held = 2, s.held, ""
	return s.inner.Write(dst, text)
}

// inside takes text of the reasoning block, holding back what could be
// the start of its closing tag.
func (s *thinkStream) inside(dst []FieldDelta, text string, final bool) []FieldDelta {
	s.held += text
	if i := reply.IndexFold(s.held, s.closing); i >= 0 {
		if i > 0 {
			dst = append(dst, FieldDelta{Text: s.held[:i], Reasoning: true})
		}
		rest := s.held[i+len(s.closing):]
		s.state, s.held = 2, ""
		if rest == "" {
			return dst
		}
		return s.inner.Write(dst, rest)
	}
	end := len(s.held)
	if !final {
		end = max(0, len(s.held)-len(s.closing)+1)
	}
	if end > 0 {
		dst = append(dst, FieldDelta{Text: s.held[:end], Reasoning: true})
		s.held = s.held[end:]
	}
	return dst
}

func (s *thinkStream) Close(dst []FieldDelta) []FieldDelta {
	switch s.state {
	case 0:
		t := s.held
		s.state, s.held = 2, ""
		if t != "" {
			dst = s.inner.Write(dst, t)
		}
	case 1:
		dst = s.inside(dst, "", true)
	}
	return s.inner.Close(dst)
}

// modelOf names the model that answered: the reply's, else the request's.
func modelOf(resp openai.ChatCompletionResponse, req openai.ChatCompletionRequest) string {
	if resp.Model != "" {
		return resp.Model
	}
	return req.Model
}

// errStopped ends a stream whose consumer broke out of the loop.
var errStopped = errors.New("adapter: the stream's consumer stopped")

// deliveredError is a stream failure after text reached the caller: it is
// not retried.
type deliveredError struct{ err error }

func (e *deliveredError) Error() string { return e.err.Error() }
func (e *deliveredError) Unwrap() error { return e.err }

// streamSink routes one attempt's streamed reply to the caller.
type streamSink struct {
	yield   func(Chunk, error) bool
	adapter string
	newFS   func() FieldStream // nil: the adapter cannot route fields
	sent    bool               // something reached the caller in this attempt
	live    bool               // the reply in hand was streamed, not served by a middleware
	stopped bool               // the consumer broke out
	texts   heldTexts          // what the caller holds of each field (stream.go)
	fsig    *signature.Signature
	deltas  []FieldDelta
}

// emit sends c to the caller; false when the consumer broke out.
func (s *streamSink) emit(c Chunk) bool {
	c.Adapter = s.adapter
	s.sent = true
	if !s.yield(c, nil) {
		s.stopped = true
		return false
	}
	return true
}

// emitDeltas sends field deltas.
func (s *streamSink) emitDeltas(ds []FieldDelta) bool {
	for _, d := range ds {
		c := Chunk{Field: d.Field, Delta: d.Text}
		if d.Reasoning {
			c = Chunk{Reasoning: d.Text}
		} else if d.Field != "" {
			if c.Delta, c.Replace = s.texts.add(d.Field, d.Text, d.Replace); c.Delta == "" && !c.Replace {
				continue // a replacement that changes nothing
			}
		}
		if !s.emit(c) {
			return false
		}
	}
	return true
}

// sender is the bottom of a Stream's chain.
func (s *streamSink) sender(lm StreamingLM) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		s.live = false
		stream, err := lm.CreateChatCompletionStream(ctx, req)
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		defer stream.Close()
		var acc assembly
		resp, err := s.pump(ctx, stream, &acc)
		if err != nil {
			if s.stopped {
				return resp, errStopped
			}
			if s.sent {
				return resp, &deliveredError{err}
			}
			return resp, err
		}
		s.live = true
		if st := stateFrom(ctx); st != nil {
			st.addUsage(modelOf(resp, req), resp.Usage)
			st.setExtras(acc.extras())
		}
		return resp, nil
	}
}

// pump reads the stream to its end into acc, yielding choice 0's deltas.
func (s *streamSink) pump(ctx context.Context, stream *openai.ChatCompletionStream, acc *assembly) (openai.ChatCompletionResponse, error) {
	var fs FieldStream
	if s.newFS != nil {
		fs = s.newFS()
		s.texts.next()
	}
	var c wireChunk // reused: one allocation per stream, not per chunk
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				err = errors.Join(cerr, err)
			}
			return acc.response(), err
		}
		if c = (wireChunk{Choices: c.Choices[:0]}); !decodeChunk(string(raw), &c) {
			clear(c.Choices[:cap(c.Choices)]) // encoding/json decodes into old elements
			c = wireChunk{Choices: c.Choices[:0]}
			if err := json.Unmarshal(raw, &c); err != nil {
				return acc.response(), fmt.Errorf("adapter: unreadable stream chunk: %w", err)
			}
		}
		var tools int
		if len(acc.choices) > 0 {
			tools = len(acc.choices[0].tools)
		}
		if err := acc.add(&c); err != nil {
			return acc.response(), err
		}
		for i := range c.Choices {
			d := &c.Choices[i]
			if d.Index != 0 {
				continue
			}
			if r := d.reasoning(); r != "" && !s.emit(Chunk{Reasoning: r}) {
				return acc.response(), errStopped
			}
			if len(d.Delta.ToolCalls) > 0 || len(acc.choices[0].tools) != tools {
				tools = len(acc.choices[0].tools)
				if !s.emit(Chunk{ToolCalls: slices.Clone(acc.choices[0].tools)}) {
					return acc.response(), errStopped
				}
			}
			if text := d.Delta.Content.text; text != "" && fs != nil {
				s.deltas = fs.Write(s.deltas[:0], text)
				if !s.emitDeltas(s.deltas) {
					return acc.response(), errStopped
				}
			}
		}
	}
	if fs != nil {
		s.deltas = fs.Close(s.deltas[:0])
		if !s.emitDeltas(s.deltas) {
			return acc.response(), errStopped
		}
	}
	resp := acc.response()
	if len(resp.Choices) == 0 && acc.chunkErr != nil {
		return resp, fmt.Errorf("adapter: the stream reported an error: %s", acc.chunkErr.Message)
	}
	for _, ch := range resp.Choices {
		if ch.FinishReason == "" && acc.chunkErr != nil {
			return resp, fmt.Errorf("adapter: the stream reported an error: %s", acc.chunkErr.Message)
		}
	}
	return resp, nil
}

// replay sends a reply the caller has not seen (a cache hit, or one a
// middleware made) as the deltas a live stream would have given.
func (s *streamSink) replay(resp openai.ChatCompletionResponse) bool {
	ch, ok := choiceAt(resp, 0)
	if !ok {
		return true
	}
	if r := ch.Message.ReasoningContent; r != "" && !s.emit(Chunk{Reasoning: r}) {
		return false
	}
	if len(ch.Message.ToolCalls) > 0 && !s.emit(Chunk{ToolCalls: slices.Clone(ch.Message.ToolCalls)}) {
		return false
	}
	if s.newFS == nil || ch.Message.Content == "" {
		return true
	}
	fs := s.newFS()
	s.texts.next()
	s.deltas = fs.Write(s.deltas[:0], ch.Message.Content)
	if !s.emitDeltas(s.deltas) {
		return false
	}
	return s.emitDeltas(fs.Close(s.deltas[:0]))
}

// choiceAt returns the choice with the given index.
func choiceAt(resp openai.ChatCompletionResponse, index int) (openai.ChatCompletionChoice, bool) {
	for _, ch := range resp.Choices {
		if ch.Index == index {
			return ch, true
		}
	}
	return openai.ChatCompletionChoice{}, false
}
