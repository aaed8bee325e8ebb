package adapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
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

// bodyKey carries a bodySlot to the HTTPDoer wrapper, which counts the
// bytes of the reply body against the call's limit and, for a blocking
// call, keeps them for the pipeline.
type bodyKey struct{}

type bodySlot struct {
	max     int64 // the bytes the body may have
	n       int64 // the bytes read so far
	capture bool  // keep the body (a blocking call's)
	buf     bytes.Buffer
}

// teeBody counts what go-openai reads of a reply body and copies it into
// the slot; past the slot's limit, reading fails with ErrReplyTooLarge.
type teeBody struct {
	io.ReadCloser
	slot *bodySlot
	what string // "reply body", "stream"
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	s := t.slot
	if s.n += int64(n); s.n > s.max {
		s.buf = bytes.Buffer{}
		return 0, tooManyBytes(t.what, s.max)
	}
	if s.capture {
		s.buf.Write(p[:n])
	}
	return n, err
}

// wrapBody is what the HTTPDoer wrapper does to the body of a successful
// reply inside the pipeline: it counts it against the call's limit (and
// keeps it, for a blocking call).
func wrapBody(ctx context.Context, body io.ReadCloser) io.ReadCloser {
	slot, ok := ctx.Value(bodyKey{}).(*bodySlot)
	if !ok || body == nil {
		return body
	}
	what := "stream"
	if slot.capture {
		what = "reply body"
	}
	return &teeBody{ReadCloser: body, slot: slot, what: what}
}

// blockingSender is the bottom of a Call's chain.
func blockingSender(lm LM, limits Limits) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		slot := &bodySlot{max: limits.replyBytes(), capture: true}
		resp, err := lm.CreateChatCompletion(context.WithValue(ctx, bodyKey{}, slot), req)
		if err != nil {
			return resp, err
		}
		if len(resp.Choices) > MaxChoices {
			return openai.ChatCompletionResponse{}, tooManyChoices("a reply")
		}
		arrivedWhole(&resp)
		extras, err := normalize(&resp, slot.buf.Bytes(), limits.wireItems())
		slot.buf = bytes.Buffer{}
		if err != nil {
			return openai.ChatCompletionResponse{}, err
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
	delta(d rawDelta) bool
	// status reports whether something went out, and whether the
	// consumer stopped.
	status() (sent, stopped bool)
	// streamedWhole records a reply that streamed to its end: choice 0
	// as it streamed.
	streamedWhole(msg openai.ChatCompletionMessage)
}

// rawDelta is one piece of choice 0 of a streamed reply as it arrived,
// before the adapter's field stream routes its text: reasoning, the tool
// calls so far, or content; or, with end set, the end of the reply's text.
type rawDelta struct {
	reasoning, content string
	toolCalls          []openai.ToolCall
	end                bool
}

