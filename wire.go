package adapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/jsonx"
)

// This file reads what OpenAI-compatible servers put on the wire and
// go-openai's types drop: a "reasoning" field (vLLM, OpenRouter, Groq,
// Cerebras), content sent as an array of parts (Mistral's magistral
// models: "thinking" and "text" parts), usage sent only inside "x_groq",
// an "error" object inside a stream chunk (OpenRouter), and what a reply
// carries for output types that read the wire (ChoiceExtras: OpenAI's
// annotations, the citations LiteLLM relays from Anthropic). Streams are
// always read from their raw lines; a blocking response's raw body is seen
// only through the [HTTPDoer] wrapper. Reading is linear in the bytes
// read, and bounded by the call's [Limits] and [MaxChoices].

// wireContent is a message's content: a string, null, or an array of
// parts ({"type":"text","text":…} and Mistral's {"type":"thinking",
// "thinking":[{"type":"text","text":…}]}).
type wireContent struct {
	text, thinking string
	parts          bool // it was an array
}

func (c *wireContent) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '"' && utf8.Valid(b):
		// The document was validated before this call: the literal is a
		// well-formed JSON string (invalid UTF-8, which encoding/json
		// replaces, takes the slow path).
		c.text = jsonx.Unquote(string(b))
		return nil
	case b[0] == '"':
		return json.Unmarshal(b, &c.text)
	case b[0] != '[':
		return fmt.Errorf("content is neither a string nor an array of parts")
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	c.parts = true
	var text, thinking strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			text.WriteString(p.Text)
		case "thinking", "reasoning":
			thinking.WriteString(thinkingText(p.Thinking))
		}
	}
	c.text, c.thinking = text.String(), thinking.String()
	return nil
}

// thinkingText reads a thinking part's text: a string, or a list of text
// parts.
func thinkingText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// wireError is an error object a server put inside a stream chunk.
type wireError struct {
	Message string `json:"message"`
	Code    any    `json:"code"`
}

