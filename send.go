package adapter

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/wire"
	"github.com/sigwire/adapter/signature"
)

// The send stage's two senders sit at the bottom of the invoker chain
// (below the middlewares, retries and trace) and return the same thing:
// the whole reply as an openai.ChatCompletionResponse. The blocking sender
// calls CreateChatCompletion and completes the reply with what go-openai
// dropped (wire.Complete); the streaming sender reads the SSE stream
// (wire.ReadStream), routes choice 0's text through the adapter's
// FieldStream to the caller as it arrives, and returns the assembled
// reply.

// blockingSender is the bottom of a Call's chain.
func blockingSender(lm LM, limits Limits) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		st := meterOf(ctx)
		var settle func(openai.ChatCompletionResponse, error)
		if st != nil && st.budget != nil {
			var err error
			if settle, err = reserve(ctx, st.budget, &req); err != nil {
				return openai.ChatCompletionResponse{}, err
			}
		}
		st.count(Counts{Requests: 1}) // each request sent, retries and a middleware's own included
		bctx, body := wire.KeepBody(ctx, limits.replyBytes())
		resp, err := lm.CreateChatCompletion(bctx, req)
		if settle != nil {
			settle(resp, err)
		}
		if err != nil {
			return resp, err
		}
		extras, err := wire.Complete(&resp, body.Take(), limits.wireItems())
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		if s := meterOf(ctx); s != nil {
			s.addUsage(modelOf(&resp, &req), resp.Usage)
			s.setExtras(extrasFrom(extras))
		}
		return resp, nil
	}
}

// modelOf names the model that answered: the reply's, else the request's.
func modelOf(resp *openai.ChatCompletionResponse, req *openai.ChatCompletionRequest) string {
	if resp.Model != "" {
		return resp.Model
	}
	return req.Model
}

// errStopped ends a stream whose consumer broke out of the loop.
var errStopped = wire.ErrStopped

// deliveredError is a stream failure after text reached the caller: it
// matches ErrDelivered, and is not retried.
type deliveredError struct{ err error }

func (e *deliveredError) Error() string        { return e.err.Error() }
func (e *deliveredError) Unwrap() error        { return e.err }
func (e *deliveredError) Is(target error) bool { return target == ErrDelivered }

// errSentAgain and errReplaced: what a middleware must not do with a
// stream whose text reached the caller (see Middleware).
var (
	errSentAgain = fmt.Errorf("adapter: a middleware called next again after a stream's text reached the caller: %w", ErrDelivered)
	errReplaced  = fmt.Errorf("adapter: a middleware returned another reply than the one whose text reached the caller: %w", ErrDelivered)
)

// streamOut is where choice 0 of a streamed reply goes as it arrives: the
// caller's stream (a *streamSink), or a call in flight that callers share
// (a *flight, see [Cached]), which passes it on to each of them.
type streamOut interface {
	// start begins a sending of the request in hand; it fails with
	// errSentAgain when text of the request already went out.
	start() error
	// delta passes one piece on; false when the consumer stopped.
	delta(d wire.Delta) bool
	// status reports whether something went out, and whether the
	// consumer stopped.
	status() (sent, stopped bool)
	// streamedWhole records a reply that streamed to its end: choice 0
	// as it streamed.
	streamedWhole(msg openai.ChatCompletionMessage)
}

// streamSink routes one attempt's streamed reply to the caller.
type streamSink struct {
	yield   func(Chunk, error) bool
	adapter string
	newFS   func() FieldStream // nil: the adapter cannot route fields
	fs      FieldStream        // the reply in hand's (nil: none)
	live    bool               // the reply in hand was streamed, not served by a middleware
	stopped bool               // the consumer broke out
	texts   heldTexts          // what the caller holds of each field (stream.go)
	fsig    *signature.Signature
	deltas  []FieldDelta

	// Of the request in hand (see begin): something of it reached the
	// caller; choice 0 as it streamed (text, reasoning, tool calls).
	delivered bool
	streamed  openai.ChatCompletionMessage
}