// streamSink routes one attempt's streamed reply to the caller.
type streamSink struct {
	yield   func(Chunk, error) bool
	adapter string
	newFS   func() FieldStream // nil: the adapter cannot route fields
	fs      FieldStream        // the reply in hand's (nil: none)
	sent    bool               // something reached the caller in this attempt
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
	s.sent, s.delivered = true, true
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
// callState.out).
func (s *streamSink) sender(lm StreamingLM, limits Limits) Invoker {
	return func(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
		st := stateFrom(ctx)
		var out streamOut = s
		if st != nil && st.out != nil {
			out = st.out
		}
		if err := out.start(); err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		max := limits.replyBytes()
		stream, err := lm.CreateChatCompletionStream(context.WithValue(ctx, bodyKey{}, &bodySlot{max: max}), req)
		if err != nil {
			return openai.ChatCompletionResponse{}, err
		}
		defer stream.Close()
		acc := assembly{maxBytes: max, maxItems: limits.wireItems()}
		resp, err := pump(ctx, stream, &acc, out)
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
			st.addUsage(modelOf(resp, req), resp.Usage)
			st.setExtras(acc.extras())
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
func (s *streamSink) delta(d rawDelta) bool {
	switch {
	case d.reasoning != "":
		return s.emit(Chunk{Reasoning: d.reasoning})
	case len(d.toolCalls) > 0:
		return s.emit(Chunk{ToolCalls: d.toolCalls})
	case s.fs == nil:
		return true
	case d.end:
		s.deltas = s.fs.Close(s.deltas[:0])
	case d.content != "":
		s.deltas = s.fs.Write(s.deltas[:0], d.content)
	default:
		return true
	}
	return s.emitDeltas(s.deltas)
}

func (s *streamSink) status() (sent, stopped bool) { return s.sent, s.stopped }

func (s *streamSink) streamedWhole(msg openai.ChatCompletionMessage) {
	s.live, s.streamed = true, msg
	s.streamed.ToolCalls = slices.Clone(msg.ToolCalls) // a middleware may change resp's in place
}

// pump reads the stream to its end into acc, passing choice 0's pieces to
// out.
func pump(ctx context.Context, stream *openai.ChatCompletionStream, acc *assembly, out streamOut) (openai.ChatCompletionResponse, error) {
	var c wireChunk // reused: one allocation per stream, not per chunk
	done := false
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			done = sawDone(stream)
			if !done {
				// Cut off, or an error event that was the body's last line.
				if err := streamErrorEvent(stream); err != nil {
					return acc.response(), err
				}
			}
			break
		}
		if err == nil && raw == nil {
			// go-openai read an error event it could not decode (after an
			// "event: error" line or comments): the server's error.
			if err = streamErrorEvent(stream); err == nil {
				err = errors.New("adapter: the stream reported an error that could not be read")
			}
		}
		if err != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				err = errors.Join(cerr, err)
			}
			return acc.response(), err
		}
		if err := acc.count(len(raw)); err != nil {
			return acc.response(), err
		}
		if c = (wireChunk{Choices: c.Choices[:0]}); !decodeChunk(string(raw), &c) {
			clear(c.Choices[:cap(c.Choices)]) // encoding/json decodes into old elements
			c = wireChunk{Choices: c.Choices[:0]}
			if err := json.Unmarshal(raw, &c); errors.Is(err, ErrReplyTooLarge) {
				return acc.response(), err
			} else if err != nil {
				return acc.response(), fmt.Errorf("adapter: unreadable stream chunk: %w", err)
			}
		}
		if err := acc.add(&c); err != nil {
			return acc.response(), err
		}
		for i := range c.Choices {
			d := &c.Choices[i]
			if d.Index != 0 {
				continue
			}
			if r := d.reasoning(); r != "" && !out.delta(rawDelta{reasoning: r}) {
				return acc.response(), errStopped
			}
			if len(d.Delta.ToolCalls) > 0 && !out.delta(rawDelta{toolCalls: acc.choices[0].toolCalls()}) {
				return acc.response(), errStopped
			}
			if text := d.Delta.Content.text; text != "" && !out.delta(rawDelta{content: text}) {
				return acc.response(), errStopped
			}
		}
	}
	if !out.delta(rawDelta{end: true}) {
		return acc.response(), errStopped
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
	if done {
		arrivedWhole(&resp)
	}
	return resp, nil
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

// arrivedWhole marks a reply that arrived whole — a blocking body, or a
// stream that ended with "data: [DONE]" — as finished: a choice the
// server sent no finish reason for (Snowflake Cortex never sends one; a
// LiteLLM proxy with n=2 sends one for choice 0 only) gets "stop". What
// is left without a finish reason is a choice of a stream cut off before
// [DONE], which the pipeline reports as truncated; so does a choice that
// ended with "length". This is the one place the end of a reply is
// decided, for Call and Stream alike.
func arrivedWhole(resp *openai.ChatCompletionResponse) {
	for i := range resp.Choices {
		if resp.Choices[i].FinishReason == "" {
			resp.Choices[i].FinishReason = openai.FinishReasonStop
		}
	}
}

// streamReader is go-openai's reader behind a stream (a struct value), or
// the zero Value when it is not where go-openai v1.43 keeps it.
func streamReader(s *openai.ChatCompletionStream) reflect.Value {
	if s == nil {
		return reflect.Value{}
	}
	v := reflect.ValueOf(s).Elem()
	if v.Kind() != reflect.Struct || v.NumField() == 0 {
		return reflect.Value{}
	}
	if p := v.Field(0); p.Kind() == reflect.Pointer && !p.IsNil() && p.Elem().Kind() == reflect.Struct {
		return p.Elem()
	}
	return reflect.Value{}
}

// sawDone reports whether a stream that returned io.EOF read "data:
// [DONE]" (go-openai returns io.EOF for that and for a body that simply
// ended, and records which in a field it does not export). Where that
// field cannot be read, the stream counts as cut: a reply is never called
// whole without evidence (TestGoOpenAIStreamInternals pins the field).
func sawDone(s *openai.ChatCompletionStream) bool {
	r := streamReader(s)
	if !r.IsValid() {
		return false
	}
	f := r.FieldByName("isFinished")
	return f.IsValid() && f.Kind() == reflect.Bool && f.Bool()
}

// streamErrorEvent returns the error object a server sent inside a 200
// stream (as an *openai.APIError, which keeps its code and type; the
// status code a server may give inside it is only named in the text: the
// response was a 200), or nil. go-openai collects every line that is not
// an event's data — comments, "event: error" — with the error object, and
// fails to decode the lot when anything precedes the object; the object
// is found here as the last one in what it collected.
func streamErrorEvent(s *openai.ChatCompletionStream) error {
	text := collectedLines(s)
	i := bytes.LastIndex(text, []byte(`{"error":`))
	if i < 0 {
		return nil
	}
	var ev struct {
		Error *openai.APIError `json:"error"`
	}
	if json.NewDecoder(bytes.NewReader(text[i:])).Decode(&ev) != nil || ev.Error == nil {
		return nil
	}
	var status struct {
		Error struct {
			StatusCode any `json:"status_code"`
		} `json:"error"`
	}
	_ = json.NewDecoder(bytes.NewReader(text[i:])).Decode(&status)
	var about []string
	if ev.Error.Type != "" {
		about = append(about, "type "+ev.Error.Type)
	}
	if ev.Error.Code != nil {
		about = append(about, fmt.Sprintf("code %v", ev.Error.Code))
	}
	if c := status.Error.StatusCode; c != nil {
		about = append(about, fmt.Sprintf("status %v", c))
	}
	if len(about) == 0 {
		return fmt.Errorf("adapter: the stream reported an error: %w", ev.Error)
	}
	return fmt.Errorf("adapter: the stream reported an error: %w (%s)", ev.Error, strings.Join(about, ", "))
}

// collectedLines is what go-openai's stream collected of the lines that
// were not events' data (its error accumulator: a *bytes.Buffer), or nil
// where it cannot be read.
func collectedLines(s *openai.ChatCompletionStream) []byte {
	r := streamReader(s)
	if !r.IsValid() {
		return nil
	}
	v := r.FieldByName("errAccumulator")
	for v.IsValid() && (v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer) && !v.IsNil() {
		if v.Type() == reflect.TypeFor[*bytes.Buffer]() {
			b := v.Elem()
			buf, off := b.FieldByName("buf"), b.FieldByName("off")
			if buf.Kind() != reflect.Slice || buf.Type().Elem().Kind() != reflect.Uint8 || off.Kind() != reflect.Int {
				return nil
			}
			data := buf.Bytes()
			if o := int(off.Int()); o >= 0 && o <= len(data) {
				return data[o:]
			}
			return nil
		}
		v = v.Elem()
		if v.Kind() == reflect.Struct {
			v = v.FieldByName("Buffer")
		}
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
	return s.delta(rawDelta{reasoning: m.ReasoningContent}) && s.delta(rawDelta{toolCalls: slices.Clone(m.ToolCalls)}) &&
		s.delta(rawDelta{content: m.Content}) && s.delta(rawDelta{end: true})
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
