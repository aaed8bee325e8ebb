package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// ErrStopped ends a stream whose consumer broke out of its loop: the
// yield of [ReadStream] reported false.
var ErrStopped = errors.New("adapter: the stream's consumer stopped")

// Delta is one piece of choice 0 of a streamed reply as it arrived:
// reasoning, the tool calls so far (a snapshot), or content; or, with End
// set, the end of the reply's text.
type Delta struct {
	Reasoning, Content string
	ToolCalls          []openai.ToolCall
	End                bool
}

// ReadStream reads stream to its end and assembles the reply, so that a
// streamed reply goes through the same stages as a blocking one. It
// passes choice 0's pieces to yield as they arrive, then a Delta with End
// set; when yield reports false it stops with ErrStopped. maxBytes bounds
// the events' data (0: no bound), maxItems each choice's extras. It
// returns the reply so far with any error, and with none the extras the
// stream carried (an entry for each choice that carried any). A stream
// that ended with "data: [DONE]" arrived whole: its choices without a
// finish reason get "stop"; one cut off before it keeps them empty.
func ReadStream(ctx context.Context, stream *openai.ChatCompletionStream, maxBytes int64, maxItems int, yield func(Delta) bool) (openai.ChatCompletionResponse, []ChoiceExtras, error) {
	acc := assembly{maxBytes: maxBytes, maxItems: maxItems}
	resp, err := acc.read(ctx, stream, yield)
	if err != nil {
		return resp, nil, err
	}
	return resp, acc.extras(), nil
}

// read reads the stream to its end into a, passing choice 0's pieces to
// yield (see ReadStream).
func (a *assembly) read(ctx context.Context, stream *openai.ChatCompletionStream, yield func(Delta) bool) (openai.ChatCompletionResponse, error) {
	var c wireChunk // reused: one allocation per stream, not per chunk
	done := false
	for {
		raw, err := stream.RecvRaw()
		if errors.Is(err, io.EOF) {
			done = sawDone(stream)
			if !done {
				// Cut off, or an error event that was the body's last line.
				if err := streamErrorEvent(stream); err != nil {
					return a.response(), err
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
			return a.response(), err
		}
		if err := a.count(len(raw)); err != nil {
			return a.response(), err
		}
		if c = (wireChunk{Choices: c.Choices[:0]}); !decodeChunk(string(raw), &c) {
			clear(c.Choices[:cap(c.Choices)]) // encoding/json decodes into old elements
			c = wireChunk{Choices: c.Choices[:0]}
			if err := json.Unmarshal(raw, &c); errors.Is(err, ErrReplyTooLarge) {
				return a.response(), err
			} else if err != nil {
				return a.response(), fmt.Errorf("adapter: unreadable stream chunk: %w", err)
			}
		}
		if err := a.add(&c); err != nil {
			return a.response(), err
		}
		for i := range c.Choices {
			d := &c.Choices[i]
			if d.Index != 0 {
				continue
			}
			if r := d.reasoning(); r != "" && !yield(Delta{Reasoning: r}) {
				return a.response(), ErrStopped
			}
			if len(d.Delta.ToolCalls) > 0 && !yield(Delta{ToolCalls: a.choices[0].toolCalls()}) {
				return a.response(), ErrStopped
			}
			if text := d.Delta.Content.text; text != "" && !yield(Delta{Content: text}) {
				return a.response(), ErrStopped
			}
		}
	}
	if !yield(Delta{End: true}) {
		return a.response(), ErrStopped
	}
	resp := a.response()
	if len(resp.Choices) == 0 && a.chunkErr != nil {
		return resp, fmt.Errorf("adapter: the stream reported an error: %s", a.chunkErr.Message)
	}
	for _, ch := range resp.Choices {
		if ch.FinishReason == "" && a.chunkErr != nil {
			return resp, fmt.Errorf("adapter: the stream reported an error: %s", a.chunkErr.Message)
		}
	}
	if done {
		arrivedWhole(&resp)
	}
	return resp, nil
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