// emit sends c to the caller; false when the consumer broke out.
func (s *streamSink) emit(c Chunk) bool {
	c.Adapter = s.adapter
	s.delivered = true
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

// sender is the bottom of a Stream's chain. The reply goes to the
// caller's stream, or to the call in flight it is sent for (see
// meter.out).
func (s *streamSink) sender(lm StreamingLM, limits Limits) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		st := meterOf(ctx)
		var out streamOut = s
		if st != nil && st.out != nil {
			out = st.out
		}
		if err := out.start(); err != nil { // refused: sent again after delivery, no request
			return openai.ChatCompletionResponse{}, err
		}
		var settle func(openai.ChatCompletionResponse, error)
		if st != nil && st.budget != nil {
			var err error
			if settle, err = reserve(ctx, st.budget, &req); err != nil {
				return openai.ChatCompletionResponse{}, err
			}
		}
		st.count(Counts{Requests: 1})
		max := limits.replyBytes()
		stream, err := lm.CreateChatCompletionStream(wire.CountBody(ctx, max), req)
		if err != nil {
			if settle != nil {
				settle(openai.ChatCompletionResponse{}, err)
			}
			return openai.ChatCompletionResponse{}, err
		}
		defer stream.Close()
		resp, extras, err := wire.ReadStream(ctx, stream, max, limits.wireItems(), out.delta)
		if settle != nil {
			settle(resp, err)
		}
		if err != nil {
			switch sent, stopped := out.status(); {
			case stopped:
				return resp, errStopped
			case sent:
				return resp, &deliveredError{err}
			}
			return resp, err
		}
		ch, _ := choiceAt(resp, 0)
		out.streamedWhole(ch.Message)
		if st != nil {
			st.addUsage(modelOf(&resp, &req), resp.Usage)
			st.setExtras(extrasFrom(extras))
		}
		return resp, nil
	}
}

// start begins a request of the stream: a new field stream.
func (s *streamSink) start() error {
	if s.delivered {
		return errSentAgain
	}
	s.live, s.fs = false, nil
	if s.newFS != nil {
		s.fs = s.newFS()
		s.texts.next()
	}
	return nil
}

// delta routes a piece of the reply to the caller: reasoning and tool
// calls as they are, text through the adapter's field stream.
func (s *streamSink) delta(d wire.Delta) bool {
	switch {
	case d.Reasoning != "":
		return s.emit(Chunk{Reasoning: d.Reasoning})
	case len(d.ToolCalls) > 0:
		return s.emit(Chunk{ToolCalls: d.ToolCalls})
	case s.fs == nil:
		return true
	case d.End:
		s.deltas = s.fs.Close(s.deltas[:0])
	case d.Content != "":
		s.deltas = s.fs.Write(s.deltas[:0], d.Content)
	default:
		return true
	}
	return s.emitDeltas(s.deltas)
}

func (s *streamSink) status() (sent, stopped bool) { return s.delivered, s.stopped }

func (s *streamSink) streamedWhole(msg openai.ChatCompletionMessage) {
	s.live, s.streamed = true, msg
	s.streamed.ToolCalls = slices.Clone(msg.ToolCalls) // a middleware may change resp's in place
}

// begin starts a request of the stream.
func (s *streamSink) begin() {
	s.delivered, s.live, s.streamed = false, false, openai.ChatCompletionMessage{}
}

// accept takes the reply the invoker chain returned for the request in
// hand: the one streamed, or one a middleware made, which is replayed
// unless text of the request already reached the caller (see Middleware).
func (s *streamSink) accept(resp openai.ChatCompletionResponse) error {
	switch {
	case s.live:
		got, _ := choiceAt(resp, 0)
		if m := got.Message; m.Content != s.streamed.Content || m.ReasoningContent != s.streamed.ReasoningContent ||
			!reflect.DeepEqual(m.ToolCalls, s.streamed.ToolCalls) {
			return errReplaced
		}
	case s.delivered:
		return errReplaced
	case !s.replay(resp):
		return errStopped
	}
	return nil
}

// replay sends a reply the caller has not seen (a cache hit, or one a
// middleware made) as the deltas a live stream would have given.
func (s *streamSink) replay(resp openai.ChatCompletionResponse) bool {
	ch, ok := choiceAt(resp, 0)
	if !ok {
		return true
	}
	m := ch.Message
	s.fs = nil
	if s.newFS != nil && m.Content != "" {
		s.fs = s.newFS()
		s.texts.next()
	}
	return s.delta(wire.Delta{Reasoning: m.ReasoningContent}) && s.delta(wire.Delta{ToolCalls: slices.Clone(m.ToolCalls)}) &&
		s.delta(wire.Delta{Content: m.Content}) && s.delta(wire.Delta{End: true})
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
