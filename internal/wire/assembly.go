package wire

import (
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// maxStreamIndex bounds the choice and tool-call indices a stream may
// use (OpenAI allows n ≤ 128): a larger or negative index is a malformed
// stream, not a reason to allocate.
const maxStreamIndex = 128

// assembly builds a ChatCompletionResponse from a stream's chunks, so that
// a streamed reply goes through the same stages as a blocking one.
type assembly struct {
	maxBytes  int64 // the bound on the events' bytes (0: none)
	maxItems  int   // the bound on each choice's extras
	bytes     int64 // the events' bytes so far
	resp      openai.ChatCompletionResponse
	choices   []*assembledChoice
	usage     *wireUsage // the last usage seen: some servers send running totals on every chunk
	groqUsage *openai.Usage
	cacheN    *int // llama.cpp's timings.cache_n, the last seen
	chunkErr  *wireError
}

type assembledChoice struct {
	text, refusal, reasoning strings.Builder
	finish                   openai.FinishReason
	tools                    []*assembledTool // by the wire's index; nil where none came
	logprobs                 *openai.LogProbs
	extras                   ChoiceExtras
	seen                     map[string]struct{} // annotations already received
}

// assembledTool is one streamed tool call. Its name and arguments grow in
// builders, so that assembling them is linear in the deltas, and a
// snapshot ([assembledChoice.toolCalls]) shares their bytes instead of
// copying them.
type assembledTool struct {
	index      *int // the wire's index, shared by every snapshot
	id, typ    string
	name, args strings.Builder
}

// toolCalls is a snapshot of the choice's tool calls so far, in index
// order: the calls that got at least one delta (a server may stream its
// only call at index 1), each with what it has received.
func (ch *assembledChoice) toolCalls() []openai.ToolCall {
	n := 0
	for _, t := range ch.tools {
		if t != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]openai.ToolCall, 0, n)
	for _, t := range ch.tools {
		if t != nil {
			out = append(out, openai.ToolCall{Index: t.index, ID: t.id, Type: openai.ToolType(t.typ),
				Function: openai.FunctionCall{Name: t.name.String(), Arguments: t.args.String()}})
		}
	}
	return out
}

// add folds one chunk in. It returns an error for a malformed chunk (an
// index out of range).
func (a *assembly) add(c *wireChunk) error {
	if a.resp.ID == "" {
		a.resp.ID, a.resp.Created = c.ID, c.Created
	}
	if c.Model != "" {
		a.resp.Model = c.Model
	}
	if c.SystemFingerprint != "" {
		a.resp.SystemFingerprint = c.SystemFingerprint
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	if c.XGroq != nil && c.XGroq.Usage != nil {
		a.groqUsage = c.XGroq.Usage
	}
	if c.Timings != nil && c.Timings.CacheN != nil {
		a.cacheN = c.Timings.CacheN
	}
	if c.Error != nil {
		a.chunkErr = c.Error
	}
	for i := range c.Choices {
		d := &c.Choices[i]
		if d.Index < 0 || d.Index >= maxStreamIndex {
			return fmt.Errorf("adapter: stream chunk for choice index %d, outside [0, %d)", d.Index, maxStreamIndex)
		}
		for len(a.choices) <= d.Index {
			a.choices = append(a.choices, &assembledChoice{})
		}
		ch := a.choices[d.Index]
		if d.FinishReason != "" {
			ch.finish = d.FinishReason
		}
		ch.text.WriteString(d.Delta.Content.text)
		ch.refusal.WriteString(d.Delta.Refusal)
		ch.reasoning.WriteString(d.reasoning())
		if err := ch.mergeToolCalls(d.Delta.ToolCalls); err != nil {
			return err
		}
		ch.extras.Index = d.Index
		if err := d.Delta.wireExtras.collect(&ch.extras, &ch.seen, a.maxItems); err != nil {
			return err
		}
		if lp := d.Logprobs; lp != nil && len(lp.Content) > 0 {
			if ch.logprobs == nil {
				ch.logprobs = &openai.LogProbs{}
			}
			for _, t := range lp.Content {
				ch.logprobs.Content = append(ch.logprobs.Content, logProb(t))
			}
		}
	}
	return nil
}

func logProb(t openai.ChatCompletionTokenLogprob) openai.LogProb {
	p := openai.LogProb{Token: t.Token, LogProb: t.Logprob}
	if t.Bytes != nil {
		p.Bytes = make([]byte, len(t.Bytes))
		for i, b := range t.Bytes {
			p.Bytes[i] = byte(b)
		}
	}
	for _, top := range t.TopLogprobs {
		tp := openai.TopLogProbs{Token: top.Token, LogProb: top.Logprob}
		if top.Bytes != nil {
			tp.Bytes = make([]byte, len(top.Bytes))
			for i, b := range top.Bytes {
				tp.Bytes[i] = byte(b)
			}
		}
		p.TopLogProbs = append(p.TopLogProbs, tp)
	}
	return p
}

// count adds an event's bytes, and reports the stream past its limit.
func (a *assembly) count(n int) error {
	a.bytes += int64(n)
	if max := a.maxBytes; max > 0 && a.bytes > max {
		return tooManyBytes("stream", max)
	}
	return nil
}

// response is the assembled reply. A choice that never got a finish
// reason keeps an empty one: the stream was cut.
func (a *assembly) response() openai.ChatCompletionResponse {
	resp := a.resp
	resp.Object = "chat.completion"
	switch {
	case a.usage != nil:
		resp.Usage = a.usage.usage(a.cacheN)
	case a.groqUsage != nil:
		resp.Usage = cachedFrom(*a.groqUsage, a.cacheN)
	}
	resp.Choices = make([]openai.ChatCompletionChoice, len(a.choices))
	for i, ch := range a.choices {
		resp.Choices[i] = openai.ChatCompletionChoice{
			Index: i,
			Message: openai.ChatCompletionMessage{
				Role:             openai.ChatMessageRoleAssistant,
				Content:          ch.text.String(),
				Refusal:          ch.refusal.String(),
				ReasoningContent: ch.reasoning.String(),
				ToolCalls:        ch.toolCalls(),
			},
			FinishReason: ch.finish,
			LogProbs:     ch.logprobs,
		}
	}
	return resp
}

// extras is what the stream's choices carried beyond go-openai's types:
// an entry for each choice that carried any, in index order.
func (a *assembly) extras() []ChoiceExtras {
	var e []ChoiceExtras
	for i, ch := range a.choices {
		if len(ch.extras.Annotations) > 0 || len(ch.extras.Citations) > 0 {
			x := ch.extras
			x.Index = i
			e = append(e, x)
		}
	}
	return e
}

// mergeToolCalls accumulates streamed tool-call deltas by index; a delta
// without an index starts a call after the last one.
func (ch *assembledChoice) mergeToolCalls(deltas []openai.ToolCall) error {
	for _, d := range deltas {
		i := len(ch.tools)
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= maxStreamIndex {
			return fmt.Errorf("adapter: stream chunk for tool call index %d, outside [0, %d)", i, maxStreamIndex)
		}
		for len(ch.tools) <= i {
			ch.tools = append(ch.tools, nil)
		}
		t := ch.tools[i]
		if t == nil {
			t = &assembledTool{index: new(i), typ: string(openai.ToolTypeFunction)}
			ch.tools[i] = t
		}
		if d.ID != "" {
			t.id = d.ID
		}
		if d.Type != "" {
			t.typ = string(d.Type)
		}
		t.name.WriteString(d.Function.Name)
		t.args.WriteString(d.Function.Arguments)
	}
	return nil
}