// wireChunk is one streamed chunk as the wire carries it.
type wireChunk struct {
	ID                string        `json:"id"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	Choices           wireChoices   `json:"choices"`
	Usage             *openai.Usage `json:"usage"`
	XGroq             *xGroq        `json:"x_groq"`
	Error             *wireError    `json:"error"`
}

// wireChoices are a stream event's choices. More than [MaxChoices] of
// them is an error before any is decoded: a line of a million choices is
// not a reason to allocate a million.
type wireChoices []wireDelta

func (c *wireChoices) UnmarshalJSON(b []byte) error {
	n := 0
	eachElement(b, func([]byte) bool { n++; return n <= MaxChoices })
	if n > MaxChoices {
		return tooManyChoices("a stream event")
	}
	return json.Unmarshal(b, (*[]wireDelta)(c))
}

type xGroq struct {
	Usage *openai.Usage `json:"usage"`
}

type wireDelta struct {
	Index int `json:"index"`
	Delta struct {
		Content          wireContent       `json:"content"`
		Refusal          string            `json:"refusal"`
		ReasoningContent string            `json:"reasoning_content"`
		Reasoning        string            `json:"reasoning"`
		ToolCalls        []openai.ToolCall `json:"tool_calls"`
		wireExtras
	} `json:"delta"`
	Logprobs     *openai.ChatCompletionStreamChoiceLogprobs `json:"logprobs"`
	FinishReason openai.FinishReason                        `json:"finish_reason"`
}

// reasoning is the delta's reasoning text, wherever the server put it.
func (d *wireDelta) reasoning() string {
	switch {
	case d.Delta.ReasoningContent != "":
		return d.Delta.ReasoningContent
	case d.Delta.Reasoning != "":
		return d.Delta.Reasoning
	}
	return d.Delta.Content.thinking
}

// decodeChunk reads one stream event into c (zero but for the capacity
// of its Choices) when it has the shape servers send with every token:
// string or null content, reasoning, refusal, usage, and members it does
// not know, skipped as encoding/json skips them. It reports false for
// anything else (tool calls, logprobs, content parts, annotations, an
// error object, x_groq, a key repeated or in another case, bad syntax),
// and the caller decodes the event with encoding/json. For every event it
// reads, c holds what encoding/json gives (FuzzDecodeChunk); it costs a
// fraction of it, once per token.
func decodeChunk(raw string, c *wireChunk) bool {
	var r jsonx.Cursor
	r.Reset(raw)
	var seen uint
	ok := r.Object(func(key string) bool {
		switch key {
		case "id":
			return once(&seen, 0) && readString(&r, &c.ID)
		case "created":
			return once(&seen, 1) && (r.Null() || readInt(&r, &c.Created))
		case "model":
			return once(&seen, 2) && readString(&r, &c.Model)
		case "system_fingerprint":
			return once(&seen, 3) && readString(&r, &c.SystemFingerprint)
		case "choices":
			return once(&seen, 4) && (r.Null() || r.Array(func() bool {
				if len(c.Choices) == MaxChoices {
					return false // encoding/json reports it (wireChoices)
				}
				c.Choices = append(c.Choices, wireDelta{})
				return decodeDelta(&r, &c.Choices[len(c.Choices)-1])
			}))
		case "usage":
			return once(&seen, 5) && (r.Null() || decodeUsage(&r, &c.Usage))
		case "x_groq":
			return once(&seen, 6) && r.Null()
		case "error":
			return once(&seen, 7) && r.Null()
		}
		return otherKey(key, "id", "created", "model", "system_fingerprint", "choices", "usage", "x_groq", "error") && r.Skip()
	})
	return ok && r.End()
}

// decodeDelta reads one choice of a stream event (see decodeChunk).
func decodeDelta(r *jsonx.Cursor, d *wireDelta) bool {
	var seen uint
	return r.Object(func(key string) bool {
		switch key {
		case "index":
			var n int64
			if !once(&seen, 0) || !(r.Null() || readInt(r, &n)) || int64(int(n)) != n {
				return false
			}
			d.Index = int(n)
			return true
		case "finish_reason":
			return once(&seen, 1) && readString(r, (*string)(&d.FinishReason))
		case "logprobs":
			return once(&seen, 2) && r.Null()
		case "delta":
			if !once(&seen, 3) {
				return false
			}
			var in uint
			return r.Null() || r.Object(func(key string) bool {
				switch key {
				case "content":
					return once(&in, 0) && readString(r, &d.Delta.Content.text)
				case "refusal":
					return once(&in, 1) && readString(r, &d.Delta.Refusal)
				case "reasoning_content":
					return once(&in, 2) && readString(r, &d.Delta.ReasoningContent)
				case "reasoning":
					return once(&in, 3) && readString(r, &d.Delta.Reasoning)
				case "tool_calls":
					return once(&in, 4) && r.Null()
				case "annotations", "provider_specific_fields":
					return false
				}
				return otherKey(key, "content", "refusal", "reasoning_content", "reasoning", "tool_calls", "annotations", "provider_specific_fields") && r.Skip()
			})
		}
		return otherKey(key, "index", "finish_reason", "logprobs", "delta") && r.Skip()
	})
}

// decodeUsage reads a usage object (see decodeChunk).
func decodeUsage(r *jsonx.Cursor, dst **openai.Usage) bool {
	u := &openai.Usage{}
	*dst = u
	var seen uint
	return r.Object(func(key string) bool {
		switch key {
		case "prompt_tokens":
			return once(&seen, 0) && readCount(r, &u.PromptTokens)
		case "completion_tokens":
			return once(&seen, 1) && readCount(r, &u.CompletionTokens)
		case "total_tokens":
			return once(&seen, 2) && readCount(r, &u.TotalTokens)
		case "prompt_tokens_details":
			if !once(&seen, 3) {
				return false
			}
			if r.Null() {
				return true
			}
			p := &openai.PromptTokensDetails{}
			u.PromptTokensDetails = p
			return readCounts(r, []string{"audio_tokens", "cached_tokens"}, &p.AudioTokens, &p.CachedTokens)
		case "completion_tokens_details":
			if !once(&seen, 4) {
				return false
			}
			if r.Null() {
				return true
			}
			d := &openai.CompletionTokensDetails{}
			u.CompletionTokensDetails = d
			return readCounts(r, []string{"audio_tokens", "reasoning_tokens", "accepted_prediction_tokens", "rejected_prediction_tokens"},
				&d.AudioTokens, &d.ReasoningTokens, &d.AcceptedPredictionTokens, &d.RejectedPredictionTokens)
		}
		return otherKey(key, "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details") && r.Skip()
	})
}

// readCounts reads an object whose members named keys are counts into
// dst (in the same order); other members are skipped.
func readCounts(r *jsonx.Cursor, keys []string, dst ...*int) bool {
	var seen uint
	return r.Object(func(key string) bool {
		for i, k := range keys {
			if key == k {
				return once(&seen, i) && readCount(r, dst[i])
			}
		}
		return otherKey(key, keys...) && r.Skip()
	})
}

// once records member i of an object as read, and reports false when it
// was already (encoding/json would keep the last, or merge objects).
func once(seen *uint, i int) bool {
	if *seen&(1<<i) != 0 {
		return false
	}
	*seen |= 1 << i
	return true
}

// readString reads a string or null (which leaves dst as it is).
func readString(r *jsonx.Cursor, dst *string) bool {
	if r.Null() {
		return true
	}
	s, ok := r.String()
	*dst = s
	return ok
}

// readInt reads an integer.
func readInt(r *jsonx.Cursor, dst *int64) bool {
	n, ok := r.Int()
	*dst = n
	return ok
}

// readCount reads an integer or null into an int.
func readCount(r *jsonx.Cursor, dst *int) bool {
	if r.Null() {
		return true
	}
	n, ok := r.Int()
	*dst = int(n)
	return ok && int64(int(n)) == n
}

// otherKey reports whether key, which is none of known, is skipped by
// encoding/json as well: it matches none of them in another case (or by
// Unicode folding, hence non-ASCII keys are refused).
func otherKey(key string, known ...string) bool {
	for i := range len(key) {
		if key[i] >= 0x80 {
			return false
		}
	}
	for _, k := range known {
		if len(key) == len(k) && strings.EqualFold(key, k) {
			return false
		}
	}
	return true
}

// maxStreamIndex bounds the choice and tool-call indices a stream may
// use (OpenAI allows n ≤ 128): a larger or negative index is a malformed
// stream, not a reason to allocate.
const maxStreamIndex = 128

// assembly builds a ChatCompletionResponse from a stream's chunks, so that
// a streamed reply goes through the same stages as a blocking one.
type assembly struct {
	maxBytes  int64 // Limits.ReplyBytes in force
	maxItems  int   // Limits.WireItems in force
	bytes     int64 // the events' bytes so far
	resp      openai.ChatCompletionResponse
	choices   []*assembledChoice
	usage     *openai.Usage // the last usage seen: some servers send running totals on every chunk
	groqUsage *openai.Usage
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
		if err := d.Delta.wireExtras.collect(&ch.extras, &ch.seen, a.itemLimit()); err != nil {
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

// itemLimit is the bound on a choice's extras (none set: the default).
func (a *assembly) itemLimit() int {
	if a.maxItems == 0 {
		return DefaultWireItems
	}
	return a.maxItems
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
		resp.Usage = *a.usage
	case a.groqUsage != nil:
		resp.Usage = *a.groqUsage
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

// extras is what the stream's choices carried beyond go-openai's types.
func (a *assembly) extras() WireExtras {
	var e WireExtras
	for i, ch := range a.choices {
		if len(ch.extras.Annotations) > 0 || len(ch.extras.Citations) > 0 {
			x := ch.extras
			x.Index = i
			e.Choices = append(e.Choices, x)
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

// wireBody is the part of a blocking response body go-openai drops.
type wireBody struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content   wireContent `json:"content"`
			Reasoning string      `json:"reasoning"`
			wireExtras
		} `json:"message"`
	} `json:"choices"`
	Usage *openai.Usage `json:"usage"`
	XGroq *xGroq        `json:"x_groq"`
}

// normalize fills what go-openai left out of a blocking response: content
// sent as an array of parts (go-openai keeps the text parts in
// MultiContent and drops thinking parts), and, when the raw body is known
// (through the HTTPDoer wrapper), reasoning sent as "reasoning" or as
// thinking parts, and usage sent only inside x_groq. It returns the
// extras the body carried; a choice with more than maxItems of them is an
// error.
func normalize(resp *openai.ChatCompletionResponse, body []byte, maxItems int) (WireExtras, error) {
	for i := range resp.Choices {
		m := &resp.Choices[i].Message
		if m.Content == "" && len(m.MultiContent) > 0 {
			var b strings.Builder
			for _, p := range m.MultiContent {
				if p.Type == openai.ChatMessagePartTypeText {
					b.WriteString(p.Text)
				}
			}
			m.Content, m.MultiContent = b.String(), nil
		}
	}
	if len(body) == 0 {
		return WireExtras{}, nil
	}
	var wb wireBody
	if json.Unmarshal(body, &wb) != nil {
		return WireExtras{}, nil
	}
	if len(wb.Choices) > MaxChoices {
		return WireExtras{}, tooManyChoices("a reply")
	}
	var extras WireExtras
	for _, c := range wb.Choices {
		x := ChoiceExtras{Index: c.Index}
		if err := c.Message.wireExtras.collect(&x, nil, maxItems); err != nil {
			return WireExtras{}, err
		}
		if len(x.Annotations) > 0 || len(x.Citations) > 0 {
			extras.Choices = append(extras.Choices, x)
		}
		for i := range resp.Choices {
			ch := &resp.Choices[i]
			if ch.Index != c.Index {
				continue
			}
			if ch.Message.ReasoningContent == "" {
				if c.Message.Reasoning != "" {
					ch.Message.ReasoningContent = c.Message.Reasoning
				} else {
					ch.Message.ReasoningContent = c.Message.Content.thinking
				}
			}
		}
	}
	if resp.Usage.TotalTokens == 0 && resp.Usage.PromptTokens == 0 && wb.XGroq != nil && wb.XGroq.Usage != nil {
		resp.Usage = *wb.XGroq.Usage
	}
	return extras, nil
}

// ChoiceExtras is what one choice of a reply carried on the wire beyond
// go-openai's types, for output types that read it ([WireReader]). Each
// item is a JSON object as the server sent it, compacted (as
// encoding/json writes a json.RawMessage, so that an entry read back from
// a cache that stores JSON is the same). A choice carries at most
// [Limits].WireItems of them: a reply with more is refused.
type ChoiceExtras struct {
	Index int `json:"index"` // the choice's index
	// Annotations are the message's "annotations" (OpenAI's url_citation
	// objects, also OpenRouter's), in order; a stream's come from its
	// deltas, exact repeats dropped.
	Annotations []json.RawMessage `json:"annotations,omitempty"`
	// Citations are provider citation blocks: Anthropic's citations as
	// LiteLLM relays them, "provider_specific_fields": {"citations":
	// [[…], …]} on a message (one list per text block, flattened here) and
	// {"citation": {…}} on a stream's deltas, in order.
	Citations []json.RawMessage `json:"citations,omitempty"`
}

// WireExtras is what a reply carried on the wire beyond go-openai's
// types: an entry for each choice that carried any, in index order. [Cached]
// stores it with the response.
type WireExtras struct {
	Choices []ChoiceExtras `json:"choices,omitempty"`
}

// Choice returns the extras of the choice with the given index (none when
// it carried none).
func (e WireExtras) Choice(index int) ChoiceExtras {
	for _, c := range e.Choices {
		if c.Index == index {
			return c
		}
	}
	return ChoiceExtras{Index: index}
}

// wireExtras is the part of a message or a delta that ChoiceExtras come
// from, kept raw so that a malformed value is skipped without failing the
// rest of the chunk or body.
type wireExtras struct {
	Annotations json.RawMessage `json:"annotations"`
	Provider    json.RawMessage `json:"provider_specific_fields"`
}

// collect appends what w carries to dst: the JSON objects among the
// annotations, and the citation objects in provider_specific_fields
// ("citations": a list of objects or of lists of objects; "citation": an
// object). Anything else is skipped. With seen (a stream), annotations
// already received are not added again. Each item is read once, from the
// bytes encoding/json already checked, into one slice of its own (see
// canonical); more than max items in dst is an error (Limits.WireItems),
// reported before the next item is copied.
func (w *wireExtras) collect(dst *ChoiceExtras, seen *map[string]struct{}, max int) error {
	var scratch bytes.Buffer // reused by every item's compaction
	var err error
	add := func(list *[]json.RawMessage, it []byte, dedup bool) bool {
		if len(dst.Annotations)+len(dst.Citations) >= max {
			err = tooManyItems(dst.Index, max)
			return false
		}
		c := canonical(&scratch, it)
		if dedup {
			if *seen == nil {
				*seen = map[string]struct{}{}
			}
			if _, dup := (*seen)[string(c)]; dup {
				return true
			}
			(*seen)[string(c)] = struct{}{}
		}
		*list = append(*list, c)
		return true
	}
	eachElement(w.Annotations, func(it []byte) bool {
		return !isObject(it) || add(&dst.Annotations, it, seen != nil)
	})
	if err != nil || len(w.Provider) == 0 {
		return err
	}
	var p struct {
		Citations json.RawMessage `json:"citations"`
		Citation  json.RawMessage `json:"citation"`
	}
	if json.Unmarshal(w.Provider, &p) != nil {
		return nil
	}
	eachElement(p.Citations, func(it []byte) bool {
		if isObject(it) {
			return add(&dst.Citations, it, false)
		}
		return eachElement(it, func(c []byte) bool {
			return !isObject(c) || add(&dst.Citations, c, false)
		})
	})
	if err == nil && isObject(p.Citation) {
		add(&dst.Citations, p.Citation, false)
	}
	return err
}

// canonical is a JSON value as encoding/json writes a json.RawMessage:
// compact, with <, >, &, U+2028 and U+2029 escaped, so that an extra reads
// the same from a cache that stores entries as JSON as from the wire. It
// compacts into scratch and returns a slice of its own.
func canonical(scratch *bytes.Buffer, b []byte) json.RawMessage {
	scratch.Reset()
	if json.Compact(scratch, b) != nil {
		return bytes.Clone(b)
	}
	c := scratch.Bytes()
	n := len(c)
	for i := 0; i < len(c); i++ {
		switch {
		case c[i] == '<', c[i] == '>', c[i] == '&':
			n += 5
		case c[i] == 0xE2 && i+2 < len(c) && c[i+1] == 0x80 && c[i+2]&^1 == 0xA8:
			n += 3
		}
	}
	out := make([]byte, 0, n)
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(c); i++ {
		switch {
		case c[i] == '<', c[i] == '>', c[i] == '&':
			out = append(out, c[start:i]...)
			out = append(out, '\\', 'u', '0', '0', hex[c[i]>>4], hex[c[i]&0xF])
			start = i + 1
		case c[i] == 0xE2 && i+2 < len(c) && c[i+1] == 0x80 && c[i+2]&^1 == 0xA8:
			out = append(out, c[start:i]...)
			out = append(out, '\\', 'u', '2', '0', '2', hex[c[i+2]&0xF])
			i += 2
			start = i + 1
		}
	}
	return append(out, c[start:]...)
}

// eachElement calls f with each element of the JSON array raw, in order,
// until f reports false (which eachElement then reports); anything but an
// array has no elements. raw is JSON that encoding/json has checked, so
// the walk only finds where each element ends.
func eachElement(raw []byte, f func(elem []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return true
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for i < len(raw) {
		end := valueEnd(raw, i)
		if end <= i {
			return true // not JSON after all
		}
		if !f(raw[i:end]) {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ',' {
			return true
		}
		i = skipSpace(raw, i+1)
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index after the JSON value that starts at b[i]
// (checked JSON: strings end at their closing quote, containers at the
// bracket that closes them, scalars at the next delimiter).
func valueEnd(b []byte, i int) int {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			j++
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 0 {
				return min(j+1, len(b))
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j
			}
			if depth--; depth == 0 {
				return j + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j
			}
		}
	}
	return len(b)
}

// isObject reports a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{'
}
