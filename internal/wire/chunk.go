package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/sigwire/adapter/internal/jsonx"
)

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
	ID                string      `json:"id"`
	Created           int64       `json:"created"`
	Model             string      `json:"model"`
	SystemFingerprint string      `json:"system_fingerprint"`
	Choices           wireChoices `json:"choices"`
	Usage             *wireUsage  `json:"usage"`
	XGroq             *xGroq      `json:"x_groq"`
	Error             *wireError  `json:"error"`
	Timings           *timings    `json:"timings"`
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

// wireUsage is a usage object: go-openai's members, and those in which
// some providers count the prompt tokens their cache served instead of
// (or beside) prompt_tokens_details.cached_tokens: DeepSeek's
// prompt_cache_hit_tokens, and cache_read_input_tokens, Anthropic's name
// as OpenAI-compatible proxies pass it on (LiteLLM). nil when absent.
type wireUsage struct {
	openai    openai.Usage
	cacheHit  *int
	cacheRead *int
}

// UnmarshalJSON reads the object as encoding/json reads go-openai's
// Usage, and the cache counts beside it when they are integers (a count
// that is not is left out: it never fails the reply).
func (w *wireUsage) UnmarshalJSON(b []byte) error {
	var x struct {
		CacheHit  *int `json:"prompt_cache_hit_tokens"`
		CacheRead *int `json:"cache_read_input_tokens"`
	}
	if err := json.Unmarshal(b, &w.openai); err != nil {
		return err
	}
	if json.Unmarshal(b, &x) == nil {
		w.cacheHit, w.cacheRead = x.CacheHit, x.CacheRead
	}
	return nil
}

// timings is llama.cpp's timings object: cache_n counts the prompt
// tokens its cache served.
type timings struct {
	CacheN *int `json:"cache_n"`
}

// cachedFrom returns u with its cached prompt tokens read from the
// provider's own count (the first of counts that is set) when u reports
// none: the one rule for every shape, blocking and streamed. A count
// outside [0, prompt tokens] is not believed.
func cachedFrom(u openai.Usage, counts ...*int) openai.Usage {
	if u.PromptTokensDetails != nil && u.PromptTokensDetails.CachedTokens > 0 {
		return u
	}
	for _, n := range counts {
		if n == nil || *n <= 0 {
			continue
		}
		if *n > u.PromptTokens {
			return u
		}
		d := openai.PromptTokensDetails{}
		if u.PromptTokensDetails != nil {
			d = *u.PromptTokensDetails
		}
		d.CachedTokens = *n
		u.PromptTokensDetails = &d
		return u
	}
	return u
}

// usage is the object's usage, cached prompt tokens filled in (see
// cachedFrom), with llama.cpp's cacheN last.
func (w *wireUsage) usage(cacheN *int) openai.Usage {
	return cachedFrom(w.openai, w.cacheHit, w.cacheRead, cacheN)
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
			return markSeen(&seen, 0) && readString(&r, &c.ID)
		case "created":
			return markSeen(&seen, 1) && (r.Null() || readInt(&r, &c.Created))
		case "model":
			return markSeen(&seen, 2) && readString(&r, &c.Model)
		case "system_fingerprint":
			return markSeen(&seen, 3) && readString(&r, &c.SystemFingerprint)
		case "choices":
			return markSeen(&seen, 4) && (r.Null() || r.Array(func() bool {
				if len(c.Choices) == MaxChoices {
					return false // encoding/json reports it (wireChoices)
				}
				c.Choices = append(c.Choices, wireDelta{})
				return decodeDelta(&r, &c.Choices[len(c.Choices)-1])
			}))
		case "usage":
			return markSeen(&seen, 5) && (r.Null() || decodeUsage(&r, &c.Usage))
		case "x_groq":
			return markSeen(&seen, 6) && r.Null()
		case "error":
			return markSeen(&seen, 7) && r.Null()
		case "timings":
			return markSeen(&seen, 8) && r.Null()
		}
		return otherKey(key, "id", "created", "model", "system_fingerprint", "choices", "usage", "x_groq", "error", "timings") && r.Skip()
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
			if !markSeen(&seen, 0) || !(r.Null() || readInt(r, &n)) || int64(int(n)) != n {
				return false
			}
			d.Index = int(n)
			return true
		case "finish_reason":
			return markSeen(&seen, 1) && readString(r, (*string)(&d.FinishReason))
		case "logprobs":
			return markSeen(&seen, 2) && r.Null()
		case "delta":
			if !markSeen(&seen, 3) {
				return false
			}
			var in uint
			return r.Null() || r.Object(func(key string) bool {
				switch key {
				case "content":
					return markSeen(&in, 0) && readString(r, &d.Delta.Content.text)
				case "refusal":
					return markSeen(&in, 1) && readString(r, &d.Delta.Refusal)
				case "reasoning_content":
					return markSeen(&in, 2) && readString(r, &d.Delta.ReasoningContent)
				case "reasoning":
					return markSeen(&in, 3) && readString(r, &d.Delta.Reasoning)
				case "tool_calls":
					return markSeen(&in, 4) && r.Null()
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
func decodeUsage(r *jsonx.Cursor, dst **wireUsage) bool {
	w := &wireUsage{}
	*dst = w
	u := &w.openai
	var seen uint
	return r.Object(func(key string) bool {
		switch key {
		case "prompt_cache_hit_tokens":
			return markSeen(&seen, 5) && readOptCount(r, &w.cacheHit)
		case "cache_read_input_tokens":
			return markSeen(&seen, 6) && readOptCount(r, &w.cacheRead)
		case "prompt_tokens":
			return markSeen(&seen, 0) && readCount(r, &u.PromptTokens)
		case "completion_tokens":
			return markSeen(&seen, 1) && readCount(r, &u.CompletionTokens)
		case "total_tokens":
			return markSeen(&seen, 2) && readCount(r, &u.TotalTokens)
		case "prompt_tokens_details":
			if !markSeen(&seen, 3) {
				return false
			}
			if r.Null() {
				return true
			}
			p := &openai.PromptTokensDetails{}
			u.PromptTokensDetails = p
			return readCounts(r, []string{"audio_tokens", "cached_tokens"}, &p.AudioTokens, &p.CachedTokens)
		case "completion_tokens_details":
			if !markSeen(&seen, 4) {
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
		return otherKey(key, "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details",
			"prompt_cache_hit_tokens", "cache_read_input_tokens") && r.Skip()
	})
}

// readCounts reads an object whose members named keys are counts into
// dst (in the same order); other members are skipped.
func readCounts(r *jsonx.Cursor, keys []string, dst ...*int) bool {
	var seen uint
	return r.Object(func(key string) bool {
		for i, k := range keys {
			if key == k {
				return markSeen(&seen, i) && readCount(r, dst[i])
			}
		}
		return otherKey(key, keys...) && r.Skip()
	})
}

// markSeen marks member i of an object read in seen, and reports false
// when it already was: a repeated member, which encoding/json would take
// the last of (or merge, for objects), is refused.
func markSeen(seen *uint, i int) bool {
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

// readOptCount reads an integer into a new *int, or null (which leaves
// dst nil), as encoding/json reads into a *int.
func readOptCount(r *jsonx.Cursor, dst **int) bool {
	if r.Null() {
		*dst = nil
		return true
	}
	n := new(int)
	*dst = n
	return readCount(r, n)
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
