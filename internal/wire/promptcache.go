package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
)

// PromptCache is what the wrapper puts on the wire for a request that
// asks the provider to cache its stable prefix: cache_control on the
// messages of Marks (Anthropic-compatible routes) and a top-level
// prompt_cache_key (OpenAI). The pipeline makes one per attempt and puts
// it on the requests' context ([MarkPromptCache]); the wrapper counts in
// it the marks it could not place.
type PromptCache struct {
	// Marks are the messages that get "cache_control": {"type":
	// "ephemeral"} on their last content part, in increasing Index.
	Marks []CacheMark
	// Key, when not "", is sent as "prompt_cache_key".
	Key string

	missed atomic.Int32
}

// CacheMark is a message to mark, as the pipeline wrote it: its position
// in the request's messages, its role, and its content (Content for a
// text message, else the number of its parts). The wrapper marks the
// message only where the body holds one like it at that position: a
// middleware that moved or changed the message leaves it unmarked.
type CacheMark struct {
	Index   int
	Role    string
	Content string
	Parts   int
}

// Missed returns the marks the wrapper could not place, over every
// request sent with pc.
func (pc *PromptCache) Missed() int { return int(pc.missed.Load()) }

// promptCacheKey carries a request's *PromptCache to the wrapper.
type promptCacheKey struct{}

// MarkPromptCache returns ctx asking the wrapper to put pc on the wire.
func MarkPromptCache(ctx context.Context, pc *PromptCache) context.Context {
	return context.WithValue(ctx, promptCacheKey{}, pc)
}

// ephemeral is the member the wrapper adds to a part: Anthropic's one
// cache type, with its default lifetime (5 minutes).
const ephemeral = `"cache_control":{"type":"ephemeral"}`

// msgSpan is where a message of a request body holds its content: the
// value's bytes are body[start:end] (start < 0: no content member).
type msgSpan struct {
	role       string
	start, end int
}

// messageSpans finds, in a request body, each message's role and where
// its content value lies.
func messageSpans(body []byte) ([]msgSpan, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	bad := errors.New("adapter: the request body is not a chat request")
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, bad
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, bad
		}
		if k != "messages" {
			var skip json.RawMessage
			if d.Decode(&skip) != nil {
				return nil, bad
			}
			continue
		}
		if t, err := d.Token(); err != nil || t != json.Delim('[') {
			return nil, bad
		}
		var spans []msgSpan
		for d.More() {
			if t, err := d.Token(); err != nil || t != json.Delim('{') {
				return nil, bad
			}
			s := msgSpan{start: -1}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, bad
				}
				var v json.RawMessage
				if d.Decode(&v) != nil {
					return nil, bad
				}
				switch k {
				case "role":
					json.Unmarshal(v, &s.role)
				case "content":
					end := int(d.InputOffset())
					if start := end - len(v); start >= 0 && bytes.Equal(body[start:end], v) {
						s.start, s.end = start, end
					}
				}
			}
			if _, err := d.Token(); err != nil {
				return nil, bad
			}
			spans = append(spans, s)
		}
		return spans, nil
	}
	return nil, nil
}

// markPromptCache puts pc on a request body: cache_control on the last
// content part of each mark's message (a text content becomes one text
// part), prompt_cache_key as the request's last member. Every other byte
// stays as it was written. A mark whose message is not in the body as
// the pipeline wrote it is counted in pc and left out.
func markPromptCache(body []byte, pc *PromptCache) ([]byte, error) {
	type edit struct {
		start, end int
		with       []byte
	}
	var edits []edit
	if len(pc.Marks) > 0 {
		spans, err := messageSpans(body)
		if err != nil {
			return nil, err
		}
		for _, m := range pc.Marks {
			if m.Index >= len(spans) || spans[m.Index].role != m.Role || spans[m.Index].start < 0 {
				pc.missed.Add(1)
				continue
			}
			s := spans[m.Index]
			v := body[s.start:s.end]
			switch {
			case m.Content != "" && v[0] == '"':
				var text string
				if json.Unmarshal(v, &text) != nil || text != m.Content {
					pc.missed.Add(1)
					continue
				}
				with := make([]byte, 0, len(v)+64)
				with = append(with, `[{"type":"text","text":`...)
				with = append(with, v...)
				with = append(with, ","+ephemeral+"}]"...)
				edits = append(edits, edit{s.start, s.end, with})
			case m.Content == "" && m.Parts > 0 && v[0] == '[':
				n, last, lastAt := 0, []byte(nil), 0
				eachElement(v, func(e []byte) bool {
					n, last, lastAt = n+1, e, cap(v)-cap(e) // e is a slice of v
					return true
				})
				if n != m.Parts || !isObject(last) || last[len(last)-1] != '}' {
					pc.missed.Add(1)
					continue
				}
				var members map[string]json.RawMessage // exact names: encoding/json's struct fields would match "Cache_Control"
				if json.Unmarshal(last, &members) == nil && members["cache_control"] != nil {
					continue // the part carries its own
				}
				at := s.start + lastAt + len(last) - 1 // the part's closing brace
				sep := ","
				if len(bytes.TrimSpace(last[1:len(last)-1])) == 0 {
					sep = "" // an empty object
				}
				edits = append(edits, edit{at, at, []byte(sep + ephemeral)})
			default:
				pc.missed.Add(1)
			}
		}
	}
	if pc.Key != "" {
		end := len(bytes.TrimRight(body, " \t\r\n"))
		if end == 0 || body[end-1] != '}' {
			return nil, errors.New("adapter: the request body is not a JSON object")
		}
		k, _ := json.Marshal(pc.Key)
		edits = append(edits, edit{end - 1, end - 1, append([]byte(`,"prompt_cache_key":`), k...)})
	}
	if len(edits) == 0 {
		return body, nil
	}
	out := make([]byte, 0, len(body)+len(edits)*64)
	prev := 0
	for _, e := range edits {
		out = append(out, body[prev:e.start]...)
		out = append(out, e.with...)
		prev = e.end
	}
	out = append(out, body[prev:]...)
	if !json.Valid(out) {
		return nil, fmt.Errorf("adapter: marking the prompt cache made the request body invalid JSON")
	}
	return out, nil
}
